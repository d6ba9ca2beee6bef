"""More shapes in the call table: ``t``, ``ravel``, ``movedim``, ``narrow``, ``select``, ``tile``,
``broadcast_to``/``broadcast_tensors``, ``atleast_1d``/``2d``/``3d``, the stacks (``hstack``, ``vstack``,
``dstack``, ``column_stack``), ``fliplr``/``flipud``/``rot90``, the splits (``tensor_split``,
``hsplit``, ``vsplit``, ``dsplit``, ``split_with_sizes``), the diagonals (``diag``, ``diagonal``,
``diag_embed``, ``diagflat``), ``block_diag``, ``meshgrid``, ``cartesian_prod``, ``Tensor.unfold``,
``sum_to_size``, ``select_scatter``/``slice_scatter``/``diagonal_scatter`` and the ``*_copy`` forms of the views.

``narrow``, ``select`` and ``unfold`` pick with ``gather``: the backward of ``ops.narrow`` fails on
CPU (``StridedSliceGrad``: ``input memory out of bounds``).
"""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple, Union

import mindspore as ms
import numpy as np
from mindspore import Tensor, ops

from .arguments import Adapter, Entry, Size, as_shape
from .shapes import chunk, expand, permute, reshape, split, squeeze, transpose, unbind, unsqueeze

__all__ = ["FUNCTIONS", "METHODS"]


def t(input: Tensor) -> Tensor:
    return input if input.ndim < 2 else ops.swapaxes(input, 0, 1)


def ravel(input: Tensor) -> Tensor:
    return ops.reshape(input, (-1,))


def movedim(input: Tensor, source: Size, destination: Size) -> Tensor:
    return ops.movedim(input, source, destination)


def _take(input: Tensor, dim: int, positions: Sequence[int]) -> Tensor:
    return ops.gather(input, ms.Tensor(list(positions), ms.int64), dim)


def narrow(input: Tensor, dim: int, start: int, length: int) -> Tensor:
    start = start % input.shape[dim] if start < 0 else start
    return _take(input, dim, range(start, start + length))


def select(input: Tensor, dim: int, index: int) -> Tensor:
    return ops.gather(input, ms.Tensor(index % input.shape[dim], ms.int64), dim)


def tile(input: Tensor, dims: Sequence[int]) -> Tensor:
    dims = tuple(dims)
    if len(dims) < input.ndim:
        dims = (1,) * (input.ndim - len(dims)) + dims
    return ops.tile(input, dims)


def broadcast_to(input: Tensor, size: Sequence[int]) -> Tensor:
    return ops.broadcast_to(input, tuple(size))


def broadcast_tensors(*tensors: Tensor) -> Tuple[Tensor, ...]:
    shape = np.broadcast_shapes(*(tuple(x.shape) for x in tensors))
    return tuple(ops.broadcast_to(x, shape) for x in tensors)


def _raised(x: Tensor, rank: int) -> Tensor:
    """``x`` with at least ``rank`` dimensions, as PyTorch adds them: a scalar all ones; a vector
    ``(1, n)`` for 2, ``(1, n, 1)`` for 3; a matrix ``(a, b, 1)`` for 3."""
    if x.ndim >= rank:
        return x
    if x.ndim == 0:
        return ops.reshape(x, (1,) * rank)
    if x.ndim == 1:
        return ops.reshape(x, (1, x.shape[0]) + (1,) * (rank - 2))
    return ops.reshape(x, tuple(x.shape) + (1,))


def _at_least(rank: int):
    def make(*tensors):
        listed = len(tensors) == 1 and isinstance(tensors[0], (list, tuple))
        given = tensors[0] if listed else tensors
        made = tuple(_raised(x, rank) for x in given)
        return made[0] if len(made) == 1 and not listed else made

    return make


atleast_1d, atleast_2d, atleast_3d = _at_least(1), _at_least(2), _at_least(3)


def hstack(tensors: Sequence[Tensor]) -> Tensor:
    tensors = atleast_1d(list(tensors))
    return ops.cat(list(tensors), 0 if tensors[0].ndim == 1 else 1)


def vstack(tensors: Sequence[Tensor]) -> Tensor:
    return ops.cat(list(atleast_2d(list(tensors))), 0)


def dstack(tensors: Sequence[Tensor]) -> Tensor:
    return ops.cat(list(atleast_3d(list(tensors))), 2)


def column_stack(tensors: Sequence[Tensor]) -> Tensor:
    columns = [ops.reshape(x, (-1, 1)) if x.ndim <= 1 else x for x in tensors]
    return ops.cat(columns, 1)


def fliplr(input: Tensor) -> Tensor:
    return ops.flip(input, (1,))


def flipud(input: Tensor) -> Tensor:
    return ops.flip(input, (0,))


def rot90(input: Tensor, k: int = 1, dims: Sequence[int] = (0, 1)) -> Tensor:
    first, second = dims
    k %= 4
    if k == 1:
        return ops.swapaxes(ops.flip(input, (second,)), first, second)
    if k == 2:
        return ops.flip(input, (first, second))
    if k == 3:
        return ops.swapaxes(ops.flip(input, (first,)), first, second)
    return input


def _pieces(input: Tensor, bounds: List[int], dim: int) -> Tuple[Tensor, ...]:
    """``input`` cut along ``dim`` at ``bounds`` (each clipped to the length, as PyTorch's slices are)."""
    length = input.shape[dim]
    edges = [0] + [min(max(b if b >= 0 else b + length, 0), length) for b in bounds] + [length]
    pieces = []
    for start, stop in zip(edges, edges[1:]):
        pieces.append(_take(input, dim, range(start, max(stop, start))))
    return tuple(pieces)


def tensor_split(input: Tensor, indices_or_sections: Union[int, Sequence[int]], dim: int = 0) -> Tuple[Tensor, ...]:
    if isinstance(indices_or_sections, Tensor):
        raise TypeError("tensor_split with a tensor of indices is not translated (pass an int or a list)")
    length = input.shape[dim]
    if isinstance(indices_or_sections, int):
        sections = indices_or_sections
        size, extra = divmod(length, sections)
        sizes = [size + 1] * extra + [size] * (sections - extra)
        bounds = list(np.cumsum(sizes)[:-1].tolist())
    else:
        bounds = list(indices_or_sections)
    return _pieces(input, bounds, dim)


def _split_at(dim_of):
    def run(input: Tensor, indices_or_sections: Union[int, Sequence[int]]) -> Tuple[Tensor, ...]:
        return tensor_split(input, indices_or_sections, dim_of(input))

    return run


hsplit = _split_at(lambda x: 1 if x.ndim > 1 else 0)
vsplit = _split_at(lambda x: 0)
dsplit = _split_at(lambda x: 2)


def split_with_sizes(input: Tensor, split_sizes: Sequence[int], dim: int = 0) -> Tuple[Tensor, ...]:
    return ops.split(input, list(split_sizes), dim)


def diagonal(input: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    return ops.diagonal(input, offset, dim1, dim2)


def linalg_diagonal(A: Tensor, *, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    return ops.diagonal(A, offset, dim1, dim2)


def diag_embed(input: Tensor, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """The last dimension of ``input`` laid on the ``offset`` diagonal of planes ``dim1``, ``dim2``."""
    length = input.shape[-1] + abs(offset)
    rows = np.arange(input.shape[-1]) + max(-offset, 0)
    cols = np.arange(input.shape[-1]) + max(offset, 0)
    place = np.zeros((input.shape[-1], length * length), np.float32)
    place[np.arange(input.shape[-1]), rows * length + cols] = 1
    flat = ops.matmul(input, ms.Tensor(place, input.dtype))  # each element to its one place
    made = ops.reshape(flat, tuple(input.shape[:-1]) + (length, length))
    rank = made.ndim
    dim1, dim2 = dim1 % rank, dim2 % rank
    order = [d for d in range(rank - 2)]
    for position, source in sorted(((dim1, rank - 2), (dim2, rank - 1))):
        order.insert(position, source)
    return ops.permute(made, tuple(order))


def diag(input: Tensor, diagonal: int = 0) -> Tensor:
    if input.ndim == 1:
        return diag_embed(input, diagonal)
    return ops.diagonal(input, diagonal)


def diagflat(input: Tensor, offset: int = 0) -> Tensor:
    return diag_embed(ops.reshape(input, (-1,)), offset)


def block_diag(*tensors: Tensor) -> Tensor:
    blocks = [ops.reshape(x, (1, 1)) if x.ndim == 0 else ops.reshape(x, (1, -1)) if x.ndim == 1 else x for x in tensors]
    width = sum(b.shape[1] for b in blocks)
    rows, start = [], 0
    for b in blocks:
        rows.append(ops.pad(b, (start, width - start - b.shape[1])))
        start += b.shape[1]
    return ops.cat(rows, 0)


def meshgrid(*tensors: Tensor, indexing: Optional[str] = None) -> Tuple[Tensor, ...]:
    given = tensors[0] if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)) else tensors
    return tuple(ops.meshgrid(*given, indexing=indexing or "ij"))


def cartesian_prod(*tensors: Tensor) -> Tensor:
    if len(tensors) == 1:
        return tensors[0]
    grids = meshgrid(*tensors, indexing="ij")
    return ops.stack([ops.reshape(g, (-1,)) for g in grids], 1)


def unfold(input: Tensor, dimension: int, size: int, step: int) -> Tensor:
    """``Tensor.unfold``: the windows of ``size`` along ``dimension``, ``step`` apart, in a new last dimension."""
    if input.ndim == 0:
        return ops.reshape(input, (1,))
    dimension %= input.ndim
    count = (input.shape[dimension] - size) // step + 1
    picked = _take(input, dimension, [i * step + j for i in range(count) for j in range(size)])
    shape = tuple(input.shape[:dimension]) + (count, size) + tuple(input.shape[dimension + 1 :])
    return ops.moveaxis(ops.reshape(picked, shape), dimension + 1, -1)


def sum_to_size(input: Tensor, *size: Size) -> Tensor:
    shape = as_shape(size)
    lead = input.ndim - len(shape)
    if lead:
        input = ops.sum(input, tuple(range(lead)))
    axes = tuple(d for d, n in enumerate(shape) if n == 1 and input.shape[d] != 1)
    return ops.sum(input, axes, True) if axes else input


def _along(input: Tensor, dim: int, flags: Sequence[bool]) -> Tensor:
    """A bool mask of ``input``'s shape, ``flags`` along ``dim``."""
    view = [1] * input.ndim
    view[dim] = len(flags)
    mask = ops.reshape(ms.Tensor(np.array(flags, np.bool_)), tuple(view))
    return ops.broadcast_to(mask, tuple(input.shape))


def select_scatter(input: Tensor, src: Tensor, dim: int, index: int) -> Tensor:
    """``input`` with ``src`` as its ``index``-th slice along ``dim``."""
    dim %= input.ndim
    index %= input.shape[dim]
    spread = ops.broadcast_to(ops.expand_dims(src, dim), tuple(input.shape))
    return ops.where(_along(input, dim, [i == index for i in range(input.shape[dim])]), spread, input)


def slice_scatter(
    input: Tensor, src: Tensor, dim: int = 0, start: Optional[int] = None, end: Optional[int] = None, step: int = 1
) -> Tensor:
    """``input`` with ``src`` in the positions ``start:end:step`` along ``dim`` (placed with ``gather``,
    whose gradient gives each element of ``src`` the gradient of its position)."""
    dim %= input.ndim
    length = input.shape[dim]
    positions = list(range(*slice(start, end, step).indices(length)))
    source_of = [0] * length
    for k, position in enumerate(positions):
        source_of[position] = k
    placed = ops.gather(src, ms.Tensor(source_of, ms.int64), dim)
    return ops.where(_along(input, dim, [i in positions for i in range(length)]), placed, input)


def diagonal_scatter(input: Tensor, src: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """``input`` with ``src`` on its ``offset`` diagonal of planes ``dim1``, ``dim2`` (placed with
    ``gather``, as :func:`slice_scatter` places its slices)."""
    dim1, dim2 = dim1 % input.ndim, dim2 % input.ndim
    planes = ops.movedim(input, (dim1, dim2), (-2, -1))
    rows, cols = planes.shape[-2], planes.shape[-1]
    source_of = np.zeros(rows * cols, np.int64)
    on = np.zeros((rows, cols), np.bool_)
    for k in range(src.shape[-1]):
        r, c = k + max(-offset, 0), k + max(offset, 0)
        source_of[r * cols + c], on[r, c] = k, True
    placed = ops.reshape(ops.gather(src, ms.Tensor(source_of), src.ndim - 1), tuple(planes.shape))
    mask = ops.broadcast_to(ms.Tensor(on), tuple(planes.shape))
    return ops.movedim(ops.where(mask, placed, planes), (-2, -1), (dim1, dim2))


FUNCTIONS: Dict[str, Entry] = {
    "torch.t": t,
    "torch.select_scatter": select_scatter,
    "torch.slice_scatter": slice_scatter,
    "torch.diagonal_scatter": diagonal_scatter,
    "torch.ravel": ravel,
    "torch.movedim": movedim,
    "torch.moveaxis": movedim,
    "torch.narrow": narrow,
    "torch.select": select,
    "torch.tile": tile,
    "torch.broadcast_to": broadcast_to,
    "torch.broadcast_tensors": broadcast_tensors,
    "torch.atleast_1d": atleast_1d,
    "torch.atleast_2d": atleast_2d,
    "torch.atleast_3d": atleast_3d,
    "torch.hstack": hstack,
    "torch.vstack": vstack,
    "torch.row_stack": vstack,
    "torch.dstack": dstack,
    "torch.column_stack": column_stack,
    "torch.fliplr": fliplr,
    "torch.flipud": flipud,
    "torch.rot90": rot90,
    "torch.tensor_split": tensor_split,
    "torch.hsplit": hsplit,
    "torch.vsplit": vsplit,
    "torch.dsplit": dsplit,
    "torch.split_with_sizes": split_with_sizes,
    "torch.unsafe_split": split,
    "torch.unsafe_chunk": chunk,
    "torch.diagonal": diagonal,
    "torch.linalg.diagonal": linalg_diagonal,
    "torch.diag_embed": diag_embed,
    "torch.diag": diag,
    "torch.diagflat": diagflat,
    "torch.block_diag": block_diag,
    "torch.meshgrid": meshgrid,
    "torch._VF.meshgrid": meshgrid,
    "torch.cartesian_prod": cartesian_prod,
    "torch.t_copy": t,
    "torch.narrow_copy": narrow,
    "torch.diagonal_copy": diagonal,
    "torch.permute_copy": permute,
    "torch.transpose_copy": transpose,
    "torch.squeeze_copy": squeeze,
    "torch.unsqueeze_copy": unsqueeze,
    "torch.expand_copy": expand,
    "torch.view_copy": reshape,
    "torch.unbind_copy": unbind,
    "torch.split_with_sizes_copy": split_with_sizes,
    "torch.unfold_copy": unfold,
}
METHODS: Dict[str, Adapter] = {
    "t": t,
    "select_scatter": select_scatter,
    "slice_scatter": slice_scatter,
    "diagonal_scatter": diagonal_scatter,
    "ravel": ravel,
    "movedim": movedim,
    "moveaxis": movedim,
    "narrow": narrow,
    "select": select,
    "tile": tile,
    "broadcast_to": broadcast_to,
    "fliplr": fliplr,
    "flipud": flipud,
    "rot90": rot90,
    "tensor_split": tensor_split,
    "hsplit": hsplit,
    "vsplit": vsplit,
    "dsplit": dsplit,
    "split_with_sizes": split_with_sizes,
    "diagonal": diagonal,
    "diag_embed": diag_embed,
    "diag": diag,
    "diagflat": diagflat,
    "unfold": unfold,
    "sum_to_size": sum_to_size,
}
