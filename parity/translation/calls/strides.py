"""Memory layout in the call table: ``Tensor.stride`` and ``as_strided``, as Longformer cuts its
sequence into overlapping windows (``x.as_strided(size=..., stride=...)`` over ``x.stride()``).

A MindSpore tensor is contiguous, row-major: ``stride`` answers the strides of a contiguous tensor
of its shape, and ``as_strided`` reads the tensor's elements in row-major order at the offsets the
sizes and strides give, a ``gather`` of the flattened tensor, whose gradient adds up every read of
an element (PyTorch's, for overlapping windows). That is PyTorch's answer where PyTorch's tensor
is contiguous too: the trace refuses, at the line, a ``stride`` or ``as_strided`` of a tensor that
is not (:mod:`parity.translation.trace.concrete`), and ``as_strided`` refuses offsets past the
tensor's own elements (PyTorch reads on into the storage behind a view).
"""

from __future__ import annotations

from typing import Dict, Optional, Sequence, Tuple, Union

import mindspore as ms
import numpy as np
from mindspore import Tensor, ops

from .arguments import Adapter, Entry

__all__ = ["FUNCTIONS", "METHODS", "LAYOUT_CALLS"]

# the calls whose answer depends on PyTorch's layout: the trace checks their tensor is contiguous
LAYOUT_CALLS = ("stride", "as_strided")


def _contiguous(shape: Sequence[int]) -> Tuple[int, ...]:
    strides, step = [], 1
    for size in reversed(tuple(shape)):
        strides.append(step)
        step *= max(int(size), 1)
    return tuple(reversed(strides))


def stride(input: Tensor, dim: Optional[int] = None) -> Union[int, Tuple[int, ...]]:
    strides = _contiguous(input.shape)
    return strides if dim is None else strides[dim]


def as_strided(
    input: Tensor, size: Sequence[int], stride: Sequence[int], storage_offset: Optional[int] = None
) -> Tensor:
    size, stride = tuple(int(s) for s in size), tuple(int(s) for s in stride)
    if len(size) != len(stride):
        raise ValueError(f"as_strided: {len(size)} sizes but {len(stride)} strides")
    offsets = np.full(size, int(storage_offset or 0), np.int64)
    for axis, (n, step) in enumerate(zip(size, stride)):
        shape = [1] * len(size)
        shape[axis] = n
        offsets = offsets + (np.arange(n, dtype=np.int64) * step).reshape(shape)
    count = int(np.prod(input.shape))
    if offsets.size and (offsets.max() >= count or offsets.min() < 0):
        raise IndexError(
            f"as_strided reads offset {int(offsets.max())} of a tensor of {count} elements "
            "(PyTorch reads on into the storage behind a view; a MindSpore tensor holds its own elements only)"
        )
    flat = input.reshape(-1)
    return ops.gather(flat, ms.Tensor(offsets.reshape(-1)), 0).reshape(size)


FUNCTIONS: Dict[str, Entry] = {
    "torch.as_strided": as_strided,
}
METHODS: Dict[str, Adapter] = {
    "stride": stride,
    "as_strided": as_strided,
}
