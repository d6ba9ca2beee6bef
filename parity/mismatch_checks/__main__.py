"""``python -m parity.mismatch_checks {selftest,measure}`` (both import the frameworks).

* ``selftest [ID ...] [--check-ranges]``: run self-tests (every entry when no id is given) and print
  the outcomes; ``--check-ranges`` also runs the entries whose version range leaves out the installed
  versions, and fails when one of them shows its mismatch (the range is too narrow);
* ``measure``: run every self-test, write parity/data/measured-mismatches.toml and regenerate
  docs/known-mismatches.md from it.

Exit status 1 when an entry is stale, unexpected, outside its range or its fix failed.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Dict, List, Optional

from ..registry import RegistryError, docs, installed_versions, load
from .selftests import selftest


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m parity.mismatch_checks", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("selftest", help="run self-tests and print the outcomes")
    run.add_argument("ids", nargs="*")
    run.add_argument("--device", default="CPU")
    run.add_argument(
        "--check-ranges",
        action="store_true",
        help="also run entries whose version range leaves out the installed versions",
    )
    measure = sub.add_parser("measure", help="run every self-test, store the numbers, regenerate the doc")
    measure.add_argument("--device", default="CPU")
    args = parser.parse_args(argv)
    try:
        registry = load()
        entries = [registry.get(i) for i in getattr(args, "ids", None) or [e.id for e in registry]]
    except RegistryError as exc:
        print(exc, file=sys.stderr)
        return 1
    outcomes = _run(entries, args.device, check_ranges=getattr(args, "check_ranges", False))
    if args.command == "measure":
        ms_version, torch_version = installed_versions()
        env = {"mindspore": ms_version, "torch": torch_version, "device": args.device, "seed": 1234}
        print(f"wrote {docs.write_measured(outcomes, env)}")
        docs.DOC_PATH.parent.mkdir(parents=True, exist_ok=True)
        docs.DOC_PATH.write_text(docs.render(registry, docs.read_measured()), encoding="utf-8")
        print(f"wrote {docs.DOC_PATH}")
    bad = [o for o in outcomes if o.status not in ("ok", "no-selftest", "not-applicable")]
    return 1 if bad else 0


def _run(entries, device: str, *, check_ranges: bool = False):
    outcomes, start = [], time.perf_counter()
    for entry in entries:
        outcome = selftest(entry, device=device, check_range=check_ranges)
        print(f"{outcome}  [{outcome.seconds:.2f}s]", flush=True)
        outcomes.append(outcome)
    counts: Dict[str, int] = {}
    for outcome in outcomes:
        counts[outcome.status] = counts.get(outcome.status, 0) + 1
    shown = ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
    print(f"{len(outcomes)} entries in {time.perf_counter() - start:.1f}s: {shown}")
    return outcomes


if __name__ == "__main__":
    sys.exit(main())
