"""What per-layer localisation costs: ``parity.check(localize=True)`` against ``localize=False``
(and ``"auto"``), in time and in peak memory.

Run from the repository root::

    python benchmarks/bench_localize.py            # ResNet-50, (2,3,224,224) (about 20 minutes on 2 CPUs)
    python benchmarks/bench_localize.py --quick    # the small ResNet, (2,3,64,64) (about a minute)
    python benchmarks/bench_localize.py --variants false,true --profile --json loc.json
    python benchmarks/bench_check.py --localize    # the overhead tables, then this comparison

Peak RSS belongs to a whole process, so every variant runs in its own fresh subprocess (this script
with the hidden ``--variant`` flag). The child imports both frameworks, sets PYNATIVE on CPU, builds
the pair (eval mode; ``parity.check`` copies the PyTorch weights into MindSpore), runs one
**warm-up** check with the same ``localize`` value (MindSpore compiles and initialises on first
use; ``--no-warmup`` skips it) and then one **measured** check. It reports for the measured check
its wall time, its process CPU time (all threads; the steadier figure on a small shared machine),
its resident set before it and its peak (``VmHWM``, reset through ``/proc/self/clear_refs`` just
before it). The parent reads each child's whole-process peak RSS from ``os.wait4`` (the figure the
target applies to; it includes the imports, the build and the warm-up check, which peaks like the
measured one). ``localize="auto"`` on a passing check must capture nothing: the child records
whether ``Result.layers`` is None. Variants alternate order across ``--repeats``.

``--profile`` adds, in each child after the measured check, one more check under cProfile with an
RSS sampler (every 20 ms) and markers around the phases of ``parity.engine.check`` (PyTorch forward,
PyTorch backward, MindSpore forward, MindSpore backward), the time spent in the capture hooks and
the layer comparisons, and the bytes the layer recordings hold. A measurement, not a test.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Optional

ROOT = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent
for _path in (str(ROOT), str(HERE)):
    if _path not in sys.path:
        sys.path.insert(0, _path)

import bench_check  # noqa: E402  (the workloads, the input and the framework setup are shared)

VARIANTS = {"false": False, "true": True, "auto": "auto"}
TARGET_TIME, TARGET_RSS = 1.15, 1.5  # localize=True over localize=False
MB = 1024 * 1024


def _label(localize) -> str:
    return f"localize={localize!r}"


# The child ---------------------------------------------------------------------------------------


def _status_kb(field: str) -> Optional[int]:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return None


def _reset_peak() -> bool:
    """Reset this process's VmHWM to its current RSS (Linux >= 4.0)."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def _one_check(ms_cell, torch_module, x, localize, check_kwargs):
    import parity

    try:
        return parity.check(
            ms_cell,
            torch_module,
            x,
            weights="copy",
            ms_mode="pynative",
            seed=bench_check.SEED,
            localize=localize,
            **check_kwargs,
        )
    except parity.ParityMismatch as exc:  # still the full work; reported, not raised
        return exc.result


def _summary(result) -> dict:
    layers = result.layers
    return {
        "passed": result.passed,
        "compared": len(result),
        "notes": list(result.notes),
        "max_abs_diff": max((c.max_abs for c in result.comparisons), default=0.0),
        "failed": [f"{c.name} (margin {c.margin:.3g})" for c in result.failures],
        "layers": None
        if layers is None
        else {
            "forward": len(layers.forward),
            "backward": len(layers.backward),
            "failed": sum(v.status == "FAIL" for v in layers.forward + layers.backward),
        },
    }


def _timed_check(ms_cell, torch_module, x, localize, check_kwargs) -> dict:
    gc.collect()
    rss_before = _status_kb("VmRSS")
    reset = _reset_peak()
    wall, cpu = time.perf_counter(), time.process_time()
    result = _one_check(ms_cell, torch_module, x, localize, check_kwargs)
    found = {
        "wall_s": time.perf_counter() - wall,
        "cpu_s": time.process_time() - cpu,
        "rss_before_kb": rss_before,
        "peak_kb": _status_kb("VmHWM") if reset else None,
    }
    return {**found, **_summary(result)}


def child(spec: dict) -> int:
    import resource

    started = time.perf_counter()
    args = argparse.Namespace(quick=spec["quick"], repeats=None)
    workload = bench_check.workloads(args)[1]
    bench_check._setup_frameworks()
    import parity  # noqa: F401  (imported before the clock of the first check starts)

    ms_cell, torch_module = workload.build()
    x = bench_check.make_input(workload)
    found = {
        "workload": workload.name,
        "localize": spec["localize"],
        "setup_s": time.perf_counter() - started,
        "rss_built_kb": _status_kb("VmRSS"),
    }
    if spec["warmup"]:
        found["warmup"] = _timed_check(ms_cell, torch_module, x, spec["localize"], spec["check_kwargs"])
    found["measured"] = _timed_check(ms_cell, torch_module, x, spec["localize"], spec["check_kwargs"])
    found["ru_maxrss_measured_kb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # kB on Linux
    if spec["profile"]:
        from bench_localize_profile import profile_check

        found["profile"] = profile_check(
            lambda: _one_check(ms_cell, torch_module, x, spec["localize"], spec["check_kwargs"])
        )
    found["ru_maxrss_self_kb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # kB on Linux
    Path(spec["out"]).write_text(json.dumps(found, default=str))
    return 0


def interleaved(quick: bool, rounds: int, names: List[str], check_kwargs: dict, log) -> dict:
    """Time only, in this one process: each variant warmed up once, then ``rounds`` rounds that
    run every variant once, in alternating order. Checks of one process side by side are far
    steadier than fresh processes (which differ by up to 20 % on a shared machine); peak RSS needs
    the fresh processes and is not measured here."""

    args = argparse.Namespace(quick=quick, repeats=None)
    workload = bench_check.workloads(args)[1]
    bench_check._setup_frameworks()
    ms_cell, torch_module = workload.build()
    x = bench_check.make_input(workload)
    times: Dict[str, List[tuple]] = {name: [] for name in names}
    for name in names:
        _timed_check(ms_cell, torch_module, x, VARIANTS[name], check_kwargs)
    for i in range(rounds):
        for name in names if i % 2 == 0 else names[::-1]:
            found = _timed_check(ms_cell, torch_module, x, VARIANTS[name], check_kwargs)
            times[name].append((found["wall_s"], found["cpu_s"]))
            log(f"round {i + 1}: {_label(VARIANTS[name])} {found['wall_s']:.2f} s wall, {found['cpu_s']:.2f} s CPU")
    base = names[0]
    lines = [f"Interleaved in one process, {workload.name}, {rounds} rounds (median, best; time only):"]
    for name in names:
        walls, cpus = [t[0] for t in times[name]], [t[1] for t in times[name]]
        line = (
            f"  {_label(VARIANTS[name]):16s} wall {statistics.median(walls):7.2f} {min(walls):7.2f}   "
            f"CPU {statistics.median(cpus):7.2f} {min(cpus):7.2f}"
        )
        if name != base:
            per_round = [(t[0] / b[0], t[1] / b[1]) for t, b in zip(times[name], times[base])]
            line += (
                f"   / {_label(VARIANTS[base])}: median of round ratios {statistics.median(r[0] for r in per_round):.3f} "
                f"wall, {statistics.median(r[1] for r in per_round):.3f} CPU"
            )
        lines.append(line)
    return {"workload": workload.name, "rounds": rounds, "times": times, "text": "\n".join(lines)}


# The parent --------------------------------------------------------------------------------------


def _steal_s() -> Optional[float]:
    """CPU time the hypervisor gave to others, all CPUs, since boot (Linux /proc/stat)."""
    try:
        fields = Path("/proc/stat").read_text().splitlines()[0].split()
        return int(fields[8]) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def run_variant(quick: bool, localize, *, warmup: bool, profile: bool, check_kwargs: dict, log) -> dict:
    """One fresh child process; its own report plus the kernel's account of it (wait4)."""
    with tempfile.TemporaryDirectory(prefix="parity-bench-loc-") as tmp:
        out, console = os.path.join(tmp, "child.json"), os.path.join(tmp, "child.log")
        spec = {
            "quick": quick,
            "localize": localize,
            "warmup": warmup,
            "profile": profile,
            "out": out,
            "check_kwargs": check_kwargs,
        }
        load_before, steal_before = bench_check._load_average(), _steal_s()
        started = time.perf_counter()
        with open(console, "w") as sink:
            proc = subprocess.Popen(
                [sys.executable, __file__, "--variant", json.dumps(spec)],
                cwd=ROOT,
                stdout=sink,
                stderr=subprocess.STDOUT,
            )
            _, status, usage = os.wait4(proc.pid, 0)
            proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - started
        steal = _steal_s()
        if proc.returncode != 0 or not os.path.exists(out):
            tail = Path(console).read_text()[-3000:]
            raise RuntimeError(f"{_label(localize)} child exited {proc.returncode}:\n{tail}")
        found = json.loads(Path(out).read_text())
    # With --profile the child ran one more check after the measured one: its peak up to then.
    peak = found["ru_maxrss_measured_kb"] if profile else usage.ru_maxrss
    found.update(
        process_wall_s=wall,
        process_cpu_s=usage.ru_utime + usage.ru_stime,
        process_peak_kb=peak,
        wait4_maxrss_kb=usage.ru_maxrss,
        load_before=load_before,
        load_after=bench_check._load_average(),
        steal_s=None if steal is None or steal_before is None else steal - steal_before,
    )
    m = found["measured"]
    log(
        f"{found['workload']} {_label(localize)}: check {m['wall_s']:.2f} s wall, {m['cpu_s']:.2f} s CPU; "
        f"process peak {peak / 1024:.0f} MB; passed {m['passed']}; load {found['load_after']}; CPU stolen by the "
        f"hypervisor meanwhile {found['steal_s'] if found['steal_s'] is None else round(found['steal_s'], 1)} s "
        f"of {wall:.0f} s"
    )
    return found


def bench_localize(
    quick: bool, *, variants: List[str], repeats: int, warmup: bool, profile: bool, check_kwargs: dict, log
) -> dict:
    runs: Dict[str, List[dict]] = {name: [] for name in variants}
    for i in range(repeats):
        order = variants if i % 2 == 0 else list(reversed(variants))
        for name in order:
            runs[name].append(
                run_variant(quick, VARIANTS[name], warmup=warmup, profile=profile, check_kwargs=check_kwargs, log=log)
            )
    stats = {name: _stats(samples) for name, samples in runs.items()}
    found = {
        "workload": runs[variants[0]][0]["workload"],
        "repeats": repeats,
        "warmup": warmup,
        "check_kwargs": check_kwargs,
        "variants": stats,
        "ratios": {},
    }
    if "false" in stats:
        base = stats["false"]
        for name in variants:
            if name != "false":
                found["ratios"][name] = {
                    key: stats[name][key] / base[key]
                    for key in base
                    if isinstance(base[key], (int, float)) and base[key]
                }
    return found


def _stats(samples: List[dict]) -> dict:
    """Best times (noise only adds), median memory; the first-check figures come from the warm-ups."""
    measured = [s["measured"] for s in samples]
    median = lambda key, rows: statistics.median(r[key] for r in rows)  # noqa: E731
    stats = {
        "wall_s": min(m["wall_s"] for m in measured),
        "cpu_s": min(m["cpu_s"] for m in measured),
        "process_peak_mb": median("process_peak_kb", samples) / 1024,
        "rss_before_mb": median("rss_before_kb", measured) / 1024,
    }
    if all(m["peak_kb"] for m in measured):
        stats["check_peak_mb"] = median("peak_kb", measured) / 1024
        stats["check_added_mb"] = stats["check_peak_mb"] - stats["rss_before_mb"]
    warm = [s["warmup"] for s in samples if "warmup" in s]
    if warm:
        stats["first_wall_s"] = min(w["wall_s"] for w in warm)
        stats["first_cpu_s"] = min(w["cpu_s"] for w in warm)
        if all(w["peak_kb"] for w in warm):  # the first check starts from the freshly built process
            stats["first_peak_mb"] = median("peak_kb", warm) / 1024
            stats["first_added_mb"] = stats["first_peak_mb"] - median("rss_before_kb", warm) / 1024
    return {**stats, "samples": samples}


# Report ------------------------------------------------------------------------------------------


def render(found: dict, *, profile: bool = False) -> str:
    first = "warm-up check" if found["warmup"] else "no warm-up"
    extra = "".join(f", {k}={v!r}" for k, v in found.get("check_kwargs", {}).items())
    lines = [
        f"Localisation cost on {found['workload']}: parity.check(weights='copy'{extra}, PYNATIVE, eval), each variant "
        f"in a fresh process ({found['repeats']} per variant, order alternating); {first}, then one measured "
        "check. Times: best; memory: median, MB.",
        "",
    ]
    header = (
        "variant",
        "check wall s",
        "check CPU s",
        "1st check wall/CPU s",
        "1st check peak/adds",
        "RSS before",
        "check peak",
        "check adds",
        "process peak",
        "passed",
        "layers fwd/bwd",
        "load after",
    )
    rows = []
    for name, s in found["variants"].items():
        last = s["samples"][-1]
        layers = last["measured"]["layers"]
        rows.append(
            (
                _label(VARIANTS[name]),
                f"{s['wall_s']:.2f}",
                f"{s['cpu_s']:.2f}",
                f"{s['first_wall_s']:.2f} / {s['first_cpu_s']:.2f}" if "first_wall_s" in s else "-",
                f"{s['first_peak_mb']:.0f} / {s['first_added_mb']:.0f}" if "first_peak_mb" in s else "-",
                f"{s['rss_before_mb']:.0f}",
                _mb(s.get("check_peak_mb")),
                _mb(s.get("check_added_mb")),
                f"{s['process_peak_mb']:.0f}",
                str(last["measured"]["passed"]),
                "none" if layers is None else f"{layers['forward']}/{layers['backward']}",
                " ".join(f"{v:.1f}" for v in last["load_after"] or []),
            )
        )
    lines += bench_check._table(header, rows) + [""]
    for name, s in found["variants"].items():
        failed = s["samples"][-1]["measured"]["failed"]
        if failed:
            more = f" and {len(failed) - 5} more" if len(failed) > 5 else ""
            lines.append(f"  {_label(VARIANTS[name])}: out of tolerance: {', '.join(failed[:5])}{more}")
    for name, r in found["ratios"].items():
        lines.append(f"  {_label(VARIANTS[name])} / localize=False: " + _ratios(name, r, found["variants"][name]))
    if profile:
        for name, s in found["variants"].items():
            report = s["samples"][-1].get("profile")
            if report:
                from bench_localize_profile import render_profile

                lines += ["", f"Profile of one more check, {_label(VARIANTS[name])}:", render_profile(report)]
    return "\n".join(lines)


def _ratios(name: str, r: dict, stats: dict) -> str:
    text = (
        f"time {r['wall_s']:.2f} wall, {r['cpu_s']:.2f} CPU"
        + (f" (first check {r['first_wall_s']:.2f} / {r['first_cpu_s']:.2f})" if "first_wall_s" in r else "")
        + f"; process peak RSS {r['process_peak_mb']:.2f}"
        + (f", check-window peak {r['check_peak_mb']:.2f}" if "check_peak_mb" in r else "")
        + (f", what the check adds {r['check_added_mb']:.2f}" if "check_added_mb" in r else "")
        + (
            f"; first check: peak {r['first_peak_mb']:.2f}, adds {r['first_added_mb']:.2f}"
            if "first_added_mb" in r
            else ""
        )
    )
    if name == "true":
        verdict = lambda value, target: "meets" if value <= target else "MISSES"  # noqa: E731
        text += (
            f"\n    targets: time <= {TARGET_TIME} (CPU {verdict(r['cpu_s'], TARGET_TIME)}, wall "
            f"{verdict(r['wall_s'], TARGET_TIME)}); peak RSS <= {TARGET_RSS} "
            f"({verdict(r['process_peak_mb'], TARGET_RSS)})"
        )
    elif name == "auto":
        captured = [s["measured"]["layers"] is not None for s in stats["samples"]]
        passed = all(s["measured"]["passed"] for s in stats["samples"])
        text += (
            f"\n    expected ~1: the check {'passed' if passed else 'FAILED'}; layers captured: "
            f"{'yes (an extra captured pass ran)' if any(captured) else 'no'}"
        )
    return text


def _mb(value) -> str:
    return "-" if value is None else f"{value:.0f}"


# Main --------------------------------------------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser, prefix: str = "") -> None:
    """The options of this comparison; bench_check.py adds them as --localize-variants etc."""
    parser.add_argument(
        f"--{prefix}variants",
        default="false,true,auto",
        metavar="LIST",
        help="comma-separated localize values to run, of false,true,auto (default: all three)",
    )
    parser.add_argument(
        f"--{prefix}repeats",
        type=int,
        default=None,
        metavar="N",
        help="fresh processes per variant (default: 3 with --quick, 1 for ResNet-50)",
    )
    parser.add_argument(
        f"--{prefix}no-warmup",
        action="store_true",
        help="measure each child's first check (no warm-up check before it)",
    )
    parser.add_argument(
        f"--{prefix}check-kwargs",
        metavar="JSON",
        type=json.loads,
        default={},
        help="extra keyword arguments for parity.check in every variant, e.g. "
        "'{\"tolerance\": [1e-3, 1e-3]}' to make a check pass",
    )
    parser.add_argument(
        f"--{prefix}profile",
        action="store_true",
        help="one more check per child, after the measured one, under cProfile, with an RSS timeline by phase",
    )


def run(
    quick: bool, *, variants: str, repeats: Optional[int], no_warmup: bool, profile: bool, check_kwargs: dict, log
) -> dict:
    names = [v.strip().lower() for v in variants.split(",") if v.strip()]
    unknown = [n for n in names if n not in VARIANTS]
    if unknown or not names:
        raise SystemExit(f"unknown localize variants {unknown}; choose from {', '.join(VARIANTS)}")
    if repeats is not None and repeats < 1:
        raise SystemExit("--repeats must be at least 1")
    repeats = repeats or (3 if quick else 1)
    return bench_localize(
        quick,
        variants=names,
        repeats=repeats,
        warmup=not no_warmup,
        profile=profile,
        check_kwargs=check_kwargs,
        log=log,
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--variant", help=argparse.SUPPRESS)  # the child: a JSON spec
    parser.add_argument("--quick", action="store_true", help="the small ResNet on (2,3,64,64) instead of ResNet-50")
    parser.add_argument("--json", metavar="PATH", help="also write every number to PATH as JSON")
    parser.add_argument(
        "--interleave",
        type=int,
        metavar="ROUNDS",
        help="time only: all variants in this one process, alternating, ROUNDS rounds",
    )
    add_arguments(parser)
    args = parser.parse_args(argv)
    if args.variant:
        return child(json.loads(args.variant))
    log = lambda text: print(f"[{time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)  # noqa: E731
    if args.interleave:
        names = [v.strip().lower() for v in args.variants.split(",") if v.strip()]
        found = interleaved(args.quick, args.interleave, names, args.check_kwargs, log)
        print(found.pop("text"))
        if args.json:
            Path(args.json).write_text(json.dumps(found, indent=2, default=str) + "\n")
        return 0
    load_start = bench_check._load_average()
    found = run(
        args.quick,
        variants=args.variants,
        repeats=args.repeats,
        no_warmup=args.no_warmup,
        profile=args.profile,
        check_kwargs=args.check_kwargs,
        log=log,
    )
    found.update(load_average_start=load_start, load_average_end=bench_check._load_average(), argv=sys.argv[1:])
    print(f"load average {found['load_average_start']} at start, {found['load_average_end']} at end")
    print(render(found, profile=args.profile))
    if args.json:
        Path(args.json).write_text(json.dumps(found, indent=2, default=str) + "\n")
        log(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
