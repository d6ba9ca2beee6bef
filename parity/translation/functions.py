"""What a traced ``forward`` calls, in MindSpore: the table from the PyTorch functions
(``torch.*``, ``torch.nn.functional.*``, Python's ``operator``/``math``/builtins) and Tensor methods
that :mod:`parity.translation.graph` meets in a ``torch.fx`` graph to the MindSpore code that computes
the same.

Each entry is keyed by the PyTorch API's dotted name (``"torch.flatten"``, ``"Tensor.view"``) and takes
PyTorch's arguments, with PyTorch's names and defaults, so a node's ``args``/``kwargs`` are passed on
as they are. The differences each adapter closes, as read from mindspore 2.10:

* ``Tensor.transpose(d0, d1)`` swaps two axes in PyTorch; MindSpore's permutes all of them
  (``ops.swapaxes`` is the swap). ``Tensor.size()`` is the shape in PyTorch, the element count in
  MindSpore. ``Tensor.view``/``reshape``/``permute``/``expand`` take sizes as varargs or one sequence.
* ``dim``/``keepdim`` are ``axis``/``keep_dims`` in ``ops.mean``, ``ops.softmax``; ``ops.flatten``
  starts at dim 1 by default (``torch.flatten`` at 0).
* ``squeeze(dim)`` of a dimension that is not 1 is a no-op in PyTorch, an error in MindSpore.
* ``Tensor.to`` casts to a dtype (given, or another tensor's) and ignores a device: a MindSpore
  tensor is where MindSpore's context puts it. A traced value's ``.dtype`` reads as the torch dtype
  of the same name (so ``x.dtype == torch.float32`` and ``torch.full(..., dtype=x.dtype)`` hold as
  in PyTorch) and its ``.device`` as :data:`DEVICE`, a stand-in that only ``to`` accepts.
* ``tanh`` and ``elu`` go through the accurate compositions of :mod:`.activation` (known mismatches
  ``tanh-cpu-accuracy``, ``elu-alpha-unsupported``).
* In-place calls (``x += y``, ``x.add_(y)``, ``F.relu(x, inplace=True)``) are computed out of place;
  the graph then reads the result wherever PyTorch would read the modified tensor.

Python's own functions (``operator.add``, ``math.sqrt``, ``len``...) run as they are: MindSpore
tensors support Python's operators and indexing, and on plain numbers (a shape's entries) they are
plain Python. A validator may refuse a call from its constant arguments at translation time
(``stochastic_depth`` in train mode draws random numbers). :mod:`.tensors` holds the second part of
the table (tensors made in ``forward``, selection, scans, ``einsum``, the functional norms), merged
into :data:`FUNCTIONS` and :data:`METHODS` here.
"""

from __future__ import annotations

import builtins
import importlib
import math
import operator
import sys
from typing import Callable, Dict, List, Optional, Tuple

import mindspore as ms
import numpy as np
import torch
from mindspore import ops

from . import tensors
from .layers import activation

__all__ = ["FUNCTIONS", "METHODS", "function_for", "method_for", "is_inplace", "PYTHON_MODULES"]

PYTHON_MODULES = ("_operator", "operator", "math", "builtins")


def _is_tensor(value) -> bool:
    return isinstance(value, ms.Tensor)


def _sizes(sizes) -> Tuple:
    """``view(2, 3)`` and ``view((2, 3))`` alike."""
    if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)):
        return tuple(sizes[0])
    return tuple(sizes)


def _axes(dim):
    return tuple(dim) if isinstance(dim, list) else dim


_DTYPES = {
    "float32": ms.float32,
    "float64": ms.float64,
    "float16": ms.float16,
    "bfloat16": ms.bfloat16,
    "int64": ms.int64,
    "int32": ms.int32,
    "int8": ms.int8,
    "uint8": ms.uint8,
    "bool": ms.bool_,
}


def _ms_dtype(dtype):
    """A torch dtype (or None, or already MindSpore's) as MindSpore's; refuses what has no counterpart."""
    if dtype is None or isinstance(dtype, ms.dtype.Type):
        return dtype
    name = str(dtype).replace("torch.", "")
    if name not in _DTYPES:
        raise TypeError(f"dtype {dtype} has no MindSpore counterpart here")
    return _DTYPES[name]


# --- shapes ---------------------------------------------------------------------------------


def flatten(input, start_dim=0, end_dim=-1):
    if input.ndim == 0:
        return ops.reshape(input, (1,))
    return ops.flatten(input, start_dim=start_dim, end_dim=end_dim)


def reshape(input, *shape):
    return ops.reshape(input, _sizes(shape))


def permute(input, *dims):
    return ops.permute(input, _sizes(dims))


def transpose(input, dim0, dim1):
    return ops.swapaxes(input, dim0, dim1)


def unsqueeze(input, dim):
    return ops.unsqueeze(input, dim)


def squeeze(input, dim=None):
    if dim is None:
        return ops.squeeze(input)
    dims = dim if isinstance(dim, (tuple, list)) else (dim,)
    keep = tuple(d for d in dims if input.shape[d] == 1)  # PyTorch leaves other sizes alone
    return ops.squeeze(input, keep) if keep else input


def expand(input, *sizes):
    return ops.broadcast_to(input, _sizes(sizes))


def expand_as(input, other):
    return ops.broadcast_to(input, other.shape)


def size(input, dim=None):
    return tuple(input.shape) if dim is None else input.shape[dim]


def cat(tensors, dim=0):
    return ops.cat(list(tensors), dim)


def stack(tensors, dim=0):
    return ops.stack(list(tensors), dim)


def chunk(input, chunks, dim=0):
    return ops.chunk(input, chunks, dim)


def split(tensor, split_size_or_sections, dim=0):
    return ops.split(tensor, split_size_or_sections, dim)


def unbind(input, dim=0):
    return ops.unbind(input, dim)


def repeat(input, *sizes):
    return ops.tile(input, _sizes(sizes))


def contiguous(input, memory_format=None):
    return input


def dim(input):
    return input.ndim


def numel(input):
    return int(math.prod(input.shape))


# --- arithmetic and reductions --------------------------------------------------------------


def add(input, other, *, alpha=1):
    return input + other if alpha == 1 else input + alpha * other


def sub(input, other, *, alpha=1):
    return input - other if alpha == 1 else input - alpha * other


def mul(input, other):
    return input * other


def div(input, other, *, rounding_mode=None):
    if rounding_mode is not None:
        raise TypeError(f"rounding_mode={rounding_mode!r} is not translated")
    return input / other


def matmul(input, other):
    return ops.matmul(input, other)


def addmm(input, mat1, mat2, *, beta=1, alpha=1):
    return tensors.scaled_sum(ops.matmul(mat1, mat2), input, beta, alpha)


def pow_(input, exponent):
    return ops.pow(input, exponent)


def bmm(input, mat2):
    return ops.bmm(input, mat2)


def mean(input, dim=None, keepdim=False, *, dtype=None):
    if dtype is not None:
        input = input.astype(_ms_dtype(dtype))
    return ops.mean(input, _axes(dim), keepdim)


def sum_(input, dim=None, keepdim=False, *, dtype=None):
    if dtype is not None:
        input = input.astype(_ms_dtype(dtype))
    return ops.sum(input, _axes(dim), keepdim)


def clamp(input, min=None, max=None):
    return ops.clamp(input, min, max)


def masked_fill(input, mask, value):
    return ops.masked_fill(input, mask, ms.Tensor(value, input.dtype) if not _is_tensor(value) else value)


def to_float(input, memory_format=None):
    return input.astype(ms.float32)


def to_half(input, memory_format=None):
    return input.astype(ms.float16)


class _Device:
    """What a traced value's ``.device`` reads as: MindSpore places tensors by its context, so the
    only use translated is handing it back to ``Tensor.to``, which ignores it."""

    def __repr__(self) -> str:
        return "<the device of a MindSpore tensor>"


DEVICE = _Device()


def _is_device(value) -> bool:
    return isinstance(value, (_Device, torch.device, str, int)) and not isinstance(value, bool)


def to(input, *args, dtype=None, device=None, non_blocking=False, copy=False, memory_format=None):
    """``Tensor.to(dtype)``, ``to(other)``, ``to(device)``, ``to(device, dtype)``, ``to(dtype=...)``:
    a cast to the dtype; the device, ``non_blocking``, ``copy`` and ``memory_format`` change no value."""
    for arg in args:
        if _is_tensor(arg):
            dtype = arg.dtype
        elif isinstance(arg, (torch.dtype, ms.dtype.Type)):
            dtype = arg
        elif not (_is_device(arg) or isinstance(arg, bool)):  # a bool: non_blocking or copy
            raise TypeError(f"Tensor.to({arg!r}) is not translated (only a dtype, a device or a tensor)")
    if device is not None and not _is_device(device):
        raise TypeError(f"Tensor.to(device={device!r}) is not translated")
    dtype = _ms_dtype(dtype)
    return input if dtype is None or dtype == input.dtype else input.astype(dtype)


def type_as(input, other):
    return input.astype(other.dtype)


# --- activations ----------------------------------------------------------------------------


def relu(input, inplace=False):
    return ops.relu(input)


def relu6(input, inplace=False):
    return ops.relu6(input)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    return ops.leaky_relu(input, float(negative_slope))


def elu(input, alpha=1.0, inplace=False):
    return activation.elu_with_alpha(input, float(alpha))


def gelu(input, approximate="none"):
    return ops.gelu(input, approximate=approximate)


def silu(input, inplace=False):
    return ops.silu(input)


def hardswish(input, inplace=False):
    return ops.hardswish(input)


def hardsigmoid(input, inplace=False):
    return ops.hardsigmoid(input)


def sigmoid(input):
    return ops.sigmoid(input)


def tanh(input):
    return activation.tanh(input)


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        raise TypeError("softmax with dim=None (picked from the input rank) is not translated; pass dim")
    if dtype is not None:
        input = input.astype(_ms_dtype(dtype))
    return ops.softmax(input, dim)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        raise TypeError("log_softmax with dim=None (picked from the input rank) is not translated; pass dim")
    if dtype is not None:
        input = input.astype(_ms_dtype(dtype))
    return ops.log_softmax(input, dim)


def dropout(input, p=0.5, training=True, inplace=False):
    if not training or p == 0:
        return input
    return ops.dropout(input, p=p, training=True)


# --- layers as functions --------------------------------------------------------------------


def linear(input, weight, bias=None):
    return ops.dense(input, weight, bias)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """The ``LayerNorm`` primitive ``nn.LayerNorm`` uses (``ops.layer_norm``'s kernel is not on CPU)."""
    shape = tuple(normalized_shape)
    axis = -len(shape)
    weight = ops.ones(shape, input.dtype) if weight is None else weight
    bias = ops.zeros(shape, input.dtype) if bias is None else bias
    return ops.LayerNorm(begin_norm_axis=axis, begin_params_axis=axis, epsilon=eps)(input, weight, bias)[0]


def _pooled_size(input, output_size, n):
    sizes = output_size if isinstance(output_size, (tuple, list)) else (output_size,) * n
    return tuple(input.shape[-n + i] if s is None else s for i, s in enumerate(sizes))


def adaptive_avg_pool2d(input, output_size):
    return ops.adaptive_avg_pool2d(input, _pooled_size(input, output_size, 2))


def adaptive_max_pool2d(input, output_size, return_indices=False):
    return ops.adaptive_max_pool2d(input, _pooled_size(input, output_size, 2), return_indices)


def avg_pool2d(
    input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True, divisor_override=None
):
    return ops.avg_pool2d(
        input,
        kernel_size,
        stride if stride else kernel_size,
        padding,
        ceil_mode,
        count_include_pad,
        divisor_override or 0,
    )


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    return ops.max_pool2d(
        input, kernel_size, stride if stride else kernel_size, padding, dilation, return_indices, ceil_mode
    )


def pad(input, pad, mode="constant", value=None):
    return ops.pad(input, tuple(pad), mode, value)


def interpolate(
    input,
    size=None,
    scale_factor=None,
    mode="nearest",
    align_corners=None,
    recompute_scale_factor=None,
    antialias=False,
):
    if antialias:
        raise TypeError("interpolate(antialias=True) is not translated")
    if scale_factor is not None:  # MindSpore samples by the sizes: give it the size PyTorch makes
        spatial = input.shape[2:]
        factors = tuple(scale_factor) if isinstance(scale_factor, (tuple, list)) else (scale_factor,) * len(spatial)
        sizes = [n * f for n, f in zip(spatial, factors)]
        if not recompute_scale_factor and not all(float(s).is_integer() for s in sizes):
            raise TypeError(
                f"scale_factor={scale_factor} makes {sizes} pixels: PyTorch samples by 1/scale_factor, "
                "MindSpore by the sizes (pass recompute_scale_factor=True or size=)"
            )
        size = tuple(int(math.floor(s)) for s in sizes)
    return ops.interpolate(input, size, None, mode, align_corners)


def scaled_dot_product_attention(
    query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False
):
    """softmax(q k^T * scale + mask) v, as PyTorch's reference implementation defines it: ``enable_gqa``
    repeats each key/value head for its group of query heads (``repeat_interleave``), and a query
    that may attend to nothing gets zeros, as PyTorch gives. Masked scores are filled with the
    dtype's smallest value, never ``-inf``: MindSpore's CPU softmax breaks on a row of ``-inf``
    (known mismatch ``attention-mask-inf-vs-finfo-min``)."""
    if enable_gqa and key.shape[-3] != query.shape[-3]:
        groups = query.shape[-3] // key.shape[-3]
        key, value = ops.repeat_interleave(key, groups, -3), ops.repeat_interleave(value, groups, -3)
    scale = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    scores = ops.matmul(query * scale, ops.swapaxes(key, -2, -1))
    length, source = query.shape[-2], key.shape[-2]
    blocked = None
    if is_causal:
        blocked = ~ops.tril(ops.ones((length, source), ms.bool_))
    if attn_mask is not None:
        if attn_mask.dtype == ms.bool_:
            blocked = ~attn_mask if blocked is None else ops.logical_or(blocked, ~attn_mask)
        else:
            scores = scores + attn_mask
    infinite = ops.isinf(scores) & (scores < 0)
    blocked = infinite if blocked is None else ops.logical_or(ops.broadcast_to(blocked, scores.shape), infinite)
    smallest = float(np.finfo(ms.dtype_to_nptype(scores.dtype)).min)
    weights = ops.softmax(ops.masked_fill(scores, blocked, ms.Tensor(smallest, scores.dtype)), -1)
    weights = ops.masked_fill(weights, ops.all(blocked, -1, True), ms.Tensor(0, weights.dtype))
    if dropout_p > 0:
        weights = ops.dropout(weights, p=dropout_p, training=True)
    return ops.matmul(weights, value)


def stochastic_depth(input, p, mode, training=True):
    return input  # the validator lets only the identity through


def _stochastic_depth_check(args, kwargs) -> Optional[str]:
    names = ("input", "p", "mode", "training")
    bound = dict(zip(names, args), **kwargs)
    if bound.get("training", True) and bound.get("p", 0) > 0:
        return (
            f"in train mode with p={bound['p']} it drops random samples, and MindSpore's random numbers "
            "are not PyTorch's (run the check in eval mode)"
        )
    return None


# --- tensor creation ------------------------------------------------------------------------


def full(size, fill_value, *, out=None, dtype=None, layout=None, device=None, pin_memory=False, requires_grad=False):
    if dtype is None:
        dtype = ms.bool_ if isinstance(fill_value, bool) else ms.int64 if isinstance(fill_value, int) else ms.float32
    else:
        dtype = _ms_dtype(dtype)
    return ops.full(tuple(size), fill_value, dtype=dtype)


def triu(input, diagonal=0):
    return ops.triu(input, diagonal)


def tril(input, diagonal=0):
    return ops.tril(input, diagonal)


# --- checks fx inserts and Python builtins --------------------------------------------------


def assert_(condition, message):
    if not bool(condition):
        raise AssertionError(message)


def assert_is_none(value, message):
    if value is not None:
        raise AssertionError(message)


_TORCH_DTYPES = {ms_dtype: getattr(torch, name) for name, ms_dtype in _DTYPES.items()}


def _torch_dtype(tensor):
    """A MindSpore tensor's dtype, as the torch dtype of the same name that the graph compares it with."""
    if tensor.dtype not in _TORCH_DTYPES:
        raise TypeError(f"dtype {tensor.dtype} has no PyTorch counterpart here")
    return _TORCH_DTYPES[tensor.dtype]


_ATTRIBUTES = {
    "shape": lambda t: tuple(t.shape),
    "ndim": lambda t: t.ndim,
    "T": lambda t: ops.permute(t, tuple(range(t.ndim - 1, -1, -1))),
    "dtype": _torch_dtype,
    "device": lambda t: DEVICE,
}


_REDUCED = ("values", "indices")  # of what torch.max(x, dim) returns (a tensor has neither)


def _getattr_check(args, kwargs) -> Optional[str]:
    name = args[1] if len(args) > 1 else None
    if getattr(args[0], "op", None) == "call_module":  # a child's output, a structured one maybe: read at run time
        return None
    if name not in _ATTRIBUTES and name not in _REDUCED:
        return f"reading .{name} is not translated (only {', '.join('.' + a for a in _ATTRIBUTES)})"
    return None


def getattr_(obj, name, *default):
    if _is_tensor(obj):
        if name not in _ATTRIBUTES:
            raise TypeError(f"reading Tensor.{name} is not translated (only {', '.join(_ATTRIBUTES)})")
        return _ATTRIBUTES[name](obj)
    return builtins.getattr(obj, name, *default)


# The table. Keys are PyTorch's dotted names; values are adapters or (adapter, validator) where the
# validator sees the node's constant arguments and returns why the call cannot be translated.
FUNCTIONS: Dict[str, object] = {
    "torch.flatten": flatten,
    "torch.reshape": reshape,
    "torch.permute": permute,
    "torch.transpose": transpose,
    "torch.swapaxes": transpose,
    "torch.unsqueeze": unsqueeze,
    "torch.squeeze": squeeze,
    "torch.cat": cat,
    "torch.concat": cat,
    "torch.concatenate": cat,
    "torch.stack": stack,
    "torch.chunk": chunk,
    "torch.split": split,
    "torch.unbind": unbind,
    "torch.add": add,
    "torch.sub": sub,
    "torch.mul": mul,
    "torch.div": div,
    "torch.matmul": matmul,
    "torch.bmm": bmm,
    "torch.mean": mean,
    "torch.sum": sum_,
    "torch.clamp": clamp,
    "torch.clip": clamp,
    "torch.relu": relu,
    "torch.sigmoid": sigmoid,
    "torch.tanh": tanh,
    "torch.softmax": softmax,
    "torch.exp": ops.exp,
    "torch.sqrt": ops.sqrt,
    "torch.rsqrt": ops.rsqrt,
    "torch.abs": ops.abs,
    "torch.pow": pow_,
    "torch.cos": ops.cos,
    "torch.sin": ops.sin,
    "torch.addmm": addmm,
    "torch.full": full,
    "torch.triu": triu,
    "torch.tril": tril,
    "torch.masked_fill": masked_fill,
    "torch._assert": assert_,
    "torch.fx._symbolic_trace._assert_is_none": assert_is_none,
    "torch.nn.functional.relu": relu,
    "torch.nn.functional.relu6": relu6,
    "torch.nn.functional.leaky_relu": leaky_relu,
    "torch.nn.functional.elu": elu,
    "torch.nn.functional.gelu": gelu,
    "torch.nn.functional.silu": silu,
    "torch.nn.functional.hardswish": hardswish,
    "torch.nn.functional.hardsigmoid": hardsigmoid,
    "torch.nn.functional.sigmoid": sigmoid,
    "torch.nn.functional.tanh": tanh,
    "torch.nn.functional.softmax": softmax,
    "torch.nn.functional.log_softmax": log_softmax,
    "torch.nn.functional.dropout": dropout,
    "torch.nn.functional.linear": linear,
    "torch.nn.functional.layer_norm": layer_norm,
    "torch.nn.functional.adaptive_avg_pool2d": adaptive_avg_pool2d,
    "torch.nn.functional.adaptive_max_pool2d": adaptive_max_pool2d,
    "torch.nn.functional.avg_pool2d": avg_pool2d,
    "torch.nn.functional.max_pool2d": max_pool2d,
    "torch.nn.functional.pad": pad,
    "torch.nn.functional.interpolate": interpolate,
    "torch.nn.functional.scaled_dot_product_attention": scaled_dot_product_attention,
    "torchvision.ops.stochastic_depth.stochastic_depth": (stochastic_depth, _stochastic_depth_check),
    "builtins.getattr": (getattr_, _getattr_check),
}

# Tensor methods by name; a name ending in "_" (in place) maps to the name without it.
METHODS: Dict[str, object] = {
    "view": reshape,
    "reshape": reshape,
    "permute": permute,
    "transpose": transpose,
    "swapaxes": transpose,
    "contiguous": contiguous,
    "flatten": flatten,
    "unsqueeze": unsqueeze,
    "squeeze": squeeze,
    "expand": expand,
    "expand_as": expand_as,
    "size": size,
    "dim": dim,
    "numel": numel,
    "chunk": chunk,
    "split": split,
    "unbind": unbind,
    "repeat": repeat,
    "mean": mean,
    "sum": sum_,
    "add": add,
    "sub": sub,
    "mul": mul,
    "div": div,
    "matmul": matmul,
    "bmm": bmm,
    "clamp": clamp,
    "clip": clamp,
    "masked_fill": masked_fill,
    "relu": relu,
    "sigmoid": sigmoid,
    "tanh": tanh,
    "softmax": softmax,
    "log_softmax": log_softmax,
    "exp": ops.exp,
    "sqrt": ops.sqrt,
    "rsqrt": ops.rsqrt,
    "abs": ops.abs,
    "float": to_float,
    "type_as": type_as,
    "pow": pow_,
    "cos": ops.cos,
    "sin": ops.sin,
    "to": to,
    "half": to_half,
}
FUNCTIONS.update(tensors.FUNCTIONS)
METHODS.update(tensors.METHODS)

_INPLACE_OPERATORS = {
    operator.iadd: operator.add,
    operator.isub: operator.sub,
    operator.imul: operator.mul,
    operator.itruediv: operator.truediv,
    operator.imatmul: operator.matmul,
}
# Asked, in order, for a call_function target the table does not hold: ``(adapter, validator)`` or None
# (:mod:`.wrapped` registers the one for ``torch.fx.wrap``ped functions).
FALLBACKS: List[Callable[[Callable], Optional[Tuple[Callable, Optional[Callable]]]]] = []
_BY_ID: Dict[int, Tuple[Callable, Optional[Callable]]] = {}
_UNRESOLVED = set(FUNCTIONS)


def _resolve(name: str):
    module, _, attr = name.rpartition(".")
    top = module.split(".")[0]
    if top not in sys.modules and top != "torch":
        return None  # never import a package (torchvision) only to look an entry up
    try:
        return getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError):
        return None


def _index() -> Dict[int, Tuple[Callable, Optional[Callable]]]:
    for name in sorted(_UNRESOLVED):
        target = _resolve(name)
        if target is not None:
            entry = FUNCTIONS[name]
            _BY_ID[id(target)] = entry if isinstance(entry, tuple) else (entry, None)
            _UNRESOLVED.discard(name)
    return _BY_ID


def _python(target) -> bool:
    return (
        getattr(target, "__module__", None) in PYTHON_MODULES
        or getattr(getattr(target, "__self__", None), "__name__", None) in PYTHON_MODULES
    )


def function_for(target) -> Optional[Tuple[Callable, Optional[Callable]]]:
    """``(adapter, validator)`` for a ``call_function`` target, or None when it is not translated."""
    found = _index().get(id(target))
    if found is not None:
        return found
    if target in _INPLACE_OPERATORS:
        return _INPLACE_OPERATORS[target], None
    if _python(target):
        return target, None
    for fallback in FALLBACKS:
        found = fallback(target)
        if found is not None:
            return found
    return None


def method_for(name: str) -> Optional[Callable]:
    """The adapter for Tensor method ``name`` (``self`` first), or None."""
    plain = name[:-1] if name.endswith("_") and not name.endswith("__") else name
    entry = METHODS.get(plain)
    if entry is None:
        return None

    def call(receiver, *args, **kwargs):
        if not _is_tensor(receiver):  # a method of a plain Python value (a shape tuple)
            return getattr(receiver, name)(*args, **kwargs)
        return entry(receiver, *args, **kwargs)

    return call


def is_inplace(op: str, target, kwargs) -> bool:
    """Whether the call modifies its first argument in PyTorch."""
    if op == "call_method":
        return target.endswith("_") and not target.endswith("__")
    return target in _INPLACE_OPERATORS or target is operator.setitem or bool(kwargs.get("inplace", False))


def api_name(op: str, target) -> str:
    """How an error names the call: ``torch.flatten``, ``Tensor.view``, ``operator.add``."""
    if op == "call_method":
        return f"Tensor.{target}"
    for name in FUNCTIONS:
        if _resolve(name) is target:
            return name
    module = getattr(target, "__module__", None) or getattr(getattr(target, "__self__", None), "__name__", "")
    module = {
        "torch._C._nn": "torch.nn.functional",
        "torch._C._VariableFunctions": "torch",
        "_operator": "operator",
    }.get(module, module)
    return f"{module}.{getattr(target, '__name__', target)}" if module else str(target)


def extend(functions: Dict[str, object], methods: Dict[str, object]) -> None:
    """Adds entries to the table from another module of this package (keys as above)."""
    FUNCTIONS.update(functions)
    METHODS.update(methods)
    _UNRESOLVED.update(functions)
