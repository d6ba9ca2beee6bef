"""A failing check's model tree and per-layer error against depth, for ``parity report``'s page
(parity/nightly/page.py): HTML and inline SVG, no script.

The tree is built from the record's per-layer entries (``layers``: ``forward`` in execution order,
``backward`` in backward order), their PyTorch paths split on dots; a module that holds layers but
was not compared itself is a node too. Each node is a ``<details>`` element (expanding it shows
its figures and likely causes; its summary's ``title`` shows them on hover), coloured by its
verdict:

* ``own``: the layer's own error is out of bounds (``own_status`` "own"; without that figure, the
  first divergence, ``status`` "FAIL");
* ``inherited``: out of bounds only because what flowed in was (``own_status`` "inherited";
  else ``status`` "downstream" or "contains");
* ``ok``: agrees (``own_status`` "ok"; else ``status`` "ok" or "noise");
* ``not compared``: no entry, or one that could not be aligned.

A node with several calls (or both directions) takes the worst verdict of its entries. Likely
causes come from the record's ``own_errors`` (one entry per layer with its own error), else the
check's ``likely_causes`` beside its first divergence.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from . import plot
from .drift import fmt
from .plot import escape

__all__ = ["VERDICTS", "COLORS", "verdict", "render_tree", "depth_chart", "STYLE"]

VERDICTS = ("own", "inherited", "ok", "not compared")
LABELS = {"own": "own error", "inherited": "inherited", "ok": "agrees", "not compared": "not compared"}
COLORS = {"own": plot.FAIL_COLOR, "inherited": "#ff7f0e", "ok": plot.MARGIN_COLOR, "not compared": "#9e9e9e"}
_RANK = {"own": 3, "inherited": 2, "ok": 1, "not compared": 0}
_FALLBACK = {"FAIL": "own", "downstream": "inherited", "contains": "inherited", "ok": "ok", "noise": "ok"}
_OWN = {"own": "own", "inherited": "inherited", "ok": "ok"}
STYLE = (
    "".join(
        f".tree details.v-{v.replace(' ', '-')}>summary{{border-left:6px solid {c}}}"
        f".key span.v-{v.replace(' ', '-')}::before{{content:'';display:inline-block;width:10px;height:10px;"
        f"margin-right:4px;background:{c}}}"
        for v, c in COLORS.items()
    )
    + """
.tree{font-family:monospace;font-size:12px}.tree details{margin-left:18px}.tree summary{padding:1px 6px;cursor:pointer}
.tree summary .verdict{color:#555}.tree summary .inside{color:#b00020}.tree table{margin:4px 0 4px 24px}
.tree ul.causes{margin:2px 0 4px 24px}.key span{margin-right:16px;font-size:12px}p.repro code{background:#f2f2f2}"""
)


def verdict(call: Dict[str, Any]) -> str:
    """One per-layer entry's verdict (see the module's docstring)."""
    own = _OWN.get(call.get("own_status") or "")
    return own or _FALLBACK.get(call.get("status") or "", "not compared")


@dataclass
class _Node:
    name: str
    path: str
    children: Dict[str, "_Node"] = field(default_factory=dict)
    calls: List[Tuple[str, Dict[str, Any]]] = field(default_factory=list)  # (direction, entry)

    @property
    def verdict(self) -> str:
        found = [verdict(call) for _, call in self.calls]
        return max(found, key=_RANK.__getitem__, default="not compared")

    def own_inside(self) -> int:
        """How many nodes below this one have their own error."""
        return sum((child.verdict == "own") + child.own_inside() for child in self.children.values())


def _build(layers: Dict[str, Any]) -> _Node:
    root = _Node("", "")
    for direction in ("forward", "backward"):
        for call in layers.get(direction) or ():
            node = root
            path = str(call.get("layer") or "")
            for part in path.split(".") if path else ():
                node = node.children.setdefault(part, _Node(part, f"{node.path}.{part}" if node.path else part))
            node.calls.append((direction, call))
    return root


def _causes(record: Dict[str, Any]) -> Dict[Tuple[str, str], List[str]]:
    """(layer, direction) -> likely causes."""
    found: Dict[Tuple[str, str], List[str]] = {}
    own = record.get("own_errors")
    if isinstance(own, list):
        for entry in own:
            if isinstance(entry, dict):
                key = (str(entry.get("layer") or ""), str(entry.get("direction") or "forward"))
                found.setdefault(key, []).extend(_text(c) for c in entry.get("causes") or ())
        return found
    first = record.get("first_divergence") or {}
    for direction in ("forward", "backward"):
        where = first.get(direction) if isinstance(first, dict) else None
        if isinstance(where, dict) and record.get("likely_causes"):
            found[(str(where.get("layer") or ""), direction)] = [_text(c) for c in record["likely_causes"]]
    return found


def _text(cause: Any) -> str:
    if isinstance(cause, dict):
        name = cause.get("name") or cause.get("id") or ""
        reason = cause.get("reason") or cause.get("summary") or cause.get("text") or ""
        return f"{name}: {reason}" if name and reason else str(name or reason or cause)
    return str(cause)


_FIGURES = (
    ("own margin", "own_margin"),
    ("own error", "own_error"),
    ("out margin", "out_margin"),
    ("out error", "out_error"),
    ("in margin", "in_margin"),
    ("max abs", "max_abs"),
)


def _figures(direction: str, call: Dict[str, Any]) -> str:
    """``forward (call 2): own error; own margin 52, out margin 60, ...`` for the hover text."""
    which = direction + (f" (call {int(call['call']) + 1})" if call.get("call") else "")
    numbers = ", ".join(f"{label} {fmt(_number(call[key]))}" for label, key in _FIGURES if call.get(key) is not None)
    return f"{which}: {LABELS[verdict(call)]} [{call.get('status')}]" + (f"; {numbers}" if numbers else "")


def _table(node: _Node) -> str:
    head = "".join(f"<th>{h}</th>" for h in ("pass", "verdict", "status", "MindSpore layer")) + "".join(
        f"<th>{label}</th>" for label, _ in _FIGURES
    )
    rows = []
    for direction, call in node.calls:
        which = direction + (f" (call {int(call['call']) + 1})" if call.get("call") else "")
        ms = f"{call.get('ms_layer') or ''} {call.get('ms_type') or ''}".strip()
        cells = [which, LABELS[verdict(call)], call.get("status") or "", ms]
        cells += [fmt(_number(call[key])) if call.get(key) is not None else "-" for _, key in _FIGURES]
        rows.append(
            f'<tr data-direction="{escape(direction)}" data-verdict="{escape(verdict(call))}">'
            + "".join(f"<td>{escape(c)}</td>" for c in cells)
            + "</tr>"
        )
    return f'<table class="figures"><tr>{head}</tr>{"".join(rows)}</table>'


def _render(node: _Node, causes: Dict[Tuple[str, str], List[str]], nonfinite: str, depth: int) -> str:
    v = node.verdict
    inside = node.own_inside()
    mine = [c for direction, _ in node.calls for c in causes.get((node.path, direction), ())]
    mine = list(dict.fromkeys(mine))
    types = sorted({str(c.get("torch_type")) for _, c in node.calls if c.get("torch_type")})
    ms_types = sorted({str(c.get("ms_type")) for _, c in node.calls if c.get("ms_type")})
    hover = [node.path or "(the whole pair)"] + [_figures(d, c) for d, c in node.calls]
    hover += [f"Likely cause: {c}" for c in mine]
    if nonfinite and nonfinite == node.path:
        hover.append("The first NaN or Inf appeared here")
    summary = [f"<b>{escape(node.name or '(the whole pair)')}</b>"]
    if types or ms_types:
        summary.append(f"{escape(', '.join(types) or '?')} / {escape(', '.join(ms_types) or '?')}")
    summary.append(f'<span class="verdict">{escape(LABELS[v])}</span>')
    if inside:
        summary.append(f'<span class="inside">({inside} own error{"s" if inside > 1 else ""} inside)</span>')
    if nonfinite and nonfinite == node.path:
        summary.append('<span class="inside">first NaN/Inf</span>')
    body = [_table(node)] if node.calls else []
    if mine:
        body.append('<ul class="causes">' + "".join(f"<li>Likely cause: {escape(c)}</li>" for c in mine) + "</ul>")
    body += [_render(child, causes, nonfinite, depth + 1) for child in node.children.values()]
    opened = " open" if depth == 0 or inside else ""
    return (
        f'<details class="v-{v.replace(" ", "-")}" data-path="{escape(node.path)}" data-verdict="{escape(v)}"{opened}>'
        f'<summary title="{escape(chr(10).join(hover))}">{" ".join(summary)}</summary>{"".join(body)}</details>'
    )


def render_tree(record: Dict[str, Any]) -> str:
    """The check's model tree as nested ``<details>``, with its key and the repro path; "" when the
    record has no per-layer entries."""
    layers = record.get("layers") or {}
    if not any(layers.get(d) for d in ("forward", "backward")):
        return ""
    nonfinite = record.get("first_nonfinite")
    nonfinite = str(nonfinite.get("layer") or "") if isinstance(nonfinite, dict) else ""
    key = "".join(f'<span class="v-{v.replace(" ", "-")}">{escape(LABELS[v])}</span>' for v in VERDICTS)
    root = _build(layers)
    pair = record.get("pair") or {}
    if pair.get("torch") or pair.get("mindspore"):
        root.name = f"{pair.get('torch') or '?'} / {pair.get('mindspore') or '?'}"
    parts = [
        "<h4>Model tree (PyTorch's module paths; expand a layer for its figures and likely causes)</h4>",
        f'<p class="key">{key}</p>',
        f'<div class="tree">{_render(root, _causes(record), nonfinite, 0)}</div>',
    ]
    if "repro" in record:
        repro = record.get("repro")
        parts.append(
            f'<p class="repro">Standalone repro: <code>{escape(repro)}</code></p>'
            if repro
            else '<p class="repro">Standalone repro: none was written</p>'
        )
    return "\n".join(parts)


def depth_chart(series: str, labels: Sequence[str], calls: Sequence[Dict[str, Any]], x_label: str) -> str:
    """Each layer's error (difference / allowed of what flows out, log scale) against its depth in
    execution order, each point coloured by its verdict; where the record has them, each layer's
    own margin beside it (dashed)."""
    numbers = [_number(c.get("out_margin")) for c in calls]
    own = [_number(c.get("own_margin")) for c in calls]
    has_own = any(not math.isnan(v) for v in own)
    fraction, ticks = plot.log_scale(numbers + (own if has_own else []))
    steps = list(range(1, len(numbers) + 1))
    body = plot.frame(steps, ticks, "difference / allowed", x_label)
    y1 = plot.y_position(plot.tolerance_fraction(fraction))
    body.append(
        f'<line class="allowed" x1="{plot.LEFT}" y1="{y1:.1f}" x2="{plot.WIDTH - plot.RIGHT}" y2="{y1:.1f}" '
        f'stroke="{plot.FAIL_COLOR}" stroke-dasharray="5,4"/>'
    )
    body.append(_line(series, "series", numbers, labels, steps, fraction, plot.MARGIN_COLOR, ""))
    if has_own:
        body.append(_line(series, "own", own, labels, steps, fraction, "#555", ' stroke-dasharray="2,3"'))
    for step, label, value, call in zip(steps, labels, numbers, calls):
        at = fraction(value)
        if at is not None:
            v = verdict(call)
            body.append(
                f'<circle cx="{plot.x_position(step, steps):.2f}" cy="{plot.y_position(at):.2f}" r="{4 if v == "own" else 3}" '
                f'fill="{COLORS[v]}" data-verdict="{escape(v)}"><title>{step}. {escape(label)}: {value:.4g} '
                f"({escape(LABELS[v])})</title></circle>"
            )
    return plot.svg(body, f"{series}: difference over allowed against depth, log scale")


def _line(
    series: str,
    cls: str,
    values: Sequence[float],
    labels: Sequence[str],
    steps: Sequence[int],
    fraction: Callable[[float], Optional[float]],
    color: str,
    dash: str,
) -> str:
    points: List[str] = []
    for step, value in zip(steps, values):
        at = fraction(value)
        if at is not None:
            points.append(f"{plot.x_position(step, steps):.2f},{plot.y_position(at):.2f}")
    return (
        f'<polyline class="{cls}" data-series="{escape(series)}" data-values="{" ".join(map(repr, values))}" '
        f'data-labels="{escape(chr(10).join(labels))}" fill="none" stroke="{color}" stroke-width="1.5"{dash} '
        f'points="{" ".join(points)}"/>'
    )


def _number(value: Any) -> float:
    """A figure as a float: records write floats that are not finite as "inf", "-inf", "nan"."""
    if isinstance(value, str) and value in ("inf", "-inf", "nan"):
        return float(value)
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else math.nan
