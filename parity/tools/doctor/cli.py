"""``parity doctor``'s command line: the facts of :mod:`.probe` as text, and what to install.

Exit status: 0 when checks can run here (both frameworks installed as a supported pair, a numpy
MindSpore works with, the package's data readable), 1 when they cannot; what is optional (a GPU, a
browser, Hypothesis) never changes it."""

from __future__ import annotations

import textwrap
from typing import List

from .probe import Fact, Facts, gather

__all__ = ["add_parser", "main", "render"]

_WIDTH = 100


def add_parser(commands) -> None:
    commands.add_parser(
        "doctor",
        help="say what this environment can do, and what to install for what it cannot",
        description="Report the installed MindSpore and PyTorch and whether they are a supported pair, the "
        "devices each can run on, what the known-mismatch registry says MindSpore cannot run on the CPU, "
        "whether a browser for `parity report`'s page is there, and what to install for what is missing. "
        "Exit status 0 when checks can run here, 1 when they cannot.",
    )


def _line(fact: Fact, indent: str = "  ") -> str:
    return f"{indent}{'ok' if fact.ok else '--':<4}{fact.text}"


def _wrapped(text: str, indent: str) -> List[str]:
    return textwrap.wrap(text, _WIDTH, initial_indent=indent, subsequent_indent=indent + "  ")


def render(facts: Facts) -> str:
    lines = [f"parity {facts.parity} on Python {facts.python}", "", "Frameworks"]
    lines += [_line(f) for f in facts.versions]
    lines += ["", "Devices (--parity-device)"]
    for device, found in facts.devices.items():
        lines += [_line(Fact(f.ok, f"{device:<7}{f.text}", f.fix)) for f in found]
    ms_version = facts.frameworks[0].version
    where = f"MindSpore {ms_version}" if ms_version else "any MindSpore (none installed)"
    count = sum(len(apis) for _, apis in facts.missing_on_cpu)
    lines += ["", f"Known missing on the CPU (the registry, for {where}): {count} MindSpore APIs"]
    for dtypes, apis in facts.missing_on_cpu:
        lines += _wrapped(f"{dtypes} ({len(apis)}): {', '.join(apis)}", "  ")
    lines += ["  python -m parity.registry list shows every entry; docs/known-mismatches.md explains each"]
    lines += ["", "Package data"] + [_line(f) for f in facts.registry]
    lines += ["", "Report page"] + [_line(f) for f in facts.browsers]
    lines += ["", "Optional"] + [_line(f) for f in facts.optional]
    fixes = _fixes(facts)
    if fixes:
        lines += ["", "To install"] + [f"  {fix}" for fix in fixes]
    verdict = "checks can run here" if facts.can_check else "checks cannot run here until the Frameworks lines are ok"
    return "\n".join(lines + ["", f"parity doctor: {verdict}"]) + "\n"


def _fixes(facts: Facts) -> List[str]:
    found: List[str] = []
    every = facts.versions + facts.registry + [f for d in facts.devices.values() for f in d]
    for fact in every + facts.browsers + facts.optional:
        if fact.fix and not fact.ok and fact.fix not in found:
            found.append(fact.fix)
    return found


def main(args, version: str) -> int:
    facts = gather(version)
    print(render(facts), end="")
    return 0 if facts.can_check else 1
