"""What measuring each layer's own error costs a failing check (``parity.engine.diagnosis.own``): the same
failing ``parity.check`` with and without it, interleaved, in time and in peak memory; and a
passing check, which must not measure it at all.

Run from the repository root::

    python benchmarks/bench_own_errors.py               # the ViT and ResNet pairs, 3 repeats each
    python benchmarks/bench_own_errors.py --repeats 5 --json own.json

Workloads (failing checks, ``localize="auto"``): mindcv's ViT as shipped against timm's (LayerNorm
epsilon and GELU approximation differ), and the fault catalogue's ResNet with its BatchNorm epsilon
fault (eval) and its BatchNorm momentum fault (train). "without" replaces
:func:`parity.engine.diagnosis.own.measure_own_errors` by a function doing nothing, so both variants run the
same check, its localisation included. Variants alternate order across repeats, after one warm-up
check each. Reported per workload: the median wall time and process CPU time of each, their ratio
(target: at most 1.30), the ratio within the same checks (their CPU time over the same less the CPU
time spent measuring own errors: steadier on a shared machine, where two checks of a second each
vary by more than the difference), and the peak RSS of each check (``VmHWM``, reset before it
through ``/proc/self/clear_refs``). A measurement, not a test.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent
for _path in (str(ROOT), str(HERE)):
    if _path not in sys.path:
        sys.path.insert(0, _path)

TARGET = 1.30


def _workloads():
    import torch

    from cases.faults import catalogue
    from cases.models.zoo_compat import import_quietly
    from parity.catalogue import build

    timm = import_quietly("timm")
    vit = import_quietly("mindcv.models.vit")
    faults = {f.name: f for f in catalogue.FAULTS}

    def vit_pair():
        config = dict(patch_size=8, embed_dim=64, depth=2, num_heads=4, mlp_ratio=2.0, num_classes=10)
        torch.manual_seed(0)
        module = timm.models.vision_transformer.VisionTransformer(img_size=32, **config)
        return vit.VisionTransformer(image_size=32, **config), module, {}

    def fault(name, train):
        def make():
            case = faults[name].case
            ms_cell, module = build(case)
            return ms_cell, module, {**case.check_kwargs(), "train": train, "_inputs": case.inputs}

        return make

    import parity

    return {
        "ViT (mindcv vs timm)": (vit_pair, parity.randn((2, 3, 32, 32))),
        "ResNet bn_eps (eval)": (fault("ResNetBnEps", False), None),
        "ResNet bn_momentum (train)": (fault("ResNetBnMomentum", True), None),
    }


def _one(make, inputs, measure: bool):
    from bench_localize import _reset_peak, _status_kb

    import parity
    from parity.engine import check as engine_check

    original, causes = engine_check.measure_own_errors, engine_check.own_error_causes
    spent = [0.0]

    def timed(function):
        def run(*args, **kwargs):
            start = time.process_time()
            try:
                return function(*args, **kwargs)
            finally:
                spent[0] += time.process_time() - start

        return run

    # (own_error_causes is not timed: the registry's diagnosis it runs is shared with the failure's causes)
    engine_check.measure_own_errors = timed(original) if measure else (lambda *args, **kwargs: None)
    try:
        ms_cell, module, kwargs = make()
        inputs = kwargs.pop("_inputs", inputs)
        _reset_peak()
        wall, cpu = time.perf_counter(), time.process_time()
        try:
            parity.check(ms_cell, module, inputs, **kwargs)
            failed = False
        except parity.ParityMismatch as exc:
            failed = True
            named = [e.layer for e in exc.result.layers.own_errors]
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        return {
            "wall": wall,
            "cpu": cpu,
            "peak_mb": (_status_kb("VmHWM") or 0) / 1024,
            "failed": failed,
            "named": named if failed and measure else None,
            "own_cpu": spent[0],
        }
    finally:
        engine_check.measure_own_errors, engine_check.own_error_causes = original, causes


def _passing_measures_nothing() -> bool:
    import mindspore.nn as msnn
    import torch

    import parity

    result = parity.check(msnn.Dense(4, 3), torch.nn.Linear(4, 3), parity.randn((2, 4)), localize=True)
    return result.passed and not result.layers.own_measured


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    import mindspore
    import torch  # noqa: F401  (both frameworks before parity)

    mindspore.set_context(mode=mindspore.PYNATIVE_MODE, device_target="CPU")
    report = {"passing_check_measures_nothing": _passing_measures_nothing(), "workloads": {}}
    for name, (make, inputs) in _workloads().items():
        runs = {True: [], False: []}
        _one(make, inputs, True), _one(make, inputs, False)  # warm-up
        for repeat in range(args.repeats):
            for measure in (True, False) if repeat % 2 == 0 else (False, True):
                runs[measure].append(_one(make, inputs, measure))
        row = {}
        for measure, label in ((True, "with"), (False, "without")):
            row[label] = {key: statistics.median(r[key] for r in runs[measure]) for key in ("wall", "cpu", "peak_mb")}
        row["ratio_wall"] = row["with"]["wall"] / row["without"]["wall"]
        row["ratio_cpu"] = row["with"]["cpu"] / row["without"]["cpu"]
        row["named"] = runs[True][-1]["named"]
        # In the same checks: the CPU time measuring own errors took, over the rest.
        row["ratio_within"] = statistics.median(r["cpu"] / (r["cpu"] - r["own_cpu"]) for r in runs[True])
        report["workloads"][name] = row
        print(
            f"{name:<28} with {row['with']['wall']:.2f}s ({row['with']['cpu']:.2f}s CPU, "
            f"{row['with']['peak_mb']:.0f} MB)  without {row['without']['wall']:.2f}s "
            f"({row['without']['cpu']:.2f}s CPU, {row['without']['peak_mb']:.0f} MB)  ratio wall "
            f"{row['ratio_wall']:.2f}, CPU {row['ratio_cpu']:.2f}; within the same checks, CPU "
            f"{row['ratio_within']:.2f} (target <= {TARGET})  own errors: {row['named']}"
        )
    print(f"a passing check measures no own error: {report['passing_check_measures_nothing']}")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
