"""CPU stand-ins for the ``mindspore.mint`` kernels mindone.transformers' models need.

MindSpore 2.10 registers some of the kernels behind ``mindspore.mint`` for Ascend only: on CPU a
mindone model fails at its first such call (``RuntimeError: The kernel Embedding unregistered``,
``... Addmm unregistered``; ``cases/models/zoo_text.py``). :func:`install` gives each of those
operators a stand-in written with classic ``mindspore.ops`` kernels, which run on CPU and compute
the same thing:

* the primitives ``Clone``, ``Embedding``, ``Arange``, ``Addmm``, ``LayerNormExt`` and the
  PyBoost ``RmsNorm``: their ``__call__`` replaced (every instance, wherever it was made);
* ``mint.nn.functional.gelu``: replaced in every MindSpore and mindone module that holds it (a
  module that imported the function keeps its own reference);
* ``Tensor.clone``.

This is what a user of mindone on CPU has to do; it belongs to these cases, not to parity. It
changes MindSpore for the rest of the process, but only where it would have failed: each kernel
replaced is one the CPU has none of. On any other device target it installs nothing. Installing
twice changes nothing more.
"""

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


def install():
    """Install the stand-ins (before a mindone model is built: some layers keep the function they
    call from construction on)."""
    import mindspore as ms
    from mindspore.ops import functional_overload

    if ms.get_context("device_target") != "CPU":
        return
    from mindspore.ops.auto_generate import gen_ops_prim, pyboost_inner_prim

    primitives = {
        gen_ops_prim.Clone: _clone,
        gen_ops_prim.Embedding: _embedding,
        gen_ops_prim.Arange: _arange,
        gen_ops_prim.Addmm: _addmm,
        gen_ops_prim.LayerNormExt: _layer_norm,
        pyboost_inner_prim._PyboostRmsNormPrim: _rms_norm,
    }
    for primitive, stand_in in primitives.items():
        primitive.__call__ = stand_in
    if functional_overload.gelu is not _gelu:
        _replace_everywhere(functional_overload.gelu, _gelu)
    ms.Tensor.clone = _tensor_clone
