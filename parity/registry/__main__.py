"""``python -m parity.registry {check,list,docs}`` (none of them imports a framework).

* ``check``: load and validate the data files (exit 1 with file:line problems);
* ``list``: one line per entry;
* ``docs [--check] [--output PATH]``: regenerate docs/known-mismatches.md from the data and the
  stored measurements.

Self-tests run on the frameworks and live above the registry: ``python -m parity.mismatch_checks
selftest [ID ...]`` runs them, ``python -m parity.mismatch_checks measure`` refreshes the measurements.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import List, Optional

from . import docs
from .schema import RegistryError
from .store import Registry, load


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m parity.registry", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("check", help="validate the data files")
    sub.add_parser("list", help="one line per entry")
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
    return _docs(registry, args.output, check=args.check)


def _docs(registry: Registry, output: Path, *, check: bool) -> int:
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
