"""Tensors whose layout differs between the two frameworks: one tensor made of several (fused
q/k/v), transposed or reshaped. ``name_map`` values that say so, and the pieces the weight map
pairs them into.

A :class:`Pair` joins a region of one MindSpore tensor to a region of one PyTorch tensor; a
region is the whole tensor or one :class:`Part` of it along an axis. Values cross as
``ms region = transpose(torch region, axes).reshape(ms region shape)`` and back.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np
import numpy.typing as npt

from ..errors import ParityUsageError

if TYPE_CHECKING:
    from ..backends import Slot

__all__ = [
    "Fuse",
    "Transpose",
    "Reshape",
    "fuse",
    "transpose",
    "reshape",
    "Part",
    "Pair",
    "by_torch_name",
    "torch_layout",
    "ms_label",
    "squeezed",
]


@dataclass(frozen=True)
class Transpose:
    """``name_map`` value: the key's tensor is ``name`` (of the other framework) transposed."""

    name: str
    axes: Optional[Tuple[int, ...]] = None  # None reverses the axes, as numpy does


@dataclass(frozen=True)
class Reshape:
    """``name_map`` value: the key's tensor is ``name`` (of the other framework) reshaped, in
    C order, to the key's shape."""

    name: str


Piece = Union[str, Transpose, Reshape]


@dataclass(frozen=True)
class Fuse:
    """``name_map`` value: the key's tensor is the tensors ``parts`` (of the other framework)
    concatenated along ``axis``, in the key's layout."""

    parts: Tuple[Piece, ...]
    axis: int = 0


Layout = Union[Fuse, Transpose, Reshape]


def fuse(parts: Sequence[Piece], *, axis: int = 0) -> Fuse:
    """``name_map={"blocks.0.attn.qkv.weight": parity.fuse(["q.weight", "k.weight", "v.weight"])}``:
    one tensor is several tensors of the other framework joined along ``axis``. The key may be
    a MindSpore name (parts are PyTorch names) or a PyTorch name (parts are MindSpore names);
    a part may itself be ``parity.transpose(name)`` or ``parity.reshape(name)``."""
    if isinstance(parts, (str, Transpose, Reshape)) or len(parts) < 2:
        raise ParityUsageError(f"fuse() takes a list of two or more tensor names, got {parts!r}")
    for part in parts:
        if not isinstance(part, (str, Transpose, Reshape)):
            raise ParityUsageError(f"fuse(): each part is a name, transpose(name) or reshape(name), got {part!r}")
    if not isinstance(axis, int):
        raise ParityUsageError(f"fuse(): axis must be an int, got {axis!r}")
    return Fuse(tuple(parts), axis)


def transpose(name: str, axes: Optional[Sequence[int]] = None) -> Transpose:
    """``name_map={"fc.weight": parity.transpose("fc.weight")}``: the key's tensor is ``name``
    of the other framework transposed (``axes`` as in ``numpy.transpose``; None reverses them)."""
    if not isinstance(name, str):
        raise ParityUsageError(f"transpose() takes a tensor name, got {name!r}")
    return Transpose(name, None if axes is None else tuple(int(a) for a in axes))


def reshape(name: str) -> Reshape:
    """``name_map={"w": parity.reshape("w")}``: the key's tensor is ``name`` of the other framework
    reshaped (same number of elements, C order)."""
    if not isinstance(name, str):
        raise ParityUsageError(f"reshape() takes a tensor name, got {name!r}")
    return Reshape(name)


@dataclass(frozen=True)
class Part:
    """Elements ``start:stop`` along ``axis``: part ``index`` of ``count``."""

    axis: int
    start: int
    stop: int
    index: int
    count: int

    def _where(self, ndim: int) -> Tuple[slice, ...]:
        return (slice(None),) * self.axis + (slice(self.start, self.stop),) + (slice(None),) * (ndim - self.axis - 1)

    def take(self, array: npt.NDArray[Any]) -> npt.NDArray[Any]:
        return array[self._where(array.ndim)]

    def put(self, array: npt.NDArray[Any], value: npt.NDArray[Any]) -> None:
        array[self._where(array.ndim)] = value

    def shape(self, full: Tuple[int, ...]) -> Tuple[int, ...]:
        return full[: self.axis] + (self.stop - self.start,) + full[self.axis + 1 :]


@dataclass(frozen=True)
class Pair:
    """A MindSpore tensor (or one part of it) and the PyTorch tensor (or part) it holds."""

    ms: str
    torch: str
    how: str  # "same name", "renamed", "name_map", "definition order", "fused automatically", ...
    ms_shape: Tuple[int, ...]
    torch_shape: Tuple[int, ...]
    trainable: bool
    ms_part: Optional[Part] = None
    torch_part: Optional[Part] = None
    axes: Optional[Tuple[int, ...]] = None  # ms region = transpose(torch region, axes)

    @property
    def reshaped(self) -> bool:
        """Plain pairs whose shapes differ (by unit dims, or by an explicit reshape)."""
        return self.ms_shape != self.torch_shape and not self.laid_out

    @property
    def laid_out(self) -> bool:
        """Fused, split or transposed."""
        return self.ms_part is not None or self.torch_part is not None or self.axes is not None

    def ms_region(self, array: npt.NDArray[Any]) -> npt.NDArray[Any]:
        return self.ms_part.take(array) if self.ms_part else array

    def torch_region(self, array: npt.NDArray[Any]) -> npt.NDArray[Any]:
        return self.torch_part.take(array) if self.torch_part else array

    def to_ms(self, torch_region: npt.NDArray[Any]) -> npt.NDArray[Any]:
        """The PyTorch region's values in the MindSpore region's layout."""
        moved = torch_region if self.axes is None else np.transpose(torch_region, self.axes)
        target = self.ms_part.shape(self.ms_shape) if self.ms_part else self.ms_shape
        return moved.reshape(target)

    def to_torch(self, ms_region: npt.NDArray[Any]) -> npt.NDArray[Any]:
        """The MindSpore region's values in the PyTorch region's layout."""
        target = self.torch_part.shape(self.torch_shape) if self.torch_part else self.torch_shape
        if self.axes is None:
            return ms_region.reshape(target)
        moved = ms_region.reshape(tuple(target[a] for a in self.axes))
        return np.transpose(moved, np.argsort(self.axes))


def by_torch_name(pairs: Iterable[Pair]) -> Dict[str, List[Pair]]:
    """Pairs grouped by PyTorch tensor, in the order given."""
    groups: Dict[str, List[Pair]] = {}
    for pair in pairs:
        groups.setdefault(pair.torch, []).append(pair)
    return groups


def torch_layout(pairs: Sequence[Pair], ms_arrays: Mapping[str, npt.NDArray[Any]]) -> npt.NDArray[Any]:
    """One PyTorch tensor's value as MindSpore holds it: its pairs' MindSpore regions, moved
    into the PyTorch layout (the parts of a fused PyTorch tensor joined)."""
    first = pairs[0]
    if len(pairs) == 1 and first.torch_part is None:
        return first.to_torch(first.ms_region(ms_arrays[first.ms]))
    values = [p.to_torch(p.ms_region(ms_arrays[p.ms])) for p in pairs]
    whole = np.zeros(first.torch_shape, values[0].dtype)
    for pair, value in zip(pairs, values):
        assert pair.torch_part is not None  # one PyTorch tensor in several pairs: each pair holds a part of it
        pair.torch_part.put(whole, value)
    return whole


def ms_label(pairs: Sequence[Pair]) -> str:
    """Where a PyTorch tensor's counterpart lives in MindSpore, for comparison names."""
    first = pairs[0]
    if len(pairs) > 1 or first.torch_part is not None:
        return "fused from " + ", ".join(p.ms for p in pairs)
    if first.ms_part is not None:
        return f"part {first.ms_part.index} of fused {first.ms}"
    return first.ms + (" (transposed)" if first.axes is not None else "")


def _inverse(axes: Tuple[int, ...]) -> Tuple[int, ...]:
    return tuple(int(a) for a in np.argsort(axes))


def _axes(axes: Optional[Tuple[int, ...]], ndim: int, where: str) -> Tuple[int, ...]:
    if axes is None:
        return tuple(range(ndim))[::-1]
    if sorted(axes) != list(range(ndim)):
        raise ParityUsageError(f"{where}: axes {axes} is no permutation of the {ndim} axes of a tensor of that rank")
    return tuple(axes)


def squeezed(shape: Iterable[int]) -> Tuple[int, ...]:
    """``shape`` without its unit dimensions: shapes that agree so hold the same values in the same order."""
    return tuple(d for d in shape if d != 1)


def layout_pairs(
    key: str, key_is_ms: bool, layout: Layout, key_slot: Slot, other: Callable[[str], Slot], how: str = "name_map"
) -> List[Pair]:
    """The pairs one ``name_map`` entry ``key: layout`` describes. ``key_slot`` is the key's slot;
    ``other(name)`` finds a slot of the other framework (raising when it does not exist)."""
    pieces = layout.parts if isinstance(layout, Fuse) else (layout,)
    where = f"name_map[{key!r}]"
    # (slot, axes from the part's own layout to the key's layout, reshape allowed)
    found: List[Tuple[Slot, Optional[Tuple[int, ...]], bool]] = []
    for piece in pieces:
        name = piece if isinstance(piece, str) else piece.name
        slot = other(name)
        axes = _axes(piece.axes, len(slot.shape), where) if isinstance(piece, Transpose) else None
        found.append((slot, axes, isinstance(piece, Reshape)))
    shapes = [tuple(s.shape[a] for a in axes) if axes else s.shape for s, axes, _ in found]
    if not isinstance(layout, Fuse):
        (slot, axes, free), shape = found[0], shapes[0]
        if int(np.prod(shape)) != int(np.prod(key_slot.shape)) or not (
            free or squeezed(shape) == squeezed(key_slot.shape)
        ):
            raise ParityUsageError(
                f"{where}: {slot.name!r} {slot.shape} does not fit {key!r} {key_slot.shape}"
                + (f" once transposed to {shape}" if axes else "")
            )
        return [_pair(key_slot, slot, key_is_ms, None, axes, how)]
    axis = layout.axis if layout.axis >= 0 else layout.axis + len(key_slot.shape)
    total = 0
    parts: List[Tuple[int, int]] = []
    for shape in shapes:
        if len(shape) != len(key_slot.shape) or not 0 <= axis < len(shape):
            raise ParityUsageError(
                f"{where}: parts of shapes {shapes} cannot be joined along axis "
                f"{layout.axis} into {key!r} {key_slot.shape}"
            )
        parts.append((total, total + shape[axis]))
        total += shape[axis]
    joined = key_slot.shape[:axis] + (total,) + key_slot.shape[axis + 1 :]
    if any(s[:axis] + s[axis + 1 :] != joined[:axis] + joined[axis + 1 :] for s in shapes) or joined != key_slot.shape:
        raise ParityUsageError(
            f"{where}: parts of shapes {shapes} joined along axis {axis} do not make {key!r} {key_slot.shape}"
        )
    return [
        _pair(key_slot, slot, key_is_ms, Part(axis, start, stop, i, len(found)), axes, how)
        for i, ((slot, axes, _), (start, stop)) in enumerate(zip(found, parts))
    ]


def _pair(
    key_slot: Slot, slot: Slot, key_is_ms: bool, part: Optional[Part], axes: Optional[Tuple[int, ...]], how: str
) -> Pair:
    """``axes`` takes the part's layout to the key's; a Pair's axes take PyTorch's to MindSpore's."""
    ms, torch = (key_slot, slot) if key_is_ms else (slot, key_slot)
    pair_axes = axes if key_is_ms or axes is None else _inverse(axes)
    return Pair(
        ms.name,
        torch.name,
        how,
        ms.shape,
        torch.shape,
        ms.trainable and torch.trainable,
        ms_part=part if key_is_ms else None,
        torch_part=None if key_is_ms else part,
        axes=pair_axes,
    )
