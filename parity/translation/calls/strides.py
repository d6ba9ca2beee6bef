"""Memory layout in the call table: ``Tensor.stride`` and ``as_strided``, as Longformer cuts its
sequence into overlapping windows (``x.as_strided(size=..., stride=...)`` over ``x.stride()``).

A MindSpore tensor is contiguous; PyTorch's may be a strided view (Longformer's, after a
transpose). The trace keeps the layout PyTorch held each such tensor in (its shape, strides and
storage offset: ``pytorch_layout``, from :mod:`parity.translation.trace.concrete`; None where
contiguous from its storage's start), and both calls answer by it: ``stride`` gives PyTorch's
strides, and ``as_strided`` turns each offset its sizes and strides reach into the element of the
tensor PyTorch keeps there, then gathers those elements from the flattened tensor, whose gradient
adds up every read of an element (PyTorch's, for overlapping windows). A call on a tensor of
another shape than the traced one is refused, and so is an offset that reaches no element of the
tensor (PyTorch reads on into the storage behind a view); a layout is known from example inputs
only, so a symbolic trace refuses both calls.
"""

from __future__ import annotations

from typing import Dict, Optional, Sequence, Tuple, Union

import mindspore as ms
import numpy as np
from mindspore import Tensor, ops

from .arguments import Adapter, Entry

__all__ = ["FUNCTIONS", "METHODS"]

Layout = Optional[Tuple[Tuple[int, ...], Tuple[int, ...], int]]


def _contiguous(shape: Sequence[int]) -> Tuple[int, ...]:
    strides, step = [], 1
    for size in reversed(tuple(shape)):
        strides.append(step)
        step *= max(int(size), 1)
    return tuple(reversed(strides))


def _held(input: Tensor, layout: Layout) -> Tuple[Tuple[int, ...], int]:
    """PyTorch's strides of ``input`` and its storage offset."""
    if layout is None:
        return _contiguous(input.shape), 0
    shape, strides, offset = layout
    if tuple(input.shape) != tuple(shape):
        raise ValueError(f"the strides of a tensor of shape {tuple(input.shape)} (traced on {tuple(shape)})")
    return strides, offset


def stride(input: Tensor, dim: Optional[int] = None, *, pytorch_layout: Layout = None) -> Union[int, Tuple[int, ...]]:
    strides, _ = _held(input, pytorch_layout)
    return strides if dim is None else strides[dim]


def _elements(offsets: np.ndarray, shape: Tuple[int, ...], strides: Tuple[int, ...]) -> np.ndarray:
    """The row-major index of the element PyTorch keeps at each storage offset (relative to the
    tensor's first element), for a tensor of ``shape`` held at ``strides``."""
    left, index = offsets.copy(), np.zeros_like(offsets)
    for axis in sorted(range(len(shape)), key=lambda a: -strides[a]):
        if shape[axis] == 1:
            continue
        place = left // strides[axis] if strides[axis] else np.zeros_like(left)
        if (place >= shape[axis]).any():
            break
        left = left - place * strides[axis]
        index = index + place * int(np.prod(shape[axis + 1 :], dtype=np.int64))
    if (left != 0).any() or (offsets < 0).any():
        raise IndexError(
            "as_strided reads storage that holds no element of the tensor (PyTorch reads on into the "
            "storage behind a view; a MindSpore tensor holds its own elements only)"
        )
    return index


def as_strided(
    input: Tensor,
    size: Sequence[int],
    stride: Sequence[int],
    storage_offset: Optional[int] = None,
    *,
    pytorch_layout: Layout = None,
) -> Tensor:
    size, steps = tuple(int(s) for s in size), tuple(int(s) for s in stride)
    if len(size) != len(steps):
        raise ValueError(f"as_strided: {len(size)} sizes but {len(steps)} strides")
    strides, start = _held(input, pytorch_layout)
    offsets = np.full(size, (start if storage_offset is None else int(storage_offset)) - start, np.int64)
    for axis, (n, step) in enumerate(zip(size, steps)):
        shape = [1] * len(size)
        shape[axis] = n
        offsets = offsets + (np.arange(n, dtype=np.int64) * step).reshape(shape)
    index = _elements(offsets.reshape(-1), tuple(int(n) for n in input.shape), strides)
    return ops.gather(input.reshape(-1), ms.Tensor(index), 0).reshape(size)


FUNCTIONS: Dict[str, Entry] = {
    "torch.as_strided": as_strided,
}
METHODS: Dict[str, Adapter] = {
    "stride": stride,
    "as_strided": as_strided,
}
