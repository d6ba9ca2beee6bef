"""PyTorch's arguments as the call table's adapters take them: whether a value is a MindSpore
tensor, sizes given as varargs or as one sequence, dtypes by torch's names and back, and the
stand-in a traced value's ``.device`` reads as.

Two dtype tables, as the adapters have them: int16 is known to a made tensor
(``torch.zeros(..., dtype=...)``, ``arange``, ``new_*``, ``cumsum(dtype=...)``: :func:`made_dtype`)
only, not to a cast (``Tensor.to``, ``Tensor.type``, the ``dtype=`` of ``mean``, ``sum``,
``softmax`` and ``full``: :func:`ms_dtype`) nor to a ``.dtype`` read (:func:`torch_dtype`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, List, Optional, Sequence, Tuple, Union

import mindspore as ms
import torch

if TYPE_CHECKING:
    from typing_extensions import TypeGuard

__all__ = ["is_tensor", "as_shape", "ms_dtype", "made_dtype", "torch_dtype", "INTEGRAL", "DEVICE", "is_device"]


# A dtype as PyTorch's calls give it (a torch dtype), or MindSpore's.
DType = Union[torch.dtype, ms.dtype.Type]
# A size as PyTorch's calls give it: an int for every dimension, or one per dimension.
Size = Union[int, Tuple[int, ...], List[int]]
# The call table's entries (see .table): an adapter takes PyTorch's arguments; a validator takes a
# node's constant (args, kwargs) and says why the call cannot be translated (None: it can).
Adapter = Callable[..., Any]
Validator = Callable[[tuple, dict], Optional[str]]
Entry = Union[Adapter, Tuple[Adapter, Validator]]


def is_tensor(value: object) -> TypeGuard[ms.Tensor]:
    return isinstance(value, ms.Tensor)


def as_shape(sizes: Sequence[Any]) -> Tuple[int, ...]:
    """``view(2, 3)`` and ``view((2, 3))`` alike; a one-element tensor as a size is its integer, as
    PyTorch takes it (Longformer's ``torch.div(n, w, rounding_mode="trunc")``)."""
    if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)):
        sizes = sizes[0]
    return tuple(int(s.asnumpy().reshape(-1)[0]) if isinstance(s, ms.Tensor) and s.size == 1 else s for s in sizes)


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
_MADE_DTYPES = {**_DTYPES, "int16": ms.int16}
INTEGRAL = (ms.int64, ms.int32, ms.int16, ms.int8, ms.uint8, ms.bool_)


def ms_dtype(dtype: Optional[DType]) -> Optional[ms.dtype.Type]:
    """A torch dtype (or None, or already MindSpore's) as MindSpore's; refuses what has no counterpart."""
    if dtype is None or isinstance(dtype, ms.dtype.Type):
        return dtype
    name = str(dtype).replace("torch.", "")
    if name not in _DTYPES:
        raise TypeError(f"dtype {dtype} has no MindSpore counterpart here")
    return _DTYPES[name]


def made_dtype(dtype: Optional[DType], default: Optional[ms.dtype.Type] = None) -> Optional[ms.dtype.Type]:
    """The dtype of a made tensor: a torch dtype (or already MindSpore's) as MindSpore's, ``default``
    for None."""
    if dtype is None:
        return default
    if isinstance(dtype, ms.dtype.Type):
        return dtype
    name = str(dtype).replace("torch.", "")
    if name not in _MADE_DTYPES:
        raise TypeError(f"dtype {dtype} has no MindSpore counterpart here")
    return _MADE_DTYPES[name]


_TORCH_DTYPES = {mindspore_dtype: getattr(torch, name) for name, mindspore_dtype in _DTYPES.items()}


def torch_dtype(tensor: ms.Tensor) -> torch.dtype:
    """A MindSpore tensor's dtype, as the torch dtype of the same name that the graph compares it with."""
    if tensor.dtype not in _TORCH_DTYPES:
        raise TypeError(f"dtype {tensor.dtype} has no PyTorch counterpart here")
    return _TORCH_DTYPES[tensor.dtype]


class _Device:
    """What a traced value's ``.device`` reads as: MindSpore places tensors by its context, so the
    only use translated is handing it back to ``Tensor.to``, which ignores it."""

    def __repr__(self) -> str:
        return "<the device of a MindSpore tensor>"


DEVICE = _Device()


def is_device(value: object) -> bool:
    return isinstance(value, (_Device, torch.device, str, int)) and not isinstance(value, bool)
