"""What transformer ``forward``s compute besides layers, for the call table of :mod:`.functions`:
tensors made inside ``forward`` (``arange``, ``ones``/``zeros`` and their ``*_like``/``new_*`` forms),
selections (``where``, ``gather``, ``index_select``), running sums, comparisons and reductions of
masks (``all``, ``any``), and casts by method (``long``, ``bool``...).

Differences closed, as read from mindspore 2.10:

* ``torch.arange(n)`` counts in int64 (a float bound: float32); ``ops.arange`` takes a MindSpore dtype.
* ``Tensor.new_ones(size, dtype=...)`` makes a tensor of the receiver's dtype unless told otherwise.
* ``torch.where(cond, x, y)`` takes Python numbers on either side; ``ops.where`` takes tensors
  (a number becomes a tensor of the other side's dtype, as PyTorch promotes it).
* ``Tensor.all()``/``any()`` of a bool tensor, with or without ``dim``.
"""

from __future__ import annotations

import mindspore as ms
from mindspore import ops

from .functions import _ms_dtype, _sizes, extend

__all__ = []


def _float(value) -> bool:
    return isinstance(value, float)


def arange(start, end=None, step=1, *, out=None, dtype=None, layout=None, device=None, pin_memory=False,
           requires_grad=False):
    if end is None:
        start, end = 0, start
    if dtype is None:
        dtype = ms.float32 if any(_float(v) for v in (start, end, step)) else ms.int64
    return ops.arange(start, end, step, dtype=_ms_dtype(dtype))


def _filled(value):
    def make(*size, out=None, dtype=None, layout=None, device=None, pin_memory=False, requires_grad=False):
        return ops.full(_sizes(size), value, dtype=_ms_dtype(dtype) or ms.float32)

    return make


def _filled_like(value):
    def make(input, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None):
        return ops.full(tuple(input.shape), value, dtype=_ms_dtype(dtype) or input.dtype)

    return make


def _new_filled(value):
    def make(input, *size, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False):
        return ops.full(_sizes(size), value, dtype=_ms_dtype(dtype) or input.dtype)

    return make


def full_like(input, fill_value, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None):
    return ops.full(tuple(input.shape), fill_value, dtype=_ms_dtype(dtype) or input.dtype)


def new_full(input, size, fill_value, *, dtype=None, device=None, requires_grad=False, layout=None,
             pin_memory=False):
    return ops.full(tuple(size), fill_value, dtype=_ms_dtype(dtype) or input.dtype)


def where(condition, input=None, other=None):
    if input is None and other is None:
        raise TypeError("torch.where(condition) (the indices) is not translated")
    if not isinstance(input, ms.Tensor):
        input = ms.Tensor(input, other.dtype if isinstance(other, ms.Tensor) else None)
    if not isinstance(other, ms.Tensor):
        other = ms.Tensor(other, input.dtype)
    return ops.where(condition, input, other)


def _reduce_bool(reduce):
    def run(input, dim=None, keepdim=False):
        values = input if input.dtype == ms.bool_ else input != 0
        return reduce(values, dim, keepdim) if dim is not None else reduce(values)

    return run


def cumsum(input, dim, *, dtype=None):
    if dtype is not None:
        input = input.astype(_ms_dtype(dtype))
    elif input.dtype in (ms.bool_, ms.int32, ms.int8, ms.uint8, ms.int16):  # PyTorch sums integers in int64
        input = input.astype(ms.int64)
    return ops.cumsum(input, dim)


def gather(input, dim, index, *, sparse_grad=False):
    return ops.gather_elements(input, dim, index)


def index_select(input, dim, index):
    return ops.gather(input, index, dim)


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
              sparse=False):
    """Rows of ``weight``; the ``padding_idx`` row gets no gradient, as in PyTorch."""
    if max_norm is not None or scale_grad_by_freq:
        raise TypeError("embedding(max_norm=..., scale_grad_by_freq=True) is not translated")
    if padding_idx is not None:
        row = ops.arange(weight.shape[0]).reshape(-1, 1) == (padding_idx % weight.shape[0])
        weight = ops.where(row, ops.stop_gradient(weight), weight)
    return ops.gather(weight, input, 0)


def setitem(input, key, value):
    """``input[key] = value``, computed on a copy: the graph reads the copy where PyTorch reads ``input``."""
    result = input.copy()
    result[key] = value
    return result


def clone(input, *, memory_format=None):
    return input.copy()


def _arg_reduce(reduce):
    def run(input, dim=None, keepdim=False):
        if dim is None:
            return reduce(input.reshape(-1), 0, False).astype(ms.int64)
        return reduce(input, dim, keepdim).astype(ms.int64)  # PyTorch's indices are int64

    return run


def _extreme(reduce, pairwise, arg_reduce):
    """``torch.max``/``min``: of all elements, elementwise against a tensor, or along ``dim`` as
    ``(values, indices)``."""

    def run(input, dim=None, keepdim=False, *, out=None):
        if isinstance(dim, ms.Tensor):
            return pairwise(input, dim)
        if dim is None:
            return reduce(input)
        return reduce(input, dim, keepdim), arg_reduce(input, dim, keepdim)

    return run


def _cast(dtype):
    def run(input, memory_format=None):
        return input.astype(dtype)

    return run


def type_(input, dtype=None, non_blocking=False):
    if dtype is None:
        raise TypeError("Tensor.type() (the type's name) is not translated")
    return input.astype(_ms_dtype(dtype))


def _compare(op):
    def run(input, other):
        return op(input, other)

    return run


extend(
    {"torch.arange": arange, "torch.ones": _filled(1), "torch.zeros": _filled(0), "torch.ones_like": _filled_like(1),
     "torch.zeros_like": _filled_like(0), "torch.full_like": full_like, "torch.where": where,
     "torch.all": _reduce_bool(ops.all), "torch.any": _reduce_bool(ops.any), "torch.cumsum": cumsum,
     "torch.gather": gather, "torch.index_select": index_select,
     "torch.eq": _compare(ops.equal), "torch.ne": _compare(ops.ne), "torch.gt": _compare(ops.gt),
     "torch.lt": _compare(ops.lt), "torch.ge": _compare(ops.ge), "torch.le": _compare(ops.le),
     "torch.logical_and": ops.logical_and, "torch.logical_or": ops.logical_or, "torch.logical_not": ops.logical_not,
     "torch.neg": ops.neg, "torch.erf": ops.erf, "torch.log": ops.log, "torch.maximum": ops.maximum,
     "torch.minimum": ops.minimum, "torch.nn.functional.embedding": embedding,
     "operator.setitem": setitem, "torch.clone": clone, "torch.argmax": _arg_reduce(ops.argmax),
     "torch.argmin": _arg_reduce(ops.argmin),
     "torch.max": _extreme(ops.amax, ops.maximum, _arg_reduce(ops.argmax)),
     "torch.min": _extreme(ops.amin, ops.minimum, _arg_reduce(ops.argmin))},
    {"clone": clone, "argmax": _arg_reduce(ops.argmax), "argmin": _arg_reduce(ops.argmin),
     "max": _extreme(ops.amax, ops.maximum, _arg_reduce(ops.argmax)),
     "min": _extreme(ops.amin, ops.minimum, _arg_reduce(ops.argmin)), "new_ones": _new_filled(1),
     "new_zeros": _new_filled(0), "new_full": new_full, "all": _reduce_bool(ops.all),
     "any": _reduce_bool(ops.any), "cumsum": cumsum, "gather": gather, "index_select": index_select,
     "long": _cast(ms.int64), "int": _cast(ms.int32), "bool": _cast(ms.bool_), "double": _cast(ms.float64),
     "type": type_, "eq": _compare(ops.equal), "ne": _compare(ops.ne), "gt": _compare(ops.gt),
     "lt": _compare(ops.lt), "ge": _compare(ops.ge), "le": _compare(ops.le), "neg": ops.neg, "erf": ops.erf,
     "log": ops.log, "logical_not": ops.logical_not, "where": where},
)
