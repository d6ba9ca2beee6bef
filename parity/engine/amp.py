"""Mixed-precision pairs: MindSpore's ``auto_mixed_precision`` levels against ``torch.autocast``
(or ``Module.half()``), and which layer ran in which precision on each side.

``parity.check(..., amp="O1")`` runs a deep copy of the Cell through
``mindspore.amp.auto_mixed_precision(copy, "O1", float16)`` and PyTorch's forward passes under
``torch.autocast(device, float16)``; every floating tensor is judged by the half-precision golden
judge (:mod:`parity.judge.golden`), so two sides whose lists keep the same ops in half precision pass.
Each layer's precision is what its hooks saw (the dtype of what flowed out), and on MindSpore's
side also the casts O1 wrote into the Cell's code. No framework is imported here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Dict, List, Optional

from ..errors import ParityUsageError

__all__ = ["Amp", "amp", "parse", "LEVELS", "TORCH_SIDES", "precision_rows", "precision_causes", "rewrite_cause"]

LEVELS = ("O0", "O1", "O2", "O3", "auto")
TORCH_SIDES = ("autocast", "half")
DTYPES = ("float16", "bfloat16")


@dataclass(frozen=True)
class Amp:
    """One mixed-precision pair: MindSpore's ``level`` in ``dtype`` against PyTorch's ``torch``
    side (``"autocast"``: ``torch.autocast(device, dtype)`` around the forward; ``"half"``: a copy
    of the Module converted to ``dtype``)."""

    level: str
    dtype: str = "float16"
    torch: str = "autocast"

    @property
    def ms_label(self) -> str:
        return f"MindSpore {self.level}"

    @property
    def torch_label(self) -> str:
        if self.torch == "half":
            return "Module.half()" if self.dtype == "float16" else "Module.bfloat16()"
        return f"torch.autocast({self.dtype})"

    def __str__(self) -> str:
        return f"{self.ms_label} ({self.dtype}) vs {self.torch_label}"


def amp(level: str, *, dtype: str = "float16", torch: str = "autocast") -> Amp:
    """``check(..., amp=parity.amp("O2", dtype="bfloat16", torch="half"))``: see :class:`Amp`."""
    spec = parse(Amp(level, dtype, torch), "parity.amp()")
    assert spec is not None  # an Amp is never None
    return spec


def parse(value, where: str) -> Optional[Amp]:
    """None, a level name, or an :class:`Amp`, checked; anything else is a usage error."""
    if value is None:
        return None
    if isinstance(value, str):
        value = Amp(value)
    if not isinstance(value, Amp):
        raise ParityUsageError(
            f"{where}: amp must be a level name ({', '.join(LEVELS)}) or parity.amp(level, "
            f"dtype=..., torch=...), got {type(value).__qualname__} {value!r}"
        )
    for label, given, choices in (
        ("level", value.level, LEVELS),
        ("dtype", value.dtype, DTYPES),
        ("torch side", value.torch, TORCH_SIDES),
    ):
        if given not in choices:
            raise ParityUsageError(
                f"{where}: unknown amp {label} {given!r}; expected one of {', '.join(repr(c) for c in choices)}"
            )
    return value


@dataclass(frozen=True)
class PrecisionRow:
    """The precision one layer ran in on each side (its forward output's floating dtype; on
    MindSpore's side the half dtype where its code casts to it)."""

    path: str
    ms_path: str
    ms_type: str
    torch_type: str
    ms: str
    torch: str

    @property
    def differs(self) -> bool:
        return bool(self.ms and self.torch) and self.ms != self.torch

    def describe(self, spec: Amp) -> str:
        types = self.ms_type if self.ms_type == self.torch_type else f"{self.ms_type}/{self.torch_type}"
        return (
            f"layer '{self.path}' ({types}) ran in different precisions: {spec.ms_label} ran it in {self.ms}, "
            f"{spec.torch_label} in {self.torch}"
        )


def _floating(dtypes) -> str:
    found = [d for d in dtypes if d and ("float" in d)]
    return min(found, key=_width) if found else ""


def _width(name: str) -> int:
    return {"float16": 16, "bfloat16": 16, "float32": 32, "float64": 64}.get(name, 32)


def precision_rows(verdicts, ms_casts: Dict[str, str]) -> List[PrecisionRow]:
    """One row per forward layer call that both sides recorded, in execution order."""
    rows, seen = [], set()
    for v in verdicts:
        if v.status == "unaligned" or v.call or v.path in seen:
            continue
        seen.add(v.path)
        ms = ms_casts.get(v.ms_path) or _floating(v.ms_out_dtypes)
        ms_type = re.sub(r"Opt(_\d+)?$", "", v.ms_type)  # O1's rewritten classes: DenseOpt, DenseOpt_1
        rows.append(PrecisionRow(v.path, v.ms_path, ms_type, v.torch_type, ms, _floating(v.out_dtypes)))
    return rows


def precision_causes(rows: List[PrecisionRow], spec: Amp, at: Optional[str], entries=()) -> List[str]:
    """The likely causes a precision difference gives a failing AMP check: the layer where the
    divergence was found, when its precisions differ, else the nearest one before it that does
    (else the first); and the known mismatches (``entries``) naming that layer's APIs."""
    differing = [r for r in rows if r.differs]
    if not differing:
        return []
    paths = [r.path for r in rows]
    chosen = None
    if at in paths:
        before = [r for r in rows[: paths.index(at) + 1] if r.differs]
        chosen = before[-1] if before else None
    chosen = chosen or differing[0]
    text = chosen.describe(spec)
    known = _known(entries, rows, chosen, spec)
    if known is not None:
        text += f" (known mismatch '{known.id}': {known.summary})"
    others = [r.path for r in differing if r is not chosen]
    if others:
        text += f"; {len(others)} other layers differ in precision: {', '.join(repr(p) for p in others[:5])}" + (
            " ..." if len(others) > 5 else ""
        )
    return [text]


def _known(entries, rows: List[PrecisionRow], chosen: PrecisionRow, spec: Amp):
    """The ``precision`` entry (see :mod:`parity.registry`) stating the precisions ``chosen`` ran in
    at this level, about its own layer pair or (``after``) the one run right before it."""
    if spec.torch != "autocast":
        return None  # the entries compare a level with torch.autocast, not with a .half() copy
    index = rows.index(chosen)
    for entry in entries:
        pattern = entry.amp
        if pattern is None or spec.level not in pattern.levels or not pattern.mindspore:
            continue
        if pattern.precisions(spec.dtype) != (chosen.ms, chosen.torch):
            continue
        target = (rows[index - 1] if index else None) if pattern.after else chosen
        if target is not None and _names(entry, target):
            return entry
    return None


def rewrite_cause(entries, ms_types, spec: Amp) -> str:
    """`` (known mismatch '<id>': ...)`` for a level that cannot rewrite a Cell holding one of
    ``ms_types`` (class names), where an entry names one of them; else empty."""
    for entry in entries:
        pattern = entry.amp
        if (
            pattern is not None
            and spec.level in pattern.levels
            and not pattern.mindspore
            and entry.mindspore.rpartition(".")[2] in ms_types
        ):
            return f"Known mismatch '{entry.id}': {entry.summary}" + (f"; fix: {entry.fix}" if entry.fix else "")
    return ""


def _names(entry, row: PrecisionRow) -> bool:
    return entry.torch.rpartition(".")[2] == row.torch_type and entry.mindspore.rpartition(".")[2] == row.ms_type
