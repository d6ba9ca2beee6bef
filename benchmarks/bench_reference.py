"""A check against a recorded reference vs the live check, and what each costs in memory.

Run from the repository root::

    python benchmarks/bench_reference.py                     # three workloads, a few minutes
    python benchmarks/bench_reference.py --only mlp --repeats 7 --json bench.json

Workloads: ``mlp``, a 30-layer tanh MLP (translated) whose tensors go to the rounding envelope;
``resnet_float64``, the catalogue's small ResNet with ``reference="float64"``; ``resnet_fault``, a
failing check (cases/faults: layer2.bn2's eps) whose layers are localised. For each, PyTorch's
side is recorded once (``parity.record``), then (a) ``parity.check(ms_cell, torch_module, inputs)``
and (b) ``parity.check(ms_cell, path)`` are timed in one process, interleaved, each warmed up once
(MindSpore compiles and initialises on first use); the median of b/a is printed (target <= 0.6x)
in wall and CPU time. Then one check each way in a fresh process, imports included: its wall time
and peak RSS (the workloads' model modules define both sides, so torch is imported in both; the
difference is what PyTorch's passes hold and cost). The reference's size on disk too. A
measurement, not a test: nothing here asserts on a time.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # `python benchmarks/bench_reference.py` puts benchmarks/ first, not the root
    sys.path.insert(0, str(ROOT))

TARGET = 0.6


def build(name: str):
    """(ms_cell, torch_module, inputs, check keyword arguments) of a workload."""
    import mindspore  # noqa: F401  both frameworks before parity
    import torch

    import parity
    from parity.engine.factories import resolve

    torch.manual_seed(0)
    if name == "mlp":  # a 30-layer tanh MLP whose tensors go to the rounding envelope (bench_envelope.py)
        layers = []
        for _ in range(30):
            layers += [torch.nn.Linear(512, 512), torch.nn.Tanh()]
        module = torch.nn.Sequential(*layers).eval()
        return parity.translate(module), module, parity.randn((128, 512)), {}
    if name == "resnet_float64":  # the catalogue's small ResNet, reference="float64"
        module = resolve("cases.models.resnet:torch_resnet_small", name)()
        return (
            resolve("cases.models.resnet:ms_resnet_small", name)(),
            module,
            parity.randn((2, 3, 64, 64)),
            {"reference": "float64"},
        )
    if name == "resnet_fault":  # a failing check: the layers localised (cases/faults, layer2.bn2's eps)
        module = resolve("cases.faults.models:torch_resnet", name)()
        cell = resolve("cases.faults.models:ms_resnet", name)(fault="bn_eps")
        return cell, module, parity.randn((2, 3, 8, 8)), {}
    raise SystemExit(f"unknown workload {name!r}")


WORKLOADS = ("mlp", "resnet_float64", "resnet_fault")

# One check in a fresh process, imports included; prints its wall time and peak RSS in MiB.
_PROBE = """
import json, resource, sys, time
started = time.perf_counter()
sys.path.insert(0, sys.argv[3])
from bench_reference import build
import parity
variant, name, ref = sys.argv[1], sys.argv[2], sys.argv[4]
cell, module, inputs, kwargs = build(name)
try:
    parity.check(cell, ref) if variant == "recorded" else parity.check(cell, module, inputs, **kwargs)
except parity.ParityMismatch:
    pass
print(time.perf_counter() - started, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
"""


def _time(run):
    wall, cpu = time.perf_counter(), time.process_time()
    run()
    return time.perf_counter() - wall, time.process_time() - cpu


def _probe(variant: str, name: str, ref: Path):
    """(wall seconds, peak RSS MiB) of one check in a fresh process."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, variant, name, str(Path(__file__).parent), str(ref)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=900,
    )
    if done.returncode:
        raise RuntimeError(done.stderr[-2000:])
    wall, peak = done.stdout.strip().splitlines()[-1].split()
    return float(wall), float(peak)


def _check(run) -> None:
    import parity

    try:
        run()
    except parity.ParityMismatch:
        pass


def bench(name: str, repeats: int, folder: Path, memory: bool) -> dict:
    import parity

    cell, module, inputs, kwargs = build(name)
    started = time.perf_counter()
    ref = parity.record(module, inputs, folder / name, force=True, **kwargs)
    recording = time.perf_counter() - started
    live = lambda: _check(lambda: parity.check(cell, module, inputs, **kwargs))  # noqa: E731
    replay = lambda: _check(lambda: parity.check(cell, ref))  # noqa: E731
    live(), replay()  # warm-up: MindSpore compiles and initialises on first use
    ratios_wall, ratios_cpu, lives = [], [], []
    for _ in range(repeats):
        (a_wall, a_cpu), (b_wall, b_cpu) = _time(live), _time(replay)
        ratios_wall.append(b_wall / a_wall)
        ratios_cpu.append(b_cpu / a_cpu)
        lives.append(a_wall)
    found = {
        "workload": name,
        "live_s": statistics.median(lives),
        "ratio_wall": statistics.median(ratios_wall),
        "ratio_wall_range": [min(ratios_wall), max(ratios_wall)],
        "ratio_cpu": statistics.median(ratios_cpu),
        "record_s": recording,
        "reference_mib": sum(p.stat().st_size for p in ref.iterdir()) / 2**20,
    }
    if memory:
        found["process_live"] = _probe("live", name, ref)
        found["process_recorded"] = _probe("recorded", name, ref)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--only", action="append", choices=WORKLOADS)
    parser.add_argument("--no-memory", action="store_true")
    parser.add_argument("--json")
    args = parser.parse_args()
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.only or WORKLOADS:
            found = bench(name, args.repeats, Path(tmp), not args.no_memory)
            results.append(found)
            memory = ""
            if "process_live" in found:
                (a_wall, a_peak), (b_wall, b_peak) = found["process_live"], found["process_recorded"]
                memory = (
                    f"; a fresh process, imports included: {b_wall:.1f} s vs {a_wall:.1f} s, "
                    f"peak RSS {b_peak:.0f} vs {a_peak:.0f} MiB"
                )
            print(
                f"{name}: recorded check / live check = {found['ratio_wall']:.2f}x wall "
                f"({found['ratio_wall_range'][0]:.2f}-{found['ratio_wall_range'][1]:.2f}), "
                f"{found['ratio_cpu']:.2f}x CPU (target <= {TARGET}x); live {found['live_s']:.2f} s; "
                f"recording took {found['record_s']:.2f} s, {found['reference_mib']:.1f} MiB on disk{memory}"
            )
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
