"""Shapes in the call table: views, joins and splits, repeats, rolls and flips.

What each adapter closes, as read from mindspore 2.10:

* ``Tensor.transpose(d0, d1)`` swaps two axes in PyTorch; MindSpore's permutes all of them
  (``ops.swapaxes`` is the swap). ``Tensor.size()`` is the shape in PyTorch, the element count in
  MindSpore. ``Tensor.view``/``reshape``/``permute``/``expand`` take sizes as varargs or one sequence.
* ``ops.flatten`` starts at dim 1 by default (``torch.flatten`` at 0).
* ``squeeze(dim)`` of a dimension that is not 1 is a no-op in PyTorch, an error in MindSpore.
* ``ops.roll`` has no CPU kernel (``The kernel Roll unregistered``) and the backward of ``ops.narrow``
  fails on CPU (``StridedSliceGrad``: ``input memory out of bounds``): ``roll`` is two splits joined.
"""

from __future__ import annotations

import math
from typing import Dict, Optional, Sequence, Tuple, Union

from mindspore import Tensor, ops

from .arguments import Adapter, Entry, Size, as_shape

__all__ = ["FUNCTIONS", "METHODS"]


def flatten(input: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    if input.ndim == 0:
        return ops.reshape(input, (1,))
    return ops.flatten(input, start_dim=start_dim, end_dim=end_dim)


def reshape(input: Tensor, *shape: Size) -> Tensor:
    return ops.reshape(input, as_shape(shape))


def permute(input: Tensor, *dims: Size) -> Tensor:
    return ops.permute(input, as_shape(dims))


def transpose(input: Tensor, dim0: int, dim1: int) -> Tensor:
    return ops.swapaxes(input, dim0, dim1)


def unsqueeze(input: Tensor, dim: int) -> Tensor:
    return ops.unsqueeze(input, dim)


def squeeze(input: Tensor, dim: Union[int, Sequence[int], None] = None) -> Tensor:
    if dim is None:
        return ops.squeeze(input)
    dims = dim if isinstance(dim, (tuple, list)) else (dim,)
    keep = tuple(d for d in dims if input.shape[d] == 1)  # PyTorch leaves other sizes alone
    return ops.squeeze(input, keep) if keep else input


def expand(input: Tensor, *sizes: Size) -> Tensor:
    return ops.broadcast_to(input, as_shape(sizes))


def expand_as(input: Tensor, other: Tensor) -> Tensor:
    return ops.broadcast_to(input, other.shape)


def reshape_as(input: Tensor, other: Tensor) -> Tensor:
    """``Tensor.reshape_as``/``view_as``: ``input`` in ``other``'s shape."""
    return input.reshape(other.shape)


def size(input: Tensor, dim: Optional[int] = None) -> Union[int, Tuple[int, ...]]:
    return tuple(input.shape) if dim is None else input.shape[dim]


def cat(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    return ops.cat(list(tensors), dim)


def stack(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    return ops.stack(list(tensors), dim)


def chunk(input: Tensor, chunks: int, dim: int = 0) -> Tuple[Tensor, ...]:
    return ops.chunk(input, chunks, dim)


def split(tensor: Tensor, split_size_or_sections: Union[int, Sequence[int]], dim: int = 0) -> Tuple[Tensor, ...]:
    return ops.split(tensor, split_size_or_sections, dim)


def unbind(input: Tensor, dim: int = 0) -> Tuple[Tensor, ...]:
    return ops.unbind(input, dim)


def repeat(input: Tensor, *sizes: Size) -> Tensor:
    return ops.tile(input, as_shape(sizes))


def contiguous(input: Tensor, memory_format: object = None) -> Tensor:
    return input


def dim(input: Tensor) -> int:
    return input.ndim


def numel(input: Tensor) -> int:
    return int(math.prod(input.shape))


def unflatten(input: Tensor, dim: int, sizes: Sequence[int]) -> Tensor:
    dim = dim % input.ndim
    return ops.reshape(input, tuple(input.shape[:dim]) + tuple(sizes) + tuple(input.shape[dim + 1 :]))


def repeat_interleave(
    input: Tensor,
    repeats: Union[int, Tensor, None] = None,
    dim: Optional[int] = None,
    *,
    output_size: Optional[int] = None,
) -> Tensor:
    if repeats is None:
        raise TypeError("repeat_interleave(repeats) (one tensor: the indices repeated) is not translated")
    if dim is None:
        input, dim = ops.reshape(input, (-1,)), 0
    return ops.repeat_interleave(input, repeats, dim)


def roll(input: Tensor, shifts: Size, dims: Optional[Size] = None) -> Tensor:
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


def flip(input: Tensor, dims: Union[int, Sequence[int]]) -> Tensor:
    return ops.flip(input, tuple(dims) if isinstance(dims, (tuple, list)) else (dims,))


FUNCTIONS: Dict[str, Entry] = {
    "torch.flatten": flatten,
    "torch.reshape": reshape,
    "torch.permute": permute,
    "torch.transpose": transpose,
    "torch.swapaxes": transpose,
    "torch.unsqueeze": unsqueeze,
    "torch.squeeze": squeeze,
    "torch.unflatten": unflatten,
    "torch.cat": cat,
    "torch.concat": cat,
    "torch.concatenate": cat,
    "torch.stack": stack,
    "torch.chunk": chunk,
    "torch.split": split,
    "torch.unbind": unbind,
    "torch.repeat_interleave": repeat_interleave,
    "torch.roll": roll,
    "torch.flip": flip,
}
METHODS: Dict[str, Adapter] = {
    "reshape_as": reshape_as,
    "view_as": reshape_as,
    "view": reshape,
    "reshape": reshape,
    "permute": permute,
    "transpose": transpose,
    "swapaxes": transpose,
    "contiguous": contiguous,
    "flatten": flatten,
    "unflatten": unflatten,
    "unsqueeze": unsqueeze,
    "squeeze": squeeze,
    "expand": expand,
    "expand_as": expand_as,
    "size": size,
    "dim": dim,
    "numel": numel,
    "chunk": chunk,
    "split": split,
    "unbind": unbind,
    "repeat": repeat,
    "repeat_interleave": repeat_interleave,
    "roll": roll,
    "flip": flip,
}
