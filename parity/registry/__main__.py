"""``python -m parity.registry {check,list,selftest,measure,docs}``.

* ``check``: load and validate the data files (exit 1 with file:line problems);
* ``list``: one line per entry;
* ``selftest [ID ...]``: run self-tests and print the outcomes (imports the frameworks);
* ``measure``: run every self-test, write parity/data/measured-mismatches.toml, regenerate the doc;
* ``docs [--check] [--output PATH]``: regenerate docs/known-mismatches.md from the data (no frameworks).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import List, Optional

from . import docs
from .schema import RegistryError
from .store import installed_versions, load


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m parity.registry", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("check", help="validate the data files")
    sub.add_parser("list", help="one line per entry")
    run = sub.add_parser("selftest", help="run self-tests and print the outcomes")
    run.add_argument("ids", nargs="*")
    run.add_argument("--device", default="CPU")
    measure = sub.add_parser("measure", help="run every self-test, store the numbers, regenerate the doc")
    measure.add_argument("--device", default="CPU")
    doc = sub.add_parser("docs", help="regenerate docs/known-mismatches.md")
    doc.add_argument("--check", action="store_true", help="exit 1 if the document is out of date")
    doc.add_argument("--output", type=Path, default=docs.DOC_PATH)
    args = parser.parse_args(argv)
    try:
        registry = load()
    except RegistryError as exc:
        print(exc, file=sys.stderr)
        return 1
    if args.command == "check":
        print(f"{len(registry)} entries and {len(registry.available)} availability records are valid")
        return 0
    if args.command == "list":
        for entry in registry:
            print(f"{entry.id:<42} {entry.kind:<11} {entry.family:<4} {entry.mindspore} <-> {entry.torch}")
        return 0
    if args.command == "docs":
        return _docs(registry, args.output, check=args.check)
    ids = getattr(args, "ids", None) or [e.id for e in registry]
    outcomes = _run([registry.get(i) for i in ids], args.device)
    if args.command == "measure":
        ms_version, torch_version = installed_versions()
        env = {"mindspore": ms_version, "torch": torch_version, "device": args.device, "seed": 1234}
        print(f"wrote {docs.write_measured(outcomes, env)}")
        _docs(registry, docs.DOC_PATH, check=False)
    bad = [o for o in outcomes if o.status not in ("ok", "no-selftest", "not-applicable")]
    return 1 if bad else 0


def _run(entries, device: str):
    from .selftests import selftest

    outcomes, start = [], time.perf_counter()
    for entry in entries:
        outcome = selftest(entry, device=device)
        print(f"{outcome}  [{outcome.seconds:.2f}s]", flush=True)
        outcomes.append(outcome)
    counts = {}
    for outcome in outcomes:
        counts[outcome.status] = counts.get(outcome.status, 0) + 1
    shown = ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
    print(f"{len(outcomes)} entries in {time.perf_counter() - start:.1f}s: {shown}")
    return outcomes


def _docs(registry, output: Path, *, check: bool) -> int:
    text = docs.render(registry, docs.read_measured())
    if check:
        current = output.read_text(encoding="utf-8") if output.exists() else ""
        if current != text:
            print(f"{output} is out of date: run `python -m parity.registry docs`", file=sys.stderr)
            return 1
        print(f"{output} is up to date")
        return 0
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(text, encoding="utf-8")
    print(f"wrote {output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
