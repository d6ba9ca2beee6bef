"""CPU stand-ins for the ``mindspore.mint`` kernels mindone.transformers' models need.

MindSpore 2.10 registers some of the kernels behind ``mindspore.mint`` for Ascend only: on CPU a
mindone model fails at its first such call (``RuntimeError: The kernel Embedding unregistered``,
``... Addmm unregistered``; ``cases/models/zoo_text.py``). :func:`installed` gives each of those
operators a stand-in written with classic ``mindspore.ops`` kernels, which run on CPU and compute
the same thing, while a block runs:

* the primitives ``Clone``, ``Embedding``, ``Arange``, ``Addmm``, ``LayerNormExt`` and the
  PyBoost ``RmsNorm``: their ``__call__`` replaced (every instance, wherever it was made);
* ``mint.nn.functional.gelu``: replaced in every MindSpore and mindone module that holds it (a
  module that imported the function keeps its own reference);
* ``Tensor.clone``.

This is what a user of mindone on CPU has to do; it belongs to these cases, not to parity. Each
kernel replaced is one the CPU has none of, and only while a block runs: the rest of the process
(a check that a mint layer has no CPU kernel, say) sees MindSpore as it is. :func:`on_cpu` builds
a mindone model with them in place and makes each of its calls run with them in place. On any
other device target nothing is replaced.
"""

import contextlib
import sys


def _embedding(self, input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False):
    from mindspore import ops

    return ops.gather(weight, input, 0)


def _arange(self, start, end, step, dtype=None):
    from mindspore import ops

    out = ops.arange(start, end, step)
    return out if dtype is None else out.astype(dtype)


def _addmm(self, input, mat1, mat2, beta=1, alpha=1):
    from mindspore import ops

    return beta * input + alpha * ops.matmul(mat1, mat2)


def _clone(self, input, memory_format=None):
    from mindspore import ops

    return ops.deepcopy(input)


def _rms_norm(self, x, gamma, epsilon):
    """Returns what the kernel returns: the normalised ``x`` and the reciprocal root mean square."""
    from mindspore import ops

    rstd = ops.rsqrt(ops.mean(ops.square(x), -1, keep_dims=True) + epsilon)
    return x * rstd * gamma, rstd


def _layer_norm(self, input, normalized_shape, weight=None, bias=None, eps=1e-5):
    from mindspore import ops

    axis = -len(normalized_shape)
    return ops.LayerNorm(axis, axis, eps)(input, weight, bias)


def _gelu(input, approximate="none"):
    from mindspore.ops.function import nn_func

    return nn_func.gelu(input, approximate=approximate)


def _tensor_clone(self):
    from mindspore import ops

    return ops.deepcopy(self)


def _replace_everywhere(original, new):
    """Set every module attribute of MindSpore's and mindone's that is ``original`` to ``new``."""
    for name, module in list(sys.modules.items()):
        if module is None or not name.startswith(("mindspore", "mindone")):
            continue
        for attr, value in list(vars(module).items()):
            if value is original:
                setattr(module, attr, new)


def _primitives():
    from mindspore.ops.auto_generate import gen_ops_prim, pyboost_inner_prim

    return {
        gen_ops_prim.Clone: _clone,
        gen_ops_prim.Embedding: _embedding,
        gen_ops_prim.Arange: _arange,
        gen_ops_prim.Addmm: _addmm,
        gen_ops_prim.LayerNormExt: _layer_norm,
        pyboost_inner_prim._PyboostRmsNormPrim: _rms_norm,
    }


_MISSING = object()


@contextlib.contextmanager
def installed():
    """The stand-ins in place while the block runs, MindSpore as it was after it (nested: the
    outermost restores). On a device target other than CPU it changes nothing."""
    import mindspore as ms
    from mindspore.ops import functional_overload

    if ms.get_context("device_target") != "CPU" or functional_overload.gelu is _gelu:
        yield
        return
    gelu, clone = functional_overload.gelu, ms.Tensor.__dict__.get("clone", _MISSING)
    calls = {primitive: primitive.__dict__.get("__call__", _MISSING) for primitive in _primitives()}
    for primitive, stand_in in _primitives().items():
        primitive.__call__ = stand_in
    _replace_everywhere(gelu, _gelu)
    ms.Tensor.clone = _tensor_clone
    try:
        yield
    finally:
        _replace_everywhere(_gelu, gelu)
        _restore(ms.Tensor, "clone", clone)
        for primitive, call in calls.items():
            _restore(primitive, "__call__", call)


def _restore(owner, name, value):
    if value is _MISSING:
        delattr(owner, name)
    else:
        setattr(owner, name, value)


def on_cpu(build):
    """``build()`` (a mindone model's constructor, mindone imported inside it) run with the
    stand-ins in place, and the Cell it returns made to run every call with them in place too (its
    class swapped for a subclass of the same name whose ``construct`` does so)."""
    with installed():
        cell = build()
    base = type(cell)

    def construct(self, *args, **kwargs):
        with installed():
            return base.construct(self, *args, **kwargs)

    namespace = {"construct": construct, "__module__": base.__module__, "__qualname__": base.__qualname__}
    cell.__class__ = type(base.__name__, (base,), namespace)
    return cell
