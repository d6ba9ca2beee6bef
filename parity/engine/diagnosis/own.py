"""Each layer's own error: on a failing check, every layer is fed PyTorch's captured inputs, and
its own output judged against PyTorch's as any tensor is (tolerance, then the rounding envelope).

Accumulated error hides a second cause behind the first: once one layer diverges, every later
layer's inputs differ and its error looks inherited. Fed the reference's inputs, a layer differs
only by what it computes itself. MindSpore's model runs once more (:func:`parity.backends.replay.fed`):
every aligned layer call is fed PyTorch's inputs and, its own output kept, returns PyTorch's
output, so that the code between layers computes from PyTorch's values too; what that code
computes as a layer's inputs is the own error of its caller's code (a container's, or the model's
own: ``layer`` ``""``). Backward, where gradients are compared and the first divergence is in the
backward pass (the forward agrees), the same pass's backward starts each call from PyTorch's
gradient at its outputs, and PyTorch's gradient flows on out of it. PyTorch's own values are those already captured; PyTorch runs again, fed the
same way, only where an own error is near its tolerance (the envelope's reruns). In training mode
the running statistics each layer updates from its fed inputs are compared too (``"buffer"``).

A layer's ``own_status``: ``"own"`` (its own error is out of bounds), ``"inherited"`` (out of
bounds in the check, but not when fed PyTorch's inputs), ``"ok"``, or ``""`` (not measured: not
aligned, or its call could not be fed).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Dict, List, Tuple

import torch

from ...backends import mindspore as msb
from ...backends import replay
from ...backends import torch as tb
from ...judge.envelope import Candidate, judge_envelope, near
from ...judge.metrics import ArrayPair, compare_pair
from ..inputs import Inputs
from ..passes import buffers_of, draw_seed, perturbed_inputs
from ..side_errors import backward as side_backward
from ..side_errors import run_side
from .verdicts import LayerVerdict, pair_metrics

__all__ = ["OwnError", "measure_own_errors"]


@dataclass(frozen=True)
class OwnError:
    """A layer whose own error is out of bounds, in the order the check met it."""

    layer: str  # the PyTorch path
    direction: str  # "forward", "backward" or "buffer" (its running statistics, in training mode)
    causes: Tuple[str, ...] = ()  # the registry's likely causes at this layer
    ms_path: str = ""
    label: str = ""  # the path with its call number, where the layer was called more than once
    margin: float = 0.0  # greatest |diff| / allowed of its own output

    def as_dict(self) -> dict:
        return {"layer": self.layer, "direction": self.direction, "causes": list(self.causes)}


def measure_own_errors(run, table, chain) -> None:
    """Feed every aligned layer call PyTorch's inputs (``run``: the check's captured
    :class:`parity.engine.passes.Passes`, its PyTorch recording still holding its arrays), judge
    each layer's own output (and gradient), and set ``own_*`` on ``table``'s verdicts and
    ``table.own_errors`` (causes left empty: see :func:`parity.engine.diagnosis.causes.own_error_causes`)."""
    forward = table.first("forward")[0] is not None
    # Backward where the first divergence is there: after a forward divergence every gradient
    # differs downstream of it, and the forward's own errors name the cause (at a third of the cost).
    backward = bool(run.grads and not forward and table.first("backward")[0] is not None and not msb.VJP_RERUNS_FORWARD)
    if not (forward or backward or (run.train and run.torch_buffers)):
        return  # nothing diverged that a layer could own
    feeds = _feeds(run, table.forward, "forward")
    grad_feeds = _feeds(run, table.backward, "backward") if backward else None
    ms_after = {name: msb.read(run.ms_cell, name) for name in run.ms_start}
    torch_after = tb.buffers(run.torch_module)
    for name, value in run.ms_start.items():
        msb.write(run.ms_cell, name, value)
    with replay.fed(run.ms_cell, feeds, framework="mindspore", grads=grad_feeds) as got:
        side = run_side(
            lambda: msb.Pass(run.ms_cell, run.ms_data, grads=backward, mode="pynative"), "MindSpore (layers fed)"
        )
        ms_buffers = buffers_of(msb, run.ms_cell, run.wmap, "ms") if run.train else {}
        if backward:
            side_backward(side, run.cotangents, [], "MindSpore (layers fed)")
    for name, value in ms_after.items():
        msb.write(run.ms_cell, name, value)
    pairs = _own_pairs(run, table.forward, "forward", got.outputs) + _code_pairs(run, table.forward, got.inputs, "code")
    if backward:
        pairs += _own_pairs(run, table.backward, "backward", got.grad_inputs) + _code_pairs(
            run, table.backward, got.grad_outputs, "grad code"
        )
    pairs += [
        (
            ("buffer", name.rpartition(".")[0], name, 0),
            ArrayPair(
                "buffer",
                name,
                name,
                name,
                "pynative",
                ms_buffers[name],
                run.torch_buffers[name],
                name.rpartition(".")[0],
            ),
        )
        for name in ms_buffers
        if name in run.torch_buffers
    ]
    comparisons = {key: compare_pair(pair, chain, False) for key, pair in pairs}
    errors = {key: pair_metrics(pair.ms, pair.torch, comparisons[key].tolerance)[0] for key, pair in pairs}
    _own_envelope(run, feeds, grad_feeds, dict(pairs), comparisons)
    tb.set_buffers(run.torch_module, torch_after)
    table.own_measured = True
    table.own_errors = (
        _verdicts(table.forward, "forward", comparisons, errors)
        + (_verdicts(table.backward, "backward", comparisons, errors) if backward else [])
        + _buffer_errors(comparisons)
    )


def _feeds(run, verdicts: List[LayerVerdict], direction: str):
    """(MindSpore path, call) -> what flows into its aligned PyTorch call in ``direction``: its
    inputs forward, the gradient arriving at its outputs backward."""
    feeds = {}
    for v in verdicts:
        ref = run.torch_recording.get(v.path, v.call) if v.status != "unaligned" else None
        if ref is None:
            continue
        if direction == "backward":
            if ref.grad_outputs is not None and ref.grad_inputs is not None:
                feeds[(v.ms_path, v.call)] = replay.Feed(tuple(ref.grad_outputs), None, tuple(ref.grad_inputs))
            continue
        if ref.inputs is None or ref.outputs is None:
            continue
        ms_call = run.ms_recording.get(v.ms_path, v.call) if run.ms_recording is not None else None
        named = ref.keywords or (ms_call is not None and ms_call.keywords)
        feeds[(v.ms_path, v.call)] = replay.Feed(
            tuple(ref.inputs), tuple(ref.input_names) if named and ref.input_names else None, tuple(ref.outputs)
        )
    return feeds


def _own_pairs(run, verdicts, direction: str, found):
    """((direction, path, call, i), ArrayPair) of every fed call's outputs (forward) or what
    flowed back out of it (backward): MindSpore's, fed, against PyTorch's captured ones."""
    pairs = []
    for v in verdicts:
        key = (v.ms_path, v.call)
        ref = run.torch_recording.get(v.path, v.call)
        if key not in found or ref is None:
            continue
        ms_out = found[key]
        ref_out = ref.outputs if direction == "forward" else ref.grad_inputs
        if ref_out is None or len(ms_out) != len(ref_out):
            continue
        for i, (a, b) in enumerate(zip(ms_out, ref_out)):
            if a is not None and b is not None:
                pairs.append(
                    (
                        (direction, v.path, v.call, i),
                        ArrayPair("output", v.path, v.ms_path, v.path, "pynative", a, b, v.path),
                    )
                )
    return pairs


def _code_pairs(run, verdicts, found, kind: str):
    """((``kind``, path, call, i), ArrayPair) of what the code around each fed call computed as
    its inputs (from the reference's values: every layer before it returned PyTorch's outputs)
    against what it was fed, or backward the gradient it computed for the call's outputs against
    PyTorch's: the own error of the code between layers."""
    pairs = []
    for v in verdicts:
        for i, (ms, fed) in enumerate(found.get((v.ms_path, v.call), ())):
            if ms.shape == fed.shape:
                pairs.append(
                    (
                        (kind, v.path, v.call, i),
                        ArrayPair("output", v.path, v.ms_path, v.path, "pynative", ms, fed, v.path),
                    )
                )
    return pairs


def _own_envelope(run, feeds, grad_feeds, pairs: Dict, comparisons: Dict) -> None:
    """The rounding envelope for the own outputs beyond their tolerance (the envelope can only
    clear them; one within it is within bounds already): PyTorch's layers fed the same inputs
    again, in float64 and moved by a few ulps."""
    close = [
        Candidate(key, c, pairs[key].ms, pairs[key].torch)
        for key, c in comparisons.items()
        if c.margin > 1.0 and near(c, pairs[key].torch.dtype.kind == "f")
    ]
    if close:
        backward = grad_feeds is not None and any(c.key[0] in ("backward", "grad code") for c in close)
        torch_grads = _by_torch_path(run, grad_feeds) if backward else None
        keep = {c.key[1:3] for c in close}  # only the candidates' values are kept in the reruns
        torch_feeds = _needed(_by_torch_path(run, feeds), close)
        torch_grads = _needed(torch_grads, close) if torch_grads is not None else None
        judge_envelope(close, lambda spec: _rerun(run, torch_feeds, torch_grads, spec, keep))


def _needed(feeds, close):
    """The feeds a rerun needs for the candidates' values to be their own: a layer's own (its
    sub-layers' too, for a container's own code), and for the code before a sub-layer, every call
    within the code's owner (its sub-layers return PyTorch's values). Every other layer computes as
    the rerun has it, which moves nothing the candidates see."""
    scopes = set()
    for c in close:
        kind, path = c.key[0], c.key[1]
        scopes.add(path.rpartition(".")[0] if kind in ("code", "grad code") else path)
    if "" in scopes:
        return feeds
    return {
        key: f for key, f in feeds.items() if any(key[0] == scope or key[0].startswith(scope + ".") for scope in scopes)
    }


def _by_torch_path(run, feeds):
    """The feeds keyed by PyTorch path (the MindSpore path's aligned one)."""
    found = {}
    for (ms_path, call), feed in feeds.items():
        path = run.localizer.align(ms_path)
        if path is not None:
            found[(path, call)] = feed
    return found


def _rerun(run, feeds, grad_feeds, spec, keep):
    """PyTorch's model fed ``feeds`` (and ``grad_feeds``) again as ``spec`` asks: in float64, or
    with its weights, layer outputs and the fed tensors moved by ``spec.ulps``."""
    if spec.cast is not None:
        if getattr(run, "_own_module64", None) is None:
            run._own_module64 = tb.float64_copy(run.torch_module)
        module, perturb = run._own_module64, contextlib.nullcontext()
    else:
        module = run.torch_module
        perturb = tb.perturbed(module, seed=draw_seed(run.seed, spec.draw), ulps=spec.ulps)
        feeds, grad_feeds = _moved(feeds, run.seed, spec), _moved(grad_feeds, run.seed, spec)
    tb.set_buffers(module, run.torch_start)
    tb.prepare(seed=run.seed, device=run.device)
    grads = grad_feeds is not None
    with perturb, replay.fed(module, feeds, framework="torch", grads=grad_feeds, keep=keep) as got:
        side = run_side(
            lambda: tb.Pass(
                module, run.data, grads=grads, device=run.device, cast=torch.float64 if spec.cast else None
            ),
            "PyTorch (layers fed)",
        )
        statistics = buffers_of(tb, module, run.wmap, "torch") if run.train else {}
        if grads:
            side_backward(side, run.cotangents, [], "PyTorch (layers fed)")
    values = [(("forward", path, call, i), a) for (path, call), outs in got.outputs.items() for i, a in enumerate(outs)]
    values += [
        (("backward", path, call, i), a) for (path, call), outs in got.grad_inputs.items() for i, a in enumerate(outs)
    ]
    values += [
        (("code", path, call, i), a) for (path, call), found in got.inputs.items() for i, (a, _) in enumerate(found)
    ]
    values += [
        (("grad code", path, call, i), a)
        for (path, call), found in got.grad_outputs.items()
        for i, (a, _) in enumerate(found)
    ]
    return values + [(("buffer", name.rpartition(".")[0], name, 0), a) for name, a in statistics.items()]


def _moved(feeds, seed: int, spec):
    """``feeds`` with every floating array moved by ``spec.ulps`` (seeded by ``spec.draw``)."""
    if feeds is None:
        return None
    moved = {}
    for key, feed in feeds.items():
        arrays = tuple(
            None if a is None else perturbed_inputs(Inputs((a,), {}, {}), seed, spec.draw, spec.ulps).args[0]
            for a in feed.arrays
        )
        moved[key] = replay.Feed(arrays, feed.names)
    return moved


def _verdicts(verdicts: List[LayerVerdict], direction: str, comparisons: Dict, errors: Dict) -> List[OwnError]:
    """Set each verdict's own figures and status; the layers with own error, in order. Every layer
    returned PyTorch's outputs once its own were kept, so a container's own output is its own
    code's, after its last sub-layer; what the code computed as a layer's inputs is the own error
    of the code before it, its caller's (a container's, or the model's own code)."""
    measured: Dict[Tuple[str, int], List] = {}
    for key, c in comparisons.items():
        if key[0] == direction:
            measured.setdefault(key[1:3], []).append((c, errors[key]))
    code = _code_before(verdicts, comparisons, errors, "code" if direction == "forward" else "grad code")
    where = "before" if direction == "forward" else "after"
    found = []
    for v in verdicts:
        before = code.pop(id(v), [])
        for child, c, error in before:  # the code of ``v`` before its sub-layer ``child``
            measured.setdefault((v.path, v.call), []).append((c, error))
            if not c.passed:
                found.append(
                    OwnError(
                        v.path,
                        direction,
                        ms_path=v.ms_path,
                        margin=c.margin,
                        label=f"{v.label} (its code {where} '{child.label}')",
                    )
                )
        own = measured.get((v.path, v.call))
        if not own:
            v.own_status = "inherited" if v.status in ("FAIL", "downstream", "contains") else ""
            continue
        v.own_error = max(error for _, error in own)
        v.own_margin = max(c.margin for c, _ in own)
        outputs = [c for c, _ in own[: len(own) - len(before)]]
        if any(not c.passed for c in outputs):
            found.append(
                OwnError(v.path, direction, ms_path=v.ms_path, label=v.label, margin=max(c.margin for c in outputs))
            )
        if any(not c.passed for c, _ in own):
            v.own_status = "own"
        else:
            v.own_status = "inherited" if v.out_margin > 1.0 else "ok"
    found += [
        OwnError("", direction, margin=c.margin, label=f"the model's own code, {where} '{child.label}'")
        for child, c, _ in code.pop(None, [])
        if not c.passed
    ]
    return found


def _code_before(verdicts: List[LayerVerdict], comparisons: Dict, errors: Dict, kind: str) -> Dict:
    """id(container verdict) (None: the model itself) -> [(sub-layer verdict, comparison, error)]
    of what the container's code computed as each sub-layer's inputs: a container's forward call
    comes after its sub-layers' calls, the nearest one holding its path."""
    found: Dict = {}
    for i, v in enumerate(verdicts):
        owner, path = None, v.path
        while owner is None and "." in path:  # a list of layers is not called: its caller's code
            path = path.rpartition(".")[0]
            owner = next((w for w in verdicts[i + 1 :] if w.path == path), None)
        for key, c in comparisons.items():
            if key[0] == kind and key[1:3] == (v.path, v.call):
                found.setdefault(id(owner) if owner is not None else None, []).append((v, c, errors[key]))
    return found


def _buffer_errors(comparisons: Dict) -> List[OwnError]:
    """Layers whose running statistics, updated from their fed inputs, are out of bounds."""
    found, seen = [], set()
    for key, c in comparisons.items():
        if key[0] == "buffer" and not c.passed and key[1] not in seen:
            seen.add(key[1])
            found.append(OwnError(key[1], "buffer", label=key[1], margin=c.margin))
    return found
