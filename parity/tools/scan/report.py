"""``parity scan``'s output: the text report (summary, table, known mismatches) and the JSON for tools.

JSON shape (``schema`` 1)::

    {"schema": 1, "root": "src", "device": "CPU",
     "versions": {"mindspore": "2.10.0", "torch": "2.13.0"},    # installed (null: not installed)
     "files": 12,                                               # Python files found
     "skipped": [{"file": "src/old.py", "error": "SyntaxError: ... (line 3)"}],
     "notes": ["src/x.py:1: 'from torch.nn import *' is not followed; ..."],
     "runtime_module": null,                                    # or "pkg.mod:factory" with --module
     "summary": {"apis": 40, "uses": 311, "statuses": {"as-is": 9, "fix": 6, "no-fix": 0,
                 "unsupported": 1, "unknown": 24}, "convertible": 15, "convertible_percent": 37.5,
                 "not_seen": {"calls": 7, "methods": {"to": 4, "reshape": 3},   # x.to(...), x.reshape(...):
                              "untranslated": []}},                             # maybe a tensor's; not counted
     "apis": [{"api": "torch.nn.Conv2d", "family": "nn",      # nn | functional | optim | tensor | torch
               "status": "fix", "status_text": "known mismatch, with fix",
               "certain": true,                                 # false: the mismatches that set the
                                                                # status only may apply (see "why")
               "inferred": false,                               # true: a Tensor method found by name
               "uses": 12, "first": "src/net.py:8",
               "locations": [{"file": "src/net.py", "line": 8, "how": "call"}, ...],
               "runtime_calls": 0, "runtime_locations": [...],  # with --module; same shape as locations
               "mismatches": [{"id": "conv2d-pad-mode-default", "kind": "default", "summary": "...",
                               "fix": "...", "applies": "yes",  # yes | maybe | no
                               "where": "src/net.py:8", "why": ""}]}]}   # the use it (may) apply at

``status`` is one of ``as-is``, ``fix``, ``no-fix``, ``unsupported``, ``unknown``
(:mod:`parity.tools.scan.status`); ``convertible`` counts the distinct APIs that are ``as-is`` or ``fix``.
"""

from __future__ import annotations

from typing import List

from .scanner import ApiReport, ScanReport
from .source import INFERRED, TENSOR_METHODS
from .status import STATUSES

__all__ = ["as_json", "text"]

_SHOWN_ORDER = ("unsupported", "no-fix", "fix", "as-is", "unknown")


def as_json(report: ScanReport) -> dict:
    return {
        "schema": 1,
        "root": report.root,
        "device": report.device,
        "versions": {"mindspore": report.versions[0], "torch": report.versions[1]},
        "files": report.files,
        "skipped": [{"file": f, "error": why} for f, why in report.skipped],
        "notes": list(report.notes),
        "runtime_module": report.runtime_module,
        "summary": {
            "apis": len(report.apis),
            "uses": report.uses,
            "statuses": {code: report.counts.get(code, 0) for code in STATUSES},
            "convertible": report.convertible,
            "convertible_percent": report.convertible_percent,
            "not_seen": {
                "calls": sum(n for _, n in report.unseen),
                "methods": dict(report.unseen),
                "untranslated": sorted(report.untranslated),
            },
        },
        "apis": [_api_json(a, report) for a in report.apis],
    }


def _api_json(api: ApiReport, report: ScanReport) -> dict:
    first = api.first
    return {
        "api": api.api,
        "family": api.family,
        "status": api.status.code,
        "status_text": report.status_text(api.status.code),
        "certain": api.status.certain,
        "inferred": api.inferred,
        "uses": len(api.uses),
        "first": first.location if first else None,
        "locations": [{"file": u.file, "line": u.line, "how": u.how} for u in api.uses],
        "runtime_calls": len(api.runtime),
        "runtime_locations": [{"file": u.file, "line": u.line, "how": u.how} for u in api.runtime],
        "mismatches": [
            {
                "id": f.id,
                "kind": f.kind,
                "summary": f.summary,
                "fix": f.fix,
                "applies": f.applies,
                "where": f.where,
                "why": f.why,
            }
            for f in api.status.findings
        ],
    }


def text(report: ScanReport) -> str:
    versions = ", ".join(f"{name} {v or 'not installed'}" for name, v in zip(("mindspore", "torch"), report.versions))
    lines = [
        f"parity scan {report.root}: {_count(report.files, 'Python file')}, {_count(report.uses, 'use')} of "
        f"{_count(len(report.apis), 'distinct PyTorch API')}",
        f"Status on {report.device} ({versions}), from parity's translation tables and known-mismatch registry:",
    ]
    width = max(len(report.status_text(c)) for c in STATUSES)
    lines += [f"  {report.status_text(code):<{width}}  {report.counts.get(code, 0):>5}" for code in _SHOWN_ORDER]
    lines.append(
        f"Convertible: {report.convertible} of {len(report.apis)} distinct APIs "
        f"({report.convertible_percent}%) translate as is or with a known fix"
    )
    if report.unseen:
        lines.append(_unseen(report))
    if report.runtime_module:
        ran = sum(1 for a in report.apis if a.runtime)
        only = sum(1 for a in report.apis if a.runtime and not a.uses)
        lines.append(
            f"Runtime: one forward/backward of {report.runtime_module} called {ran} of these APIs "
            f"({only} not found by the static scan)"
        )
    lines += ["", *_table(report)]
    if any(a.inferred for a in report.apis):
        lines += [
            "",
            f"* {INFERRED}: a call x.name(...) where name is one of {len(TENSOR_METHODS)} torch.Tensor "
            "methods that nn.Module, Python's containers and strings and (view aside) numpy arrays lack",
        ]
    for file, why in report.skipped:
        lines.append(f"Skipped {file}: {why}")
    lines += [f"Note: {note}" for note in report.notes]
    return "\n".join(lines)


def _unseen(report: ScanReport) -> str:
    """What the figure cannot see: calls of Tensor methods that other types share."""
    calls = sum(n for _, n in report.unseen)
    shown = ", ".join(f"{name} {n}" for name, n in report.unseen[:8]) + (", ..." if len(report.unseen) > 8 else "")
    lacking = f"; parity does not translate {', '.join(sorted(report.untranslated))}" if report.untranslated else ""
    seen = "" if report.runtime_module else "; --module records those that run"
    return (
        f"Not seen: {_count(calls, 'call')} x.name(...) of Tensor methods other types share ({shown}): a static "
        f"scan cannot tell their receivers, so the figure leaves them out{lacking}{seen}"
    )


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _maybe(api: ApiReport) -> str:
    """A status that rests only on mismatches that may apply says so."""
    return " (may apply)" if api.status.code in ("no-fix", "unsupported") and not api.status.certain else ""


def _table(report: ScanReport) -> List[str]:
    rows = [
        (
            a.api + (" *" if a.inferred else ""),
            report.status_text(a.status.code) + _maybe(a),
            str(len(a.uses)),
            str(len(a.runtime)),
            a.first.location if a.first else "",
        )
        for a in report.apis
    ]
    header = ("API", "status", "uses", "runtime", "first use")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(5)]
    keep = [0, 1, 2, 3, 4] if report.runtime_module else [0, 1, 2, 4]

    def line(cells):
        return "  ".join(
            f"{cells[i]:>{widths[i]}}" if i in (2, 3) else f"{cells[i]:<{widths[i]}}" for i in keep
        ).rstrip()

    out = [line(header)]
    for api, row in zip(report.apis, rows):
        out.append(line(row))
        for finding in api.status.findings:
            if not finding.live:
                continue
            maybe = (
                f" [may apply: {finding.why} at {finding.where}]"
                if finding.applies == "maybe" and not finding.fix
                else ""
            )
            out.append(
                f"    {finding.id}: " + (f"fix: {finding.fix}" if finding.fix else f"no fix: {finding.summary}") + maybe
            )
        idle = [f.id for f in api.status.findings if not f.live]
        if idle:
            out.append(f"    not at these uses: {', '.join(idle)}")
    return out
