"""Tensors made in ``forward``, in the call table: ``arange``, ``tensor``, ``ones``, ``zeros``,
``full``, their ``_like`` forms and the ``new_*`` methods.

Made tensors take PyTorch's default dtypes: ``arange`` of ints is int64, of any float float32
(``torch.tensor`` of Python numbers likewise); ``ones``/``zeros`` float32, ``full`` its fill
value's (bool, int64 or float32); the ``_like`` forms the input's and ``new_*`` the receiver's.
``empty_like`` and ``new_empty`` are made as zeros: PyTorch leaves their values unspecified, so
code that reads them before writing them has no one answer to match.
"""

from __future__ import annotations

from typing import Dict, Optional, Sequence, Union

import mindspore as ms
import numpy as np
from mindspore import Tensor, ops

from .arguments import Adapter, DType, Entry, Size, as_shape, made_dtype, ms_dtype

__all__ = ["FUNCTIONS", "METHODS"]


def arange(
    start: Union[float, Tensor],
    end: Union[float, Tensor, None] = None,
    step: Union[float, Tensor] = 1,
    *,
    out: object = None,
    dtype: Optional[DType] = None,
    layout: object = None,
    device: object = None,
    pin_memory: bool = False,
    requires_grad: bool = False,
) -> Tensor:
    if end is None:
        start, end = 0, start
    numbers = [v.item() if isinstance(v, ms.Tensor) else v for v in (start, end, step)]
    floats = any(isinstance(v, float) for v in numbers)
    return ops.arange(*numbers, dtype=made_dtype(dtype, ms.float32 if floats else ms.int64))


def tensor(
    data: object,
    *,
    dtype: Optional[DType] = None,
    device: object = None,
    requires_grad: bool = False,
    pin_memory: bool = False,
) -> Tensor:
    """``torch.tensor`` of Python numbers: float32 where any is a float, int64 for ints, bool for bools."""
    if isinstance(data, ms.Tensor):
        return data.astype(made_dtype(dtype, data.dtype))
    array = np.array(data)
    default = ms.bool_ if array.dtype == np.bool_ else ms.float32 if array.dtype.kind == "f" else ms.int64
    return ms.Tensor(array, made_dtype(dtype, default))


def ones(
    *size: Size,
    out: object = None,
    dtype: Optional[DType] = None,
    layout: object = None,
    device: object = None,
    pin_memory: bool = False,
    requires_grad: bool = False,
) -> Tensor:
    return ops.ones(as_shape(size), made_dtype(dtype, ms.float32))


def zeros(
    *size: Size,
    out: object = None,
    dtype: Optional[DType] = None,
    layout: object = None,
    device: object = None,
    pin_memory: bool = False,
    requires_grad: bool = False,
) -> Tensor:
    return ops.zeros(as_shape(size), made_dtype(dtype, ms.float32))


def full(
    size: Sequence[int],
    fill_value: float,
    *,
    out: object = None,
    dtype: Optional[DType] = None,
    layout: object = None,
    device: object = None,
    pin_memory: bool = False,
    requires_grad: bool = False,
) -> Tensor:
    if dtype is None:
        dtype = ms.bool_ if isinstance(fill_value, bool) else ms.int64 if isinstance(fill_value, int) else ms.float32
    else:
        dtype = ms_dtype(dtype)
    return ops.full(tuple(size), fill_value, dtype=dtype)


def ones_like(
    input: Tensor,
    *,
    dtype: Optional[DType] = None,
    layout: object = None,
    device: object = None,
    pin_memory: bool = False,
    requires_grad: bool = False,
    memory_format: object = None,
) -> Tensor:
    return ops.ones(tuple(input.shape), made_dtype(dtype, input.dtype))


def zeros_like(
    input: Tensor,
    *,
    dtype: Optional[DType] = None,
    layout: object = None,
    device: object = None,
    pin_memory: bool = False,
    requires_grad: bool = False,
    memory_format: object = None,
) -> Tensor:
    return ops.zeros(tuple(input.shape), made_dtype(dtype, input.dtype))


def full_like(
    input: Tensor,
    fill_value: float,
    *,
    dtype: Optional[DType] = None,
    layout: object = None,
    device: object = None,
    pin_memory: bool = False,
    requires_grad: bool = False,
    memory_format: object = None,
) -> Tensor:
    return ops.full(tuple(input.shape), fill_value, dtype=made_dtype(dtype, input.dtype))


def new_zeros(
    self: Tensor,
    *size: Size,
    dtype: Optional[DType] = None,
    layout: object = None,
    device: object = None,
    pin_memory: bool = False,
    requires_grad: bool = False,
) -> Tensor:
    return ops.zeros(as_shape(size), made_dtype(dtype, self.dtype))


def new_ones(
    self: Tensor,
    *size: Size,
    dtype: Optional[DType] = None,
    layout: object = None,
    device: object = None,
    pin_memory: bool = False,
    requires_grad: bool = False,
) -> Tensor:
    return ops.ones(as_shape(size), made_dtype(dtype, self.dtype))


def new_full(
    self: Tensor,
    size: Sequence[int],
    fill_value: float,
    *,
    dtype: Optional[DType] = None,
    layout: object = None,
    device: object = None,
    pin_memory: bool = False,
    requires_grad: bool = False,
) -> Tensor:
    return ops.full(tuple(size), fill_value, dtype=made_dtype(dtype, self.dtype))


def _size_by_keyword(adapter: Adapter) -> Adapter:
    """``adapter`` that also takes its size by keyword, ``x.new_ones(size=(2, 3))`` (Longformer)."""

    def call(self: Tensor, *size: Size, **kwargs) -> Tensor:
        if "size" in kwargs:
            size = (kwargs.pop("size"),)
        return adapter(self, *size, **kwargs)

    return call


FUNCTIONS: Dict[str, Entry] = {
    "torch.arange": arange,
    "torch.tensor": tensor,
    "torch.ones": ones,
    "torch.zeros": zeros,
    "torch.full": full,
    "torch.ones_like": ones_like,
    "torch.zeros_like": zeros_like,
    "torch.full_like": full_like,
    "torch.empty_like": zeros_like,  # unspecified values in PyTorch: zeros here (DeepSeek-V2 writes every row)
}
METHODS: Dict[str, Adapter] = {
    "new_zeros": _size_by_keyword(new_zeros),
    "new_ones": _size_by_keyword(new_ones),
    "new_full": new_full,
    "new_empty": _size_by_keyword(new_zeros),  # as torch.empty_like
}
