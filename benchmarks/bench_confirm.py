"""What a failing check's diagnosis costs on real ports: the check with its diagnosis (layer
capture and alignment, each layer's own error, the causes confirmed by replay) against the same
failing check with none of it (``localize=False``), and the share the confirmation replays take.

Run from the repository root::

    python benchmarks/bench_confirm.py                                  # the shipped ports below
    python benchmarks/bench_confirm.py --pairs resnet18,vit --repeats 3 --json confirm.json

Each pair (``cases/models/ports*.py``, as shipped: it fails) runs in a process of its own: one
warm-up check, then ``--repeats`` rounds of the two variants in alternating order. Reported per
pair: the median process CPU time of each variant, the diagnosis's cost as a multiple of the
plain check (``(with - without) / without``; target at most 1.5), the CPU time inside
:func:`parity.engine.diagnosis.causes.confirm` (the replays) and its multiple of the plain check,
how many causes were replayed and confirmed, and the peak RSS of the process (``VmHWM``). CPU time,
not wall time: the machine is shared, and a check's CPU time varies less than its wall time. A
measurement, not a test: nothing here asserts.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

MARK = "BENCH-CONFIRM-RESULT "
PAIRS = ("resnet18", "mobilenet_v3_small", "efficientnet_b0", "convnext", "swin", "vit", "llama")
TARGET = 1.5


def _peak_rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def run_one(name: str, repeats: int) -> dict:
    import mindspore
    import torch  # noqa: F401  (both frameworks before parity)

    import parity
    from cases.models.ports import factory, pairs
    from parity.engine.diagnosis import causes

    mindspore.set_context(mode=mindspore.PYNATIVE_MODE, device_target="CPU")
    port = pairs()[name]
    module = factory(port.torch)()
    ms_cell = factory(port.mindspore)(fixed=False)
    if port.adapt is not None:
        port.adapt(ms_cell, module)
    name_map = port.name_map() if port.name_map else None
    spent = {"confirm": 0.0, "replayed": 0, "confirmed": 0}
    original = causes.confirm

    def timed(candidates, replayable):
        start = time.process_time()
        try:
            found = original(candidates, replayable)
        finally:
            spent["confirm"] += time.process_time() - start
        spent["replayed"] += sum(d.replay is not None for d in candidates)
        spent["confirmed"] += sum(bool(d.confirmed) for d, _ in found)
        return found

    causes.confirm = timed

    def check(localize):
        start = time.process_time()
        try:
            parity.check(ms_cell, module, port.inputs, name_map=name_map, localize=localize, **port.check)
        except parity.ParityMismatch:
            pass
        return time.process_time() - start

    check("auto"), check(False)  # warm-up: imports, kernels, first-call caches
    spent.update(confirm=0.0, replayed=0, confirmed=0)
    full, plain = [], []
    for i in range(repeats):
        for localize in ("auto", False) if i % 2 == 0 else (False, "auto"):
            (full if localize == "auto" else plain).append(check(localize))
    with_s, without_s = statistics.median(full), statistics.median(plain)
    confirm_s = spent["confirm"] / repeats
    return {
        "pair": name,
        "repeats": repeats,
        "with_cpu_s": round(with_s, 2),
        "without_cpu_s": round(without_s, 2),
        "diagnosis_cost": round((with_s - without_s) / without_s, 2),
        "confirm_cpu_s": round(confirm_s, 3),
        "confirm_cost": round(confirm_s / without_s, 3),
        "replayed": spent["replayed"] // repeats,
        "confirmed": spent["confirmed"] // repeats,
        "peak_rss_mb": round(_peak_rss_mb()),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", default=",".join(PAIRS), help="comma-separated pair names")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--timeout", type=int, default=1200, help="seconds per pair")
    parser.add_argument("--json", help="write every row here")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        print(MARK + json.dumps(run_one(args.one, args.repeats)), flush=True)
        return 0
    rows = []
    for name in args.pairs.split(","):
        command = [sys.executable, __file__, "--one", name, "--repeats", str(args.repeats)]
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=args.timeout, cwd=ROOT)
        except subprocess.TimeoutExpired:
            print(f"{name:<20} timed out after {args.timeout} s", flush=True)
            continue
        found = [line[len(MARK) :] for line in done.stdout.splitlines() if line.startswith(MARK)]
        if not found:
            print(f"{name:<20} failed: {(done.stderr or done.stdout).strip().splitlines()[-1:]}", flush=True)
            continue
        row = json.loads(found[0])
        rows.append(row)
        print(
            f"{name:<20} with {row['with_cpu_s']} s, without {row['without_cpu_s']} s CPU: diagnosis "
            f"{row['diagnosis_cost']}x the plain check (target <= {TARGET}); replays {row['confirm_cpu_s']} s = "
            f"{row['confirm_cost']}x ({row['replayed']} replayed, {row['confirmed']} confirmed); "
            f"peak RSS {row['peak_rss_mb']} MB",
            flush=True,
        )
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
