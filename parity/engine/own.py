"""Each layer's own error: on a failing check, every layer is fed PyTorch's captured inputs on
both sides, and its own output judged against PyTorch's as any tensor is (tolerance, then the
rounding envelope).

Accumulated error hides a second cause behind the first: once one layer diverges, every later
layer's inputs differ and its error looks inherited. Fed the reference's inputs, a layer differs
only by what it computes itself. One extra forward of MindSpore's model runs, with every sub-layer
call fed (:func:`parity.backends.replay.fed`); PyTorch's own outputs are those already captured,
and PyTorch runs again, fed the same way, only where a layer's own error is near its tolerance
(the envelope's reruns). In training mode the running statistics each layer updates from its fed
inputs are compared too (``direction`` ``"buffer"``).

A layer's ``own_status``: ``"own"`` (its own error is out of bounds), ``"inherited"`` (out of
bounds in the check, but not fed PyTorch's inputs, or only through a sub-layer with its own
error), ``"ok"``, or ``""`` (not measured: not aligned, or its call could not be fed).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Tuple

from ..judge.envelope import Candidate, judge_envelope, near
from ..judge.metrics import ArrayPair, compare_pair
from .localize import LayerVerdict, pair_metrics
from .passes import buffers_of, draw_seed, perturbed_inputs
from .side_errors import run_side

__all__ = ["OwnError", "measure_own_errors"]


@dataclass(frozen=True)
class OwnError:
    """A layer whose own error is out of bounds, in the order the check met it."""

    layer: str  # the PyTorch path
    direction: str  # "forward" or "buffer" (its running statistics, in training mode)
    causes: Tuple[str, ...] = ()  # the registry's likely causes at this layer
    ms_path: str = ""
    label: str = ""  # the path with its call number, where the layer was called more than once
    margin: float = 0.0  # greatest |diff| / allowed of its own output

    def as_dict(self) -> dict:
        return {"layer": self.layer, "direction": self.direction, "causes": list(self.causes)}


def measure_own_errors(run, table, chain) -> None:
    """Feed every aligned forward layer call PyTorch's inputs (``run``: the check's captured
    :class:`parity.engine.passes.Passes`, its PyTorch recording still holding its arrays), judge
    each layer's own output, and set ``own_*`` on ``table``'s forward verdicts and
    ``table.own_errors`` (causes left empty: see :func:`parity.engine.causes.own_error_causes`)."""
    from ..backends import mindspore as msb
    from ..backends.replay import fed

    first, _ = table.first("forward")
    if first is None and not (run.train and run.torch_buffers):
        return  # the forward agrees, and no running statistic to compare
    from ..backends import torch as tb

    feeds = _feeds(run, table.forward)
    ms_after = {name: msb.read(run.ms_cell, name) for name in run.ms_start}
    torch_after = tb.buffers(run.torch_module)
    for name, value in run.ms_start.items():
        msb.write(run.ms_cell, name, value)
    with fed(run.ms_cell, feeds, framework="mindspore") as got:
        run_side(lambda: msb.Pass(run.ms_cell, run.ms_data, grads=False, mode="pynative"), "MindSpore (layers fed)")
    ms_buffers = buffers_of(msb, run.ms_cell, run.wmap, "ms") if run.train else {}
    for name, value in ms_after.items():
        msb.write(run.ms_cell, name, value)
    pairs = _own_pairs(run, table.forward, feeds, got)
    pairs += [((name.rpartition(".")[0], "buffer", name),
               ArrayPair("buffer", name, name, name, "pynative", ms_buffers[name], run.torch_buffers[name],
                         name.rpartition(".")[0])) for name in ms_buffers if name in run.torch_buffers]
    comparisons = {key: compare_pair(pair, chain, False) for key, pair in pairs}
    errors = {key: pair_metrics(pair.ms, pair.torch, comparisons[key].tolerance)[0] for key, pair in pairs}
    _judge(run, feeds, dict(pairs), comparisons)
    tb.set_buffers(run.torch_module, torch_after)
    table.own_measured = True
    table.own_errors = _verdicts(table.forward, comparisons, errors) + _buffer_errors(comparisons)


def _feeds(run, verdicts: List[LayerVerdict]):
    """(MindSpore path, call) -> the PyTorch inputs of its aligned call."""
    from ..backends.replay import Feed

    feeds = {}
    for v in verdicts:
        ref = run.torch_recording.get(v.path, v.call) if v.status != "unaligned" else None
        ms_call = run.ms_recording.get(v.ms_path, v.call) if run.ms_recording is not None else None
        if ref is None or ref.inputs is None or ref.outputs is None:
            continue
        named = ref.keywords or (ms_call is not None and ms_call.keywords)
        feeds[(v.ms_path, v.call)] = Feed(tuple(ref.inputs), tuple(ref.input_names) if named and ref.input_names
                                          else None)
    return feeds


def _own_pairs(run, verdicts, feeds, got):
    """((path, call, i), ArrayPair) of every fed call's output tensors: MindSpore's fed output
    against PyTorch's captured one."""
    pairs = []
    for v in verdicts:
        key = (v.ms_path, v.call)
        if key not in got.fed or key not in got.outputs:
            continue
        ref = run.torch_recording.get(v.path, v.call)
        ms_out, ref_out = got.outputs[key], ref.outputs
        if len(ms_out) != len(ref_out):
            continue
        for i, (a, b) in enumerate(zip(ms_out, ref_out)):
            if a is not None and b is not None:
                pairs.append(((v.path, v.call, i), ArrayPair("output", v.path, v.ms_path, v.path, "pynative", a, b,
                                                             v.path)))
    return pairs


def _judge(run, feeds, pairs: Dict, comparisons: Dict) -> None:
    """The rounding envelope for the own outputs near or beyond their tolerance: PyTorch's
    layers fed the same inputs again, in float64 and moved by a few ulps."""
    close = [Candidate(key, c, pairs[key].ms, pairs[key].torch) for key, c in comparisons.items()
             if near(c, pairs[key].torch.dtype.kind == "f")]
    if close:
        torch_feeds = {(v[0], v[1]): f for v, f in _by_torch_path(run, feeds).items()}
        judge_envelope(close, lambda spec: _rerun(run, torch_feeds, spec))


def _by_torch_path(run, feeds):
    """The feeds keyed by PyTorch path (the MindSpore path's aligned one)."""
    found = {}
    for (ms_path, call), feed in feeds.items():
        path = run.localizer.align(ms_path)
        if path is not None:
            found[(path, call)] = feed
    return found


def _rerun(run, feeds, spec):
    """PyTorch's model fed ``feeds`` again as ``spec`` asks: in float64, or with its weights,
    layer outputs and the fed inputs moved by ``spec.ulps``."""
    from ..backends import torch as tb
    from ..backends.replay import Feed, fed

    if spec.cast is not None:
        if getattr(run, "_own_module64", None) is None:
            run._own_module64 = tb.float64_copy(run.torch_module)
        module, perturb, moved = run._own_module64, None, feeds
    else:
        module = run.torch_module
        perturb = tb.perturbed(module, seed=draw_seed(run.seed, spec.draw), ulps=spec.ulps)
        moved = {key: Feed(tuple(_move(a, run.seed, spec, f"{key}:{i}") for i, a in enumerate(f.arrays)), f.names)
                 for key, f in feeds.items()}
    tb.set_buffers(module, run.torch_start)
    tb.prepare(seed=run.seed, device=run.device)
    import contextlib

    with perturb or contextlib.nullcontext(), fed(module, moved, framework="torch") as got:
        run_side(lambda: tb.Pass(module, run.data, grads=False, device=run.device,
                                 cast=_float64() if spec.cast else None), "PyTorch (layers fed)")
        statistics = buffers_of(tb, module, run.wmap, "torch") if run.train else {}
    values = [((path, call, i), a) for (path, call), outs in got.outputs.items() for i, a in enumerate(outs)]
    return values + [((name.rpartition(".")[0], "buffer", name), a) for name, a in statistics.items()]


def _verdicts(verdicts: List[LayerVerdict], comparisons: Dict, errors: Dict) -> List[OwnError]:
    """Set each forward verdict's own figures and status; the layers with own error, in order.
    A container is "own" only where none of its sub-layers is: else its error is theirs."""
    worst: Dict[Tuple[str, int], List] = {}
    for key, c in comparisons.items():
        if key[1] != "buffer":
            worst.setdefault(key[:2], []).append((c, errors[key]))
    found, owning = [], []
    for v in verdicts:
        measured = worst.get((v.path, v.call))
        if not measured:
            v.own_status = "inherited" if v.status in ("FAIL", "downstream", "contains") else ""
            continue
        v.own_error = max(error for _, error in measured)
        v.own_margin = max(c.margin for c, _ in measured)
        failed = any(not c.passed for c, _ in measured)
        inside = any(p.startswith(v.path + ".") for p in owning)
        if failed and not inside:
            v.own_status = "own"
            owning.append(v.path)
            found.append(OwnError(v.path, "forward", ms_path=v.ms_path, label=v.label, margin=v.own_margin))
        elif v.out_margin > 1.0 or failed:
            v.own_status = "inherited"
        else:
            v.own_status = "ok"
    return found


def _buffer_errors(comparisons: Dict) -> List[OwnError]:
    """Layers whose running statistics, updated from their fed inputs, are out of bounds."""
    found, seen = [], set()
    for (layer, kind, name), c in ((k, c) for k, c in comparisons.items() if k[1] == "buffer"):
        if not c.passed and layer not in seen:
            seen.add(layer)
            found.append(OwnError(layer, "buffer", margin=c.margin))
    return found


def _float64():
    import torch

    return torch.float64


def _move(array, seed: int, spec, name: str):
    if array is None:
        return None
    from .inputs import Inputs

    return perturbed_inputs(Inputs((array,), {}, {}), seed, spec.draw, spec.ulps).args[0]
