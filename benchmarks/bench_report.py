"""What ``--parity-report`` costs a catalogue run.

Run from the repository root::

    python benchmarks/bench_report.py                       # linear, norm and pool cases; in-process, 4 pairs
    python benchmarks/bench_report.py --repeats 6 --json report-bench.json
    python benchmarks/bench_report.py -n 2 --repeats 3      # each run a pytest subprocess under xdist
    python benchmarks/bench_report.py --same                # (a) in both slots: how noisy the machine is now

It runs the same catalogue subset with ``pytest --parity`` (a) without and (b) with
``--parity-report=PATH``, alternating a-b, b-a, ... after one warm-up run of each, and prints each
pair's ratio b/a of wall and CPU time and their medians. In-process (the default), it also times
the report's own work inside the (b) runs: the environment fingerprint, writing and flushing each
line, and handing records to the writer. That share of the run is what the flag costs without the
noise of a shared machine. Under ``-n``, the records' trip from worker to controller is timed
apart, in this process, on the run's own records. Check records are made with or without the flag
(the JUnit properties and the summary read them); their time is printed apart. The target is at
most 2%. The load
average is printed before and after: on a shared machine the end-to-end ratios move with it.
This is a measurement, not a test: nothing here asserts on a time.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Dict, List

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # `python benchmarks/bench_report.py` puts benchmarks/ first, not the root
    sys.path.insert(0, str(ROOT))

SUBSET = ["cases/translated/linear.py", "cases/translated/norm.py", "cases/translated/pool.py"]
TARGET = 1.02
_SPENT: Dict[str, float] = defaultdict(float)


def _timed(owner, name: str, label: str) -> None:
    """Add the time spent in ``owner.name`` to ``_SPENT[label]``."""
    original = getattr(owner, name)

    @functools.wraps(original)  # pluggy reads a hook's argument names through __wrapped__
    def wrapper(*args, **kwargs):
        started = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            _SPENT[label] += time.perf_counter() - started

    setattr(owner, name, wrapper)


_WRITER = (
    ("__init__", "writer: open the file"),
    ("pytest_sessionstart", "writer: environment line"),
    ("pytest_runtest_logreport", "writer: check lines"),
    ("pytest_unconfigure", "writer: close"),
)
_FINGERPRINT, _RECORDS = "  of which the environment fingerprint", "records made (with or without the flag)"
_TRANSPORT = "xdist: the records from worker to controller"
_LABELS = (
    [label for _, label in _WRITER[:2]] + [_FINGERPRINT] + [label for _, label in _WRITER[2:]] + [_TRANSPORT, _RECORDS]
)


def _instrument() -> None:
    from parity import plugin
    from parity.nightly import records

    for name, label in _WRITER:
        _timed(plugin._ReportWriter, name, label)
    _timed(records, "fingerprint", _FINGERPRINT)
    _timed(records, "check_record", _RECORDS)


def _args(paths: List[str], report: str, workers: int) -> List[str]:
    args = [*paths, "--parity", "-q", "-p", "no:cacheprovider"]
    if workers:
        args += ["-n", str(workers)]
    return args + ([f"--parity-report={report}"] if report else [])


def _run_in_process(paths, report, workers) -> Dict[str, float]:
    import contextlib
    import io

    import pytest

    wall, cpu = time.perf_counter(), time.process_time()
    with contextlib.redirect_stdout(io.StringIO()):  # parity is imported already: its asserts stay as written
        code = pytest.main(_args(paths, report, workers) + ["-W", "ignore::pytest.PytestAssertRewriteWarning"])
    return {"wall": time.perf_counter() - wall, "cpu": time.process_time() - cpu, "code": int(code)}


def _run_subprocess(paths, report, workers) -> Dict[str, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", *_args(paths, report, workers)], cwd=ROOT, capture_output=True, text=True
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return {"wall": time.perf_counter() - wall, "cpu": cpu, "code": done.returncode}


def _transport(report: str) -> float:
    """Seconds to send one run's check records from an xdist worker to the controller as test
    reports carry them (execnet's serialiser both ways), the best of 5."""
    import execnet

    lines = Path(report).read_text(encoding="utf-8").splitlines()[1:]
    properties = [[("parity-record", json.loads(line))] for line in lines]
    best = float("inf")
    for _ in range(5):
        started = time.perf_counter()
        for carried in properties:
            execnet.loads(execnet.dumps({"user_properties": carried}))
        best = min(best, time.perf_counter() - started)
    return best


def _load() -> float:
    return round(os.getloadavg()[0], 2)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", default=SUBSET, help=f"case files (default: {' '.join(SUBSET)})")
    parser.add_argument("--repeats", type=int, default=4, help="timed a/b pairs after the warm-up (default 4)")
    parser.add_argument(
        "-n",
        dest="workers",
        type=int,
        default=0,
        help="run each pytest in a subprocess under xdist with this many workers",
    )
    parser.add_argument(
        "--same", action="store_true", help="run (a) in both slots: the spread of its ratios is the machine's noise"
    )
    parser.add_argument("--json", metavar="PATH", help="write the figures as JSON")
    args = parser.parse_args(argv)
    os.chdir(ROOT)
    in_process = not args.workers
    if in_process:
        import mindspore  # noqa: F401  (both frameworks once, before any run: torch cannot be imported twice)
        import torch  # noqa: F401

        _instrument()
    run = _run_in_process if in_process else _run_subprocess
    load_before = _load()
    with tempfile.TemporaryDirectory() as tmp:
        report = str(Path(tmp) / "run.jsonl")
        for variant in ("", report):  # warm-up: imports, MindSpore's first compilations
            run(args.paths, variant, args.workers)
        _SPENT.clear()
        runs: Dict[str, List[Dict[str, float]]] = {"a": [], "b": []}
        for i in range(args.repeats):
            for key in "ab" if i % 2 == 0 else "ba":
                runs[key].append(run(args.paths, report if key == "b" and not args.same else "", args.workers))
        lines = sum(1 for _ in open(report, encoding="utf-8"))  # with --same, the warm-up's
        _SPENT[_TRANSPORT] = _transport(report) * len(runs["b"])
    load_after = _load()
    return _print(args, runs, lines, load_before, load_after, in_process)


def _print(args, runs, lines, load_before, load_after, in_process) -> int:
    codes = {r["code"] for key in runs for r in runs[key]}
    ratios = {kind: [b[kind] / a[kind] for a, b in zip(runs["a"], runs["b"])] for kind in ("wall", "cpu")}
    b_wall = sum(r["wall"] for r in runs["b"])
    print(
        f"{' '.join(args.paths)}: {lines - 1} check records a run; "
        f"{'in-process' if in_process else f'subprocesses, -n {args.workers}'}; pytest exit codes {sorted(codes)}"
    )
    print(f"load average {load_before} before, {load_after} after, on {os.cpu_count()} CPUs")
    print(f"{'pair':<6} {'a wall s':>9} {'b wall s':>9} {'b/a wall':>9} {'a CPU s':>9} {'b CPU s':>9} {'b/a CPU':>8}")
    for i, (a, b) in enumerate(zip(runs["a"], runs["b"])):
        print(
            f"{i + 1:<6} {a['wall']:>9.2f} {b['wall']:>9.2f} {b['wall'] / a['wall']:>9.3f} "
            f"{a['cpu']:>9.2f} {b['cpu']:>9.2f} {b['cpu'] / a['cpu']:>8.3f}"
        )
    medians = {kind: statistics.median(values) for kind, values in ratios.items()}
    print(f"median b/a: wall {medians['wall']:.3f}, CPU {medians['cpu']:.3f} (target <= {TARGET})")
    direct = sum(v for k, v in _SPENT.items() if k.startswith("writer:"))
    if args.same:
        print("(a) ran in both slots: the ratios' spread is the noise of this machine now")
    elif not in_process:
        print(
            f"  {_TRANSPORT:<48} {_SPENT[_TRANSPORT] / len(runs['b']):8.4f} s a run "
            f"({100 * _SPENT[_TRANSPORT] / b_wall:.3f}% of a (b) run; measured apart, in this process)"
        )
    else:
        for label in _LABELS:  # the writer works in (b) runs only, records are made in both
            seconds = _SPENT.get(label, 0.0)
            per_run = seconds / (len(runs["b"]) if label.startswith(("writer", " ", "xdist")) else 2 * len(runs["b"]))
            print(f"  {label:<48} {per_run:8.4f} s a run")
        print(f"the report's own work: {100 * direct / b_wall:.2f}% of the (b) runs' wall time")
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                {
                    "paths": args.paths,
                    "workers": args.workers,
                    "records": lines - 1,
                    "runs": runs,
                    "ratios": ratios,
                    "same": args.same,
                    "medians": medians,
                    "spent": dict(_SPENT),
                    "direct_share": direct / b_wall if in_process and not args.same else None,
                    "load": [load_before, load_after],
                },
                indent=2,
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
