"""What transformer ``forward``s compute besides layers and beyond :mod:`.tensors`, for the call table
of :mod:`.functions`: comparisons as functions (``torch.eq``...), ``F.embedding`` (its
``padding_idx`` row gets no gradient), item assignment (``x[i] = y``, computed on a copy),
``torch.clone``, ``argmin`` and ``Tensor.type(dtype)``.
"""

from __future__ import annotations

import mindspore as ms
from mindspore import ops

from .functions import _ms_dtype, extend

__all__ = []


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False, sparse=False):
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


def type_(input, dtype=None, non_blocking=False):
    if dtype is None:
        raise TypeError("Tensor.type() (the type's name) is not translated")
    return input.astype(_ms_dtype(dtype))


def _compare(op):
    def run(input, other):
        return op(input, other)

    return run


# Module-level tables, so that ``parity scan`` reads them from the source as it reads functions.py's.
FUNCTIONS = {
    "torch.eq": _compare(ops.equal),
    "torch.ne": _compare(ops.ne),
    "torch.gt": _compare(ops.gt),
    "torch.lt": _compare(ops.lt),
    "torch.ge": _compare(ops.ge),
    "torch.le": _compare(ops.le),
    "torch.nn.functional.embedding": embedding,
    "operator.setitem": setitem,
    "torch.clone": clone,
    "torch.argmin": _arg_reduce(ops.argmin),
}
METHODS = {"argmin": _arg_reduce(ops.argmin), "type": type_, "erf": ops.erf}
extend(FUNCTIONS, METHODS)
