"""``parity report``: merge ``--parity-report`` files into one run, compare it with a baseline,
and write the HTML page, the Markdown summary and, if asked, the merged run as the next baseline.

    parity report RUN.jsonl [RUN2.jsonl ...] [--baseline DIR] [--html OUT.html] [--markdown OUT.md]
                  [--save-baseline DIR] [--drift FACTOR] [--drift-fails yes|no]

Files started within 12 hours of each other are the shards of one run and merge into it; older
ones are earlier nights, and with the baselines under ``--baseline`` (one folder, or a folder of
them) make the margin-over-time table. The latest run is the one reported; it is compared with
the latest baseline older than itself. Exit status: 0 written, 1 written and a check failed or
errored, a test crashed or was interrupted (the run was cut short), or (against a baseline) a tensor
drifted (unless ``--drift-fails no``), 2 a usage error.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple

from .. import files
from ..errors import ParityUsageError

if TYPE_CHECKING:  # the records' modules are imported by main() only
    import argparse

    from .runs import Run

__all__ = ["add_parser", "main"]


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    report = commands.add_parser(
        "report",
        help="merge --parity-report files into one HTML page and a Markdown summary",
        description="Merge the --parity-report files of one run (its shards), compare it "
        "with a baseline, and write one self-contained HTML page and a Markdown summary.",
    )
    report.add_argument(
        "files",
        nargs="+",
        metavar="RUN.jsonl",
        help="--parity-report files: one run's shards, and earlier nights' files for the margin over time",
    )
    report.add_argument(
        "--baseline",
        metavar="DIR",
        help="a folder written by --parity-save-baseline, or a folder of them (a history of nights)",
    )
    report.add_argument("--html", metavar="OUT.html", help="write the page here")
    report.add_argument("--markdown", metavar="OUT.md", help="write the Markdown summary here (for a CI comment)")
    report.add_argument("--save-baseline", metavar="DIR", help="store the merged run as a baseline in DIR")
    report.add_argument(
        "--drift",
        metavar="FACTOR",
        default=None,
        help="a passing tensor drifts when its margin grows more than FACTOR times over the "
        "baseline's (default 4; margins under 0.001 count as 0.001)",
    )
    report.add_argument(
        "--drift-fails",
        choices=("yes", "no"),
        default="yes",
        help="whether drift makes the exit status 1 (default yes)",
    )


def _output(value: Optional[str], flag: str) -> Optional[Path]:
    if value is None:
        return None
    path = Path(value)
    files.check_destination(path, flag)  # checked before any report file is read
    return path


def _baseline(stored: List[Run], tonight: Run) -> Tuple[Optional[Run], List[str]]:
    """The latest stored run older than tonight's (else the latest, said)."""
    if not stored:
        return None, []
    older = [run for run in stored if run.created < tonight.created]
    if older:
        return older[-1], []
    return stored[-1], [f"no baseline is older than this run; compared with the latest, {stored[-1].label}"]


def _history(stored: List[Run], given: List[Run]) -> List[Run]:
    """Every run, oldest first, a run stored and given both (tonight's, saved) once."""
    found = {run.environment.get("created"): run for run in stored}
    found.update({run.environment.get("created"): run for run in given})
    return sorted(found.values(), key=lambda run: run.created)


def _cut_short(checks: Sequence[Dict[str, Any]]) -> List[str]:
    """The note a run cut short by a crashed or interrupted test opens with."""
    from .records import CUT_SHORT

    lost = [c for c in checks if c.get("verdict") in CUT_SHORT]
    if not lost:
        return []
    counted = ", ".join(
        f"{n} {verdict}" for verdict in CUT_SHORT for n in [sum(c["verdict"] == verdict for c in lost)] if n
    )
    shown = ", ".join(str(c.get("nodeid")) for c in lost[:5]) + (f" and {len(lost) - 5} more" if len(lost) > 5 else "")
    interrupted = any(c["verdict"] == "interrupted" for c in lost)
    after = " and the tests after an interruption did not run" if interrupted else ""
    return [
        f"the run was cut short: {counted} ({shown}); what those tests would have checked is not in this report{after}"
    ]


def main(args: argparse.Namespace) -> int:
    """Run ``parity report`` on the parsed ``args``; the exit status. Imported only for this
    command: the other commands never load the records' modules."""
    from . import drift, runs
    from . import markdown as report_markdown
    from . import page as report_page
    from .baseline import parse_factor

    html, markdown = _output(args.html, "--html"), _output(args.markdown, "--markdown")
    if html is None and markdown is None and args.save_baseline is None:  # checked before any file is read
        raise ParityUsageError(
            "parity report: nothing to write; give --html OUT.html, --markdown OUT.md or --save-baseline DIR"
        )
    save = None if args.save_baseline is None else Path(args.save_baseline)
    if save is not None and save.exists() and not save.is_dir():
        raise ParityUsageError(f"--save-baseline {save}: a file; give a folder (it will hold {runs.BASELINE_FILE})")
    factor = drift.DEFAULT_FACTOR if args.drift is None else parse_factor(args.drift, "--drift")
    given = runs.load_runs([Path(f) for f in args.files])
    tonight = given[-1]
    stored = runs.load_baselines(Path(args.baseline), "--baseline") if args.baseline else []
    baseline, notes = _baseline(stored, tonight)
    tonight.notes = _cut_short(tonight.checks) + tonight.notes + notes
    comparison = (
        None if baseline is None else drift.compare(baseline, tonight.checks, tonight.environment, factor=factor)
    )
    earlier = len(given) - 1
    print(
        f"parity report: {len(tonight.sources)} file{'' if len(tonight.sources) == 1 else 's'} merged into one run "
        f"of {report_page.counts(tonight.checks)}"
        + (f"; {earlier} earlier run{'' if earlier == 1 else 's'} given" if earlier else "")
    )
    for note in tonight.notes:
        print(f"note: {note}")
    for line in comparison.summary_lines() if comparison is not None else ():
        print(line)
    if html is not None:
        files.write_text(
            html, report_page.render(tonight, comparison=comparison, history=_history(stored, given)), "--html"
        )
        print(f"wrote {html}")
    if markdown is not None:
        files.write_text(markdown, report_markdown.render(tonight, comparison), "--markdown")
        print(f"wrote {markdown}")
    if save is not None:
        print(f"wrote {runs.save_baseline(save, tonight.environment, tonight.checks)}")
    failed = any(c["verdict"] in drift.BAD for c in tonight.checks)
    regressions = comparison.regressions(drift_fails=args.drift_fails == "yes") if comparison is not None else []
    return 1 if failed or regressions else 0
