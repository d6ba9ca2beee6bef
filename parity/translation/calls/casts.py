"""Casts and copies in the call table: ``Tensor.to``, ``type``, ``type_as``, ``float``, ``half``,
``double``, ``long``, ``int``, ``bool``, ``byte``, ``char``, ``short``, ``bfloat16``, ``clone``,
``detach`` and ``is_floating_point``.

``Tensor.to`` casts to a dtype (given, or another tensor's) and ignores a device: a MindSpore tensor
is where MindSpore's context puts it, and a traced value's ``.device`` reads as
:data:`.arguments.DEVICE`, a stand-in that only ``to`` accepts.
"""

from __future__ import annotations

from typing import Dict, Optional, Union

import mindspore as ms
import torch
from mindspore import Tensor, ops

from .arguments import Adapter, DType, Entry, is_device, is_tensor, ms_dtype

__all__ = ["FUNCTIONS", "METHODS"]


def to(
    input: Tensor,
    *args: object,
    dtype: Optional[DType] = None,
    device: object = None,
    non_blocking: bool = False,
    copy: bool = False,
    memory_format: object = None,
) -> Tensor:
    """``Tensor.to(dtype)``, ``to(other)``, ``to(device)``, ``to(device, dtype)``, ``to(dtype=...)``:
    a cast to the dtype; the device, ``non_blocking``, ``copy`` and ``memory_format`` change no value."""
    for arg in args:
        if is_tensor(arg):
            dtype = arg.dtype
        elif isinstance(arg, (torch.dtype, ms.dtype.Type)):
            dtype = arg
        elif not (is_device(arg) or isinstance(arg, bool)):  # a bool: non_blocking or copy
            raise TypeError(f"Tensor.to({arg!r}) is not translated (only a dtype, a device or a tensor)")
    if device is not None and not is_device(device):
        raise TypeError(f"Tensor.to(device={device!r}) is not translated")
    dtype = ms_dtype(dtype)
    return input if dtype is None or dtype == input.dtype else input.astype(dtype)


def to_float(input: Tensor, memory_format: object = None) -> Tensor:
    return input.astype(ms.float32)


def to_half(input: Tensor, memory_format: object = None) -> Tensor:
    return input.astype(ms.float16)


def type_as(input: Tensor, other: Tensor) -> Tensor:
    return input.astype(other.dtype)


def type_(input: Tensor, dtype: Optional[DType] = None, non_blocking: bool = False) -> Tensor:
    if dtype is None:
        raise TypeError("Tensor.type() (the type's name) is not translated")
    return input.astype(ms_dtype(dtype))


def _cast(dtype):
    def cast(input, memory_format=None):
        return input.astype(dtype)

    return cast


def clone(input: Tensor, *, memory_format: object = None) -> Tensor:
    return input.copy()


def detach(input: Tensor) -> Tensor:
    return ops.stop_gradient(input)


def item(input: Tensor) -> Union[bool, int, float]:
    """The Python number a one-element tensor holds (a bool for a bool tensor, as PyTorch's)."""
    value = input.asnumpy().reshape(-1)
    if value.size != 1:
        raise ValueError(f"item() of a tensor of {value.size} elements")
    return value[0].item()


def is_floating_point(input: Tensor) -> bool:
    return input.dtype in (ms.float16, ms.bfloat16, ms.float32, ms.float64)


FUNCTIONS: Dict[str, Entry] = {
    "torch.is_floating_point": is_floating_point,
    "torch.clone": clone,
    "torch.alias_copy": clone,
}
METHODS: Dict[str, Adapter] = {
    "to": to,
    "float": to_float,
    "half": to_half,
    "double": _cast(ms.float64),
    "long": _cast(ms.int64),
    "int": _cast(ms.int32),
    "bool": _cast(ms.bool_),
    "byte": _cast(ms.uint8),
    "char": _cast(ms.int8),
    "short": _cast(ms.int16),
    "bfloat16": _cast(ms.bfloat16),
    "type": type_,
    "type_as": type_as,
    "clone": clone,
    "detach": detach,
    "is_floating_point": is_floating_point,
    "item": item,  # Longformer's is_index_global_attn.flatten().any().item()
}
