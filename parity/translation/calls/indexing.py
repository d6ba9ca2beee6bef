"""Selection and masks in the call table: ``x[i]`` and ``x[i] = y``, ``where``, ``gather``,
``index_select``, ``masked_fill``, ``triu`` and ``tril``.

What each adapter closes, as read from mindspore 2.10 on CPU:

* ``where`` with a Python number takes the tensor's dtype (float32 for a float number against an
  integer tensor), as PyTorch's type promotion does.
* The backward of a slice with a step that starts past 0 (``x[:, 1::2]``, Swin's patch merging)
  fails on CPU (``StridedSliceGrad``: ``input memory out of bounds``): indexing takes such slices
  with ``gather``.
* ``x[i] = y`` is computed on a copy: the graph reads the copy where PyTorch reads ``x``.
"""

from __future__ import annotations

from typing import Any, Dict, Union

import mindspore as ms
from mindspore import Tensor, ops

from .arguments import INTEGRAL, Adapter, Entry, is_tensor

__all__ = ["FUNCTIONS", "METHODS"]


def masked_fill(input: Tensor, mask: Tensor, value: Union[Tensor, float]) -> Tensor:
    return ops.masked_fill(input, mask, ms.Tensor(value, input.dtype) if not is_tensor(value) else value)


def triu(input: Tensor, diagonal: int = 0) -> Tensor:
    return ops.triu(input, diagonal)


def tril(input: Tensor, diagonal: int = 0) -> Tensor:
    return ops.tril(input, diagonal)


def _scalar_dtype(value):
    return ms.bool_ if isinstance(value, bool) else ms.int64 if isinstance(value, int) else ms.float32


def _operand(value, other):
    """``value`` as a tensor: a Python number beside a tensor takes the tensor's dtype (float32 for a
    float beside an integer tensor), two numbers float32 if either is a float, as PyTorch promotes."""
    if isinstance(value, ms.Tensor):
        return value
    if isinstance(other, ms.Tensor):
        floating = isinstance(value, float) and other.dtype in INTEGRAL
        return ms.Tensor(value, ms.float32 if floating else other.dtype)
    return ms.Tensor(value, ms.float32 if isinstance(other, float) else _scalar_dtype(value))


def where(
    condition: Tensor, input: Union[Tensor, float, None] = None, other: Union[Tensor, float, None] = None
) -> Tensor:
    if input is None and other is None:  # the indices of the true elements
        return tuple(ops.nonzero(condition).astype(ms.int64)[:, axis] for axis in range(condition.ndim))
    x, y = _operand(input, other), _operand(other, input)
    if x.dtype != y.dtype:
        raise TypeError(f"where of {x.dtype} and {y.dtype} tensors (a type promotion) is not translated")
    return ops.where(condition, x, y)


def where_method(input: Tensor, condition: Tensor, other: Union[Tensor, float]) -> Tensor:
    """``x.where(condition, y)``: ``torch.where(condition, x, y)`` (the receiver is the value taken
    where the condition holds, not the condition)."""
    return where(condition, input, other)


def gather(input: Tensor, dim: int, index: Tensor, *, sparse_grad: bool = False) -> Tensor:
    return ops.gather_elements(input, dim, index)


def index_select(input: Tensor, dim: int, index: Tensor) -> Tensor:
    return ops.gather(input, index, dim)


def getitem(obj: Any, index: Any) -> Any:
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


def setitem(input: Tensor, key: Any, value: Union[Tensor, float]) -> Tensor:
    """``input[key] = value``, computed on a copy: the graph reads the copy where PyTorch reads ``input``."""
    result = input.copy()
    result[key] = value
    return result


FUNCTIONS: Dict[str, Entry] = {
    "torch.where": where,
    "torch.gather": gather,
    "torch.index_select": index_select,
    "torch.masked_fill": masked_fill,
    "torch.triu": triu,
    "torch.tril": tril,
    "operator.getitem": getitem,
    "operator.setitem": setitem,
}
METHODS: Dict[str, Adapter] = {
    "where": where_method,
    "gather": gather,
    "index_select": index_select,
    "masked_fill": masked_fill,
    "triu": ops.triu,
    "tril": ops.tril,
    "__getitem__": getitem,  # a captured tensor indexed by a traced one (CodeGen's ``embed_positions[position_ids]``)
}
