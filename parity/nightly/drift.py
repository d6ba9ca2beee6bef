"""What changed between a stored run (the baseline) and this one: per check and per tensor.

A tensor's *error* is its record's ``margin``: the greatest |MindSpore - PyTorch| over its
elements divided by what its tolerance allows there (``atol + rtol * |PyTorch|``, after the
rounding-envelope judge where that ran), so at most 1 passes. Checks are matched by node id and
their place among the test's checks; tensors by kind, name, mode and training step.

- new failure: a check that fails (or errors) now and did not in the baseline; or one that failed
  before and has tensors failing now that passed then.
- fixed: a check that failed (or errored) in the baseline and passes now.
- drift: a tensor that passes in both runs whose margin grew more than ``factor`` times over the
  baseline's: ``now > factor * max(before, floor)``. The floor (:data:`FLOOR`, a thousandth of
  the tolerance) keeps agreement far inside the tolerance from counting as drift: a margin going
  from 1e-9 to 1e-8 is ten times larger and still nothing.
- new: a check the baseline does not have; missing: one the baseline has and this run does not.

Standard library only.
"""

from __future__ import annotations

import datetime
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Dict, Iterable, List, Optional, Sequence, Set, Tuple

from .runs import Run, check_key, check_label, environment_differences

if TYPE_CHECKING:  # typing has it from Python 3.10; annotations are never evaluated here
    from typing import TypeGuard

__all__ = [
    "FLOOR",
    "DEFAULT_FACTOR",
    "BAD",
    "TensorChange",
    "CheckChange",
    "Comparison",
    "compare",
    "tensor_label",
    "fmt",
]

FLOOR = 1e-3
DEFAULT_FACTOR = 4.0
BAD = ("fail", "error", "crashed", "interrupted")
_LIMIT = 10  # entries of each kind listed in the summary


def fmt(value: Optional[float]) -> str:
    """A margin as the summary shows it: three significant digits."""
    if value is None:
        return "-"
    return f"{value:.3g}" if math.isfinite(value) else str(value)


def _finite(value: object) -> TypeGuard[float]:
    return isinstance(value, (int, float)) and math.isfinite(value)


def _tensor_key(tensor: Dict[str, Any]) -> Tuple[str, str, str, Optional[int]]:
    return tensor.get("kind") or "", tensor.get("name") or "", tensor.get("mode") or "", tensor.get("step")


def tensor_label(tensor: Dict[str, Any]) -> str:
    """``output 'output'``, with the mode and the training step where the record has them."""
    kind, name, mode, step = _tensor_key(tensor)
    return f"{kind} '{name}'" + (f" [{mode}]" if mode else "") + (f" step {step}" if step is not None else "")


@dataclass(frozen=True)
class TensorChange:
    """One tensor's margin in the baseline (``before``) and now (``after``)."""

    label: str
    before: Optional[float]
    after: Optional[float]
    floor: float = FLOOR
    note: str = ""  # the tolerance changed, so the margins measure against different allowances

    @property
    def ratio(self) -> Optional[float]:
        if not (_finite(self.before) and _finite(self.after)):
            return None
        return self.after / max(self.before, self.floor)


@dataclass
class CheckChange:
    """One check that changed: its ``kind`` (``new failure``, ``fixed``, ``drift``, ``new``,
    ``missing``), its verdicts, the tensors concerned and the record (this run's, or the
    baseline's for a missing check)."""

    kind: str
    key: Tuple[str, int]
    before: Optional[str]
    after: Optional[str]
    record: Dict[str, Any]
    tensors: List[TensorChange] = field(default_factory=list)

    @property
    def label(self) -> str:
        return check_label(self.key)

    @property
    def worst(self) -> Optional[TensorChange]:
        """The drifted tensor of the greatest ratio, or the failing one of the greatest margin."""
        if not self.tensors:
            return None
        if self.kind == "drift":
            return max(self.tensors, key=lambda t: t.ratio or 0.0)
        return max(self.tensors, key=lambda t: t.after if _finite(t.after) else math.inf)

    def line(self) -> str:
        """One summary line: ``NEW FAILURE test_x.py::test_y: output 'output' margin 9 (baseline 0.02)``."""
        head = f"{self.kind.upper()} {self.label}"
        worst = self.worst
        more = f" (and {_count(len(self.tensors) - 1, 'more tensor')})" if len(self.tensors) > 1 else ""
        if self.kind == "drift" and worst is not None:
            assert worst.before is not None  # a drifted tensor has both margins
            floored = f", counted as {worst.floor:g}" if worst.before < worst.floor else ""
            return (
                f"{head}: {worst.label} margin {fmt(worst.after)}, {worst.ratio:.3g}x the baseline's "
                f"{fmt(worst.before)}{floored}{more}{'; ' + worst.note if worst.note else ''}"
            )
        if self.kind == "new failure":
            if worst is None:
                error = (self.record.get("error") or {}).get("type") or self.after
                return f"{head}: {error} (baseline: {self.before or 'absent'})"
            return (
                f"{head}: {worst.label} margin {fmt(worst.after)} (baseline {fmt(worst.before)}, {self.before}){more}"
            )
        if self.kind == "fixed":
            margin = fmt(self.record.get("worst_margin"))
            return f"{head}: {self.after}, worst margin {margin} (baseline: {self.before})"
        if self.kind == "missing":
            return f"{head}: made no check in this run (baseline: {self.before})"
        return f"{head}: {self.after}"


@dataclass
class Comparison:
    """This run against ``baseline``; ``outside`` holds the baseline's checks whose tests this run
    did not collect (a shard, ``-k``, or a test deleted or renamed), which count as neither."""

    baseline: Run
    factor: float
    floor: float
    environment: List[str]
    changes: List[CheckChange]
    outside: List[Tuple[str, int]] = field(default_factory=list)

    def of(self, kind: str) -> List[CheckChange]:
        return [c for c in self.changes if c.kind == kind]

    @property
    def drifted_tensors(self) -> int:
        return sum(len(c.tensors) for c in self.of("drift"))

    def regressions(self, *, drift_fails: bool) -> List[str]:
        """What fails the run: ``["1 new failure", "2 drifted tensors"]``, empty when nothing does."""
        found = []
        if self.of("new failure"):
            found.append(_count(len(self.of("new failure")), "new failure"))
        if drift_fails and self.drifted_tensors:
            found.append(_count(self.drifted_tensors, "drifted tensor"))
        return found

    def counts(self) -> str:
        drift = self.of("drift")
        parts = [
            f"new failures {len(self.of('new failure'))}",
            f"fixed {len(self.of('fixed'))}",
            f"drifted {_count(self.drifted_tensors, 'tensor')} in {_count(len(drift), 'check')}",
            f"new checks {len(self.of('new'))}",
            f"missing {len(self.of('missing'))}",
        ]
        if self.outside:
            parts.append(f"not collected in this run {len(self.outside)}")
        return ", ".join(parts)

    def header_lines(self) -> List[str]:
        """The environment first (what differs from the baseline's), then what the baseline is."""
        env = self.baseline.environment
        if self.environment:
            lines = ["environment differs from the baseline's: " + "; ".join(self.environment)]
        else:
            lines = ["environment: the same as the baseline's (versions, device, CPU, seed, mode)"]
        commit = (env.get("git") or {}).get("commit")
        lines.append(
            f"baseline: {', '.join(self.baseline.sources)} (created {_seconds(env.get('created'))}"
            f"{', commit ' + commit[:10] if commit else ''}, {_count(len(self.baseline.checks), 'check')}); "
            f"drift: a passing tensor's margin grew more than {self.factor:g}x "
            f"(margins under {self.floor:g} count as {self.floor:g})"
        )
        return lines

    def summary_lines(self, limit: int = _LIMIT) -> List[str]:
        lines = self.header_lines() + [self.counts()]
        for kind in ("new failure", "drift", "fixed", "missing", "new"):
            found = self.of(kind)
            if kind == "drift":
                found = sorted(found, key=lambda c: -_drift_ratio(c))
            lines += [c.line() for c in found[:limit]]
            if len(found) > limit:
                lines.append(f"... and {len(found) - limit} more {kind} checks")
        if self.outside:
            shown = ", ".join(check_label(k) for k in self.outside[:3])
            lines.append(
                f"not compared: {_count(len(self.outside), 'baseline check')} of tests this run did not "
                f"collect (deleted, renamed, or left out by a shard or -k/-m): {shown}"
                f"{' ...' if len(self.outside) > 3 else ''}"
            )
        lines += self.worst_lines()
        return lines

    def worst_lines(self) -> List[str]:
        lines: List[str] = []
        failures = self.of("new failure")
        if failures:
            worst = max(failures, key=lambda c: c.worst.after if c.worst and _finite(c.worst.after) else math.inf)
            lines.append(f"worst new failure: {worst.line()[len('NEW FAILURE ') :]}")
        drift = self.of("drift")
        if drift:
            worst = max(drift, key=_drift_ratio)
            lines.append(f"worst drift: {worst.line()[len('DRIFT ') :]}")
        return lines


def _drift_ratio(change: CheckChange) -> float:
    """A drift's ratio: its worst tensor's (a drift holds its drifted tensors, each of a known ratio)."""
    assert change.worst is not None
    return change.worst.ratio or 0.0


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _tolerance_note(before: Dict[str, Any], after: Dict[str, Any]) -> str:
    old, new = before.get("tolerance"), after.get("tolerance")
    if old and new and old != new:
        return (
            f"tolerance changed (rtol {old.get('rtol'):g} atol {old.get('atol'):g} -> "
            f"rtol {new.get('rtol'):g} atol {new.get('atol'):g})"
        )
    return ""


def _tensor_changes(
    before: Dict[str, Any], after: Dict[str, Any], factor: float, floor: float
) -> Tuple[List[TensorChange], List[TensorChange]]:
    """(newly failing, drifted) tensors of one check present in both runs."""
    old = {_tensor_key(t): t for t in before.get("tensors") or ()}
    failing: List[TensorChange] = []
    drifted: List[TensorChange] = []
    for tensor in after.get("tensors") or ():
        was = old.get(_tensor_key(tensor))
        change = TensorChange(
            tensor_label(tensor),
            None if was is None else was.get("margin"),
            tensor.get("margin"),
            floor,
            "" if was is None else _tolerance_note(was, tensor),
        )
        if not tensor.get("passed") and (was is None or was.get("passed")):
            failing.append(change)
        elif (
            tensor.get("passed")
            and was is not None
            and was.get("passed")
            and _finite(change.before)  # then its ratio is known
            and _finite(change.after)
            and change.after > factor * max(change.before, floor)
        ):
            drifted.append(change)
    return failing, drifted


def compare(
    baseline: Run,
    checks: Sequence[Dict[str, Any]],
    environment: Dict[str, Any],
    *,
    factor: float = DEFAULT_FACTOR,
    floor: float = FLOOR,
    collected: Optional[Iterable[str]] = None,
) -> Comparison:
    """Compare ``checks`` (this run's records) and ``environment`` with ``baseline``. ``collected``:
    the node ids this run collected, where known; the baseline's checks of other tests are then
    set apart as not collected rather than missing."""
    old = {check_key(r): r for r in baseline.checks}
    new = {check_key(r): r for r in checks}
    changes: List[CheckChange] = []
    for key in sorted(new):
        record = new[key]
        was = old.get(key)
        if was is None:
            changes.append(CheckChange("new", key, None, record["verdict"], record))
            continue
        before, after = was["verdict"], record["verdict"]
        failing, drifted = _tensor_changes(was, record, factor, floor)
        if after in BAD and (before not in BAD or failing):
            changes.append(CheckChange("new failure", key, before, after, record, failing))
        elif before in BAD and after == "pass":
            changes.append(CheckChange("fixed", key, before, after, record))
        if drifted:
            changes.append(CheckChange("drift", key, before, after, record, drifted))
    seen: Optional[Set[str]] = None if collected is None else set(collected)
    outside: List[Tuple[str, int]] = []
    for key in sorted(set(old) - set(new)):
        if seen is not None and key[0] not in seen:
            outside.append(key)
        else:
            changes.append(CheckChange("missing", key, old[key]["verdict"], None, old[key]))
    return Comparison(
        baseline, factor, floor, environment_differences(baseline.environment, environment), changes, outside
    )


def _seconds(created: object) -> str:
    """An environment's ``created`` as read, to the second (records keep microseconds)."""
    if not isinstance(created, str):  # as fromisoformat would refuse it
        return str(created)
    try:
        return datetime.datetime.fromisoformat(created).isoformat(timespec="seconds")
    except (TypeError, ValueError):
        return str(created)
