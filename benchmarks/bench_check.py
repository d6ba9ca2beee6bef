"""How much parity.check costs on top of the comparison it automates, and what the plugin costs pytest.

Run from the repository root (``make bench`` runs exactly this)::

    python benchmarks/bench_check.py            # Conv2d + ResNet-50 (several minutes on 2 CPUs)
    python benchmarks/bench_check.py --quick    # Conv2d + the small ResNet (about a minute)
    python benchmarks/bench_check.py --json bench.json --repeats 5

For each pair of nets it times, in one process and interleaved:

(a) a hand-written comparison: weights set by hand through a plain name map, a PyTorch forward and
    ``torch.autograd.grad`` with a random cotangent, ``mindspore.vjp(cell, x, weights=...)``
    applied to the same cotangent, ``.asnumpy()``, and ``np.allclose`` / max abs diff on the
    output, the input grad and every parameter grad;
(b) the same work through ``parity.check(ms_cell, torch_module, x, ...)``.

Both get the same input array ``x`` (each draws its own cotangent) and run in PYNATIVE mode. Each
variant is warmed up once, because MindSpore compiles and initialises on first use. The script
prints the ratio b/a. It also times ``pytest --help`` with and without the plugin and checks that a
plain pytest run (no ``--parity``) imports neither framework. This is a measurement, not a test:
nothing here asserts on a time; the targets are printed beside the figures.

``--localize`` also compares ``parity.check(localize=True)``, ``False`` and ``"auto"`` on the
ResNet (time and peak RSS, each variant in a fresh process): see ``bench_localize.py``, which
runs that comparison alone.
"""

from __future__ import annotations

import argparse
import functools
import gc
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Optional

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # `python benchmarks/bench_check.py` puts benchmarks/ first, not the root
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

SEED = 1234
RTOL, ATOL = 1.3e-6, 1e-5  # float32 defaults of torch.testing.assert_close, as parity.check uses
HELP_RUNS = 3
TARGET_HELP_NOTE = "plugin adds no framework import without --parity"
FRAMEWORKS = ("mindspore", "torch")


# Workloads ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Workload:
    """One pair of nets, its input and how its weights are set on both sides."""

    name: str
    ms_factory: str  # "module:callable"
    torch_factory: str
    shape: tuple
    distribution: str  # "uniform(-1,1)" or "normal"
    weights: str  # "constant 0.1" or "copy"
    target: float  # ratio b/a to aim for
    repeats: int
    ms_kwargs: dict = field(default_factory=dict)

    def build(self):
        return _load(self.ms_factory)(**self.ms_kwargs), _load(self.torch_factory)()


def _load(path: str) -> Callable:
    module, _, attr = path.partition(":")
    return getattr(__import__(module, fromlist=[attr]), attr)


def workloads(args) -> List[Workload]:
    conv = Workload(
        "Conv2d(120->240, k4)+ReLU",
        "cases.models.conv_relu:MSConvReLU",
        "cases.models.conv_relu:TorchConvReLU",
        (2, 120, 12, 12),
        "uniform(-1,1)",
        "constant 0.1",
        target=1.5,
        repeats=args.repeats or 3,
        ms_kwargs={"pad_mode": "pad"},
    )
    if args.quick:
        resnet = Workload(
            "ResNet-small (1,1,1,1)x16",
            "cases.models.resnet:ms_resnet_small",
            "cases.models.resnet:torch_resnet_small",
            (2, 3, 64, 64),
            "normal",
            "copy",
            target=1.10,
            repeats=args.repeats or 3,
        )
    else:
        resnet = Workload(
            "ResNet-50",
            "cases.models.resnet:ms_resnet50",
            "cases.models.resnet:torch_resnet50",
            (2, 3, 224, 224),
            "normal",
            "copy",
            target=1.10,
            repeats=args.repeats or 1,
        )
    return [conv, resnet]


# (a) The hand-written comparison ------------------------------------------------------------------

_LEAF_RENAMES = {"weight": "gamma", "bias": "beta", "running_mean": "moving_mean", "running_var": "moving_variance"}


def _ms_name(torch_name: str, ms_names) -> Optional[str]:
    """PyTorch name -> MindSpore name: the same path, or the BatchNorm leaf renamed."""
    if torch_name in ms_names:
        return torch_name
    prefix, _, leaf = torch_name.rpartition(".")
    renamed = f"{prefix}.{_LEAF_RENAMES[leaf]}" if leaf in _LEAF_RENAMES else None
    return renamed if renamed in ms_names else None


def _set_weights_by_hand(ms_cell, torch_module, weights: str) -> None:
    import mindspore as ms
    import torch

    ms_params = dict(ms_cell.parameters_and_names())
    if weights.startswith("constant"):
        value = float(weights.split()[1])
        with torch.no_grad():
            for tensor in torch_module.state_dict(keep_vars=True).values():
                if tensor.is_floating_point():
                    tensor.fill_(value)
        for param in ms_params.values():
            param.set_data(ms.Tensor(np.full(param.shape, value, np.float32)))
        return
    for name, tensor in torch_module.state_dict().items():
        target = _ms_name(name, ms_params)
        if target is None:  # num_batches_tracked: MindSpore keeps no step counter
            continue
        ms_params[target].set_data(ms.Tensor(tensor.detach().cpu().numpy(), dtype=ms_params[target].dtype))


def make_input(workload: Workload) -> np.ndarray:
    """The one input both variants get, so that both compare the same forward (ReLU and max-pool
    masks included) and differ only in their cotangents."""
    rng = np.random.default_rng(SEED)
    if workload.distribution == "normal":
        return rng.standard_normal(workload.shape).astype(np.float32)
    return rng.uniform(-1.0, 1.0, workload.shape).astype(np.float32)


def hand_written(ms_cell, torch_module, workload: Workload, x: np.ndarray) -> dict:
    """Forward + VJP on both sides, compared with numpy: what one would write without parity."""
    import mindspore as ms
    import torch

    _set_weights_by_hand(ms_cell, torch_module, workload.weights)
    ms_cell.set_train(False)
    torch_module.eval()
    rng = np.random.default_rng(SEED + 1)

    x_torch = torch.from_numpy(x).requires_grad_(True)
    torch_names = [name for name, _ in torch_module.named_parameters()]
    torch_params = [param for _, param in torch_module.named_parameters()]
    out_torch = torch_module(x_torch)
    cotangent = rng.standard_normal(tuple(out_torch.shape)).astype(np.float32)
    torch_grads = torch.autograd.grad(out_torch, [x_torch] + torch_params, torch.from_numpy(cotangent))

    ms_named = [(name, param) for name, param in ms_cell.parameters_and_names() if param.requires_grad]
    out_ms, vjp_fn = ms.vjp(ms_cell, ms.Tensor(x), weights=[param for _, param in ms_named])
    (ms_input_grad,), ms_param_grads = vjp_fn(ms.Tensor(cotangent))  # grads of (inputs), (weights)
    ms_grads = {name: grad.asnumpy() for (name, _), grad in zip(ms_named, ms_param_grads)}

    pairs = [(out_ms.asnumpy(), out_torch.detach().numpy()), (ms_input_grad.asnumpy(), torch_grads[0].numpy())]
    pairs += [(ms_grads[_ms_name(name, ms_grads)], grad.numpy()) for name, grad in zip(torch_names, torch_grads[1:])]
    names = ["output", "input grad"] + torch_names
    close = [np.allclose(a, b, rtol=RTOL, atol=ATOL) for a, b in pairs]
    diffs = [float(np.max(np.abs(a - b))) for a, b in pairs]
    return {
        "compared": len(pairs),
        "passed": all(close),
        "max_abs_diff": max(diffs),
        "failed": [name for name, ok in zip(names, close) if not ok],
    }


# (b) The same work through parity.check -----------------------------------------------------------


def through_parity(ms_cell, torch_module, workload: Workload, x: np.ndarray, **check_kwargs) -> dict:
    import parity

    constant = workload.weights.startswith("constant")
    weights = parity.constant(float(workload.weights.split()[1])) if constant else "copy"
    try:
        result = parity.check(ms_cell, torch_module, x, weights=weights, ms_mode="pynative", seed=SEED, **check_kwargs)
    except parity.ParityMismatch as exc:  # still the full work; the benchmark reports it, not raises it
        result = exc.result
    return {
        "compared": len(result),
        "passed": result.passed,
        "max_abs_diff": max(c.max_abs for c in result.comparisons),
        "failed": [c.name for c in result.comparisons if not c.passed],
    }


# Timing ----------------------------------------------------------------------------------------


def _timed(fn: Callable, *args) -> dict:
    gc.collect()
    wall, cpu = time.perf_counter(), time.process_time()
    summary = fn(*args)
    return {"wall_s": time.perf_counter() - wall, "cpu_s": time.process_time() - cpu, **summary}


def _stats(samples: List[dict]) -> dict:
    walls = [s["wall_s"] for s in samples]
    return {
        "best_s": min(walls),
        "median_s": statistics.median(walls),
        "best_cpu_s": min(s["cpu_s"] for s in samples),
        "samples": samples,
    }


def bench_workload(
    workload: Workload, *, log: Callable[[str], None], profile: bool, check_kwargs: dict, envelope: bool = False
) -> dict:
    built = time.perf_counter()
    ms_cell, torch_module = workload.build()
    x = make_input(workload)
    log(f"{workload.name}: built both nets in {time.perf_counter() - built:.1f} s")
    variants = {"hand_written": hand_written, "parity_check": functools.partial(through_parity, **check_kwargs)}
    if envelope:  # the same check with every tensor judged against the rounding envelope
        variants["parity_check_envelope"] = functools.partial(
            through_parity, **{**check_kwargs, "tolerance": {"rtol": 0.0, "atol": 0.0}, "localize": False}
        )
    runs: Dict[str, List[dict]] = {name: [] for name in variants}
    warmup = {}
    for name, fn in variants.items():
        warmup[name] = _timed(fn, ms_cell, torch_module, workload, x)
        log(f"{workload.name}: warm-up {name} {warmup[name]['wall_s']:.2f} s")
    for i in range(workload.repeats):
        order = list(variants) if i % 2 == 0 else list(reversed(variants))  # interleaved, alternating
        for name in order:
            runs[name].append(_timed(variants[name], ms_cell, torch_module, workload, x))
            log(f"{workload.name}: repeat {i + 1}/{workload.repeats} {name} {runs[name][-1]['wall_s']:.2f} s")
    a, b = _stats(runs["hand_written"]), _stats(runs["parity_check"])
    found = {
        "workload": workload.name,
        "input": f"float32{list(workload.shape)} ~ {workload.distribution}",
        "weights": workload.weights,
        "check_kwargs": check_kwargs,
        "repeats": workload.repeats,
        "target_ratio": workload.target,
        "warmup": warmup,
        "hand_written": a,
        "parity_check": b,
        "ratio_best": b["best_s"] / a["best_s"],
        "ratio_median": b["median_s"] / a["median_s"],
        "ratio_cpu": b["best_cpu_s"] / a["best_cpu_s"],
    }
    found["meets_target"] = found["ratio_best"] <= workload.target
    if envelope:
        e = _stats(runs["parity_check_envelope"])
        found["parity_check_envelope"] = e
        found["envelope_ratio_best"] = e["best_s"] / a["best_s"]
        found["envelope_ratio_cpu"] = e["best_cpu_s"] / a["best_cpu_s"]
        log(
            f"{workload.name}: every tensor through the rounding envelope: b/a {found['envelope_ratio_best']:.2f} "
            f"wall, {found['envelope_ratio_cpu']:.2f} CPU"
        )
    if profile:
        found["profile"] = _profile(variants["parity_check"], ms_cell, torch_module, workload, x)
        log(found["profile"])
    return found


def _profile(fn, *args) -> str:
    import cProfile
    import io
    import pstats

    profiler = cProfile.Profile()
    profiler.runcall(fn, *args)
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(r"parity[/\\]", 25)
    return out.getvalue()


# pytest ------------------------------------------------------------------------------------------

_PROBE_CONFTEST = """
import json, sys

def pytest_sessionfinish(session):
    names = ("mindspore", "torch", "parity.plugin", "parity.engine.check")
    with open({out!r}, "w") as f:
        json.dump({{name: name in sys.modules for name in names}}, f)
"""

_PROBE_TESTS = """
import pytest

def test_plain():
    assert True

def test_with_fixture(parity):
    raise AssertionError("runs only with --parity")

@pytest.mark.parity
def test_marked():
    raise AssertionError("runs only with --parity")
"""


def _pytest_env() -> dict:
    env = dict(os.environ)
    for name in ("PYTEST_ADDOPTS", "PYTEST_DISABLE_PLUGIN_AUTOLOAD", "PYTEST_PLUGINS"):
        env.pop(name, None)
    return env


def _pytest(args: List[str], cwd: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pytest", *args], cwd=cwd, env=_pytest_env(), capture_output=True, text=True
    )


def bench_pytest_help(runs: int) -> dict:
    """Best-of-``runs`` wall time of ``pytest --help`` with the plugin and with ``-p no:parity``."""
    found = {}
    with tempfile.TemporaryDirectory(prefix="parity-bench-") as tmp:
        for label, extra in (("with_plugin", []), ("without_plugin", ["-p", "no:parity"])):
            _pytest(["--help", *extra], tmp)  # warm the file cache and bytecode
            times, shows_option = [], None
            for _ in range(runs):
                start = time.perf_counter()
                done = _pytest(["--help", *extra], tmp)
                times.append(time.perf_counter() - start)
                shows_option = "--parity-seed" in done.stdout
            found[label] = {
                "best_s": min(times),
                "samples_s": times,
                "lists_parity_options": shows_option,
                "returncode": done.returncode,
            }
    found["added_s"] = found["with_plugin"]["best_s"] - found["without_plugin"]["best_s"]
    return found


def probe_imports() -> dict:
    """Run a plain ``pytest`` (no --parity) on a plain test, a fixture test and a marked test, and
    record at session finish which of the frameworks and parity modules are in ``sys.modules``."""
    with tempfile.TemporaryDirectory(prefix="parity-bench-") as tmp:
        out = os.path.join(tmp, "modules.json")
        Path(tmp, "conftest.py").write_text(_PROBE_CONFTEST.format(out=out))
        Path(tmp, "test_probe.py").write_text(_PROBE_TESTS)
        done = _pytest(["-q", "-p", "no:cacheprovider"], tmp)
        modules = json.loads(Path(out).read_text()) if os.path.exists(out) else {}
    summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr.strip()[-200:]
    return {
        "modules": modules,
        "returncode": done.returncode,
        "summary": summary,
        "frameworks_imported": [name for name in FRAMEWORKS if modules.get(name)],
        "plugin_loaded": bool(modules.get("parity.plugin")),
    }


# Setup and report --------------------------------------------------------------------------------


def _setup_frameworks() -> None:
    """PYNATIVE for both variants, and the device chosen before any kernel runs (MindSpore refuses
    ``set_device`` once its runtime is up, and parity.check asks for the device on every call)."""
    import mindspore as ms

    ms.set_device("CPU")
    ms.set_context(mode=ms.PYNATIVE_MODE)


def _environment() -> dict:
    import mindspore
    import torch

    return {
        "python": platform.python_version(),
        "mindspore": mindspore.__version__,
        "torch": torch.__version__,
        "numpy": np.__version__,
        "cpus": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "platform": platform.platform(),
        "argv": sys.argv[1:],
    }


def _load_average() -> Optional[List[float]]:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def render(results: dict) -> str:
    env = results["environment"]
    lines = [
        f"pytest-parity benchmark: mindspore {env['mindspore']}, torch {env['torch']}, python {env['python']}, "
        f"{env['cpus']} CPUs (torch threads {env['torch_threads']}); load average "
        f"{results['load_average_start']} at start, {results['load_average_end']} at end",
        "",
    ]
    lines += _render_workloads(results["workloads"])
    if results.get("localize") is not None:
        import bench_localize

        lines += [""] + bench_localize.render(results["localize"], profile=True).splitlines()
    if results.get("pytest_help") is not None:
        lines += [""] + _render_pytest(results["pytest_help"], results["imports"])
    return "\n".join(lines)


def _render_workloads(found: List[dict]) -> List[str]:
    lines = [
        "parity.check (b) vs a hand-written comparison (a): PYNATIVE, one forward + one VJP per side, all "
        "grads compared; warmed up once; repeats interleaved. Seconds: wall best / median, process CPU best.",
        "",
    ]
    header = (
        "workload",
        "n",
        "(a) hand-written",
        "(b) parity.check",
        "b/a wall best (median)",
        "b/a CPU",
        "target",
        "",
    )
    rows = []
    for w in found:
        a, b = w["hand_written"], w["parity_check"]
        rows.append(
            (
                w["workload"],
                str(w["repeats"]),
                _seconds(a),
                _seconds(b),
                f"{w['ratio_best']:.2f} ({w['ratio_median']:.2f})",
                f"{w['ratio_cpu']:.2f}",
                f"<= {w['target_ratio']:.2f}",
                "meets" if w["meets_target"] else "MISSES",
            )
        )
    lines += _table(header, rows) + [""]
    for w in found:
        a, b = w["hand_written"]["samples"][-1], w["parity_check"]["samples"][-1]
        extra = f", parity.check(**{w['check_kwargs']})" if w["check_kwargs"] else ""
        warm = w["warmup"]
        lines.append(
            f"  {w['workload']}: input {w['input']}, weights {w['weights']}{extra}; warm-up "
            f"{warm['hand_written']['wall_s']:.2f} s (a), {warm['parity_check']['wall_s']:.2f} s (b)"
        )
        lines.append(
            f"    by hand: {a['compared']} tensors, np.allclose(rtol={RTOL:g}, atol={ATOL:g}) on all: "
            f"{a['passed']}{_failed(a)}, max abs diff {a['max_abs_diff']:.2g}"
        )
        lines.append(
            f"    parity.check: {b['compared']} tensors, passed: {b['passed']}{_failed(b)}, "
            f"max abs diff {b['max_abs_diff']:.2g}"
        )
    return lines


def _seconds(stats: dict) -> str:
    return f"{stats['best_s']:.3f} / {stats['median_s']:.3f}, CPU {stats['best_cpu_s']:.3f}"


def _failed(sample: dict) -> str:
    failed = sample["failed"]
    if not failed:
        return ""
    return f" (out of tolerance: {', '.join(failed[:3])}{f' and {len(failed) - 3} more' if len(failed) > 3 else ''})"


def _render_pytest(helps: dict, imports: dict) -> List[str]:
    lines = [f"pytest --help (subprocess in a temp dir, best of {HELP_RUNS})", ""]
    lines += _table(
        ("", "best s", "samples s", "lists --parity-seed"),
        [
            (
                label.replace("_", " "),
                f"{helps[label]['best_s']:.3f}",
                " ".join(f"{t:.3f}" for t in helps[label]["samples_s"]),
                str(helps[label]["lists_parity_options"]),
            )
            for label in ("with_plugin", "without_plugin")
        ],
    )
    lines.append(f"  the plugin adds {helps['added_s'] * 1000:+.0f} ms to pytest --help")
    verdict = "meets" if imports["plugin_loaded"] and not imports["frameworks_imported"] else "MISSES"
    lines += [
        "",
        "plain pytest run without --parity (a plain test, a parity-fixture test, a @pytest.mark.parity test)",
        "",
        f"  {imports['summary']}",
        "  in sys.modules at session finish: " + ", ".join(f"{k}={v}" for k, v in imports["modules"].items()),
        f"  target: {TARGET_HELP_NOTE}: {verdict}",
    ]
    return lines


def _table(header, rows) -> List[str]:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    fmt = lambda r: "  " + "  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip()  # noqa: E731
    return [fmt(header), "  " + "  ".join("-" * w for w in widths).rstrip(), *map(fmt, rows)]


# Main --------------------------------------------------------------------------------------------


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--quick", action="store_true", help="use the small ResNet on (2,3,64,64) instead of ResNet-50 (about a minute)"
    )
    parser.add_argument(
        "--repeats",
        type=int,
        default=None,
        help="timed repeats per variant (default: 3 for Conv2d and the small ResNet, 1 for ResNet-50)",
    )
    parser.add_argument("--json", metavar="PATH", help="also write every number to PATH as JSON")
    parser.add_argument(
        "--profile",
        action="store_true",
        help="after timing, profile one parity.check per workload with cProfile (parity frames only)",
    )
    parser.add_argument(
        "--check-kwargs",
        metavar="JSON",
        type=json.loads,
        default={},
        help="extra keyword arguments for parity.check, to attribute overhead (e.g. '{\"localize\": false}')",
    )
    parser.add_argument("--skip-pytest", action="store_true", help="skip the pytest --help and import measurements")
    parser.add_argument(
        "--envelope",
        action="store_true",
        help="also time parity.check with every tensor judged against the rounding envelope "
        "(tolerance 0: what a check costs when its tensors come near their tolerance)",
    )
    parser.add_argument(
        "--localize",
        action="store_true",
        help="also compare localize=True/False/'auto' on the ResNet, time and peak RSS, each in a "
        "fresh process (benchmarks/bench_localize.py; the options below tune it)",
    )
    import bench_localize  # benchmarks/ is on sys.path when this file runs as a script

    bench_localize.add_arguments(parser, prefix="localize-")
    args = parser.parse_args(argv)
    if args.repeats is not None and args.repeats < 1:
        parser.error("--repeats must be at least 1")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    log = lambda text: print(f"[{time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)  # noqa: E731
    results = {"load_average_start": _load_average(), "quick": args.quick, "pytest_help": None, "imports": None}
    if not args.skip_pytest:  # first, while this process holds neither framework
        log("timing pytest --help and probing imports")
        results["pytest_help"] = bench_pytest_help(HELP_RUNS)
        results["imports"] = probe_imports()
    if args.localize:  # child processes; this one holds no framework yet
        import bench_localize

        results["localize"] = bench_localize.run(
            args.quick,
            variants=args.localize_variants,
            repeats=args.localize_repeats,
            no_warmup=args.localize_no_warmup,
            profile=args.localize_profile,
            check_kwargs=args.localize_check_kwargs,
            log=log,
        )
    _setup_frameworks()
    results["environment"] = _environment()
    results["workloads"] = [
        bench_workload(w, log=log, profile=args.profile, check_kwargs=args.check_kwargs, envelope=args.envelope)
        for w in workloads(args)
    ]
    results["load_average_end"] = _load_average()
    print(render(results))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2, default=str) + "\n")
        log(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
