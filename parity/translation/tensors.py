"""The call table's second part: what transformers' and vision models' ``forward`` calls beyond the
layers as functions of :mod:`.functions`: tensors made in ``forward`` (``arange``, ``ones``,
``zeros``, ``full_like``, ``new_zeros``), selection (``where``, ``gather``, ``index_select``),
scans and repeats (``cumsum``, ``repeat_interleave``, ``roll``, ``flip``), products (``einsum``,
``baddbmm``, ``outer``), comparisons and casts as methods, and the functional norms
(``F.batch_norm``, ``F.group_norm``, ``F.normalize``). The list is what a runtime capture of
``forward`` (``parity scan --module``) showed LLaMA, Qwen2, GPT-2, BERT, T5, BART, CLIP, ViT and
wav2vec2 (transformers 4.57.1), torchvision's ViT and Swin and timm's EfficientNet calling: masks
(``torch.all``, ``torch.diff`` of position ids, ``torch.tensor``), rotary tables, grouped heads. :mod:`.functions` merges :data:`FUNCTIONS`
and :data:`METHODS` into its tables; the same conventions hold (PyTorch's argument names and
defaults; in-place forms computed out of place).

What each adapter closes, as read from mindspore 2.10 on CPU:

* Made tensors take PyTorch's default dtypes: ``arange`` of ints is int64, of any float float32
  (``torch.tensor`` of Python numbers likewise);
  ``ones``/``zeros``/``full`` float32; ``new_*`` the receiver's dtype. ``cumsum`` of an integer or
  bool tensor is int64, as in PyTorch. ``where`` with a Python number takes the tensor's dtype
  (float32 for a float number against an integer tensor), as PyTorch's type promotion does.
* ``ops.roll`` and ``ops.einsum`` have no CPU kernel (``The kernel Roll unregistered``): ``roll`` is two
  splits joined, ``einsum`` is written out in :mod:`.einsum`.
* The backward of a slice with a step that starts past 0 (``x[:, 1::2]``, Swin's patch merging) and
  of ``ops.narrow`` fails on CPU (``StridedSliceGrad``: ``input memory out of bounds``): indexing
  takes such slices with ``gather``, ``roll`` splits.
* ``F.batch_norm`` goes through the ``BatchNorm`` primitive ``nn.BatchNorm2d`` uses, whose
  ``momentum`` is PyTorch's (the weight of the new batch; ``nn.BatchNorm2d`` takes the other
  convention, known mismatch ``batchnorm2d-momentum-convention``) and which updates the running
  statistics in place, with the unbiased variance, as PyTorch does. It takes 2-d and 4-d inputs:
  others are reshaped to 4-d. ``momentum=None`` (a cumulative average) is refused, as for the layer
  (``batchnorm2d-momentum-none-unsupported``).
* ``F.group_norm`` is ``ops.group_norm`` (its kernel is on CPU, unlike ``ops.layer_norm``'s).
"""

from __future__ import annotations

import collections

import mindspore as ms
import numpy as np
from mindspore import ops

from .einsum import einsum

__all__ = ["FUNCTIONS", "METHODS"]

_DTYPES = {
    "float32": ms.float32,
    "float64": ms.float64,
    "float16": ms.float16,
    "bfloat16": ms.bfloat16,
    "int64": ms.int64,
    "int32": ms.int32,
    "int16": ms.int16,
    "int8": ms.int8,
    "uint8": ms.uint8,
    "bool": ms.bool_,
}
_INTEGRAL = (ms.int64, ms.int32, ms.int16, ms.int8, ms.uint8, ms.bool_)


def _dtype(dtype, default=None):
    """A torch dtype (or None, or already MindSpore's) as MindSpore's."""
    if dtype is None:
        return default
    if isinstance(dtype, ms.dtype.Type):
        return dtype
    name = str(dtype).replace("torch.", "")
    if name not in _DTYPES:
        raise TypeError(f"dtype {dtype} has no MindSpore counterpart here")
    return _DTYPES[name]


def _sizes(size):
    return tuple(size[0]) if len(size) == 1 and isinstance(size[0], (tuple, list)) else tuple(size)


def _scalar_dtype(value):
    return ms.bool_ if isinstance(value, bool) else ms.int64 if isinstance(value, int) else ms.float32


# --- made tensors ---------------------------------------------------------------------------


def arange(
    start, end=None, step=1, *, out=None, dtype=None, layout=None, device=None, pin_memory=False, requires_grad=False
):
    if end is None:
        start, end = 0, start
    numbers = [v.item() if isinstance(v, ms.Tensor) else v for v in (start, end, step)]
    floats = any(isinstance(v, float) for v in numbers)
    return ops.arange(*numbers, dtype=_dtype(dtype, ms.float32 if floats else ms.int64))


def tensor(data, *, dtype=None, device=None, requires_grad=False, pin_memory=False):
    """``torch.tensor`` of Python numbers: float32 where any is a float, int64 for ints, bool for bools."""
    if isinstance(data, ms.Tensor):
        return data.astype(_dtype(dtype, data.dtype))
    array = np.array(data)
    default = ms.bool_ if array.dtype == np.bool_ else ms.float32 if array.dtype.kind == "f" else ms.int64
    return ms.Tensor(array, _dtype(dtype, default))


def ones(*size, out=None, dtype=None, layout=None, device=None, pin_memory=False, requires_grad=False):
    return ops.ones(_sizes(size), _dtype(dtype, ms.float32))


def zeros(*size, out=None, dtype=None, layout=None, device=None, pin_memory=False, requires_grad=False):
    return ops.zeros(_sizes(size), _dtype(dtype, ms.float32))


def ones_like(
    input, *, dtype=None, layout=None, device=None, pin_memory=False, requires_grad=False, memory_format=None
):
    return ops.ones(tuple(input.shape), _dtype(dtype, input.dtype))


def zeros_like(
    input, *, dtype=None, layout=None, device=None, pin_memory=False, requires_grad=False, memory_format=None
):
    return ops.zeros(tuple(input.shape), _dtype(dtype, input.dtype))


def full_like(
    input,
    fill_value,
    *,
    dtype=None,
    layout=None,
    device=None,
    pin_memory=False,
    requires_grad=False,
    memory_format=None,
):
    return ops.full(tuple(input.shape), fill_value, dtype=_dtype(dtype, input.dtype))


def new_zeros(self, *size, dtype=None, layout=None, device=None, pin_memory=False, requires_grad=False):
    return ops.zeros(_sizes(size), _dtype(dtype, self.dtype))


def new_ones(self, *size, dtype=None, layout=None, device=None, pin_memory=False, requires_grad=False):
    return ops.ones(_sizes(size), _dtype(dtype, self.dtype))


def new_full(self, size, fill_value, *, dtype=None, layout=None, device=None, pin_memory=False, requires_grad=False):
    return ops.full(tuple(size), fill_value, dtype=_dtype(dtype, self.dtype))


# --- selection ------------------------------------------------------------------------------


def _operand(value, other):
    """``value`` as a tensor: a Python number beside a tensor takes the tensor's dtype (float32 for a
    float beside an integer tensor), two numbers float32 if either is a float, as PyTorch promotes."""
    if isinstance(value, ms.Tensor):
        return value
    if isinstance(other, ms.Tensor):
        floating = isinstance(value, float) and other.dtype in _INTEGRAL
        return ms.Tensor(value, ms.float32 if floating else other.dtype)
    return ms.Tensor(value, ms.float32 if isinstance(other, float) else _scalar_dtype(value))


def where(condition, input=None, other=None):
    if input is None and other is None:
        raise TypeError("torch.where(condition) (the indices of the true elements) is not translated")
    x, y = _operand(input, other), _operand(other, input)
    if x.dtype != y.dtype:
        raise TypeError(f"where of {x.dtype} and {y.dtype} tensors (a type promotion) is not translated")
    return ops.where(condition, x, y)


def gather(input, dim, index, *, sparse_grad=False):
    return ops.gather_elements(input, dim, index)


def index_select(input, dim, index):
    return ops.gather(input, index, dim)


def getitem(obj, index):
    """``x[index]``; on a tensor, a slice with a step (``x[..., 1::2, 0::2, :]``) is taken with
    ``gather`` first: MindSpore's backward of such a slice fails on CPU (``StridedSliceGrad``:
    ``input memory out of bounds``) unless it starts at 0, and so does ``narrow``'s."""
    if not isinstance(obj, ms.Tensor):
        return obj[index]
    items = index if isinstance(index, tuple) else (index,)
    if not any(isinstance(i, slice) and i.step not in (None, 1) for i in items) or any(
        not isinstance(i, (slice, int, type(None), type(Ellipsis))) or isinstance(i, bool) for i in items
    ):
        return obj[index]
    consuming = sum(1 for i in items if i is not None and i is not Ellipsis)
    axis, plain = 0, []
    for item in items:
        if item is Ellipsis:
            axis += obj.ndim - consuming
        elif isinstance(item, slice) and item.step not in (None, 1):
            picked = list(range(*item.indices(obj.shape[axis])))
            obj = ops.gather(obj, ms.Tensor(picked, ms.int64), axis)
            item = slice(None)
        if item is not None and item is not Ellipsis:
            axis += 1
        plain.append(item)
    return obj[tuple(plain)]


# --- scans, repeats, rolls ------------------------------------------------------------------


def cumsum(input, dim, *, dtype=None):
    if dtype is None and input.dtype in _INTEGRAL:
        dtype = ms.int64
    dtype = _dtype(dtype)
    return ops.cumsum(input if dtype is None else input.astype(dtype), dim)


def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):
    if repeats is None:
        raise TypeError("repeat_interleave(repeats) (one tensor: the indices repeated) is not translated")
    if dim is None:
        input, dim = ops.reshape(input, (-1,)), 0
    return ops.repeat_interleave(input, repeats, dim)


def roll(input, shifts, dims=None):
    if dims is None:
        return ops.reshape(roll(ops.reshape(input, (-1,)), shifts, 0), input.shape)
    shifts = tuple(shifts) if isinstance(shifts, (tuple, list)) else (shifts,)
    dims = tuple(dims) if isinstance(dims, (tuple, list)) else (dims,)
    if len(shifts) != len(dims):
        raise TypeError(f"roll: {len(shifts)} shifts for {len(dims)} dims")
    for shift, dim in zip(shifts, dims):
        length = input.shape[dim]
        shift = shift % length if length else 0
        if shift:  # split, not narrow: narrow's backward fails on CPU (StridedSliceGrad)
            kept, moved = ops.split(input, [length - shift, shift], dim)
            input = ops.cat((moved, kept), dim)
    return input


def flip(input, dims):
    return ops.flip(input, tuple(dims) if isinstance(dims, (tuple, list)) else (dims,))


# --- products -------------------------------------------------------------------------------


def scaled_sum(product, input, beta=1, alpha=1):
    """``beta * input + alpha * product``, as ``torch.addmm``/``baddbmm`` compute it (a factor of 1 is
    not multiplied, so the rounding is PyTorch's)."""
    product = product if alpha == 1 else alpha * product
    return product + (input if beta == 1 else beta * input)


def baddbmm(input, batch1, batch2, *, beta=1, alpha=1):
    return scaled_sum(ops.bmm(batch1, batch2), input, beta, alpha)


def outer(input, vec2):
    return ops.outer(input, vec2)


# --- functional norms -----------------------------------------------------------------------


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-5):
    if momentum is None:
        raise TypeError("batch_norm(momentum=None) (a cumulative moving average) has no MindSpore counterpart")
    channels = input.shape[1]
    weight = ops.ones((channels,), input.dtype) if weight is None else weight
    bias = ops.zeros((channels,), input.dtype) if bias is None else bias
    if running_mean is None or running_var is None:
        if not training:
            raise TypeError("batch_norm without running statistics needs training=True (PyTorch raises too)")
        return _batch_statistics_norm(input, weight, bias, eps)
    shape = input.shape
    flat = input if input.ndim in (2, 4) else ops.reshape(input, (shape[0], channels, -1, 1))
    out = ops.BatchNorm(is_training=bool(training), epsilon=float(eps), momentum=float(momentum))(
        flat, weight, bias, running_mean, running_var
    )[0]
    return out if input.ndim in (2, 4) else ops.reshape(out, shape)


def _batch_statistics_norm(input, weight, bias, eps):
    axes = (0,) + tuple(range(2, input.ndim))
    mean = ops.mean(input, axes, True)
    var = ops.mean(ops.square(input - mean), axes, True)
    view = (1, -1) + (1,) * (input.ndim - 2)
    return (input - mean) * ops.rsqrt(var + eps) * ops.reshape(weight, view) + ops.reshape(bias, view)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    return ops.group_norm(input, num_groups, weight, bias, float(eps))


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    norm = ops.norm(input, p, dim, True)
    return input / ops.clamp(norm, min=eps)


# --- methods that are operators or casts ----------------------------------------------------


def _cast(dtype):
    def cast(input, memory_format=None):
        return input.astype(dtype)

    return cast


def clone(input, *, memory_format=None):
    return input.copy() if hasattr(input, "copy") else input


def detach(input):
    return ops.stop_gradient(input)


_Reduced = collections.namedtuple("_Reduced", ["values", "indices"])


def _extreme(name):
    """``torch.max``/``min``: of all elements, elementwise of two tensors, or along ``dim`` as
    ``(values, indices)``."""
    whole, pairwise, along = {"max": (ops.amax, ops.maximum, ops.max), "min": (ops.amin, ops.minimum, ops.min)}[name]

    def compute(input, dim=None, keepdim=False):
        if isinstance(dim, ms.Tensor):
            return pairwise(input, dim)
        if dim is None:
            return whole(input)
        return _Reduced(*along(input, dim, keepdim))

    return compute


def argmax(input, dim=None, keepdim=False):
    return ops.argmax(input, dim, keepdim)


def any_(input, dim=None, keepdim=False):
    return ops.any(input, dim, keepdim)


def all_(input, dim=None, keepdim=False):
    return ops.all(input, dim, keepdim)


def diff(input, n=1, dim=-1, prepend=None, append=None):
    if prepend is not None or append is not None:
        input = ops.cat([t for t in (prepend, input, append) if t is not None], dim)
    for _ in range(n):
        length = input.shape[dim]
        later, earlier = ops.split(input, [1, length - 1], dim)[1], ops.split(input, [length - 1, 1], dim)[0]
        input = ops.logical_xor(later, earlier) if input.dtype == ms.bool_ else later - earlier
    return input


def unflatten(input, dim, sizes):
    dim = dim % input.ndim
    return ops.reshape(input, tuple(input.shape[:dim]) + tuple(sizes) + tuple(input.shape[dim + 1 :]))


def _binary(name):
    method = getattr(ms.Tensor, f"__{name}__")

    def compute(input, other):
        return method(input, other)

    return compute


FUNCTIONS = {
    "torch.arange": arange,
    "torch.ones": ones,
    "torch.zeros": zeros,
    "torch.ones_like": ones_like,
    "torch.zeros_like": zeros_like,
    "torch.full_like": full_like,
    "torch.where": where,
    "torch.gather": gather,
    "torch.index_select": index_select,
    "torch.cumsum": cumsum,
    "torch.repeat_interleave": repeat_interleave,
    "torch.roll": roll,
    "torch.flip": flip,
    "torch.einsum": einsum,
    "torch.baddbmm": baddbmm,
    "torch.outer": outer,
    "torch.neg": ops.neg,
    "torch.log": ops.log,
    "torch.erf": ops.erf,
    "torch.square": ops.square,
    "torch.maximum": ops.maximum,
    "torch.minimum": ops.minimum,
    "torch.max": _extreme("max"),
    "torch.min": _extreme("min"),
    "torch.argmax": argmax,
    "torch.logical_not": ops.logical_not,
    "torch.logical_and": ops.logical_and,
    "torch.logical_or": ops.logical_or,
    "torch.nn.functional.batch_norm": batch_norm,
    "torch.nn.functional.group_norm": group_norm,
    "torch.nn.functional.normalize": normalize,
    "torch.unflatten": unflatten,
    "operator.getitem": getitem,
    "torch.all": all_,
    "torch.any": any_,
    "torch.diff": diff,
    "torch.tensor": tensor,
}

METHODS = {
    "new_zeros": new_zeros,
    "new_ones": new_ones,
    "new_full": new_full,
    "where": where,
    "gather": gather,
    "index_select": index_select,
    "cumsum": cumsum,
    "repeat_interleave": repeat_interleave,
    "roll": roll,
    "flip": flip,
    "baddbmm": baddbmm,
    "outer": outer,
    "neg": ops.neg,
    "log": ops.log,
    "square": ops.square,
    "max": _extreme("max"),
    "min": _extreme("min"),
    "argmax": argmax,
    "any": any_,
    "all": all_,
    "unflatten": unflatten,
    "triu": ops.triu,
    "tril": ops.tril,
    "long": _cast(ms.int64),
    "int": _cast(ms.int32),
    "bool": _cast(ms.bool_),
    "double": _cast(ms.float64),
    "clone": clone,
    "detach": detach,
    "logical_not": ops.logical_not,
    "eq": _binary("eq"),
    "ne": _binary("ne"),
    "lt": _binary("lt"),
    "le": _binary("le"),
    "gt": _binary("gt"),
    "ge": _binary("ge"),
    "diff": diff,
    "__and__": _binary("and"),
    "__or__": _binary("or"),
    "__xor__": _binary("xor"),
}
