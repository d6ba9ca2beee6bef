"""``parity report``'s Markdown summary, for a CI comment: the counts, what changed since the
baseline, a table of the failures and a table of the drift. GitHub-flavoured tables; the HTML
page holds the rest."""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional

from .drift import BAD, Comparison, fmt
from .page import counts
from .runs import Run, check_key, check_label

__all__ = ["render"]

_ROWS = 30  # rows of each table; the page has them all


_TAG = re.compile(r"<(?=[A-Za-z/!?])")  # what opens an HTML tag, comment or declaration
_ENTITY = re.compile(r"&(?=#?\w+;)")  # what would be read as a character reference


def _text(value: Any) -> str:
    """``value`` as inert text on one line: no HTML (GitHub renders HTML in Markdown, and any field of
    a record, a test id, a message, a cause or a version, may hold ``<img onerror=...>``): each ``<`` that would open a tag and each ``&`` that would start
    an entity escaped, the rest as written (``GELU <-> GELU``); pipes escaped so that a table cell
    stays one cell."""
    flat = " ".join(str(value if value is not None else "-").split())
    return _TAG.sub("&lt;", _ENTITY.sub("&amp;", flat)).replace("|", "\\|")


def _cell(value: Any) -> str:
    """Text a table cell can hold: one line, inert (:func:`_text`), pipes escaped."""
    return _text(value) or "-"


def _table(head: List[str], rows: List[List[Any]], more: int) -> List[str]:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(_cell(v) for v in row) + " |" for row in rows]  # every cell escaped
    return lines + ([f"\n... and {more} more (see the HTML report)"] if more > 0 else [])


def _first_layer(record: Dict[str, Any]) -> Optional[str]:
    found = record.get("first_divergence") or {}
    for direction in ("forward", "backward"):
        if found.get(direction):
            return f"{direction}: {found[direction].get('where')}"
    return None


def render(run: Run, comparison: Optional[Comparison] = None) -> str:
    env = run.environment
    versions = env.get("versions") or {}
    lines = [
        f"## Parity report: {_text(run.label)}",
        "",
        _text(
            f"**{counts(run.checks)}**; MindSpore {versions.get('mindspore')}, PyTorch {versions.get('torch')}, "
            f"{env.get('device')} ({env.get('device_name') or 'name unknown'}); "
            f"{len(run.sources)} report file{'' if len(run.sources) == 1 else 's'}"
        ),
        "",
    ]
    notes = list(run.notes)
    if comparison is not None and comparison.environment:
        notes.insert(0, "the baseline ran in another environment: " + "; ".join(comparison.environment))
    lines += [f"> **Note:** {_cell(note)}" for note in notes] + ([""] if notes else [])
    if comparison is not None:
        lines += _since(comparison)
    failing = [c for c in run.checks if c["verdict"] in BAD]
    lines += [f"### Failures ({len(failing)})", ""]
    if failing:
        rows = [
            [
                check_label(check_key(c)),
                c["verdict"],
                c.get("device"),
                ", ".join(c.get("modes") or []),
                fmt(c.get("worst_margin")),
                _first_layer(c),
                (c.get("likely_causes") or [None])[0] or (c.get("error") or {}).get("type"),
            ]
            for c in failing
        ]
        lines += _table(
            ["check", "verdict", "device", "modes", "worst margin", "first divergence", "likely cause"],
            rows[:_ROWS],
            len(rows) - _ROWS,
        )
    else:
        lines.append("No check failed.")
    return "\n".join(lines) + "\n"


def _since(comparison: Comparison) -> List[str]:
    lines = [f"### Since the baseline ({_text(comparison.baseline.label)})", "", f"{_text(comparison.counts())}", ""]
    lines += [f"- {_text(line)}" for line in comparison.worst_lines()] + ([""] if comparison.worst_lines() else [])
    new = comparison.of("new failure")
    if new:
        rows = [
            [c.label, c.before, c.after, c.worst.label if c.worst else "-", fmt(c.worst.after) if c.worst else "-"]
            for c in new
        ]
        lines += (
            ["#### New failures", ""]
            + _table(["check", "baseline", "now", "tensor", "margin"], rows[:_ROWS], len(rows) - _ROWS)
            + [""]
        )
    drifted = [(c, t) for c in comparison.of("drift") for t in c.tensors]
    drifted.sort(key=lambda pair: -(pair[1].ratio or 0.0))
    if drifted:
        rows = [[c.label, t.label, fmt(t.before), fmt(t.after), f"{t.ratio:.3g}x"] for c, t in drifted]
        lines += [
            f"#### Drift (a passing tensor's margin grew more than {comparison.factor:g}x; margins under "
            f"{comparison.floor:g} count as {comparison.floor:g})",
            "",
        ]
        lines += _table(["check", "tensor", "baseline margin", "margin", "growth"], rows[:_ROWS], len(rows) - _ROWS) + [
            ""
        ]
    fixed = comparison.of("fixed")
    if fixed:
        lines += ["#### Fixed", ""] + [f"- {_text(c.label)}" for c in fixed[:_ROWS]] + [""]
    return lines
