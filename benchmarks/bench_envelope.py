"""What the rounding envelope costs `parity.check`, in time and memory.

Run from the repository root::

    python benchmarks/bench_envelope.py                       # MLP and inception_v3, 3 rounds, then memory
    python benchmarks/bench_envelope.py --workloads mlp --rounds 5 --no-memory
    python benchmarks/bench_envelope.py --workloads resnet50 --no-time   # the memory figure only

Workloads, each translated from PyTorch with ``parity.translate`` (weights copied), eval mode,
PYNATIVE, gradients on:

* ``mlp``: 30 x (Linear(512, 512), Tanh), input N(0, 1) of shape (128, 512);
* ``inception``: torchvision's ``inception_v3(aux_logits=False)`` at (2, 3, 75, 75);
* ``resnet50``: torchvision's ``resnet50()`` at (2, 3, 64, 64).

Variants:

(a) a hand-written comparison: a PyTorch forward and ``torch.autograd.grad`` with a random cotangent,
    ``mindspore.vjp`` applied to the same cotangent, ``np.allclose`` on the output, the input
    gradient and every parameter gradient;
(b) ``parity.check`` at the float32 defaults: tensors near their tolerance go to the envelope;
(c) ``parity.check`` with a tolerance so loose (rtol = atol = 1) that no tensor needs the envelope.

Time: in one process, each variant warmed up once, then rounds of (b) and (c) in alternating order;
the report gives each round's ratio b/c and their median and spread, wall and CPU. Memory: each
variant in a fresh process (build, one warm-up, then ``VmHWM`` reset through
``/proc/self/clear_refs`` before the measured run): the process peak, and what the run adds over
the built models. Nothing here asserts on a time.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

SEED = 1234
RTOL, ATOL = 1.3e-6, 1e-5
SHAPES = {"mlp": (128, 512), "inception": (2, 3, 75, 75), "resnet50": (2, 3, 64, 64)}


def build(name: str):
    import mindspore  # noqa: F401  (both frameworks before parity)
    import torch

    import parity
    from cases.models.zoo_compat import import_torchvision

    torch.manual_seed(SEED)
    if name == "mlp":
        layers = []
        for _ in range(30):
            layers += [torch.nn.Linear(512, 512), torch.nn.Tanh()]
        module = torch.nn.Sequential(*layers)
    elif name == "inception":
        module = import_torchvision().models.inception_v3(weights=None, aux_logits=False, init_weights=True)
    else:
        module = import_torchvision().models.resnet50(weights=None)
    module.eval()
    cell = parity.translate(module)
    cell.set_train(False)
    x = np.random.default_rng(SEED).standard_normal(SHAPES[name]).astype(np.float32)
    return cell, module, x


def hand_written(cell, module, x) -> dict:
    import mindspore as ms
    import torch

    x_torch = torch.from_numpy(x).requires_grad_(True)
    names = [n for n, _ in module.named_parameters()]
    params = [p for _, p in module.named_parameters()]
    out = module(x_torch)
    cot = np.random.default_rng(SEED + 1).standard_normal(tuple(out.shape)).astype(np.float32)
    torch_grads = torch.autograd.grad(out, [x_torch] + params, torch.from_numpy(cot))
    ms_params = [p for _, p in cell.parameters_and_names() if p.requires_grad]
    out_ms, vjp_fn = ms.vjp(cell, ms.Tensor(x), weights=ms_params)
    (ms_x_grad,), ms_grads = vjp_fn(ms.Tensor(cot))
    pairs = [(out_ms.asnumpy(), out.detach().numpy()), (ms_x_grad.asnumpy(), torch_grads[0].numpy())]
    # translate keeps PyTorch's parameter order; shapes may differ by layout only where it fuses
    pairs += [(g.asnumpy().reshape(t.shape), t.numpy()) for g, t in zip(ms_grads, torch_grads[1:])]
    close = [np.allclose(a, b, rtol=RTOL, atol=ATOL) for a, b in pairs]
    return {"compared": len(pairs), "passed": all(close), "params": len(names), "noise_judged": 0}


def through_parity(cell, module, x, loose=False) -> dict:
    import parity

    tolerance = parity.Tolerance(rtol=1.0, atol=1.0) if loose else None
    try:
        result = parity.check(
            cell, module, x, weights="copy", ms_mode="pynative", seed=SEED, tolerance=tolerance, localize=False
        )
    except parity.ParityMismatch as exc:
        result = exc.result
    judged = [c for c in result.comparisons if c.envelope is not None]
    runs = {}
    for c in judged:
        if c.envelope is not None:
            key = f"{c.envelope.draws} draws{' + float64' if c.envelope.float64 else ''}"
            runs[key] = runs.get(key, 0) + 1
    return {
        "compared": len(result.comparisons),
        "passed": result.passed,
        "noise_judged": len(judged),
        "worst_margin": result.worst_margin,
        "runs": runs,
    }


VARIANTS = {"a": hand_written, "b": through_parity, "c": lambda cell, module, x: through_parity(cell, module, x, True)}


def _timed(variant, cell, module, x) -> dict:
    gc.collect()
    wall, cpu = time.perf_counter(), time.process_time()
    summary = VARIANTS[variant](cell, module, x)
    return {"wall_s": time.perf_counter() - wall, "cpu_s": time.process_time() - cpu, **summary}


def measure_time(name: str, rounds: int) -> dict:
    cell, module, x = build(name)
    first = {v: _timed(v, cell, module, x) for v in "abc"}  # warm-up
    runs = {v: [] for v in "abc"}
    for i in range(rounds):
        for v in "abc" if i % 2 == 0 else "cba":
            runs[v].append(_timed(v, cell, module, x))
    out = {"workload": name, "warm_up": first}
    for key in ("wall_s", "cpu_s"):
        bc = [b[key] / c[key] for b, c in zip(runs["b"], runs["c"])]
        ca = [c[key] / a[key] for c, a in zip(runs["c"], runs["a"])]
        ba = [b[key] / a[key] for b, a in zip(runs["b"], runs["a"])]
        out[f"b/c {key}"] = {"median": statistics.median(bc), "min": min(bc), "max": max(bc)}
        out[f"c/a {key}"] = {"median": statistics.median(ca), "min": min(ca), "max": max(ca)}
        out[f"b/a {key}"] = {"median": statistics.median(ba), "min": min(ba), "max": max(ba)}
    out["median_wall_s"] = {v: statistics.median(r["wall_s"] for r in runs[v]) for v in "abc"}
    out["b"] = {k: v for k, v in runs["b"][-1].items() if k not in ("wall_s", "cpu_s")}
    out["c"] = {k: v for k, v in runs["c"][-1].items() if k not in ("wall_s", "cpu_s")}
    return out


def _status_mib(field: str) -> float:
    line = next(line for line in Path("/proc/self/status").read_text().splitlines() if line.startswith(field + ":"))
    return int(line.split()[1]) / 1024


def _child(name: str, variant: str) -> None:
    cell, module, x = build(name)
    VARIANTS[variant](cell, module, x)  # warm-up
    gc.collect()
    before = _status_mib("VmRSS")
    Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM to the current RSS
    wall = time.perf_counter()
    summary = VARIANTS[variant](cell, module, x)
    print(
        json.dumps(
            {"before_mib": before, "peak_mib": _status_mib("VmHWM"), "wall_s": time.perf_counter() - wall, **summary}
        )
    )


def measure_memory(name: str, repeats: int) -> dict:
    found = {v: [] for v in "abc"}
    for i in range(repeats):
        for v in "abc" if i % 2 == 0 else "cba":
            done = subprocess.run(
                [sys.executable, __file__, "--child", name, v], cwd=ROOT, capture_output=True, text=True
            )
            if done.returncode:
                raise SystemExit(done.stderr[-3000:])
            found[v].append(json.loads(done.stdout.strip().splitlines()[-1]))
    out = {"workload": name}
    for v, children in found.items():
        out[v] = {
            "peak_mib": statistics.median(c["peak_mib"] for c in children),
            "adds_mib": statistics.median(c["peak_mib"] - c["before_mib"] for c in children),
            "noise_judged": children[-1]["noise_judged"],
        }
    out["b/a peak"] = out["b"]["peak_mib"] / out["a"]["peak_mib"]
    out["c/a peak"] = out["c"]["peak_mib"] / out["a"]["peak_mib"]
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workloads", default="mlp,inception", help="comma-separated: mlp, inception, resnet50")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--memory-repeats", type=int, default=1)
    parser.add_argument("--no-memory", action="store_true")
    parser.add_argument("--no-time", action="store_true")
    parser.add_argument("--json", metavar="PATH")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        _child(*args.child)
        return 0
    print(f"load average {os.getloadavg()}", flush=True)
    report = []
    for name in args.workloads.split(","):
        if not args.no_time:
            report.append(measure_time(name, args.rounds))
            print(json.dumps(report[-1], indent=1), flush=True)
        if not args.no_memory:
            report.append(measure_memory(name, args.memory_repeats))
            print(json.dumps(report[-1], indent=1), flush=True)
    print(f"load average {os.getloadavg()}", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
