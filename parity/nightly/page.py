"""``parity report``'s HTML page: one self-contained file (inline CSS and SVG; no script, no
font, no request), built from check records (parity/nightly/records.py).

In order: what merging and the baseline found, the counts, the verdict matrix (check x device x
mode), what changed since the baseline, each failing check (its message whole, its model tree
(parity/nightly/tree.py) and its per-layer errors against depth, or its tensors' where no layer was
captured), each check's worst margin over the nights
given, and the environment. Charts reuse parity/nightly/plot.py's frame and log axis; every plotted series
keeps its numbers in ``data-values`` (``repr`` of each float) and its points' names in
``data-labels`` (one a line), so what is drawn can be read back.
"""

from __future__ import annotations

import math
from typing import Any, Dict, List, Optional, Sequence, Tuple

from . import plot, tree
from .drift import BAD, Comparison, fmt, tensor_label
from .plot import FAIL_COLOR, MARGIN_COLOR, escape
from .runs import Run, check_key, check_label

__all__ = ["render", "cells", "columns", "VERDICT_TEXT"]

VERDICT_TEXT = {
    "pass": "pass",
    "fail": "FAIL",
    "xfail": "xfail",
    "error": "ERROR",
    "unsupported": "unsupported",
    "crashed": "CRASHED",
    "interrupted": "INTERRUPTED",
}
_STYLE = (
    plot.STYLE
    + """
.notes{background:#fff4e5;border:1px solid #f0b860;padding:6px 12px}.notes li{margin:2px 0}
table.matrix td,table.matrix th{text-align:center}table.matrix td.name{text-align:left}
td.v-pass{background:#e6f4ea}td.v-fail,td.v-error,td.v-crashed,td.v-interrupted{background:#fde2e1;color:#b00020;font-weight:bold}
td.v-xfail{background:#fff4e5}td.v-unsupported,td.v-absent{background:#f2f2f2;color:#777}
td.change{font-weight:bold}pre.message{background:#f7f7f7;border:1px solid #ddd;padding:8px;white-space:pre-wrap}
section.failure{border-top:1px solid #ccc;margin-top:18px}p.meta{font-family:monospace;font-size:12px}"""
    + tree.STYLE
)
_SPARK_W, _SPARK_H = 180, 34
_KEYED = 40  # a layer chart's key lists every layer up to this many


def columns(checks: Sequence[Dict[str, Any]]) -> List[Tuple[str, str]]:
    """The matrix's (device, mode) columns, sorted."""
    return sorted({(c.get("device") or "-", mode) for c in checks for mode in (c.get("modes") or ["-"])})


def cells(record: Dict[str, Any]) -> Dict[str, str]:
    """Per mode, the check's verdict there: a failing check fails in the modes whose tensors fail
    (in all of them where no tensor does: a structural problem, an error)."""
    verdict, modes = record["verdict"], record.get("modes") or ["-"]
    failing = {t.get("mode") for t in record.get("tensors") or () if not t.get("passed")}
    if verdict in ("fail", "xfail") and failing & set(modes):
        return {mode: verdict if mode in failing else "pass" for mode in modes}
    return {mode: verdict for mode in modes}


def render(run: Run, *, comparison: Optional[Comparison] = None, history: Sequence[Run] = ()) -> str:
    """The page for ``run``, with what changed since ``comparison``'s baseline and, given two
    runs or more in ``history`` (oldest first), each check's worst margin over them."""
    failing = [c for c in run.checks if c["verdict"] in BAD]
    anchors = {check_key(c): f"failure-{i + 1}" for i, c in enumerate(failing)}
    title = f"Parity report: {run.label}"
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{escape(title)}</title><style>{_STYLE}</style></head><body>",
        f"<h1>{escape(title)}</h1>",
        _notes(run, comparison),
        f'<p class="summary" id="counts">{escape(counts(run.checks))}</p>',
        "<h2>Verdicts: check x device x mode</h2>",
        _matrix(run, comparison, anchors),
    ]
    if comparison is not None:
        parts += [f"<h2>Since the baseline ({escape(comparison.baseline.label)})</h2>", _changes(comparison)]
    parts.append(f"<h2>Failures ({len(failing)})</h2>")
    parts += [_failure(c, anchors[check_key(c)]) for c in failing] or ["<p>No check failed.</p>"]
    if len(history) > 1:
        parts += [f"<h2>Worst margin over {len(history)} runs</h2>", _history(history)]
    parts += ["<h2>Environment</h2>", _environment(run), "</body></html>"]
    return "\n".join(parts) + "\n"


def counts(checks: Sequence[Dict[str, Any]]) -> str:
    """``12 checks: 9 pass, 2 fail, 1 xfail``."""
    found: Dict[str, int] = {}
    for record in checks:
        found[record["verdict"]] = found.get(record["verdict"], 0) + 1
    shown = ", ".join(f"{found[v]} {v}" for v in VERDICT_TEXT if v in found)
    return f"{len(checks)} check{'' if len(checks) == 1 else 's'}" + (f": {shown}" if shown else "")


def _notes(run: Run, comparison: Optional[Comparison]) -> str:
    notes = list(run.notes)
    if comparison is not None and comparison.environment:
        notes.insert(0, "the baseline ran in another environment: " + "; ".join(comparison.environment))
    if not notes:
        return ""
    return '<ul class="notes">' + "".join(f"<li>{escape(n)}</li>" for n in notes) + "</ul>"


def _matrix(run: Run, comparison: Optional[Comparison], anchors: Dict[Tuple[str, int], str]) -> str:
    cols = columns(run.checks)
    changes: Dict[Tuple[str, int], List[str]] = {}
    for change in comparison.changes if comparison is not None else ():
        changes.setdefault(change.key, []).append(change.kind)
    head = "<th>check</th>" + "".join(
        f'<th data-device="{escape(d)}" data-mode="{escape(m)}">{escape(d)}<br>{escape(m)}</th>' for d, m in cols
    )
    head += "<th>since the baseline</th>" if comparison is not None else ""
    rows = []
    for record in run.checks:
        key = check_key(record)
        found = cells(record)
        row = [f'<td class="name">{escape(check_label(key))}</td>']
        for device, mode in cols:
            verdict = found.get(mode) if device == (record.get("device") or "-") else None
            if verdict is None:
                row.append(
                    f'<td class="v-absent" data-device="{escape(device)}" data-mode="{escape(mode)}" data-verdict="">-</td>'
                )
                continue
            text = escape(VERDICT_TEXT.get(verdict, verdict))
            if key in anchors and verdict in BAD:
                text = f'<a href="#{anchors[key]}">{text}</a>'
            row.append(
                f'<td class="v-{escape(verdict)}" data-device="{escape(device)}" data-mode="{escape(mode)}" '
                f'data-verdict="{escape(verdict)}" title="worst margin {fmt(record.get("worst_margin"))}">'
                f"{text}</td>"
            )
        if comparison is not None:
            row.append(f'<td class="change">{escape(", ".join(changes.get(key, [])))}</td>')
        rows.append(f'<tr data-check="{escape(check_label(key))}">{"".join(row)}</tr>')
    missing = [c for c in comparison.changes if c.kind == "missing"] if comparison is not None else []
    for change in missing:
        absent = "".join(
            f'<td class="v-absent" data-device="{escape(d)}" data-mode="{escape(m)}" data-verdict="">-</td>'
            for d, m in cols
        )
        rows.append(
            f'<tr data-check="{escape(change.label)}"><td class="name">{escape(change.label)}</td>{absent}'
            '<td class="change">missing</td></tr>'
        )
    return f'<table class="matrix" id="matrix"><tr>{head}</tr>{"".join(rows)}</table>'


def _changes(comparison: Comparison) -> str:
    lines = comparison.summary_lines(limit=50)
    return '<p class="summary" id="changes">' + "<br>".join(escape(line) for line in lines) + "</p>"


def _failure(record: Dict[str, Any], anchor: str) -> str:
    label = check_label(check_key(record))
    pair = record.get("pair") or {}
    meta = [
        f"verdict {record['verdict']}",
        f"device {record.get('device')}",
        f"modes {', '.join(record.get('modes') or []) or '-'}",
        f"seed {record.get('seed')}",
        f"worst margin {fmt(record.get('worst_margin'))}",
    ]
    if pair:
        meta.insert(0, f"mindspore {pair.get('mindspore')} vs torch {pair.get('torch')}")
    message = (record.get("error") or {}).get("message") or record.get("problem") or "(no message recorded)"
    parts = [
        f'<section class="failure" id="{anchor}" data-check="{escape(label)}">',
        f"<h3>{escape(label)}</h3>",
        f'<p class="meta">{escape(" | ".join(meta))}</p>',
        f'<pre class="message">{escape(message)}</pre>',
    ]
    layers = record.get("layers") or {}
    parts.append(tree.render_tree(record))
    charted = False
    for direction in ("forward", "backward"):
        calls = layers.get(direction) or []
        if calls:
            charted = True
            parts.append(
                f"<h4>{direction.capitalize()}: each layer's output against depth, difference / allowed "
                "(log scale; above 1 fails; coloured by verdict as the tree; dashed: the layer's own "
                "error, where measured)</h4>"
            )
            parts.append(
                tree.depth_chart(
                    f"{direction} layers",
                    [_layer_label(c) for c in calls],
                    calls,
                    f"layer, {'in execution' if direction == 'forward' else 'in backward'} order",
                )
            )
            parts.append(_key(calls))
    tensors = [t for t in record.get("tensors") or () if t.get("margin") is not None]
    if not charted and tensors:
        parts.append(
            "<h4>Compared tensors, difference / allowed (log scale; above 1 fails; no layers were captured)</h4>"
        )
        parts.append(
            _points_chart(
                "tensors",
                [tensor_label(t) for t in tensors],
                [t["margin"] for t in tensors],
                [not t.get("passed") for t in tensors],
                "tensor, in execution order",
            )
        )
    parts.append("</section>")
    return "\n".join(parts)


def _key(calls: Sequence[Dict[str, Any]]) -> str:
    """Which layer each number on the chart is: all of them up to :data:`_KEYED`, else those that
    are not ok."""
    shown = [(i, c) for i, c in enumerate(calls, 1) if len(calls) <= _KEYED or c.get("status") != "ok"]
    entries = [f"{i}. {escape(_layer_label(c))} {fmt(c.get('out_margin'))}" for i, c in shown]
    more = "" if len(shown) == len(calls) else f" ({len(calls) - len(shown)} layers ok, not listed)"
    return f'<p class="meta layers">{"; ".join(entries)}{more}</p>'


def _layer_label(call: Dict[str, Any]) -> str:
    suffix = f" (call {call['call'] + 1})" if call.get("call") else ""
    return f"{call.get('layer')}{suffix} {call.get('torch_type')} [{call.get('status')}]"


def _number(value: Any) -> float:
    return float(value) if isinstance(value, (int, float)) else math.nan


def _points_chart(
    series: str, labels: Sequence[str], values: Sequence[Any], marks: Sequence[bool], x_label: str
) -> str:
    """Margins of named points, numbered 1.. along x, on plot.py's log axis with the tolerance line."""
    numbers = [_number(v) for v in values]
    fraction, ticks = plot.log_scale(numbers)
    steps = list(range(1, len(numbers) + 1))
    body = plot.frame(steps, ticks, "difference / allowed", x_label)
    y1 = plot.y_position(plot.tolerance_fraction(fraction))
    body.append(
        f'<line class="allowed" x1="{plot.LEFT}" y1="{y1:.1f}" x2="{plot.WIDTH - plot.RIGHT}" y2="{y1:.1f}" '
        f'stroke="{FAIL_COLOR}" stroke-dasharray="5,4"/>'
    )
    points, dots = [], []
    for step, label, value, mark in zip(steps, labels, numbers, marks):
        at = fraction(value)
        if at is None:
            continue
        x, y = plot.x_position(step, steps), plot.y_position(at)
        points.append(f"{x:.2f},{y:.2f}")
        dots.append(
            f'<circle cx="{x:.2f}" cy="{y:.2f}" r="{4 if mark else 3}" fill="{FAIL_COLOR if mark else MARGIN_COLOR}">'
            f"<title>{step}. {escape(label)}: {value:.4g}</title></circle>"
        )
    body.append(
        f'<polyline class="series" data-series="{escape(series)}" data-values="{" ".join(map(repr, numbers))}" '
        f'data-labels="{escape(chr(10).join(labels))}" fill="none" stroke="{MARGIN_COLOR}" stroke-width="1.5" '
        f'points="{" ".join(points)}"/>'
    )
    return plot.svg(body + dots, f"{series}: difference over allowed, log scale")


def _history(history: Sequence[Run]) -> str:
    """Per check, its worst margin in each run (a sparkline on a log axis shared by the check's
    runs, the tolerance dashed), then the first, the latest and the greatest."""
    keys = sorted({check_key(c) for run in history for c in run.checks})
    by_run = [{check_key(c): c for c in run.checks} for run in history]
    head = "".join(
        f"<th>{escape(h)}</th>"
        for h in ("check", f"worst margin, {history[0].label} to {history[-1].label}", "first", "latest", "greatest")
    )
    rows = []
    for key in keys:
        found = [checks.get(key) for checks in by_run]
        values = [_number(r.get("worst_margin")) if r else math.nan for r in found]
        bad = [bool(r and r["verdict"] in BAD) for r in found]
        present = [v for v in values if not math.isnan(v)]
        rows.append(
            f'<tr data-check="{escape(check_label(key))}"><td class="name">{escape(check_label(key))}</td>'
            f"<td>{_sparkline(values, bad, [run.label for run in history])}</td>"
            f"<td>{fmt(present[0]) if present else '-'}</td><td>{fmt(values[-1]) if present else '-'}</td>"
            f"<td>{fmt(max(present)) if present else '-'}</td></tr>"
        )
    return f'<table id="history"><tr>{head}</tr>{"".join(rows)}</table>'


def _sparkline(values: Sequence[float], bad: Sequence[bool], labels: Sequence[str]) -> str:
    fraction, _ = plot.log_scale(values)
    pad = 4

    def x(i: int) -> float:
        return pad + (_SPARK_W - 2 * pad) * (i / (len(values) - 1) if len(values) > 1 else 0.5)

    def y(f: float) -> float:
        return pad + (_SPARK_H - 2 * pad) * (1.0 - f)

    points, dots = [], []
    for i, (value, mark, label) in enumerate(zip(values, bad, labels)):
        at = fraction(value)
        if at is None:
            continue
        points.append(f"{x(i):.1f},{y(at):.1f}")
        dots.append(
            f'<circle cx="{x(i):.1f}" cy="{y(at):.1f}" r="2.5" fill="{FAIL_COLOR if mark else MARGIN_COLOR}">'
            f"<title>{escape(label)}: {value:.4g}</title></circle>"
        )
    allowed = y(plot.tolerance_fraction(fraction))
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_SPARK_W}" height="{_SPARK_H}" role="img" '
        f'aria-label="worst margin per run"><line x1="0" y1="{allowed:.1f}" x2="{_SPARK_W}" y2="{allowed:.1f}" '
        f'stroke="{FAIL_COLOR}" stroke-dasharray="3,3"/><polyline class="series" data-series="worst margin" '
        f'data-values="{" ".join(map(repr, values))}" fill="none" stroke="{MARGIN_COLOR}" '
        f'points="{" ".join(points)}"/>{"".join(dots)}</svg>'
    )


def _commit(git: Dict[str, Any]) -> str:
    if not git.get("commit"):
        return "(not in git)"
    commit: str = git["commit"]
    return commit + (" (with uncommitted changes)" if git.get("dirty") else "")


def _environment(run: Run) -> str:
    env = run.environment
    versions = env.get("versions") or {}
    rows = [
        ("created", env.get("created")),
        ("files", ", ".join(run.sources)),
        ("device", f"{env.get('device')} ({env.get('device_name') or 'name unknown'})"),
        ("PyTorch reference", (env.get("torch_reference") or {}).get("text")),
        ("commit", _commit(env.get("git") or {})),
        ("host", f"{(env.get('host') or {}).get('cpu_model')}, {(env.get('host') or {}).get('arch')}"),
    ]
    rows += [(name, value) for name, value in versions.items() if value is not None]
    body = "".join(f"<tr><th>{escape(k)}</th><td>{escape(v)}</td></tr>" for k, v in rows if v is not None)
    return f'<table id="environment">{body}</table>'
