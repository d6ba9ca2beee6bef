"""``parity compare-dumps`` on msprobe's summary dumps: two sides' nodes (``parity.tools.dumps.summaries``)
paired by module path, direction and call, and each tensor's statistics judged against the bounds
that an element-wise comparison within tolerance would imply.

If every element of A were within ``atol + rtol * |b|`` of B's, then (with ``n`` elements, ``rms``
B's norm over the square root of ``n``, ``amax`` B's largest magnitude):

* max and min differ by at most ``atol + rtol * amax``;
* the means by at most ``atol + rtol * rms``;
* the norms by at most ``sqrt(n) * atol + rtol * norm``;

each plus the statistics' own float32 rounding (pairwise summation: ``2 (log2 n + 1)`` units in
the last place of the scale). A statistic beyond its bound therefore proves that the tensors are
not within tolerance; statistics within their bounds prove nothing (different tensors share them).
Checksums (msprobe's ``md5`` field: a CRC32 of the tensor's bytes) that are equal mean identical
bits, barring a one-in-2^32 collision; checksums that differ prove only that some bit differs.

One side is the reference, as PyTorch is in ``check``: the PyTorch side when the other is
MindSpore, else B. The rows follow the reference's execution order.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

from ...engine.diagnosis.messages import fmt
from ...errors import ParityUsageError
from ...judge.tolerance import Tolerance, ToleranceSpec, check_globs_used, resolve
from .summaries import Node, Summary, SummaryDump, read_summary

__all__ = ["compare_summaries", "SummaryComparison", "NodeRow", "TensorStats", "PROOF"]

SCHEMA = 1
_EPS32 = 2.0**-24
_RENAMES = {
    "gamma": "weight",
    "beta": "bias",
    "moving_mean": "running_mean",
    "moving_variance": "running_var",
    "embedding_table": "weight",
}
PROOF = (
    "What statistics prove: a statistic beyond its bound (what an element-wise comparison within tolerance "
    "implies for max, min, mean and norm, plus the statistics' own rounding) proves the tensors differ by more "
    "than the tolerance allows; statistics within their bounds do not prove the tensors agree, since different "
    "tensors can share max, min, mean and norm.",
    "What checksums prove: equal checksums (msprobe's md5 field, a CRC32 of the bytes) mean bit-identical "
    "tensors, barring a one-in-2^32 collision; different checksums prove only that some bit differs, however "
    "small the difference, which is expected between frameworks and devices.",
)


@dataclass(frozen=True)
class TensorStats:
    """One tensor pair of a node: A's and B's summaries, the tolerance, and per statistic
    (``max``, ``min``, ``mean``, ``norm``) the difference and the bound it must stay within."""

    a: Summary
    b: Summary
    tolerance: Tolerance
    tolerance_source: str
    differences: Tuple[Tuple[str, float, float], ...]  # (statistic, |A - B|, bound)
    problem: Optional[str] = None  # "shape", "nonfinite" or None

    @property
    def passed(self) -> bool:
        return self.problem is None and all(d <= bound for _, d, bound in self.differences)

    @property
    def worst(self) -> Tuple[str, float, float]:
        """The statistic furthest beyond (or nearest to) its bound."""
        return max(self.differences, key=lambda item: _ratio(item[1], item[2]), default=("", 0.0, 0.0))

    @property
    def margin(self) -> float:
        _, diff, bound = self.worst
        return math.inf if self.problem else _ratio(diff, bound)

    @property
    def same_bits(self) -> Optional[bool]:
        """Whether the checksums agree; None when either side has none."""
        if self.a.checksum is None or self.b.checksum is None:
            return None
        return self.a.checksum == self.b.checksum


@dataclass(frozen=True)
class NodeRow:
    """A paired node: A's, B's, and its tensor pairs (unpaired slots listed by name)."""

    a: Node
    b: Node
    reference: Node
    tensors: Tuple[TensorStats, ...]
    unpaired: Tuple[str, ...] = ()

    @property
    def passed(self) -> bool:
        return all(t.passed for t in self.tensors)

    @property
    def same_bits(self) -> Optional[bool]:
        flags = [t.same_bits for t in self.tensors]
        return None if any(f is None for f in flags) or not flags else all(flags)

    @property
    def margin(self) -> float:
        return max((t.margin for t in self.tensors), default=0.0)

    @property
    def status(self) -> str:
        if not self.passed:
            return "FAIL"
        if self.same_bits is None:
            return "within"
        return "same bits" if self.same_bits else "bits differ"


@dataclass
class SummaryComparison:
    """The result of comparing two msprobe summary dumps, rows in the reference's execution order."""

    a: SummaryDump
    b: SummaryDump
    reference: str
    reference_reason: str
    rows: List[NodeRow]
    parents: Dict[str, Optional[str]]  # the reference's node -> its enclosing node
    unpaired_a: List[str] = field(default_factory=list)
    unpaired_b: List[str] = field(default_factory=list)
    allow_unpaired: bool = False  # a node that did not pair is accepted

    @property
    def unpaired(self) -> int:
        """How many nodes of either side did not pair."""
        return len(self.unpaired_a) + len(self.unpaired_b)

    @property
    def passed(self) -> bool:
        """No statistic beyond its bound (checksums that differ do not fail a comparison), and every
        node paired unless ``allow_unpaired``."""
        return all(row.passed for row in self.rows) and (self.allow_unpaired or not self.unpaired)

    @property
    def failures(self) -> List[NodeRow]:
        return [row for row in self.rows if not row.passed]

    @property
    def first_mismatch(self) -> Optional[NodeRow]:
        """The first node in execution order whose statistics prove a difference."""
        return next((row for row in self.rows if not row.passed), None)

    @property
    def first_bit_difference(self) -> Optional[NodeRow]:
        """The first node in execution order whose checksums differ (md5 mode on both sides)."""
        return next((row for row in self.rows if row.same_bits is False), None)

    @property
    def exit_code(self) -> int:
        return 0 if self.passed else 1

    def enclosing(self, row: NodeRow) -> List[Node]:
        """The reference's modules that enclose ``row``'s node, innermost first (construct.json)."""
        by_name = {r.reference.name: r.reference for r in self.rows}
        chain: List[Node] = []
        name = self.parents.get(row.reference.name)
        while name and len(chain) < 64:
            if name in by_name:
                chain.append(by_name[name])
            name = self.parents.get(name)
        return chain

    def __str__(self) -> str:
        return _text(self)

    def as_json(self) -> dict:
        return _json(self)


def compare_summaries(a, b, *, tolerance=None, allow_unpaired: bool = False) -> SummaryComparison:
    """Compare the msprobe summary dumps at ``a`` and ``b`` (see the module's docstring)."""
    spec = (
        tolerance
        if isinstance(tolerance, ToleranceSpec)
        else ToleranceSpec.parse(tolerance, source="compare_dumps(tolerance=...)")
    )
    side_a, side_b = read_summary(a, "A"), read_summary(b, "B")
    ref_is_a = side_a.framework == "torch" and side_b.framework == "mindspore"
    reason = "the PyTorch side" if {side_a.framework, side_b.framework} == {"torch", "mindspore"} else "by default"
    ref, other = (side_a, side_b) if ref_is_a else (side_b, side_a)
    others = {node.key: node for node in other.nodes}
    rows = []
    for node in ref.nodes:
        match = others.pop(node.key, None)
        if match is not None:
            pair = (node, match) if ref_is_a else (match, node)
            rows.append(_row(*pair, ref_is_a, spec))
    if not rows:
        raise ParityUsageError(
            f"Nothing paired: A has {len(side_a.nodes)} nodes and B {len(side_b.nodes)}, and "
            "none share a module path, direction and call (or an API call's name). First nodes: "
            f"A {side_a.nodes[0].name!r}, B {side_b.nodes[0].name!r}"
        )
    check_globs_used(
        spec,
        [
            n
            for row in rows
            for node in (row.a, row.b)
            for n in [node.path, node.name] + [f"{node.path}.{t.slot}" for t in node.tensors]
        ],
    )
    paired = {row.a.name for row in rows} | {row.b.name for row in rows}
    return SummaryComparison(
        side_a,
        side_b,
        "A" if ref_is_a else "B",
        reason,
        rows,
        {n.name: n.parent for n in ref.nodes},
        [n.name for n in side_a.nodes if n.name not in paired],
        [n.name for n in side_b.nodes if n.name not in paired],
        allow_unpaired,
    )


def _slot_key(slot: str) -> str:
    head, _, leaf = slot.rpartition(".")
    leaf = _RENAMES.get(leaf, leaf)
    return f"{head}.{leaf}" if head else leaf


def _row(a: Node, b: Node, ref_is_a: bool, spec: ToleranceSpec) -> NodeRow:
    by_slot = {_slot_key(t.slot): t for t in b.tensors}
    tensors, unpaired = [], []
    for summary in a.tensors:
        match = by_slot.pop(_slot_key(summary.slot), None)
        if match is None:
            unpaired.append(f"A {summary.slot}")
            continue
        names = [f"{node.path}.{t.slot}" for node, t in ((a, summary), (b, match))] + [a.name, b.name]
        tensors.append(_judge(summary, match, spec, names, ref_is_a))
    unpaired += [f"B {t.slot}" for t in by_slot.values()]
    return NodeRow(a, b, a if ref_is_a else b, tuple(tensors), tuple(unpaired))


def _judge(a: Summary, b: Summary, spec: ToleranceSpec, names: List[str], ref_is_a: bool) -> TensorStats:
    ref, other = (a, b) if ref_is_a else (b, a)
    tol, source = resolve([spec], names, ref.dtype)
    if a.shape != b.shape:
        return TensorStats(a, b, tol, source, (), "shape")
    differences, nonfinite = [], False
    n = max(ref.size, 1)
    rounding = 2 * (math.log2(n) + 1) * _EPS32
    amax = max(abs(ref.max or 0.0), abs(ref.min or 0.0))
    rms = (ref.norm or 0.0) / math.sqrt(n)
    bounds = {
        "max": tol.atol + (tol.rtol + _EPS32) * amax,
        "min": tol.atol + (tol.rtol + _EPS32) * amax,
        "mean": tol.atol + (tol.rtol + rounding) * rms,
        "norm": math.sqrt(n) * tol.atol + (tol.rtol + rounding) * (ref.norm or 0.0),
    }
    for stat, bound in bounds.items():
        x, y = getattr(other, stat), getattr(ref, stat)
        if x is None or y is None:
            continue
        if not (math.isfinite(x) and math.isfinite(y)):
            same = (x != x and y != y) or x == y
            nonfinite |= not same
            differences.append((stat, 0.0 if same else math.inf, bound))
            continue
        differences.append((stat, abs(x - y), bound))
    return TensorStats(a, b, tol, source, tuple(differences), "nonfinite" if nonfinite else None)


def _ratio(diff: float, bound: float) -> float:
    if diff == 0:
        return 0.0
    return math.inf if bound == 0 else diff / bound


# -- text ------------------------------------------------------------------------------------------


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 else "s")


def _where(result: SummaryComparison, row: NodeRow) -> str:
    chain = result.enclosing(row)
    return (" in " + " < ".join(f"{n.path} ({n.cls})" for n in chain)) if chain else ""


def _verdict(result: SummaryComparison) -> str:
    first, rows = result.first_mismatch, result.rows
    if first is None and not result.passed:
        return (
            f"FAIL: {_n(result.unpaired, 'node')} did not pair (listed below): the comparison covers part of "
            f"the dumps only; the statistics of all {_n(len(rows), 'paired node')} are within their bounds. "
            "--allow-unpaired (allow_unpaired=True) accepts a partial comparison"
        )
    if first is None:
        return (
            f"ok: the statistics of all {_n(len(rows), 'paired node')} are within their bounds (which does not "
            "prove the tensors agree; see below)"
        )
    return (
        f"FAIL: the statistics of {len(result.failures)} of {_n(len(rows), 'paired node')} prove a difference "
        f"beyond tolerance; first in execution order: {first.reference.label}"
    )


def _table(result: SummaryComparison) -> List[str]:
    header = ["#", "status", "node", "A", "B", "worst", "x allowed"]
    cells = []
    for i, row in enumerate(result.rows, 1):
        worst = max(row.tensors, key=lambda t: t.margin, default=None)
        what = (
            "-"
            if worst is None or row.margin == 0
            else (f"{worst.a.slot} shape" if worst.problem == "shape" else f"{worst.a.slot} {worst.worst[0]}")
        )
        cells.append(
            [
                str(i),
                row.status,
                row.reference.label,
                row.a.cls or row.a.name,
                row.b.cls or row.b.name,
                what,
                fmt(row.margin),
            ]
        )
    widths = [max(len(r[i]) for r in cells + [header]) for i in range(len(header))]
    first, first_bits = result.first_mismatch, result.first_bit_difference
    lines = ["  " + "  ".join(h.ljust(w) for h, w in zip(header, widths)).rstrip()]
    for row, line in zip(result.rows, cells):
        mark = (
            "   <- first mismatch"
            if row is first
            else "   <- first checksum difference"
            if row is first_bits and first is None
            else ""
        )
        lines.append("  " + "  ".join(c.ljust(w) for c, w in zip(line, widths)).rstrip() + mark)
    return lines


def _figures(t: TensorStats) -> List[str]:
    if t.problem == "shape":
        return [f"{t.a.slot}: shapes differ: A {t.a.shape} vs B {t.b.shape}"]
    lines = [
        f"{t.a.slot} {t.a.shape} {t.a.dtype}"
        + (f" (B: {t.b.slot})" if t.b.slot != t.a.slot else "")
        + f", tolerance {t.tolerance_source} ({t.tolerance}):"
    ]
    for stat, diff, bound in t.differences:
        a, b = getattr(t.a, stat), getattr(t.b, stat)
        verdict = "beyond" if diff > bound else "within"
        lines.append(f"  {stat:<4}  A {fmt(a)}  B {fmt(b)}  |A - B| {fmt(diff)}  ({verdict} the {fmt(bound)} allowed)")
    return lines


def _text(result: SummaryComparison) -> str:
    lines = [
        f"A: {result.a.describe()}",
        f"B: {result.b.describe()}",
        f"Reference: {result.reference} ({result.reference_reason}): bounds are taken from its statistics, "
        "and its dtype picks the default tolerance",
        _verdict(result),
        "",
    ]
    lines += _table(result)
    first = result.first_mismatch
    if first is not None:
        lines += [
            "",
            f"First mismatch: {first.reference.label}{_where(result, first)}",
            f"  A {first.a.name!r} vs B {first.b.name!r}",
        ]
        lines += ["  " + line for t in first.tensors if not t.passed for line in _figures(t)]
    bits = result.first_bit_difference
    if bits is not None:
        lines += [
            "",
            f"First checksum difference: {bits.reference.label}{_where(result, bits)} "
            f"(A {bits.a.name!r} vs B {bits.b.name!r}): "
            + ", ".join(t.a.slot for t in bits.tensors if t.same_bits is False),
        ]
    elif result.rows and all(row.same_bits for row in result.rows):
        lines += ["", "Checksums: every paired tensor has the same bits on both sides"]
    lines += [""]
    for label, names in (("A", result.unpaired_a), ("B", result.unpaired_b)):
        if names:
            lines.append(
                f"Unpaired in {label}: {_n(len(names), 'node')}: "
                + ", ".join(names[:5])
                + (" ..." if len(names) > 5 else "")
            )
    slots = [f"{row.reference.label}: {', '.join(row.unpaired)}" for row in result.rows if row.unpaired]
    lines += [f"Tensors that did not pair, {slot}" for slot in slots]
    for side in (result.a, result.b):
        lines += [f"Note ({side.label}): {note}" for note in side.notes]
    lines += list(PROOF)
    return "\n".join(lines).rstrip()


# -- JSON ------------------------------------------------------------------------------------------


def _number(value):
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else ("nan" if value != value else "inf" if value > 0 else "-inf")


def _tensor_json(t: TensorStats) -> dict:
    return {
        "a_slot": t.a.slot,
        "b_slot": t.b.slot,
        "shape": list(t.a.shape),
        "a_dtype": t.a.dtype,
        "b_dtype": t.b.dtype,
        "passed": t.passed,
        "problem": t.problem,
        "same_bits": t.same_bits,
        "tolerance": {"rtol": t.tolerance.rtol, "atol": t.tolerance.atol, "source": t.tolerance_source},
        "statistics": {
            stat: {
                "a": _number(getattr(t.a, stat)),
                "b": _number(getattr(t.b, stat)),
                "difference": _number(diff),
                "bound": _number(bound),
            }
            for stat, diff, bound in t.differences
        },
    }


def _node_json(index: int, row: NodeRow) -> dict:
    return {
        "index": index,
        "node": row.reference.label,
        "a": row.a.name,
        "b": row.b.name,
        "status": row.status,
        "passed": row.passed,
        "same_bits": row.same_bits,
        "margin": _number(row.margin),
        "parent": row.reference.parent,
        "tensors": [_tensor_json(t) for t in row.tensors],
        "unpaired": list(row.unpaired),
    }


def _side_json(side: SummaryDump) -> dict:
    return {
        "path": side.path,
        "record": side.record,
        "layout": f"msprobe {side.mode} dump",
        "framework": side.framework or None,
        "level": side.level,
        "nodes": len(side.nodes),
        "tensors": side.tensors,
        "notes": list(side.notes),
    }


def _json(result: SummaryComparison) -> dict:
    first, bits = result.first_mismatch, result.first_bit_difference
    return {
        "schema": SCHEMA,
        "passed": result.passed,
        "a": _side_json(result.a),
        "b": _side_json(result.b),
        "reference": result.reference,
        "judged_by": "statistics",
        "summary": {
            "paired": len(result.rows),
            "differ": len(result.failures),
            "unpaired_a": len(result.unpaired_a),
            "unpaired_b": len(result.unpaired_b),
        },
        "first_mismatch": None
        if first is None
        else {"node": first.reference.label, "a": first.a.name, "b": first.b.name},
        "first_checksum_difference": None
        if bits is None
        else {"node": bits.reference.label, "a": bits.a.name, "b": bits.b.name},
        "nodes": [_node_json(i, row) for i, row in enumerate(result.rows, 1)],
        "unpaired": {"a": list(result.unpaired_a), "b": list(result.unpaired_b)},
        "notes": list(PROOF),
    }
