"""The report of a checkpoint conversion, in the terms users know from Hugging Face's loading
report (missing, unexpected and shape-mismatched keys), with the nearest names on the other side
and the name map entries that would pair them. Text only; :mod:`parity.tools.convert.checkpoint` fills it in."""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass, field
from typing import Dict, List, Tuple

from ...backends import Slot
from ...errors import ParityUsageError
from ...weights.layouts import squeezed
from ...weights.pairing import RENAMES, compatible, some
from ...weights.transfer import WeightMap

__all__ = ["ConversionReport", "ConversionError", "Key", "keys"]

_CANONICAL = {alt: leaf for leaf, alts in RENAMES.items() for alt in alts}


class ConversionError(ParityUsageError):
    """Tensors were unaccounted for and nothing was written; ``report`` lists them."""

    def __init__(self, message: str, report: "ConversionReport"):
        super().__init__(message)
        self.report = report


@dataclass(frozen=True)
class Key:
    """One tensor in a report: its name, shape, dtype and the nearest name on the other side."""

    name: str
    shape: Tuple[int, ...]
    dtype: str
    near: Tuple[Tuple[str, Tuple[int, ...]], ...] = ()  # (name, shape) of the nearest leftover, if any


@dataclass
class ConversionReport:
    """What a conversion did, in the terms of Hugging Face's loading report: keys of the model the
    source did not fill (``missing``), keys of the source nothing used (``unexpected``), pairs whose
    shapes differ (``mismatched``: (source key, model key)), and keys left out on purpose
    (``dropped``: (name, reason))."""

    source: str
    target: str  # the file written, or the model's class when loaded in place
    direction: str  # "PyTorch -> MindSpore" or "MindSpore -> PyTorch"
    model: str
    map: WeightMap
    missing: List[Key] = field(default_factory=list)
    unexpected: List[Key] = field(default_factory=list)
    mismatched: List[Tuple[Key, Key]] = field(default_factory=list)
    dropped: List[Tuple[str, str]] = field(default_factory=list)
    casts: Dict[Tuple[str, str], int] = field(default_factory=dict)
    cast_notes: List[Tuple[str, str, str]] = field(default_factory=list)  # (source name, "rounded"/"lossy", what)
    notes: List[str] = field(default_factory=list)
    verified: int = 0
    written: bool = False

    @property
    def complete(self) -> bool:
        """Every tensor of both sides accounted for."""
        return not (self.missing or self.unexpected or self.mismatched)

    @property
    def lossy(self) -> int:
        """Source tensors whose cast to the model's dtype lost values (written only with allow_cast)."""
        return sum(kind == "lossy" for _, kind, _ in self.cast_notes)

    @property
    def converted(self) -> int:
        """Tensors of the model filled from the source."""
        side = 1 if self.direction.startswith("MindSpore") else 0
        return len({(p.torch if side else p.ms) for p in self.map.pairs})

    def __str__(self) -> str:
        return "\n".join(self._headline() + self._problems() + self._details() + self._verdict())

    def _headline(self) -> List[str]:
        lines = [f"{self.direction}: {self.source} -> {self.target}"]
        if self.verified:
            where = f"after reloading {self.target} into {self.model}" if self.written else f"in {self.model}"
            lossy = self.lossy
            lines.append(
                f"{self.verified - lossy}/{self.converted} tensors converted and verified bit-identical "
                f"{where}"
                + (
                    f"; {lossy} more cast with loss (allow_cast) and verified only as cast: not the source's values"
                    if lossy
                    else ""
                )
            )
        counts: Dict[str, int] = {}
        for pair in self.map.pairs:
            counts[pair.how] = counts.get(pair.how, 0) + 1
        lines.append("  pairs: " + ", ".join(f"{how} {n}" for how, n in counts.items()))
        return lines

    def _problems(self) -> List[str]:
        source, model = self.source, self.model
        lines = []
        if self.missing:
            lines.append(f"Missing: {len(self.missing)} tensors of {model} that {source} does not fill:")
            lines += [f"  {_key(k)}{_near(k)}" for k in self.missing]
        if self.unexpected:
            lines.append(f"Unexpected: {len(self.unexpected)} tensors of {source} that nothing in {model} takes:")
            lines += [f"  {_key(k)}{_near(k)}" for k in self.unexpected]
        if self.mismatched:
            lines.append(f"Shape mismatch: {len(self.mismatched)} tensors paired by name with another shape:")
            lines += [f"  {s.name} {s.shape} in {source}, {m.name} {m.shape} in {model}" for s, m in self.mismatched]
        entries = _entries(self)
        if entries:
            lines.append("Name map entries that would pair some of them (TOML for --name-map; check them):")
            lines += [f"  {e}" for e in entries]
        return lines

    def _verdict(self) -> List[str]:
        if self.complete:
            return []
        if self.verified:
            return [
                f"Converted without them (allow_missing): the tensors of {self.model} not converted keep their values"
            ]
        return [
            "Nothing was converted: every tensor must be accounted for. Give a name map (--name-map FILE, "
            "PyTorch names to MindSpore names) or pass --allow-missing (allow_missing=True) to convert the rest."
        ]

    def _details(self) -> List[str]:
        lines = []
        reasons: Dict[str, List[str]] = {}
        for name, reason in self.dropped:
            reasons.setdefault(reason, []).append(name)
        if reasons:
            lines.append("Not converted, on purpose:")
            lines += [f"  {len(names)} {reason}: {some(names)}" for reason, names in reasons.items()]
        laid_out = [p for p in self.map.pairs if p.laid_out]
        if laid_out:
            lines.append("Fused, split or transposed:")
            lines += [f"  {p.torch} {p.torch_shape} -> {p.ms} {p.ms_shape} ({p.how}{_part(p)})" for p in laid_out]
        aligned = self.map.alignments()
        if aligned:
            lines.append("Paired by definition order (the names differ; check them):")
            lines += [f"  {p.torch} -> {p.ms}" for p in aligned]
        if self.casts:
            lines.append(
                "Cast to the model's dtype: " + ", ".join(f"{n} {src} -> {dst}" for (src, dst), n in self.casts.items())
            )
            lines += [
                f"  {'LOST' if kind == 'lossy' else 'rounded'}: {name} {what}" for name, kind, what in self.cast_notes
            ]
        lines += [f"Note: {note}" for note in self.notes]
        return lines


def _key(key: Key) -> str:
    return f"{key.name} {key.shape} {key.dtype}"


def _near(key: Key) -> str:
    if not key.near:
        return ""
    name, shape = key.near[0]
    return f"   did you mean {name}" + ("" if shape == key.shape else f" {shape}") + "?"


def _part(pair) -> str:
    part = pair.ms_part or pair.torch_part
    text = f", part {part.index + 1} of {part.count} along axis {part.axis}" if part else ""
    return text + (", transposed" if pair.axes is not None else "")


def _entries(report: ConversionReport) -> List[str]:
    """``"torch name" = "mindspore name"`` for a missing and an unexpected key that are each
    other's nearest name, of shapes that fit."""
    to_ms = report.direction.startswith("PyTorch")
    model = {k.name: k for k in report.missing}
    lines = []
    for key in report.unexpected:
        if not key.near:
            continue
        other = model.get(key.near[0][0])
        if other and other.near and other.near[0][0] == key.name and squeezed(other.shape) == squeezed(key.shape):
            torch_name, ms_name = (key.name, other.name) if to_ms else (other.name, key.name)
            lines.append(f"{json.dumps(torch_name)} = {json.dumps(ms_name)}")
    return lines


def _canonical(name: str) -> str:
    """``name`` with MindSpore's leaf renamed as PyTorch calls it (``bn.gamma`` -> ``bn.weight``)."""
    prefix, dot, leaf = name.rpartition(".")
    return prefix + dot + _CANONICAL.get(leaf, leaf)


def _nearest(slot: Slot, others: List[Slot]) -> Tuple[Tuple[str, Tuple[int, ...]], ...]:
    """The other side's leftover nearest in name (difflib, on names with the known renames undone),
    one with the same leaf first, then one of a shape that fits; none below a ratio of 0.5."""
    name, leaf = _canonical(slot.name), _canonical(slot.name).rpartition(".")[2]
    scored = []
    for other in others:
        ratio = difflib.SequenceMatcher(None, name, _canonical(other.name)).ratio()
        if ratio >= 0.5:
            same_leaf = _canonical(other.name).rpartition(".")[2] == leaf
            scored.append((not same_leaf, not compatible(slot, other), -ratio, other.name, other.shape))
    scored.sort()
    return tuple((n, shape) for *_, n, shape in scored[:1])


def keys(slots: List[Slot], others: List[Slot]) -> List[Key]:
    """Report keys for ``slots`` (one side's leftovers), each with its nearest of ``others``."""
    return [Key(s.name, s.shape, s.dtype, _nearest(s, others)) for s in slots]
