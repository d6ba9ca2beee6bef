"""The known-mismatch registry on a failure: the likely causes the message names, and each
layer's own error given the causes found at that layer (see :mod:`parity.registry`)."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Dict, List, NamedTuple, Optional, Set, Tuple

from ...registry.diagnosis import UNSUPPORTED, Diagnosis, diagnose, likely_causes, observed
from .messages import fmt

__all__ = ["Replayed", "confirm", "failure_causes", "own_error_causes"]


def _merged(found: List[Diagnosis]) -> Tuple[tuple, tuple, float]:
    """The changes of several causes at one layer, applied together (as
    :func:`parity.backends.torch.altered` takes them)."""
    attributes: tuple = ()
    pads: tuple = ()
    value = 0.0
    for d in found:
        assert d.replay is not None
        attributes += d.replay.attributes
        if d.replay.pads:
            pads, value = d.replay.pads, d.replay.value
    return attributes, pads, value


def failure_causes(ms_cell, torch_module, result, device: str, mode: str, found=None) -> List[str]:
    """The registry's known mismatches that plausibly explain the failure, most likely first,
    those at the first divergent layer ahead of the rest; judged on the shapes the layers saw
    and, where a layer diverged, only at layers that did (when the layers were captured).
    ``found``: the registry's diagnoses of the pair, where they were made already."""
    at = None
    if result.layers is not None:
        for direction in ("forward", "backward"):
            verdict, _ = result.layers.first(direction)
            if verdict is not None:
                at = verdict.path
                break
    if at is None and result.failures and result.failures[0].layer:
        at = result.failures[0].layer
    seen = None
    if result.layers is not None:
        seen = observed(result.layers, [(c.layer, c.kind) for c in result.failures if c.layer])
        passed = _own_error_passed(result.layers)
        if passed:  # fed PyTorch's inputs, such a layer computes what PyTorch does: it explains nothing
            try:
                if found is None:
                    found = diagnose(ms_cell, torch_module, device=device, mode=mode, seen=seen)
            except Exception:  # the registry helps the message; it never hides the failure
                return []
            found = [d for d in found if d.path not in passed]
    return likely_causes(ms_cell, torch_module, at=at, device=device, mode=mode, seen=seen, found=found)


def _own_error_passed(layers) -> Set[str]:
    """The PyTorch paths of the layers whose own error was measured and passed in every call and
    direction (none of them in ``layers.own_errors``)."""
    if not layers.own_measured:
        return set()
    own = {e.layer for e in layers.own_errors}
    measured = [v for v in layers.forward + layers.backward if v.own_status]
    out = {v.path for v in measured if v.own_status in ("ok", "inherited")}
    return out - own - {v.path for v in measured if v.own_status == "own"}


def own_error_causes(ms_cell, torch_module, result, device: str, mode: str):
    """Give each layer with its own error (``result.layers.own_errors``) the registry's known
    mismatches found at that layer, most likely first, each confirmed by replaying it where it can
    be (see :func:`confirm`): one that does not reproduce MindSpore's output, or cannot be replayed,
    is listed apart as unconfirmed. Return the registry's diagnoses of the pair (for
    :func:`failure_causes`: a replayed cause that did not reproduce MindSpore's output left out, a
    confirmed one saying so), or None where none were made."""
    layers = result.layers
    replayable, layers.replayable = layers.replayable, None  # it holds arrays: used once, here
    own = layers.own_errors
    if not own:
        return None
    seen = observed(layers, [(c.layer, c.kind) for c in result.failures if c.layer])
    try:  # judged on the shapes the layers saw, as the failure's likely causes are
        found = diagnose(ms_cell, torch_module, device=device, mode=mode, seen=seen)
    except Exception:  # the registry helps the message; it never hides the failure
        return None
    likely = [d for d in found if d.score >= UNSUPPORTED]
    at = {e.layer for e in own if e.layer}
    if replayable is None:  # PyTorch's layers do not run here (a recorded reference): listed as found
        why = "PyTorch's layers are not run against a recorded reference (check it live to replay it)"
        marked = {id(d): replace(d, evidence=f"{d.evidence}; not confirmed: {why}") for d in likely if d.path in at}
        layers.own_errors = [
            replace(e, causes=tuple(marked.get(id(d), d).cause() for d in likely if d.path == e.layer)) for e in own
        ]
        return [marked.get(id(d), d) for d in found]
    candidates = [d for d in likely if d.path in at]
    shown = [_settled(o) for o in confirm(candidates, replayable)]
    layers.own_errors = [
        replace(
            e,
            causes=tuple(d.cause() for d, ruled_out in shown if d.path == e.layer and not ruled_out),
            unconfirmed=tuple(ruled_out for d, ruled_out in shown if d.path == e.layer and ruled_out),
        )
        for e in own
    ]
    by_found = {id(c): settled for c, settled in zip(candidates, shown)}
    kept = []
    for d in found:
        d, ruled_out = by_found.get(id(d), (d, ""))
        if not ruled_out:
            kept.append(d)
    return kept


class Replayed(NamedTuple):
    """What a candidate's replay showed: ``diagnosis`` (``confirmed`` set where it reproduced
    MindSpore's output), ``why`` (what the replay showed, or why there was none) and ``ruled_out``
    (replayed, and PyTorch's changed layer still differs from MindSpore's)."""

    diagnosis: Diagnosis
    why: str = ""
    ruled_out: bool = False


def _settled(o: Replayed) -> Tuple[Diagnosis, str]:
    """A replayed candidate as the message shows it: confirmed, or one that could not be replayed
    saying so (a likely cause still), or ruled out (second: what the replay showed)."""
    d = o.diagnosis
    if d.confirmed:
        return d, ""
    if not o.ruled_out:
        return replace(d, evidence=f"{d.evidence}; not confirmed: {o.why}"), ""
    return d, f"{d} ({o.why})"


def confirm(candidates: List[Diagnosis], replayable) -> List[Replayed]:
    """Each candidate cause at a layer with its own error, replayed: the entry's mismatch applied to
    PyTorch's layer (its attributes as MindSpore's layer has them, its input padded as MindSpore
    pads it), PyTorch's layers fed their captured inputs again. A cause is confirmed (``confirmed``
    set) when the changed layer's every own value out of bounds then lies within tolerance of
    MindSpore's; else each :class:`Replayed` says what the replay showed, or why there was none.
    Causes at one layer are replayed one at a time, and, where none reproduces MindSpore's output
    alone, together; causes at different layers in the same rerun (each layer is fed PyTorch's
    inputs, so one layer's change reaches no other). Never raises."""
    outcome: Dict[int, Replayed] = {}
    for d in candidates:
        if d.replay is None:
            outcome[id(d)] = Replayed(d, d.unreplayable or "the entry has no replay")
    rounds: List[List[Diagnosis]] = []
    for d in candidates:
        if d.replay is not None:
            free = next((r for r in rounds if all(x.path != d.path for x in r)), None)
            if free is None:
                free = []
                rounds.append(free)
            free.append(d)
    for group in rounds:
        _replay(group, {d.path: [d] for d in group}, replayable, outcome)
    together: Dict[str, List[Diagnosis]] = {}
    for d in candidates:
        if d.replay is not None:
            together.setdefault(d.path, []).append(d)
    retry = {
        path: ds
        for path, ds in together.items()
        if len(ds) > 1 and not any(outcome[id(d)].diagnosis.confirmed for d in ds)
    }
    if retry:
        _replay([d for ds in retry.values() for d in ds], retry, replayable, outcome, jointly=True)
    return [outcome[id(d)] for d in candidates]


def _replay(group: List[Diagnosis], by_layer: Dict[str, List[Diagnosis]], replayable, outcome, jointly=False) -> None:
    """Replay each layer's causes in ``by_layer`` (several at one layer: together) in one rerun and
    set ``outcome`` for each of ``group``."""
    changes = {path: _merged(ds) for path, ds in by_layer.items()}
    keys = [k for k in replayable.failed if k[1] in changes]
    keep = {(k[1], k[2]) for k in keys if k[0] != "buffer"}
    try:
        values = dict(replayable.rerun(changes, keep, any(k[0] == "backward" for k in keys)))
    except Exception as exc:  # a replay is evidence for the message; it never hides the failure
        text = str(exc).splitlines()[0] if str(exc) else ""
        for d in group:
            if not jointly:
                outcome[id(d)] = Replayed(d, f"its replay raised {type(exc).__name__}: {text}")
        return
    for path, ds in by_layer.items():
        mine = [k for k in keys if k[1] == path]
        worst: Optional[float] = None
        for key in mine:
            judged = replayable.judge(key, values.get(key))
            margin = math.inf if judged is None else (0.0 if judged.passed else judged.margin)
            worst = margin if worst is None else max(worst, margin)
        applied = "; ".join(str(d.replay) for d in ds)
        if not mine:
            why = "its own error lies in its code between sub-layers, which a replay of the layer does not reach"
            for d in ds:
                if not jointly:
                    outcome[id(d)] = Replayed(d, why)
            continue
        if worst == 0.0:
            both = f" together with {', '.join(repr(x.entry.id) for x in ds[1:])}" if len(ds) > 1 else ""
            shown = f"PyTorch's layer with {applied} reproduces MindSpore's output{both}"
            for d in ds:
                outcome[id(d)] = Replayed(replace(d, confirmed=shown))
            continue
        if not jointly:
            still = "another shape" if worst is None or math.isinf(worst) else f"{fmt(worst)}x its tolerance"
            for d in ds:
                outcome[id(d)] = Replayed(
                    d, f"replayed: PyTorch's layer with {applied} still differs from MindSpore's ({still})", True
                )
