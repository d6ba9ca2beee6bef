"""Pairing by structure what names could not. Each side's leftover tensors, in definition order,
are described by their owning layer's kind (MindSpore's and PyTorch's classes of one kind alike),
their role (weight, bias, running mean, running variance: ``gamma``/``beta``/``moving_*`` are
their PyTorch counterparts' roles) and their shape; the two sequences are aligned, and the
alignment is kept only where it pairs every tensor with one of the same shape, agreeing role and
kind, in the same order on both sides. A tensor may stand for several consecutive sibling tensors
of the other side joined along axis 0 (fused q/k/v), each of the same role.

A layer class that neither framework owns (``custom``) agrees with any kind, and a tensor whose
name says no role agrees with any role; a norm's ``gamma`` never meets a ``bias``. Used by
:func:`parity.weights.transfer.map_weights` when names and definition order leave tensors over;
what it cannot pair is the error's subject, and only its order-consistent pairs are suggested."""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import List, Optional, Sequence, Set, Tuple

from ..backends import Slot
from .layouts import squeezed
from .pairing import KINDS, canonical_leaf, compatible

__all__ = ["Step", "Alignment", "align"]

_ROLES = ("weight", "bias", "running_mean", "running_var")
_WIDEST = 64  # tensors of both sides in one stretch widened to pair: a block's, not a model's


@dataclass(frozen=True)
class Step:
    """``whole`` pairs with ``parts`` of the other framework: one part is a plain pair, several
    are joined along axis 0 to make ``whole``. ``sure``: no other order-consistent alignment
    would pair these tensors otherwise (what an error may suggest)."""

    whole: Slot
    parts: Tuple[Slot, ...]
    whole_is_ms: bool
    sure: bool = True

    def entry(self) -> str:
        """The ``name_map`` entry that makes this step."""
        if len(self.parts) == 1:
            ms, torch = (self.whole, self.parts[0]) if self.whole_is_ms else (self.parts[0], self.whole)
            return f"{torch.name!r}: {ms.name!r}"
        return f"{self.whole.name!r}: parity.fuse({[p.name for p in self.parts]}, axis=0)"


@dataclass
class Alignment:
    steps: List[Step] = field(default_factory=list)
    left_ms: List[Slot] = field(default_factory=list)
    left_torch: List[Slot] = field(default_factory=list)


def _kind(slot: Slot) -> str:
    return KINDS.get(slot.layer_type, "custom")


def _role(slot: Slot) -> str:
    leaf = canonical_leaf(slot)
    return leaf if leaf in _ROLES else ""


def _descriptor(slot: Slot) -> Tuple[str, str, Tuple[int, ...]]:
    return (_kind(slot), _role(slot), squeezed(slot.shape))


def _agree(a: Slot, b: Slot) -> bool:
    """Same kind (or a custom layer), same role (or one unnamed), same trainability."""
    ka, kb, ra, rb = _kind(a), _kind(b), _role(a), _role(b)
    return (ka == kb or "custom" in (ka, kb)) and (ra == rb or "" in (ra, rb)) and a.trainable == b.trainable


def align(rest_ms: Sequence[Slot], rest_torch: Sequence[Slot]) -> Alignment:
    """Trainable tensors with trainable ones, the rest (running statistics, constants) apart:
    PyTorch lists its buffers after its parameters, MindSpore in between."""
    found = Alignment()
    for trainable in (True, False):
        ms = [m for m in rest_ms if m.trainable == trainable]
        torch = [t for t in rest_torch if t.trainable == trainable]
        steps, left_ms, left_torch = _align_group(ms, torch)
        found.steps += steps
        found.left_ms += left_ms
        found.left_torch += left_torch
    return found


# One stretch of both sequences: (MindSpore slice, PyTorch slice, its steps or None when unpaired).
_Segment = Tuple[slice, slice, Optional[List[Step]]]


def _align_group(ms: List[Slot], torch: List[Slot]) -> Tuple[List[Step], List[Slot], List[Slot]]:
    matcher = difflib.SequenceMatcher(
        None, [_descriptor(m) for m in ms], [_descriptor(t) for t in torch], autojunk=False
    )
    segments: List[_Segment] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        a, b = slice(i1, i2), slice(j1, j2)
        if tag == "equal":
            segments.append((a, b, [Step(m, (t,), True) for m, t in zip(ms[a], torch[b])]))
        else:
            segments.append((a, b, _resolve(ms[a], torch[b])))
    segments = _merge_unpaired(segments, ms, torch)
    steps: List[Step] = []
    left_ms: List[Slot] = []
    left_torch: List[Slot] = []
    for k, (a, b, found) in enumerate(segments):
        if found is None:
            left_ms += ms[a]
            left_torch += torch[b]
            continue
        shaky = _beside_unpaired(segments, k, ms, torch)
        steps += [Step(s.whole, s.parts, s.whole_is_ms, sure=not shaky) for s in found]
    return steps, left_ms, left_torch


def _merge_unpaired(segments: List[_Segment], ms: List[Slot], torch: List[Slot]) -> List[_Segment]:
    """Each stretch left unpaired, taken together with more and more of its neighbours until the
    stretch pairs (the aligner cut a fused q/k/v apart), else left as it is."""
    k = 0
    while k < len(segments):
        if segments[k][2] is not None:
            k += 1
            continue
        for reach in range(1, len(segments)):
            lo, hi = max(0, k - reach), min(len(segments), k + reach + 1)
            a = slice(segments[lo][0].start, segments[hi - 1][0].stop)
            b = slice(segments[lo][1].start, segments[hi - 1][1].stop)
            if a.stop - a.start + b.stop - b.start > _WIDEST:
                break
            found = _resolve(ms[a], torch[b])
            if found is not None:
                segments[lo:hi] = [(a, b, found)]
                k = lo
                break
            if lo == 0 and hi == len(segments):
                break
        k += 1
    return segments


def _beside_unpaired(segments: List[_Segment], k: int, ms: List[Slot], torch: List[Slot]) -> bool:
    """A stretch next to an unpaired one holding a tensor like one of its own: the alignment
    could slide by that tensor, so its pairs are no safe suggestion."""
    own = {_descriptor(s) for s in ms[segments[k][0]] + torch[segments[k][1]]}
    for n in (k - 1, k + 1):
        if 0 <= n < len(segments) and segments[n][2] is None:
            a, b, _ = segments[n]
            if any(_descriptor(s) in own for s in ms[a] + torch[b]):
                return True
    return False


def _resolve(ms: List[Slot], torch: List[Slot]) -> Optional[List[Step]]:
    """Steps pairing every tensor of both stretches, in order, or None."""
    if not ms or not torch:
        return None
    if len(ms) == len(torch) and all(_agree(m, t) and compatible(m, t) for m, t in zip(ms, torch)):
        return [Step(m, (t,), True) for m, t in zip(ms, torch)]
    return _joined(ms, torch, True) or _joined(torch, ms, False)


def _joined(wholes: List[Slot], parts: List[Slot], whole_is_ms: bool) -> Optional[List[Step]]:
    """Each of ``wholes`` in order made of the next unused ``parts`` of its role, consecutive
    rows adding up to its own, or None where one does not add up or a part is left."""
    used: Set[int] = set()
    steps: List[Step] = []
    for whole in wholes:
        if not whole.shape:
            return None
        taken: List[int] = []
        rows = 0
        for i, part in enumerate(parts):
            if i in used or not _agree(whole, part) or _role(whole) != _role(part):
                continue
            if not part.shape or part.shape[1:] != whole.shape[1:]:
                return None
            taken.append(i)
            rows += part.shape[0]
            if rows >= whole.shape[0]:
                break
        if rows != whole.shape[0] or not _siblings([parts[i] for i in taken]):
            return None
        used.update(taken)
        steps.append(Step(whole, tuple(parts[i] for i in taken), whole_is_ms))
    return steps if len(used) == len(parts) else None


def _siblings(parts: List[Slot]) -> bool:
    """One tensor, or tensors of distinct layers under one parent (q, k and v)."""
    return len(parts) == 1 or (
        len({p.layer for p in parts}) == len(parts) and len({p.layer.rpartition(".")[0] for p in parts}) == 1
    )
