"""Where a check's time and memory go (``bench_localize.py --profile``): one check under cProfile,
with an RSS sampler, markers around the phases of ``parity.engine.check``, the time spent in the capture
hooks and in the layer comparisons, and the bytes the layer recordings hold afterwards.

The instrumentation wraps functions of parity's modules for the duration of one check and restores
them afterwards; it changes nothing in the package.
"""

from __future__ import annotations

import cProfile
import io
import pstats
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Dict, List

SAMPLE_S = 0.02
TOP = 25


def _rss_kb() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


class _Sampler(threading.Thread):
    def __init__(self):
        super().__init__(daemon=True)
        self.samples: List[tuple] = []
        self.done = threading.Event()

    def run(self):
        while not self.done.is_set():
            self.samples.append((time.perf_counter(), _rss_kb()))
            self.done.wait(SAMPLE_S)


@contextmanager
def _patched(targets: Dict[tuple, Callable]):
    saved = {(owner, name): getattr(owner, name) for owner, name in targets}
    for (owner, name), make in targets.items():
        setattr(owner, name, make(saved[(owner, name)]))
    try:
        yield
    finally:
        for (owner, name), original in saved.items():
            setattr(owner, name, original)


def profile_check(run_check: Callable) -> dict:
    """Run ``run_check()`` once, instrumented; return the figures as plain data."""
    from parity.backends import _hooks as hooks
    from parity.backends import mindspore as msb
    from parity.backends import torch as tb
    from parity.engine import check as runner
    from parity.engine.diagnosis import recording, verdicts

    phases: List[tuple] = []  # (label, start, end)
    spent: Dict[str, List[float]] = {}  # label -> [seconds, calls]
    recordings: List[object] = []

    def phase(label):
        def wrap(fn):
            def inner(*args, **kwargs):
                start = time.perf_counter()
                try:
                    return fn(*args, **kwargs)
                finally:
                    phases.append((label, start, time.perf_counter()))

            return inner

        return wrap

    def accumulate(label):
        def wrap(fn):
            def inner(*args, **kwargs):
                start = time.perf_counter()
                try:
                    return fn(*args, **kwargs)
                finally:
                    total = spent.setdefault(label, [0.0, 0])
                    total[0] += time.perf_counter() - start
                    total[1] += 1

            return inner

        return wrap

    def keep_recordings(init):
        def inner(self, *args, **kwargs):
            init(self, *args, **kwargs)
            recordings.append(self)

        return inner

    # (owner, attribute): wrapper. parity's internals move; what a version lacks is skipped.
    wanted = [
        ((runner.Passes, "torch_forward"), phase("PyTorch forward")),
        ((runner.Passes, "_torch_backward"), phase("PyTorch backward")),
        ((msb.Pass, "__init__"), phase("MindSpore forward (vjp)")),
        ((msb.Pass, "backward"), phase("MindSpore backward")),
        ((runner, "compare_pair"), accumulate("compare outputs/grads (runner.compare_pair)")),
        ((tb, "_arrays"), accumulate("PyTorch hooks: tensors to numpy copies (torch._arrays)")),
        (
            (getattr(tb, "_Copies", None), "array"),
            accumulate("PyTorch hooks: tensors to numpy copies (torch._Copies.array)"),
        ),
        (
            (getattr(msb, "_Recent", None), "arrays"),
            accumulate("MindSpore: tensors to numpy (mindspore._Recent.arrays)"),
        ),
        ((msb, "_arrays"), accumulate("MindSpore hooks: tensors to numpy (mindspore._arrays)")),
        (
            (getattr(msb, "_Layers", None), "flush"),
            accumulate("MindSpore: layers handed over and compared (_Layers.flush)"),
        ),
        ((hooks.LayerHooks, "pre_hook"), accumulate("both sides: pre-hooks (input views, tensor hooks)")),
        ((hooks.LayerHooks, "forward_hook"), accumulate("both sides: forward hooks")),
        ((recording.Localizer, "on_forward"), accumulate("layer comparisons, forward (Localizer.on_forward)")),
        ((recording.Localizer, "on_backward"), accumulate("layer comparisons, backward (Localizer.on_backward)")),
        ((verdicts, "_pair_metrics"), accumulate("  of which verdicts._pair_metrics (error, margin, max |diff|)")),
        ((verdicts, "_margin"), accumulate("  of which verdicts._margin (float64 diff / allowed)")),
        (
            (verdicts, "worst_relative_error"),
            accumulate("  of which verdicts.worst_relative_error (relative L2 error)"),
        ),
        ((recording.Recording, "__init__"), keep_recordings),
    ]
    targets = {key: wrap for key, wrap in wanted if key[0] is not None and hasattr(*key)}
    sampler = _Sampler()
    profiler = cProfile.Profile()
    with _patched(targets):
        base = _rss_kb()
        sampler.start()
        start = time.perf_counter()
        profiler.enable()
        try:
            run_check()
        finally:
            profiler.disable()
            end = time.perf_counter()
            sampler.done.set()
            sampler.join()
    found = {
        "wall_s": end - start,
        "rss_start_mb": base / 1024,
        "rss_peak_mb": max(kb for _, kb in sampler.samples) / 1024,
        "phases": _phase_table(phases, sampler.samples, start),
        "spent": spent,
        "recordings": [_recording_bytes(r) for r in recordings],
    }
    recordings.clear()
    for key, sort in (("by_tottime", "tottime"), ("by_cumtime", "cumulative")):
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats(sort).print_stats(TOP)
        found[key] = _trim(out.getvalue())
    return found


def _phase_table(phases, samples, start) -> List[dict]:
    rows = []
    for label, begin, end in sorted(phases, key=lambda p: p[1]):
        inside = [kb for t, kb in samples if begin <= t <= end] or [0]
        before = [kb for t, kb in samples if t <= begin] or [0]
        after = [kb for t, kb in samples if t >= end] or [0]
        rows.append(
            {
                "phase": label,
                "start_s": begin - start,
                "seconds": end - begin,
                "rss_at_start_mb": before[-1] / 1024,
                "rss_peak_mb": max(inside + [before[-1]]) / 1024,
                "rss_at_end_mb": after[0] / 1024,
            }
        )
    return rows


def _recording_bytes(recording) -> dict:
    """Calls recorded and the bytes of numpy arrays they still hold (each array counted once)."""
    seen, unique, total = set(), 0, 0
    by_kind = {"forward": 0, "backward": 0}
    for call in recording.calls:
        for kind, arrays in (
            ("forward", (call.inputs or []) + (call.outputs or [])),
            ("backward", (call.grad_inputs or []) + (call.grad_outputs or [])),
        ):
            for array in arrays:
                if array is None:
                    continue
                total += array.nbytes
                if id(array) not in seen:
                    seen.add(id(array))
                    unique += array.nbytes
                    by_kind[kind] += array.nbytes
    side = "PyTorch (kept for the MindSpore side)" if recording._on_forward is None else "MindSpore (compared live)"
    return {
        "side": side,
        "calls": len(recording.calls),
        "backward_calls": len(recording.backward_order),
        "unique_mb": unique / 2**20,
        "referenced_mb": total / 2**20,
        "forward_mb": by_kind["forward"] / 2**20,
        "backward_mb": by_kind["backward"] / 2**20,
    }


def _trim(text: str) -> str:
    lines = [line.rstrip() for line in text.splitlines() if line.strip()]
    keep = [i for i, line in enumerate(lines) if "ncalls" in line]
    return "\n".join(lines[keep[0] - 1 :] if keep else lines)


def render_profile(found: dict) -> str:
    lines = [
        f"  one check: {found['wall_s']:.2f} s wall under cProfile; RSS {found['rss_start_mb']:.0f} MB at start, "
        f"peak {found['rss_peak_mb']:.0f} MB (sampled every {SAMPLE_S * 1000:.0f} ms)",
        "  phases:",
    ]
    for row in found["phases"]:
        lines.append(
            f"    {row['phase']:<26} at {row['start_s']:7.2f} s for {row['seconds']:7.2f} s; RSS "
            f"{row['rss_at_start_mb']:.0f} -> peak {row['rss_peak_mb']:.0f} -> {row['rss_at_end_mb']:.0f} MB"
        )
    if found["spent"]:
        lines.append("  time inside (wall, under cProfile):")
        for label, (seconds, calls) in found["spent"].items():
            lines.append(f"    {seconds:7.2f} s  {calls:5d} calls  {label}")
    for rec in found["recordings"]:
        lines.append(
            f"  recording, {rec['side']}: {rec['calls']} forward calls, {rec['backward_calls']} backward; "
            f"holds {rec['unique_mb']:.0f} MB of arrays after the check (forward {rec['forward_mb']:.0f}, "
            f"backward {rec['backward_mb']:.0f}; {rec['referenced_mb']:.0f} MB by reference)"
        )
    lines += [
        "  cProfile, by own time:",
        _indent(found["by_tottime"]),
        "  cProfile, by cumulative time:",
        _indent(found["by_cumtime"]),
    ]
    return "\n".join(lines)


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.splitlines())
