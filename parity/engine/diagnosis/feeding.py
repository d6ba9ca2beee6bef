"""Each layer's own error, whoever runs PyTorch: MindSpore's pass with every aligned layer call
fed PyTorch's captured inputs, and the judgement of each layer's own output (see :mod:`.own`,
which runs PyTorch's layers again for the envelope; a check against a recorded reference reads
those runs from the recording). Imports MindSpore's adapter, never PyTorch."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Callable, Dict, List, Optional, Tuple

from ...backends import mindspore as msb
from ...backends import replay
from ...judge.envelope import Candidate, judge_envelope, near
from ...judge.layouts import in_layout
from ...judge.metrics import ArrayPair, Comparison, compare_pair
from ..compared import buffers_of
from ..side_errors import backward as side_backward
from ..side_errors import run_side
from .verdicts import LayerVerdict, pair_metrics

__all__ = ["OwnError", "Replayable", "measure", "torch_feeds"]


@dataclass(frozen=True)
class OwnError:
    """A layer whose own error is out of bounds, in the order the check met it."""

    layer: str  # the PyTorch path
    direction: str  # "forward", "backward" or "buffer" (its running statistics, in training mode)
    causes: Tuple[str, ...] = ()  # the registry's likely causes at this layer (confirmed, where replayed)
    ms_path: str = ""
    label: str = ""  # the path with its call number, where the layer was called more than once
    margin: float = 0.0  # greatest |diff| / allowed of its own output

    # the registry's entries at this layer that a replay did not confirm, each with what it showed
    unconfirmed: Tuple[str, ...] = ()

    def as_dict(self) -> dict:
        return {"layer": self.layer, "direction": self.direction, "causes": list(self.causes)}


@dataclass
class Replayable:
    """What a known mismatch's replay at a layer is judged against: each own value out of bounds
    (key as :func:`measure` keys them -> MindSpore's fed value against PyTorch's, and its comparison),
    the tolerance chain, and ``rerun(changes, keep, backward)``: PyTorch's layers fed as before with
    ``changes`` (PyTorch path -> ``(attributes, pads, value)``, see
    :func:`parity.backends.torch.altered`) applied, its values as ``(key, array)``."""

    failed: Dict[tuple, Tuple[ArrayPair, Comparison]]
    chain: Any
    rerun: Callable

    def judge(self, key: tuple, value) -> Optional[Comparison]:
        """``value`` (PyTorch's, replayed) against MindSpore's fed value at ``key``; None where its
        shape differs from MindSpore's (a replay may change the shape: 'same' padding)."""
        pair = self.failed[key][0]
        if value is None or value.shape != pair.ms.shape:  # PyTorch's changed layer against MindSpore's
            return None
        return compare_pair(replace(pair, torch=value), self.chain, False)


def measure(run, table, chain, rerun, rerun_altered=None) -> None:
    """Feed every aligned layer call PyTorch's inputs (``run``: the check's captured passes, its
    PyTorch recording still holding its arrays), judge each layer's own output (and gradient), and
    set ``own_*`` on ``table``'s verdicts and ``table.own_errors`` (causes left empty: see
    :func:`parity.engine.diagnosis.causes.own_error_causes`). ``rerun(feeds, grad_feeds, spec,
    keep)``: PyTorch's layers fed again as the envelope's ``spec`` asks (the feeds keyed by PyTorch
    path), its values as ``(key, array)``; None: each own error is judged by its tolerance alone.
    ``rerun_altered(feeds, grad_feeds, keep, changes)``: PyTorch's layers fed again with known
    mismatches applied (:class:`Replayable`; ``table.replayable`` is set where given)."""
    forward = table.first("forward")[0] is not None
    # Backward where the first divergence is there: after a forward divergence every gradient
    # differs downstream of it, and the forward's own errors name the cause (at a third of the cost).
    backward = bool(run.grads and not forward and table.first("backward")[0] is not None and not msb.VJP_RERUNS_FORWARD)
    if not (forward or backward or (run.train and run.torch_buffers)):
        return  # nothing diverged that a layer could own
    feeds = _feeds(run, table.forward, "forward")
    grad_feeds = _feeds(run, table.backward, "backward") if backward else None
    ms_after = {name: msb.read(run.ms_cell, name) for name in run.ms_start}
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
    pairs = _own_pairs(run, table.forward, "forward", got.outputs, got.fed)
    pairs += _code_pairs(run, table.forward, got.inputs, "code")
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
    pairs_by_key = dict(pairs)
    if rerun is not None:  # None: PyTorch cannot run again (a reference recorded without those runs)
        _own_envelope(run, feeds, grad_feeds, pairs_by_key, comparisons, rerun)
    table.own_measured = True
    if rerun_altered is not None:
        torch_feeds = _by_torch_path(run, feeds)
        torch_grads = _by_torch_path(run, grad_feeds) if grad_feeds is not None else None
        table.replayable = Replayable(
            {
                key: (pairs_by_key[key], c)
                for key, c in comparisons.items()
                if not c.passed and key[0] != "code" and key[0] != "grad code"
            },
            chain,
            lambda changes, keep, backward: rerun_altered(
                torch_feeds, torch_grads if backward else None, keep, changes
            ),
        )
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


def _own_pairs(run, verdicts, direction: str, found, fed=None):
    """((direction, path, call, i), ArrayPair) of every fed call's outputs (forward) or what
    flowed back out of it (backward): MindSpore's, fed, against PyTorch's captured ones. ``fed``:
    the calls that were fed, where only those count (a call given inputs of other shapes than it
    was called with is not fed: a wrapper against the layer inside it, a wrong pair)."""
    pairs = []
    for v in verdicts:
        key = (v.ms_path, v.call)
        ref = run.torch_recording.get(v.path, v.call)
        if key not in found or ref is None or (fed is not None and key not in fed):
            continue  # not fed (PyTorch's inputs have other shapes): its output is not its own error
        ms_out = found[key]
        ref_out = ref.outputs if direction == "forward" else ref.grad_inputs
        if ref_out is None or len(ms_out) != len(ref_out):
            continue
        for i, (a, b) in enumerate(zip(ms_out, ref_out)):
            if a is not None and b is not None:
                pairs.append(
                    (
                        (direction, v.path, v.call, i),
                        ArrayPair("output", v.path, v.ms_path, v.path, "pynative", in_layout(a, b.shape), b, v.path),
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


def _own_envelope(run, feeds, grad_feeds, pairs: Dict, comparisons: Dict, rerun) -> None:
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
        judge_envelope(close, lambda spec: rerun(torch_feeds, torch_grads, spec, keep))


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


def torch_feeds(recording, grads: bool):
    """Every call of PyTorch's ``recording`` as a feed of its own (forward), and with ``grads`` the
    gradients at its outputs (backward), keyed by PyTorch path: what a rerun of PyTorch's layers fed
    every call's recorded values is given."""
    feeds, grad_feeds = {}, {}
    for call in recording.calls:
        if call.inputs is not None and call.outputs is not None:
            names = tuple(call.input_names) if call.keywords and call.input_names else None
            feeds[call.key] = replay.Feed(tuple(call.inputs), names, tuple(call.outputs))
        if grads and call.grad_outputs is not None and call.grad_inputs is not None:
            grad_feeds[call.key] = replay.Feed(tuple(call.grad_outputs), None, tuple(call.grad_inputs))
    return feeds, (grad_feeds if grads else None)


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
