"""Pools in the call table: the max pools of 1 to 3 dimensions and their adaptive forms, with their
indices (int64, flat over each plane, as PyTorch's), an unbatched input given a batch of one; and
average pools: ``F.avg_pool1d``/``3d`` (and ``avg_pool2d`` with ``ceil_mode`` or
``divisor_override``), ``F.adaptive_avg_pool1d``/``3d`` and ``F.interpolate(mode='area')``.

An average over a box is separable: each pooled dimension is summed with a 0/1 matrix of its
windows (``matmul``), and the sums divided by PyTorch's divisor: ``divisor_override``, or the box's
size counted with the padding (``count_include_pad``) or without it. The windows are PyTorch's:
its output length (``ceil_mode`` dropping a window that starts in the right padding), an adaptive
window from ``floor(i L / n)`` to ``ceil((i + 1) L / n)``. MindSpore's ``ops.avg_pool2d`` computes a
wrong gradient on CPU with ``ceil_mode`` and ``divisor_override``, and ``ops.adaptive_avg_pool1d``
takes only lengths the output divides.
"""

from __future__ import annotations

import math
from typing import Dict, List, Optional, Sequence, Tuple, Union

import mindspore as ms
import numpy as np
from mindspore import Tensor, ops

from .arguments import Adapter, Entry

__all__ = ["FUNCTIONS", "METHODS", "adaptive_average"]

Sizes = Union[int, Sequence[int]]


def _each(value: Optional[Sizes], n: int) -> Tuple[int, ...]:
    if isinstance(value, (tuple, list)):
        return tuple(value) if len(value) == n else tuple(value) * n
    return (value,) * n  # type: ignore[return-value]


def _pooled(input: Tensor, windows: List[Tuple[np.ndarray, np.ndarray]], divisor) -> Tensor:
    """Sums over each dimension's windows (``(starts, ends)`` of the last ``len(windows)``
    dimensions, clipped to the input), divided by ``divisor`` (a number or an array of the output)."""
    n = len(windows)
    for i, (starts, ends) in enumerate(windows):
        dim = input.ndim - n + i
        length = input.shape[dim]
        matrix = np.zeros((length, len(starts)), np.float32)
        for column, (start, end) in enumerate(zip(starts, ends)):
            matrix[max(start, 0) : min(end, length), column] = 1.0
        moved = ops.moveaxis(input, dim, -1)
        input = ops.moveaxis(ops.matmul(moved, ms.Tensor(matrix, input.dtype)), -1, dim)
    if isinstance(divisor, np.ndarray):
        divisor = ms.Tensor(divisor.astype(np.float32), input.dtype)
    return input / divisor


def _output_length(length: int, kernel: int, stride: int, padding: int, ceil_mode: bool) -> int:
    span = length + 2 * padding - kernel + (stride - 1 if ceil_mode else 0)
    out = span // stride + 1
    if ceil_mode and (out - 1) * stride >= length + padding:
        out -= 1
    return out


def _avg_pool(n: int):
    def pool(
        input: Tensor,
        kernel_size: Sizes,
        stride: Optional[Sizes] = None,
        padding: Sizes = 0,
        ceil_mode: bool = False,
        count_include_pad: bool = True,
        divisor_override: Optional[int] = None,
    ) -> Tensor:
        kernels = _each(kernel_size, n)
        strides = _each(stride, n) if stride else kernels
        pads = _each(padding, n)
        windows, padded_counts, counts = [], [], []
        for i in range(n):
            length = input.shape[input.ndim - n + i]
            out = _output_length(length, kernels[i], strides[i], pads[i], ceil_mode)
            starts = np.arange(out) * strides[i] - pads[i]
            ends = np.minimum(starts + kernels[i], length + pads[i])
            padded_counts.append(ends - starts)
            counts.append(np.minimum(ends, length) - np.maximum(starts, 0))
            windows.append((starts, ends))
        if divisor_override:
            return _pooled(input, windows, float(divisor_override))
        chosen = padded_counts if count_include_pad else counts
        return _pooled(input, windows, _outer(chosen))

    return pool


def _outer(counts: List[np.ndarray]) -> np.ndarray:
    product = counts[0].astype(np.float64)
    for more in counts[1:]:
        product = np.multiply.outer(product, more)
    return product


def adaptive_average(input: Tensor, sizes: Sequence[Optional[int]]) -> Tensor:
    """PyTorch's adaptive average pool of the last ``len(sizes)`` dimensions (None keeps a length)."""
    n = len(sizes)
    windows, counts = [], []
    for i, size in enumerate(sizes):
        length = input.shape[input.ndim - n + i]
        out = length if size is None else size
        starts = np.array([(o * length) // out for o in range(out)])
        ends = np.array([math.ceil((o + 1) * length / out) for o in range(out)])
        windows.append((starts, ends))
        counts.append(ends - starts)
    return _pooled(input, windows, _outer(counts))


def _adaptive(n: int):
    def pool(input: Tensor, output_size: Union[int, None, Sequence[Optional[int]]]) -> Tensor:
        if isinstance(output_size, (tuple, list)):
            return adaptive_average(input, tuple(output_size))
        one: Optional[int] = output_size  # type: ignore[assignment]
        return adaptive_average(input, (one,) * n)

    return pool


def _batched(input: Tensor, rank: int):
    """``input`` with a batch dimension (a pool's ``rank`` dimensions after the channels), and the
    function taking one back off."""
    if input.ndim == rank + 1:
        return ops.expand_dims(input, 0), lambda out: ops.squeeze(out, 0)
    return input, lambda out: out


def _with_indices(found, return_indices: bool, unbatch):
    if not return_indices:
        return unbatch(found[0] if isinstance(found, tuple) else found)
    values, indices = found
    return unbatch(values), unbatch(indices.astype(ms.int64))


def max_pool1d(
    input: Tensor,
    kernel_size: Sizes,
    stride: Optional[Sizes] = None,
    padding: Sizes = 0,
    dilation: Sizes = 1,
    ceil_mode: bool = False,
    return_indices: bool = False,
):
    """A 2-d max pool over a height of 1 (the flat indices of a 1-high plane are the positions)."""
    batched, unbatch = _batched(input, 1)
    (kernel,), (step,), (pad,), (spread,) = (
        _each(kernel_size, 1),
        _each(stride or kernel_size, 1),
        _each(padding, 1),
        _each(dilation, 1),
    )
    found = ops.max_pool2d(ops.expand_dims(batched, 2), (1, kernel), (1, step), (0, pad), (1, spread), True, ceil_mode)
    values, indices = (ops.squeeze(t, 2) for t in found)
    return _with_indices((values, indices), return_indices, unbatch)


def max_pool2d_with_indices(
    input: Tensor,
    kernel_size: Sizes,
    stride: Optional[Sizes] = None,
    padding: Sizes = 0,
    dilation: Sizes = 1,
    ceil_mode: bool = False,
    return_indices: bool = False,
):
    batched, unbatch = _batched(input, 2)
    found = ops.max_pool2d(batched, kernel_size, stride or kernel_size, padding, dilation, True, ceil_mode)
    return _with_indices(found, return_indices, unbatch)


def max_pool3d(
    input: Tensor,
    kernel_size: Sizes,
    stride: Optional[Sizes] = None,
    padding: Sizes = 0,
    dilation: Sizes = 1,
    ceil_mode: bool = False,
    return_indices: bool = False,
):
    batched, unbatch = _batched(input, 3)
    found = ops.max_pool3d(batched, kernel_size, stride or kernel_size, padding, dilation, ceil_mode, True)
    return _with_indices(found, return_indices, unbatch)


def adaptive_max_pool1d(input: Tensor, output_size: int, return_indices: bool = False):
    batched, unbatch = _batched(input, 1)
    size = output_size[0] if isinstance(output_size, (tuple, list)) else output_size
    found = ops.adaptive_max_pool2d(ops.expand_dims(batched, 2), (1, size), True)
    values, indices = (ops.squeeze(t, 2) for t in found)
    return _with_indices((values, indices), return_indices, unbatch)


def adaptive_max_pool2d_with_indices(input: Tensor, output_size, return_indices: bool = False):
    batched, unbatch = _batched(input, 2)
    sizes = tuple(output_size) if isinstance(output_size, (tuple, list)) else (output_size,) * 2
    sizes = tuple(batched.shape[2 + i] if s is None else s for i, s in enumerate(sizes))
    return _with_indices(ops.adaptive_max_pool2d(batched, sizes, True), return_indices, unbatch)


def adaptive_max_pool3d(input: Tensor, output_size, return_indices: bool = False):
    batched, unbatch = _batched(input, 3)
    sizes = tuple(output_size) if isinstance(output_size, (tuple, list)) else (output_size,) * 3
    sizes = tuple(batched.shape[2 + i] if s is None else s for i, s in enumerate(sizes))
    return _with_indices(ops.adaptive_max_pool3d(batched, sizes, True), return_indices, unbatch)


avg_pool1d, avg_pool2d, avg_pool3d = _avg_pool(1), _avg_pool(2), _avg_pool(3)

FUNCTIONS: Dict[str, Entry] = {
    "torch.avg_pool1d": avg_pool1d,
    "torch.nn.functional.avg_pool1d": avg_pool1d,
    "torch.nn.functional.avg_pool3d": avg_pool3d,
    "torch.adaptive_avg_pool1d": _adaptive(1),
    "torch.nn.functional.adaptive_avg_pool1d": _adaptive(1),
    "torch.nn.functional.adaptive_avg_pool3d": _adaptive(3),
    "torch.nn.functional.max_pool1d": max_pool1d,
    "torch.nn.functional.max_pool3d": max_pool3d,
    "torch.nn.functional.adaptive_max_pool1d": adaptive_max_pool1d,
    "torch.nn.functional.adaptive_max_pool3d": adaptive_max_pool3d,
    "torch.nn.functional.max_pool1d_with_indices": max_pool1d,
    "torch.nn.functional._max_pool1d": max_pool1d,
    "torch.max_pool1d": max_pool1d,
    "torch.nn.functional.max_pool2d_with_indices": max_pool2d_with_indices,
    "torch.nn.functional.max_pool3d_with_indices": max_pool3d,
    "torch.nn.functional._max_pool3d": max_pool3d,
    "torch.max_pool3d": max_pool3d,
    "torch.nn.functional.adaptive_max_pool1d_with_indices": adaptive_max_pool1d,
    "torch.nn.functional._adaptive_max_pool1d": adaptive_max_pool1d,
    "torch.adaptive_max_pool1d": adaptive_max_pool1d,
    "torch.nn.functional.adaptive_max_pool2d_with_indices": adaptive_max_pool2d_with_indices,
    "torch.nn.functional.adaptive_max_pool3d_with_indices": adaptive_max_pool3d,
    "torch.nn.functional._adaptive_max_pool3d": adaptive_max_pool3d,
}
METHODS: Dict[str, Adapter] = {}
