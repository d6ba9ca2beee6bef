"""The picture of a training check: one self-contained HTML file (inline SVG, no script, no network).

Two charts: both sides' loss per step, and per step the worst tensor's margin (difference /
allowed, log scale, the line at 1 is the tolerance), then the per-step table of the run. Every
plotted series keeps its numbers in ``data-values`` (``repr`` of each float), so what is drawn
can be read back exactly.
"""

from __future__ import annotations

import html
import math
import os
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable, List, Optional, Sequence, Tuple, Union

from .. import files
from ..errors import ParityUsageError

if TYPE_CHECKING:
    from ..engine.training.result import TrainingResult
    from ..judge.metrics import Comparison

# The page of ``parity report`` (page.py) and the model tree (tree.py) draw with the same pieces.
__all__ = [
    "plot_training",
    "render_training",
    "escape",
    "log_scale",
    "tolerance_fraction",
    "frame",
    "svg",
    "x_position",
    "y_position",
    "STYLE",
]

WIDTH, HEIGHT = 640, 260
LEFT, RIGHT, TOP, BOTTOM = 72, 16, 16, 40
MS_COLOR, TORCH_COLOR, MARGIN_COLOR, FAIL_COLOR = "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728"
STYLE = """body{font-family:sans-serif;margin:24px;color:#222}h1{font-size:18px}h2{font-size:15px;margin-top:28px}
p.summary{font-family:monospace;white-space:pre-wrap}svg text{font-size:11px;fill:#444}
table{border-collapse:collapse;font-family:monospace;font-size:12px}td,th{border:1px solid #ccc;padding:2px 8px}
td.fail{color:#d62728;font-weight:bold}.legend span{display:inline-block;margin-right:18px}"""


def plot_training(result: object, path: Union[str, "os.PathLike[str]"]) -> Path:
    """Write the loss curves and per-step margins of ``result`` (a :class:`parity.TrainingResult`,
    passed or from ``ParityMismatch.result``) to the HTML file ``path``; returns its path."""
    from ..engine.training.result import TrainingResult

    if not isinstance(result, TrainingResult):
        raise ParityUsageError(
            f"plot_training takes the TrainingResult of parity.check_training (or a failed "
            f"check's ParityMismatch.result), got {type(result).__qualname__}"
        )
    target = Path(path)
    if target.is_dir():
        raise ParityUsageError(f"plot_training: {target} is a folder; give a file name such as {target / 'loss.html'}")
    if not target.parent.is_dir():
        raise ParityUsageError(f"plot_training: folder {target.parent} does not exist; create it first")
    return files.write_text(target, render_training(result), "plot_training:")


def render_training(result: TrainingResult) -> str:
    """The HTML text :func:`plot_training` writes."""
    steps = [s.step for s in result.steps]
    margins = [_worst(s.comparisons) for s in result.steps]
    failing = [bool(s.failures) for s in result.steps]
    title = f"Training parity: mindspore {result.ms_type} vs torch {result.torch_type}"
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{escape(title)}</title><style>{STYLE}</style></head><body>",
        f"<h1>{escape(title)}</h1>",
        f'<p class="summary">{escape(str(result))}</p>',
        f"<p>{len(steps)} steps, {escape(result.mode)}; optimizer {escape(result.optimizer)}; loss "
        f"{escape(result.loss)}; seed {result.seed}</p>",
        "<h2>Loss per step</h2>",
        _legend([(MS_COLOR, "MindSpore"), (TORCH_COLOR, "PyTorch")]),
        _loss_chart(steps, result.ms_losses, result.torch_losses),
        "<h2>Worst tensor per step: difference / allowed (log scale; above 1 fails)</h2>",
        _legend([(MARGIN_COLOR, "worst margin of the step"), (FAIL_COLOR, "a step with a failing tensor")]),
        _margin_chart(steps, margins, failing),
        "<h2>Per step</h2>",
        _table(result),
        "</body></html>",
    ]
    return "\n".join(parts) + "\n"


def _worst(comparisons: Iterable[Comparison]) -> float:
    return max((c.margin for c in comparisons), default=0.0)


def escape(text: object) -> str:
    """``text`` as HTML text or an attribute's value."""
    return html.escape(str(text), quote=True)


def _legend(entries: Iterable[Tuple[str, str]]) -> str:
    spans = "".join(
        f'<span><svg width="22" height="10"><line x1="0" y1="5" x2="22" y2="5" stroke="{color}" '
        f'stroke-width="2"/></svg> {escape(label)}</span>'
        for color, label in entries
    )
    return f'<div class="legend">{spans}</div>'


# Scales ---------------------------------------------------------------------------------------


def x_position(step: int, steps: Sequence[int]) -> float:
    lo, hi = steps[0], steps[-1]
    span = WIDTH - LEFT - RIGHT
    return LEFT + span / 2 if hi == lo else LEFT + span * (step - lo) / (hi - lo)


def y_position(fraction: float) -> float:
    """Pixel row of a value at ``fraction`` of the axis (0 bottom, 1 top)."""
    return TOP + (HEIGHT - TOP - BOTTOM) * (1.0 - fraction)


def _linear_range(values: Sequence[float]) -> Tuple[float, float]:
    finite = [v for v in values if math.isfinite(v)] or [0.0]
    lo, hi = min(finite), max(finite)
    pad = (hi - lo) * 0.08 or (abs(hi) * 0.05 or 1.0)
    return lo - pad, hi + pad


def _ticks(lo: float, hi: float, count: int = 5) -> List[float]:
    return [lo + (hi - lo) * i / (count - 1) for i in range(count)]


# Charts ---------------------------------------------------------------------------------------


def frame(
    steps: Sequence[int], y_ticks: Iterable[Tuple[Optional[float], str]], y_label: str, x_label: str = "step"
) -> List[str]:
    """Axes, grid and tick labels; ``y_ticks`` holds (fraction, label) pairs."""
    bottom, right = HEIGHT - BOTTOM, WIDTH - RIGHT
    out = [f'<rect x="{LEFT}" y="{TOP}" width="{right - LEFT}" height="{bottom - TOP}" fill="none" stroke="#999"/>']
    for fraction, label in y_ticks:
        y = y_position(fraction)  # type: ignore[arg-type]  # a tick is on the axis: its fraction is never None
        out.append(
            f'<line x1="{LEFT}" y1="{y:.1f}" x2="{right}" y2="{y:.1f}" stroke="#eee"/>'
            f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{escape(label)}</text>'
        )
    every = max(1, math.ceil(len(steps) / 12))
    for step in steps[::every]:
        out.append(f'<text x="{x_position(step, steps):.1f}" y="{bottom + 16}" text-anchor="middle">{step}</text>')
    out.append(
        f'<text x="{(LEFT + right) / 2:.1f}" y="{HEIGHT - 6}" text-anchor="middle">{escape(x_label)}</text>'
        f'<text x="14" y="{(TOP + bottom) / 2:.1f}" text-anchor="middle" '
        f'transform="rotate(-90 14 {(TOP + bottom) / 2:.1f})">{escape(y_label)}</text>'
    )
    return out


def _series(
    series: str,
    steps: Sequence[int],
    values: Sequence[float],
    fractions: Sequence[Optional[float]],
    color: str,
    marks: Optional[Sequence[bool]] = None,
    stroke: str = 'stroke-width="2"',
) -> List[str]:
    """One polyline (finite values only) with a marker and tooltip per point."""
    points: List[str] = []
    out: List[str] = []
    for i, (step, value, fraction) in enumerate(zip(steps, values, fractions)):
        if fraction is None:
            continue
        x, y = x_position(step, steps), y_position(fraction)
        points.append(f"{x:.2f},{y:.2f}")
        fill = FAIL_COLOR if marks is not None and marks[i] else color
        out.append(
            f'<circle cx="{x:.2f}" cy="{y:.2f}" r="3" fill="{fill}"><title>{escape(series)} step {step}: '
            f"{value:.7g}</title></circle>"
        )
    values_attr = " ".join(repr(float(v)) for v in values)
    line = (
        f'<polyline class="series" data-series="{escape(series)}" data-values="{values_attr}" fill="none" '
        f'stroke="{color}" {stroke} points="{" ".join(points)}"/>'
    )
    return [line] + out


def svg(body: List[str], label: str) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{escape(label)}">' + "".join(body) + "</svg>"
    )


def _loss_chart(steps: Sequence[int], ms_losses: Sequence[float], torch_losses: Sequence[float]) -> str:
    lo, hi = _linear_range(list(ms_losses) + list(torch_losses))

    def fraction(v: float) -> Optional[float]:
        return (v - lo) / (hi - lo) if math.isfinite(v) else None

    body = frame(steps, [(fraction(t), f"{t:.5g}") for t in _ticks(lo, hi)], "loss")
    # MindSpore wide and pale under PyTorch dashed: two equal curves stay both visible
    body += _series(
        "loss MindSpore",
        steps,
        ms_losses,
        [fraction(v) for v in ms_losses],
        MS_COLOR,
        stroke='stroke-width="5" stroke-opacity="0.5"',
    )
    body += _series(
        "loss PyTorch",
        steps,
        torch_losses,
        [fraction(v) for v in torch_losses],
        TORCH_COLOR,
        stroke='stroke-width="2" stroke-dasharray="6,4"',
    )
    return svg(body, "loss per step, MindSpore and PyTorch")


def log_scale(
    margins: Sequence[float],
) -> Tuple[Callable[[float], Optional[float]], List[Tuple[Optional[float], str]]]:
    """The log axis of margins (difference / allowed): ``(fraction, ticks)``, where ``fraction(m)``
    places a margin on the axis (0 bottom, 1 top; ``None`` for nan) and ``ticks`` holds
    (fraction, label) pairs, one a decade. The axis always reaches 1 (the tolerance); a margin of
    0 (identical tensors) sits on the bottom edge, below every positive one; +inf on the top edge."""
    positive = [m for m in margins if m > 0 and math.isfinite(m)]
    low = math.floor(math.log10(min(positive + [1.0])))
    low -= 0 if all(m > 0 for m in margins) else (1 if positive else 3)  # a 0 sits a decade below the least
    high = max(1, math.ceil(math.log10(max(positive + [1.0]))))
    low = min(low, high - 1)

    def fraction(m: float) -> Optional[float]:
        if not math.isfinite(m):
            return 1.0 if m > 0 else None
        return 0.0 if m <= 0 else (math.log10(m) - low) / (high - low)

    decades = range(low, high + 1, max(1, math.ceil((high - low) / 8)))
    return fraction, [(fraction(10.0**d), f"1e{d}" if d else "1") for d in decades]


def tolerance_fraction(fraction: Callable[[float], Optional[float]]) -> float:
    """Where a margin of 1 (the tolerance) sits on a :func:`log_scale` axis, which always reaches it."""
    one = fraction(1.0)
    assert one is not None
    return one


def _margin_chart(steps: Sequence[int], margins: Sequence[float], failing: Sequence[bool]) -> str:
    """Log scale; a margin of 0 (identical tensors) sits on the bottom edge, below every positive one."""
    fraction, ticks = log_scale(margins)
    one = tolerance_fraction(fraction)
    body = frame(steps, ticks, "difference / allowed")
    body.append(
        f'<line class="allowed" x1="{LEFT}" y1="{y_position(one):.1f}" x2="{WIDTH - RIGHT}" '
        f'y2="{y_position(one):.1f}" stroke="{FAIL_COLOR}" stroke-dasharray="5,4"/>'
    )
    body += _series("worst margin", steps, margins, [fraction(m) for m in margins], MARGIN_COLOR, failing)
    return svg(body, "worst difference over allowed per step, log scale")


def _table(result: TrainingResult) -> str:
    from ..engine.training.result import STAGES

    stages = list(STAGES)[1:]
    head = "".join(f"<th>{escape(h)}</th>" for h in ["step", "loss MindSpore", "loss PyTorch", *stages])
    rows: List[str] = []
    for s in result.steps:
        cells = [f"<td>{s.step}</td>", f"<td>{s.ms_loss:.9g}</td>", f"<td>{s.torch_loss:.9g}</td>"]
        for stage in stages:
            found = s.stage_worst(stage)
            if found is None:
                cells.append("<td>-</td>")
                continue
            worst, bad = found
            cells.append(
                f'<td class="{"fail" if bad else "ok"}">{"FAIL" if bad else "ok"} {worst.margin:.3g}x '
                f"{escape(worst.name)}</td>"
            )
        rows.append(f"<tr>{''.join(cells)}</tr>")
    return f"<table><tr>{head}</tr>{''.join(rows)}</table>"
