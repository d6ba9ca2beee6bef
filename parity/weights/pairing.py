"""Pairing tensors by what they are rather than by name: the known renames, layer kinds, fused
q/k/v sibling groups, definition order, and the error (with the name_map entries that would
help) for what is left. Used by :func:`parity.weights.transfer.map_weights`."""

from __future__ import annotations

import difflib
from typing import Callable, Dict, Iterable, List, Sequence, Tuple

from ..backends import Slot
from ..errors import ParityUsageError
from .layouts import Fuse, Pair, layout_pairs, squeezed

# What a caller pairs a PyTorch slot and a MindSpore slot with: (PyTorch's, MindSpore's, how).
Claim = Callable[[Slot, Slot, str], None]

__all__ = [
    "RENAMES",
    "KINDS",
    "canonical_leaf",
    "Index",
    "Unmapped",
    "fuse_automatically",
    "align_by_order",
    "compatible",
    "unmapped_message",
    "table",
    "row",
    "some",
]

# PyTorch leaf name -> MindSpore leaf names it may be called instead.
RENAMES: Dict[str, Tuple[str, ...]] = {
    "weight": ("gamma", "embedding_table"),
    "bias": ("beta",),
    "running_mean": ("moving_mean",),
    "running_var": ("moving_variance",),
}
_CANONICAL = {alt: leaf for leaf, alts in RENAMES.items() for alt in alts}
# Layer classes whose tensors pair by kind; MindSpore's names first where they differ.
KINDS = {
    "Dense": "Linear",
    "Linear": "Linear",
    "Embedding": "Embedding",
    "LayerNorm": "LayerNorm",
    "GroupNorm": "GroupNorm",
    "Conv1d": "Conv1d",
    "Conv2d": "Conv2d",
    "Conv3d": "Conv3d",
    "Conv1dTranspose": "ConvTranspose1d",
    "Conv2dTranspose": "ConvTranspose2d",
    "ConvTranspose1d": "ConvTranspose1d",
    "ConvTranspose2d": "ConvTranspose2d",
    "BatchNorm1d": "BatchNorm",
    "BatchNorm2d": "BatchNorm",
    "BatchNorm3d": "BatchNorm",
    "InstanceNorm1d": "InstanceNorm",
    "InstanceNorm2d": "InstanceNorm",
    "PReLU": "PReLU",
    # A fused q/k/v projection and its output projection are Linear layers' tensors.
    "MultiheadAttention": "Linear",
    "NonDynamicallyQuantizableLinear": "Linear",
}


class Unmapped(ParityUsageError):
    """Tensors the weight map could not pair: left over on either side (``ms``, ``torch``: slots),
    or paired by name with another shape (``conflicts``: (MindSpore slot, PyTorch slot) pairs).
    Checkpoint conversion reports them as missing, unexpected and shape-mismatched keys."""

    def __init__(
        self,
        message: str,
        *,
        ms: Iterable[Slot] = (),
        torch: Iterable[Slot] = (),
        conflicts: Iterable[Tuple[Slot, Slot]] = (),
    ) -> None:
        super().__init__(message)
        self.ms, self.torch, self.conflicts = list(ms), list(torch), list(conflicts)


def some(items: Sequence[str], shown: int = 3) -> str:
    more = f" and {len(items) - shown} more" if len(items) > shown else ""
    return ", ".join(items[:shown]) + more


def compatible(a: Slot, b: Slot) -> bool:
    return a.shape == b.shape or squeezed(a.shape) == squeezed(b.shape)


def canonical_leaf(slot: Slot) -> str:
    leaf = _CANONICAL.get(slot.leaf, slot.leaf)
    for base in ("weight", "bias"):  # MultiheadAttention's in_proj_weight is a weight too
        if leaf.endswith("_" + base):
            return base
    return leaf


def _kind(slot: Slot) -> Tuple[str, str]:
    """What a tensor is, for pairing by definition order: a known layer kind and its leaf, or
    any parameter of a custom layer (whose names say nothing reliable)."""
    kind = KINDS.get(slot.layer_type)
    return (kind, canonical_leaf(slot)) if kind else ("custom", "")


class Index:
    """One side's slots by name and alias, and which of them are taken."""

    def __init__(self, slots: List[Slot], label: str) -> None:
        self.slots, self.label = slots, label
        self.by_name: Dict[str, Slot] = {}
        for slot in slots:
            self.by_name.setdefault(slot.name, slot)
            for alias in slot.aliases:
                self.by_name.setdefault(alias, slot)
        self.taken: Dict[str, str] = {}  # slot name -> what took it

    def get(self, name: str, where: str) -> Slot:
        slot = self.by_name.get(name)
        if slot is None:
            near = difflib.get_close_matches(name, list(self.by_name), n=3, cutoff=0.6)
            hint = f" Nearest: {near}." if near else f" {self.label} has: {some(sorted(self.by_name), 8)}."
            raise ParityUsageError(f"{where} names {name!r}, which is no {self.label} tensor.{hint}")
        return slot

    def take(self, slot: Slot, by: str) -> None:
        if slot.name in self.taken:
            raise ParityUsageError(
                f"name_map pairs {self.label} {slot.name!r} twice: with {self.taken[slot.name]!r} and {by!r}"
            )
        self.taken[slot.name] = by

    def rest(self) -> List[Slot]:
        return [s for s in self.slots if s.name not in self.taken]


def table(rows: List[Tuple[str, str, str, str]]) -> str:
    header = ("side", "name", "shape", "dtype")
    widths = [max(len(r[i]) for r in rows + [header]) for i in range(4)]

    def line(r: Tuple[str, str, str, str]) -> str:
        return "  " + "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip()

    return "\n".join([line(header)] + [line(r) for r in rows])


def row(side: str, slot: Slot) -> Tuple[str, str, str, str]:
    return (side, slot.name, str(slot.shape), slot.dtype)


def _sibling_runs(slots: List[Slot]) -> List[List[Slot]]:
    """Tensors of sibling layers with the same leaf, shape and layer type (q/k/v), two or more."""
    runs: Dict[Tuple[str, str, Tuple[int, ...], str, bool], List[Slot]] = {}
    for s in slots:
        runs.setdefault((s.layer.rpartition(".")[0], canonical_leaf(s), s.shape, s.layer_type, s.trainable), []).append(
            s
        )
    return [run for run in runs.values() if len(run) >= 2 and len({s.layer for s in run}) == len(run)]


def fuse_automatically(ms: Index, torch: Index) -> List[Pair]:
    """Pair leftover tensors that are several sibling tensors of the other side joined along
    axis 0 (fused q/k/v), when as many such tensors as such sibling runs are left, in order."""
    found: List[Pair] = []
    for fused_side, split_side, fused_is_ms in ((ms, torch, True), (torch, ms, False)):
        runs = _sibling_runs(split_side.rest())
        by_shape: Dict[Tuple[Tuple[int, ...], str, bool], Tuple[List[Slot], List[List[Slot]]]] = {}
        for f in fused_side.rest():
            if not f.shape:
                continue
            fits = [
                r
                for r in runs
                if _kind(r[0]) == _kind(f) != ("custom", "")
                and r[0].trainable == f.trainable
                and (len(r) * r[0].shape[0],) + r[0].shape[1:] == f.shape
            ]
            if fits:
                key = (f.shape, canonical_leaf(f), f.trainable)
                by_shape.setdefault(key, ([], fits))[0].append(f)
        how = "fused automatically" if fused_is_ms else "split automatically"
        for fused, fits in by_shape.values():
            if len(fused) != len(fits):
                continue  # ambiguous: left to the definition order or to the error
            for f, run in zip(fused, fits):
                value = Fuse(tuple(s.name for s in run), 0)
                pairs = layout_pairs(f.name, fused_is_ms, value, f, split_side.by_name.__getitem__, how)
                fused_side.take(f, how)
                for s in run:
                    split_side.take(s, f.name)
                found += pairs
    return found


def align_by_order(
    rest_ms: List[Slot],
    rest_torch: List[Slot],
    claim: Claim,
    ignored: Sequence[Tuple[str, str]],
    leave_constants: bool = False,
) -> List[Tuple[str, str]]:
    """Pair what names could not, in definition order: all of it in lockstep when leaf and shape
    agree all along, else kind by kind (layer class and shape); raise on what is left. With
    ``leave_constants``, what is left on one side only, every one of it a constant (not trainable:
    mindcv's one-hot matrices, a rotary table), is left as built: returned as (side, name)."""
    left_ms: List[Slot] = []
    left_torch: List[Slot] = []
    for trainable in (True, False):
        ms_group = [m for m in rest_ms if m.trainable == trainable]
        torch_group = [t for t in rest_torch if t.trainable == trainable]
        if len(ms_group) == len(torch_group) and all(
            compatible(m, t) and canonical_leaf(m) == canonical_leaf(t) for m, t in zip(ms_group, torch_group)
        ):
            for m, t in zip(ms_group, torch_group):
                claim(t, m, "definition order")
            continue
        kinds: Dict[Tuple[str, str, Tuple[int, ...]], Tuple[List[Slot], List[Slot]]] = {}
        for side, group in ((0, ms_group), (1, torch_group)):
            for s in group:
                kinds.setdefault(_kind(s) + (squeezed(s.shape),), ([], []))[side].append(s)
        for ms_kind, torch_kind in kinds.values():
            if len(ms_kind) == len(torch_kind):
                for m, t in zip(ms_kind, torch_kind):
                    claim(t, m, "definition order")
            else:
                left_ms += ms_kind
                left_torch += torch_kind
    for owner, left, other in (("MindSpore", left_ms, left_torch), ("PyTorch", left_torch, left_ms)):
        if leave_constants and left and not other and not any(s.trainable for s in left):
            return [(owner, s.name) for s in left]
    if left_ms or left_torch:
        order = {s.name: i for i, s in enumerate(rest_ms + rest_torch)}
        left_ms.sort(key=lambda s: order[s.name])
        left_torch.sort(key=lambda s: order[s.name])
        raise Unmapped(unmapped_message(left_ms, left_torch, ignored, []), ms=left_ms, torch=left_torch)
    return []


def unmapped_message(
    left_ms: List[Slot], left_torch: List[Slot], ignored: Sequence[Tuple[str, str]], entries: Sequence[str]
) -> str:
    """The error for tensors left unpaired, with ``entries``: name_map entries that would pair some
    of them, each consistent with both sides' order, shapes and layer kinds."""
    rows = [row("MindSpore", m) for m in left_ms] + [row("PyTorch", t) for t in left_torch]
    lines = [
        f"Unmapped parameters: in MindSpore only {[m.name for m in left_ms]}; "
        f"in PyTorch only {[t.name for t in left_torch]}",
        table(rows),
        "Names differ beyond the known renames and the leftovers do not line up in definition "
        "order by kind and shape. Pass name_map={pytorch_name: mindspore_name} for these.",
    ]
    if entries:
        lines.append("Nearest candidates (check them), as name_map entries:")
        lines += [f"    {entry}," for entry in entries]
    if ignored:
        lines.append(f"Ignored PyTorch buffers (not paired): {some([f'{n} ({r})' for n, r in ignored])}")
    return "\n".join(lines)
