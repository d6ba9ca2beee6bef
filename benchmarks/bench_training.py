"""What parity.check_training costs beside the training loop one would write by hand to compare.

Run from the repository root::

    python benchmarks/bench_training.py                 # small CNN, small ResNet, ResNet-50 (~10 min on 2 CPUs)
    python benchmarks/bench_training.py --repeats 5 --json out.json
    python benchmarks/bench_training.py --no-memory     # skip the per-variant subprocesses
    python benchmarks/bench_training.py --only cnn --only resnet      # the two small workloads (~1 min)
    python benchmarks/bench_training.py --profile --only cnn           # one (b) under cProfile, by phase

For each pair of nets it times, in one process, warmed up once each and then interleaved
(a-b, b-a, ...):

(a) a hand-written loop: PyTorch's weights copied to MindSpore through a plain name map, both
    sides in train mode on the same numpy batches; per step on each side forward, loss, backward
    and the optimizer's step (MindSpore: ``value_and_grad`` then ``optimizer(grads)``; PyTorch:
    ``zero_grad``, ``backward``, ``step``), and after it ``np.allclose`` and the max abs diff on
    the loss, every parameter gradient, every parameter and every running statistic;
(b) ``parity.check_training`` on the same nets, batches, loss pair and optimizer pair.

Both sides use the same optimizers in (a) and (b): ``mindspore.nn.SGD(momentum=0.9)`` against
``torch.optim.SGD(momentum=0.9)`` (equal formulas without weight decay), and MindSpore's
``SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")`` against ``CrossEntropyLoss``.
(b) also compares the optimizer state and learning rates, and judges tensors close to their
tolerance against PyTorch's rounding envelope (the PyTorch run repeated under perturbations and
in float64): that is part of what it costs.

Peak memory: ``resource.getrusage(RUSAGE_SELF).ru_maxrss`` of a fresh process per variant (the
frameworks imported and the nets built, then one run of that variant; "baseline" stops before
the run), unless ``--no-memory``. These processes start before this one imports a framework:
on Linux a child's ``ru_maxrss`` starts from its parent's resident size at the fork, so started
later they would all report this process's peak. Each also reports ``VmHWM`` from
``/proc/self/status`` (the high-water mark since its exec), which should agree. This is a
measurement, not a test: it asserts nothing.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, List

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # `python benchmarks/bench_training.py` puts benchmarks/ first, not the root
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
from bench_check import ATOL, RTOL  # noqa: E402  (same map and float32 tolerance)
from bench_check import _ms_name as _plain_ms_name  # noqa: E402

SEED = 1234
LR, MOMENTUM = 0.01, 0.9


@dataclass(frozen=True)
class Workload:
    name: str
    key: str
    image: tuple  # (batch, channels, height, width)
    batches: int
    steps: int

    def build(self):
        import torch

        torch.manual_seed(SEED)
        if self.key == "cnn":
            from cases.models.training import torch_small_cnn
            from parity.translation import translate

            module = torch_small_cnn()
            return translate(module), module
        if self.key == "resnet50":  # torchvision's resnet50 against mindcv's (its stem pool aligned)
            from cases.models.zoo_vision import ms_resnet50, torch_resnet50

            return ms_resnet50(), torch_resnet50()
        from cases.models.resnet import ms_resnet_small, torch_resnet_small

        return ms_resnet_small(), torch_resnet_small()

    def data(self) -> List[tuple]:
        rng = np.random.default_rng(SEED)
        return [
            (rng.standard_normal(self.image).astype(np.float32), rng.integers(0, 10, self.image[0]).astype(np.int64))
            for _ in range(self.batches)
        ]


WORKLOADS = {
    "cnn": Workload("SmallCNN (cases/training), 4x3x16x16, 5 steps", "cnn", (4, 3, 16, 16), 2, 5),
    "resnet": Workload("ResNet-small (1,1,1,1)x16, 4x3x32x32, 3 steps", "resnet", (4, 3, 32, 32), 1, 3),
    "resnet50": Workload("ResNet-50 (torchvision / mindcv), 2x3x64x64, 3 steps", "resnet50", (2, 3, 64, 64), 1, 3),
}
# What a hand-written loop renames beyond the BatchNorm leaves: mindcv's ResNet calls torchvision's
# `downsample` `down_sample` and its `fc` `classifier`.
_PATH_RENAMES = (("downsample.", "down_sample."), ("fc.", "classifier."))
DEFAULT = ["cnn", "resnet", "resnet50"]


def _ms_name(torch_name: str, ms_names):
    """bench_check's name map (same path, BatchNorm leaves renamed), then the paths renamed."""
    found = _plain_ms_name(torch_name, ms_names)
    if found is None and torch_name.startswith(("layer", "fc.")):
        for old, new in _PATH_RENAMES:
            torch_name = torch_name.replace(old, new)
        found = _plain_ms_name(torch_name, ms_names)
    return found


# ``--optimizer adam``: torch.optim.Adam(lr 1e-3, weight_decay 1e-5, the guide's), translated to
# MindSpore by parity's translate_optimizer on both variants (check_training given PyTorch's alone).
OPTIMIZER = os.environ.get("BENCH_TRAINING_OPTIMIZER", "sgd")


def _optimizers():
    import mindspore
    import torch

    if OPTIMIZER == "adam":
        return lambda p: torch.optim.Adam(p, lr=1e-3, weight_decay=1e-5)
    return (
        lambda p: mindspore.nn.SGD(p, learning_rate=LR, momentum=MOMENTUM),
        lambda p: torch.optim.SGD(p, lr=LR, momentum=MOMENTUM),
    )


def _hand_optimizers(ms_cell, torch_module):
    """(MindSpore optimizer, PyTorch optimizer) of the hand loop."""
    if OPTIMIZER != "adam":
        ms_factory, torch_factory = _optimizers()
        return ms_factory(ms_cell.trainable_params()), torch_factory(torch_module.parameters())
    from parity.translation.optim import translate_optimizer

    torch_opt = _optimizers()(torch_module.parameters())
    ms_params = dict(ms_cell.parameters_and_names())
    names = {id(p): n for n, p in torch_module.named_parameters()}
    return translate_optimizer(torch_opt, lambda p: [ms_params[_ms_name(names[id(p)], ms_params)]]), torch_opt


def losses_of():
    import mindspore
    import torch

    return mindspore.nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"), torch.nn.CrossEntropyLoss()


# (a) The hand-written loop ----------------------------------------------------------------------


def _copy_weights(ms_cell, torch_module) -> None:
    import mindspore as ms

    ms_params = dict(ms_cell.parameters_and_names())
    for name, tensor in torch_module.state_dict().items():
        target = _ms_name(name, ms_params)
        if target is not None:  # num_batches_tracked: MindSpore keeps no step counter
            ms_params[target].set_data(ms.Tensor(tensor.detach().cpu().numpy(), dtype=ms_params[target].dtype))


def _close(pairs, counts: Dict[str, object]) -> None:
    for a, b in pairs:
        counts["compared"] += 1
        counts["failed"] += not np.allclose(a, b, rtol=RTOL, atol=ATOL)
        counts["max_abs_diff"] = max(counts["max_abs_diff"], float(np.max(np.abs(a - b))))


def hand_written(ms_cell, torch_module, workload: Workload) -> dict:
    import mindspore as ms
    import torch

    _copy_weights(ms_cell, torch_module)
    ms_cell.set_train(True)
    torch_module.train()
    ms_loss, torch_loss = losses_of()
    ms_opt, torch_opt = _hand_optimizers(ms_cell, torch_module)

    def forward(x, y):
        return ms_loss(ms_cell(x), y)

    grad_fn = ms.value_and_grad(forward, None, ms_opt.parameters)
    ms_all = dict(ms_cell.parameters_and_names())
    ms_trainable = [p.name for p in ms_opt.parameters]
    torch_named = list(torch_module.named_parameters())
    buffers = [
        (name, _ms_name(name, ms_all)) for name, _ in torch_module.named_buffers() if _ms_name(name, ms_all) is not None
    ]
    by_ms_name = {p.name: key for key, p in ms_all.items()}
    counts = {"compared": 0, "failed": 0, "max_abs_diff": 0.0}
    data = workload.data()
    for step in range(workload.steps):
        x, y = data[step % len(data)]
        loss, grads = grad_fn(ms.Tensor(x), ms.Tensor(y.astype(np.int32)))
        ms_opt(grads)
        torch_opt.zero_grad()
        t_loss = torch_loss(torch_module(torch.from_numpy(x)), torch.from_numpy(y))
        t_loss.backward()
        torch_opt.step()
        ms_grads = {by_ms_name[name]: g.asnumpy() for name, g in zip(ms_trainable, grads)}
        pairs = [(np.asarray(loss.asnumpy()), t_loss.detach().numpy())]
        pairs += [(ms_grads[_ms_name(n, ms_grads)], p.grad.numpy()) for n, p in torch_named]
        pairs += [(ms_all[_ms_name(n, ms_all)].asnumpy(), p.detach().numpy()) for n, p in torch_named]
        state = torch_module.state_dict()
        pairs += [(ms_all[m].asnumpy(), state[t].numpy()) for t, m in buffers]
        _close(pairs, counts)
    return {**counts, "passed": counts["failed"] == 0}


# (b) The same through parity.check_training -------------------------------------------------------


def through_parity(ms_cell, torch_module, workload: Workload) -> dict:
    import parity

    try:
        result = parity.check_training(
            ms_cell,
            torch_module,
            workload.data(),
            loss=losses_of(),
            optimizer=_optimizers(),
            steps=workload.steps,
            seed=SEED,
        )
    except parity.ParityMismatch as exc:  # the full work still ran; the benchmark reports it
        result = exc.result
    return {
        "compared": len(result.comparisons),
        "failed": len(result.failures),
        "passed": result.passed,
        "max_abs_diff": max(c.max_abs for c in result.comparisons),
        "noise_judged": len(result.noise_judged),
    }


VARIANTS: Dict[str, Callable] = {"a": hand_written, "b": through_parity}


# Timing -------------------------------------------------------------------------------------------


def _timed(variant: str, workload: Workload) -> dict:
    ms_cell, torch_module = workload.build()  # fresh nets each run, built outside the clock
    gc.collect()
    wall, cpu = time.perf_counter(), time.process_time()
    summary = VARIANTS[variant](ms_cell, torch_module, workload)
    return {"wall_s": time.perf_counter() - wall, "cpu_s": time.process_time() - cpu, **summary}


def measure(workload: Workload, repeats: int) -> dict:
    runs = {"a": [], "b": []}
    for variant in "ab":  # warm-up: MindSpore compiles and initialises on first use
        _timed(variant, workload)
    for i in range(repeats):
        for variant in "ab" if i % 2 == 0 else "ba":
            runs[variant].append(_timed(variant, workload))
    out = {"workload": workload.name}
    for variant, timed in runs.items():
        walls, cpus = [r["wall_s"] for r in timed], [r["cpu_s"] for r in timed]
        out[variant] = {
            "best_wall_s": min(walls),
            "median_wall_s": statistics.median(walls),
            "median_cpu_s": statistics.median(cpus),
            **{k: v for k, v in timed[-1].items() if k not in ("wall_s", "cpu_s")},
        }
    out["ratio_median_wall"] = out["b"]["median_wall_s"] / out["a"]["median_wall_s"]
    out["ratio_best_wall"] = out["b"]["best_wall_s"] / out["a"]["best_wall_s"]
    out["ratio_median_cpu"] = out["b"]["median_cpu_s"] / out["a"]["median_cpu_s"]
    return out


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def peak_memory(workload: Workload) -> Dict[str, float]:
    """Peak RSS (MiB) of a fresh process per variant."""
    peaks = {}
    for variant in ("baseline", "a", "b"):
        done = subprocess.run(
            [sys.executable, __file__, "--child", workload.key, variant],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        )
        child = json.loads(done.stdout.strip().splitlines()[-1])
        peaks[variant], peaks[f"{variant} VmHWM"] = child["peak_mib"], child["hwm_mib"]
    return peaks


def _hwm_mib() -> float:
    status = Path("/proc/self/status")
    if not status.exists():
        return float("nan")
    line = next(line for line in status.read_text().splitlines() if line.startswith("VmHWM:"))
    return int(line.split()[1]) / 1024  # kB


def _child(key: str, variant: str) -> None:
    workload = WORKLOADS[key]
    ms_cell, torch_module = workload.build()
    summary, wall = {}, time.perf_counter()
    if variant != "baseline":
        summary = VARIANTS[variant](ms_cell, torch_module, workload)
    print(json.dumps({"peak_mib": _peak_mib(), "hwm_mib": _hwm_mib(), "wall_s": time.perf_counter() - wall, **summary}))


# Where (b)'s time goes ------------------------------------------------------------------------------

_PHASES = (  # (label, function name in parity/engine/training/ or parity/judge/envelope.py, caller's name or None)
    ("MindSpore steps handed over (lrs + launch)", "ms_launch", None),
    ("MindSpore steps read (wait + asnumpy)", "ms_collect", None),
    ("PyTorch steps", "torch_record", "<lambda>"),
    ("comparisons (compare_arrays)", "compare_modes", None),
    ("rounding envelope: PyTorch runs", "torch_record", "_run"),
    ("rounding envelope: all of it (judge_envelope)", "judge_envelope", None),
    ("rounding envelope: judging", "judge_tensor", None),
)


def profile(workload: Workload) -> dict:
    """One (b) run under cProfile after a warm-up of both variants: the phases' cumulative seconds
    (the envelope's line includes its PyTorch runs) and the functions that took most time themselves."""
    import cProfile
    import pstats

    for variant in "ab":
        _timed(variant, workload)
    ms_cell, torch_module = workload.build()
    profiler = cProfile.Profile()
    profiler.enable()
    through_parity(ms_cell, torch_module, workload)
    profiler.disable()
    stats = pstats.Stats(profiler).stats
    ours = {key: value for key, value in stats.items() if "/parity/" in key[0]}
    total = max(value[3] for key, value in ours.items() if key[2] == "run_training")
    phases = {"check_training total": total}
    for label, name, caller in _PHASES:
        found = 0.0
        for key, (_, _, _, cumulative, callers) in ours.items():
            if key[2] == name:
                found += cumulative if caller is None else sum(c[3] for k, c in callers.items() if k[2] == caller)
        phases[label] = found
    top = sorted(stats.items(), key=lambda item: -item[1][2])[:15]
    return {
        "workload": workload.name,
        "phases_s": phases,
        "top_tottime": [f"{v[2]:.3f} s in {v[1]} calls: {Path(k[0]).name}:{k[1]}({k[2]})" for k, v in top],
    }


def _table(results: List[dict]) -> List[str]:
    lines = [
        "| workload | (a) hand loop median s | (b) check_training median s | b/a wall (best) | b/a CPU | "
        "tensors compared a / b | peak RSS MiB: baseline / a / b |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in results:
        a, b, mem = r["a"], r["b"], r.get("peak_mib")
        peaks = " / ".join(f"{mem[k]:.0f}" for k in ("baseline", "a", "b")) if mem else "-"
        lines.append(
            f"| {r['workload']} | {a['median_wall_s']:.2f} | {b['median_wall_s']:.2f} | "
            f"{r['ratio_median_wall']:.2f} ({r['ratio_best_wall']:.2f}) | {r['ratio_median_cpu']:.2f} | "
            f"{a['compared']} / {b['compared']} | {peaks} |"
        )
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--only", choices=sorted(WORKLOADS), action="append", help="one workload (repeatable)")
    parser.add_argument("--no-memory", action="store_true", help="skip the per-variant peak-RSS subprocesses")
    parser.add_argument("--json", help="also write the results to this file")
    parser.add_argument(
        "--profile", action="store_true", help="instead: one check_training per workload under cProfile, by phase"
    )
    parser.add_argument(
        "--optimizer",
        choices=("sgd", "adam"),
        default=None,
        help="SGD with momentum (default) or Adam (translated on both variants)",
    )
    parser.add_argument("--child", nargs=2, metavar=("WORKLOAD", "VARIANT"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.optimizer:
        global OPTIMIZER
        OPTIMIZER = os.environ["BENCH_TRAINING_OPTIMIZER"] = args.optimizer  # children inherit it
    if args.child:
        _child(*args.child)
        return 0
    keys = args.only or DEFAULT
    if args.profile:
        for key in keys:
            print(json.dumps(profile(WORKLOADS[key]), indent=1), flush=True)
        return 0
    # memory first, while this process is small (see the module docstring)
    peaks = {} if args.no_memory else {key: peak_memory(WORKLOADS[key]) for key in keys}
    results = []
    for key in keys:
        result = measure(WORKLOADS[key], args.repeats)
        if key in peaks:
            result["peak_mib"] = peaks[key]
        results.append(result)
        print(json.dumps(result, indent=1), flush=True)
    import mindspore
    import torch

    print(
        f"\n{platform.platform()}; {os.cpu_count()} CPUs; load {os.getloadavg()[0]:.1f}; "
        f"mindspore {mindspore.__version__}, torch {torch.__version__}; repeats {args.repeats}; "
        f"this process's peak RSS {_peak_mib():.0f} MiB"
    )
    print("\n".join(_table(results)))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
