"""Text and JSON for :class:`parity.tools.dumps.compare.DumpComparison`. Text only; the numbers come from
:mod:`parity.judge.metrics` through :func:`parity.tools.dumps.compare.compare_dumps`."""

from __future__ import annotations

import math
from typing import Dict, List

from ...engine.diagnosis.messages import fmt

__all__ = ["text", "as_json", "unpaired_lines", "SCHEMA"]

SCHEMA = 1


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 else "s")


def text(result) -> str:
    """The headline, the table in execution order, the first mismatch's figures, and what did not pair."""
    lines = [
        f"A: {result.a.description}",
        f"B: {result.b.description}",
        f"Reference: {result.reference} ({result.reference_reason}): relative differences are taken "
        "against its values, and its dtype picks the default tolerance",
        _verdict(result),
        "",
    ]
    lines += _table(result)
    first = result.first_mismatch
    if first is not None:
        lines += ["", f"First mismatch: A {first.a!r} vs B {first.b!r} (paired: {first.how})"]
        lines += [f"  {line}" for line in _figures(first)]
    lines += [""] + _dtypes(result) + _tolerances(result) + _pairing(result) + unpaired_lines(result)
    lines += [f"Not compared, {side} {name}: {reason}" for side, name, reason in result.not_compared]
    for side in (result.a, result.b):
        lines += [f"Note ({side.label}): {note}" for note in side.notes]
    lines += [f"Note: {note}" for note in result.notes]
    return "\n".join(lines).rstrip()


def _verdict(result) -> str:
    rows, failures = result.rows, result.failures
    unpaired = len(result.unpaired_a) + len(result.unpaired_b)
    allowed = " (allowed)" if result.allow_unpaired else ""
    tail = f"; {_n(unpaired, 'tensor')} did not pair{allowed} (listed below)" if unpaired else ""
    if not failures and unpaired and not result.allow_unpaired:
        return (
            f"FAIL: {_n(unpaired, 'tensor')} did not pair (listed below): the comparison covers part of the "
            f"dumps only; {'all ' if len(rows) > 1 else ''}{_n(len(rows), 'paired tensor')} within tolerance. "
            "--allow-unpaired (allow_unpaired=True) accepts a partial comparison"
        )
    if not failures:
        return f"ok: {'all ' if len(rows) > 1 else ''}{_n(len(rows), 'paired tensor')} within tolerance{tail}"
    first = result.first_mismatch
    return (
        f"FAIL: {len(failures)} of {_n(len(rows), 'paired tensor')} differ; first mismatch at A {first.a!r} "
        f"vs B {first.b!r}{tail}"
    )


def _status(c) -> str:
    return "ok" if c.passed else "FAIL"


def _cells(index: int, row) -> List[str]:
    c = row.comparison
    if c.problem == "shape":
        numbers = [f"A {row.shape('A')} vs B {row.shape('B')}", "-", "-", "-", "shapes differ"]
    else:
        numbers = [str(tuple(c.torch_shape)), fmt(c.max_abs), fmt(c.max_rel), f"{c.cosine:.6f}", fmt(c.margin)]
    return [str(index), _status(c), row.a, row.b] + numbers


def _table(result) -> List[str]:
    """One row per pair in the reference's execution order; the first mismatch marked."""
    header = ["#", "status", "A", "B", "shape", "max abs", "max rel", "cosine", "x allowed"]
    rows = [_cells(i, row) for i, row in enumerate(result.rows, 1)]
    widths = [max(len(r[i]) for r in rows + [header]) for i in range(len(header))]
    first = result.first_mismatch
    lines = ["  " + "  ".join(h.ljust(w) for h, w in zip(header, widths)).rstrip()]
    for cells, row in zip(rows, result.rows):
        mark = "   <- first mismatch" if row is first else ""
        lines.append("  " + "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip() + mark)
    return lines


def _figures(row) -> List[str]:
    """A failing tensor's figures, in the order of ``check``'s failure message."""
    c = row.comparison
    if c.problem == "shape":
        return [f"Shapes differ: A {row.shape('A')} vs B {row.shape('B')}"]
    t = c.tolerance
    lines = [
        f"Mismatched elements: {c.mismatched} / {c.total} ({100.0 * c.mismatched / max(c.total, 1):.1f}%)",
        f"Greatest absolute difference: {fmt(c.max_abs)} at index {tuple(c.max_abs_index)} "
        f"(up to {fmt(t.atol)} allowed)",
        f"Greatest relative difference: {fmt(c.max_rel)} at index {tuple(c.max_rel_index)} "
        f"(up to {fmt(t.rtol)} allowed)",
        f"Cosine similarity: {c.cosine:.6f}",
        f"Tolerance: {c.tolerance_source} ({t})",
    ]
    nf = c.nonfinite
    if nf is not None:
        counts = {row.reference: nf.torch_count, "B" if row.reference == "A" else "A": nf.ms_count}
        verdict = "both sides agree on them" if nf.agree else f"{nf.disagreeing} positions disagree"
        lines.append(f"Non-finite: A {counts['A']}, B {counts['B']} NaN/Inf; {verdict}")
    if c.ms_dtype != c.torch_dtype:
        lines.append(f"Dtypes differ: A {row.dtype('A')}, B {row.dtype('B')} (values compared as they are)")
    return lines


def _dtypes(result) -> List[str]:
    """Pairs whose dtypes differ, passing or not, grouped by the two dtypes: values are compared as
    they are, and the tolerance is the reference's dtype's."""
    groups: Dict[str, List[str]] = {}
    for row in result.rows:
        c = row.comparison
        if c.problem != "shape" and c.ms_dtype != c.torch_dtype:
            groups.setdefault(f"A {row.dtype('A')} vs B {row.dtype('B')}", []).append(row.a)
    return [
        f"Dtypes differ: {_n(len(names), 'pair')}, {key} ({', '.join(names[:3])}"
        f"{' ...' if len(names) > 3 else ''}); values compared as they are, with the reference's dtype's tolerance"
        for key, names in groups.items()
    ]


def _tolerances(result) -> List[str]:
    counts: Dict[str, int] = {}
    for row in result.rows:
        if row.comparison.problem is None:
            key = f"{row.comparison.tolerance_source} ({row.comparison.tolerance})"
            counts[key] = counts.get(key, 0) + 1
    return ["Tolerance: " + "; ".join(f"{key}: {_n(n, 'tensor')}" for key, n in counts.items())] if counts else []


def _pairing(result) -> List[str]:
    counts: Dict[str, int] = {}
    for row in result.rows:
        how = row.how.split(", part ")[0]
        counts[how] = counts.get(how, 0) + 1
    lines = ["Paired: " + ", ".join(f"{how} {n}" for how, n in counts.items())]
    fused: Dict[str, List[str]] = {}
    for row in result.rows:
        ref_name, other_name = (row.a, row.b) if row.reference == "A" else (row.b, row.a)
        if row.how.startswith("fused automatically"):  # the other side's tensor holds the reference's
            fused.setdefault(other_name, []).append(ref_name)
        elif row.how.startswith("split automatically"):
            fused.setdefault(ref_name, []).extend(other_name.split(", "))
    if fused:
        lines.append(
            "Fused or split automatically, in each side's order (check them; else name a parity.fuse): "
            + "; ".join(f"{whole} = [{', '.join(parts)}]" for whole, parts in fused.items())
        )
    by_order = [row for row in result.rows if row.how == "execution order"]
    if by_order:
        lines.append(
            "Paired in execution order by kind and shape (the names differ; check them): "
            + ", ".join(f"{r.a} = {r.b}" for r in by_order[:3])
            + (" ..." if len(by_order) > 3 else "")
        )
    return lines


def unpaired_lines(result) -> List[str]:
    """The tensors that did not pair, each with the nearest name on the other side, and name map
    entries that would pair some of them."""
    lines = []
    for label, keys in (("A", result.unpaired_a), ("B", result.unpaired_b)):
        if keys:
            lines.append(f"Unpaired in {label}: {_n(len(keys), 'tensor')}:")
            lines += [f"  {k.name} {tuple(k.shape)} {k.dtype}{_near(k)}" for k in keys]
    if result.suggestions:
        lines.append("Name map entries that would pair some of them (TOML for --name-map; check them):")
        lines += [f"  {entry}" for entry in result.suggestions]
    return lines


def _near(key) -> str:
    if not key.near:
        return ""
    name, shape = key.near[0]
    return f"   did you mean {name}" + ("" if tuple(shape) == tuple(key.shape) else f" {tuple(shape)}") + "?"


# -- JSON ------------------------------------------------------------------------------------------


def _number(value):
    """Strict JSON: the strings "inf", "-inf" and "nan" for floats that are not finite."""
    value = float(value)
    return value if math.isfinite(value) else ("nan" if value != value else "inf" if value > 0 else "-inf")


def _tensor(index: int, row) -> dict:
    c = row.comparison
    record = {
        "index": index,
        "a": row.a,
        "b": row.b,
        "paired": row.how,
        "passed": c.passed,
        "problem": c.problem,
        "a_shape": list(row.shape("A")),
        "b_shape": list(row.shape("B")),
        "a_dtype": row.dtype("A"),
        "b_dtype": row.dtype("B"),
        "tolerance": {"rtol": c.tolerance.rtol, "atol": c.tolerance.atol, "source": c.tolerance_source},
    }
    if c.problem is None:
        record.update(
            {
                "total": c.total,
                "mismatched": c.mismatched,
                "max_abs": _number(c.max_abs),
                "max_abs_index": list(c.max_abs_index),
                "max_rel": _number(c.max_rel),
                "max_rel_index": list(c.max_rel_index),
                "cosine": _number(c.cosine),
                "margin": _number(c.margin),
            }
        )
        if c.nonfinite is not None:
            ref, other = c.nonfinite.torch_count, c.nonfinite.ms_count
            record["nonfinite"] = {
                "a": ref if row.reference == "A" else other,
                "b": other if row.reference == "A" else ref,
                "disagreeing": c.nonfinite.disagreeing,
            }
    return record


def _side(side) -> dict:
    return {
        "path": side.path,
        "layout": side.layout,
        "framework": side.framework or None,
        "order": side.order,
        "tensors": side.tensors,
        "notes": list(side.notes),
    }


def _key(key) -> dict:
    return {
        "name": key.name,
        "shape": list(key.shape),
        "dtype": key.dtype,
        "nearest": key.near[0][0] if key.near else None,
    }


def as_json(result) -> dict:
    """The comparison as JSON (schema 1): see docs/how-to/compare-dumps.md."""
    first = result.first_mismatch
    return {
        "schema": SCHEMA,
        "passed": result.passed,
        "a": _side(result.a),
        "b": _side(result.b),
        "reference": result.reference,
        "judged_by": "tolerance",
        "summary": {
            "paired": len(result.rows),
            "differ": len(result.failures),
            "unpaired_a": len(result.unpaired_a),
            "unpaired_b": len(result.unpaired_b),
            "allow_unpaired": result.allow_unpaired,
        },
        "first_mismatch": None if first is None else {"a": first.a, "b": first.b},
        "tensors": [_tensor(i, row) for i, row in enumerate(result.rows, 1)],
        "unpaired": {"a": [_key(k) for k in result.unpaired_a], "b": [_key(k) for k in result.unpaired_b]},
        "not_compared": [{"side": side, "name": name, "reason": reason} for side, name, reason in result.not_compared],
        "name_map_suggestions": list(result.suggestions),
        "notes": list(result.notes),
    }
