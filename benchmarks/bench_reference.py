"""A check against a recorded reference vs the live check, and what each costs in memory.

Run from the repository root::

    python benchmarks/bench_reference.py                     # three workloads, a few minutes
    python benchmarks/bench_reference.py --only mlp --repeats 7 --json bench.json

Workloads: ``mlp``, a 30-layer tanh MLP (translated) whose tensors go to the rounding envelope;
``resnet_float64``, the catalogue's small ResNet with ``reference="float64"``; ``resnet_fault``, a
failing check (cases/faults: layer2.bn2's eps) whose layers are localised; ``convnet``, a plain CNN
whose MindSpore side is defined without torch, so that its recorded check runs as on a runner
without PyTorch. For each, PyTorch's
side is recorded once (``parity.record``), then (a) ``parity.check(ms_cell, torch_module, inputs)``
and (b) ``parity.check(ms_cell, path)`` are timed in one process, interleaved, each warmed up once
(MindSpore compiles and initialises on first use); the median of b/a is printed (target <= 0.6x)
in wall and CPU time. Then one check each way in a fresh process, imports included: its wall time
and peak RSS, and whether torch was imported (the catalogue's model modules define both sides, so
there torch is imported either way; ``convnet``'s recorded check imports none). The reference's size on disk too. A
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
    if name == "convnet":  # a plain CNN whose MindSpore side imports no torch (see build_mindspore)
        module = _torch_convnet()
        return build_mindspore(name), module, parity.randn((8, 3, 32, 32)), {}
    raise SystemExit(f"unknown workload {name!r}")


def build_mindspore(name: str):
    """The MindSpore side alone, where it needs no torch (None elsewhere): a runner without PyTorch."""
    if name != "convnet":
        return None
    from mindspore import nn

    layers = []
    for width_in, width in ((3, 32), (32, 64), (64, 64)):
        conv = nn.Conv2d(width_in, width, 3, pad_mode="pad", padding=1, has_bias=True)
        layers += [conv, nn.BatchNorm2d(width, momentum=0.9), nn.ReLU(), nn.MaxPool2d(2, 2)]
    return nn.SequentialCell(*layers, nn.Flatten(), nn.Dense(64 * 4 * 4, 10))


def _torch_convnet():
    import torch

    layers = []
    for width_in, width in ((3, 32), (32, 64), (64, 64)):
        layers += [torch.nn.Conv2d(width_in, width, 3, padding=1), torch.nn.BatchNorm2d(width)]
        layers += [torch.nn.ReLU(), torch.nn.MaxPool2d(2, 2)]
    return torch.nn.Sequential(*layers, torch.nn.Flatten(), torch.nn.Linear(64 * 4 * 4, 10)).eval()


WORKLOADS = ("mlp", "resnet_float64", "resnet_fault", "convnet")

# One check in a fresh process, imports included; prints its wall time and peak RSS in MiB.
_PROBE = """
import json, resource, sys, time
started = time.perf_counter()
sys.path.insert(0, sys.argv[3])
variant, name, ref = sys.argv[1], sys.argv[2], sys.argv[4]
from bench_reference import build, build_mindspore
import parity
cell = build_mindspore(name) if variant == "recorded" else None
if cell is None:
    cell, module, inputs, kwargs = build(name)
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
try:
    parity.check(cell, ref) if variant == "recorded" else parity.check(cell, module, inputs, **kwargs)
except parity.ParityMismatch:
    pass
torch = "torch" in sys.modules
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(time.perf_counter() - started, peak, peak - before, torch)
"""


def _time(run):
    wall, cpu = time.perf_counter(), time.process_time()
    run()
    return time.perf_counter() - wall, time.process_time() - cpu


def _probe(variant: str, name: str, ref: Path):
    """(wall seconds, peak RSS MiB, how much of it the check added once the pair was built, whether
    torch was imported) of one check in a fresh process."""
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
    wall, peak, grown, torch = done.stdout.strip().splitlines()[-1].split()
    return float(wall), float(peak), float(grown), torch == "True"


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
                (a_wall, a_peak, a_grown, _), (b_wall, b_peak, b_grown, torch) = (
                    found["process_live"],
                    found["process_recorded"],
                )
                memory = (
                    f"; a fresh process, imports included: {b_wall:.1f} s vs {a_wall:.1f} s ({b_wall / a_wall:.2f}x), "
                    f"peak RSS {b_peak:.0f} vs {a_peak:.0f} MiB (the check's own growth {b_grown:.0f} vs "
                    f"{a_grown:.0f} MiB), torch {'imported' if torch else 'not imported'}"
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
