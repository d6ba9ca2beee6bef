"""The known-mismatch registry on a failure: the likely causes the message names, and each
layer's own error given the causes found at that layer (see :mod:`parity.registry`)."""

from __future__ import annotations

from dataclasses import replace
from typing import List, Set

from ...registry.diagnosis import UNSUPPORTED, diagnose, likely_causes, observed

__all__ = ["failure_causes", "own_error_causes"]


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
    mismatches found at that layer, most likely first; return the registry's diagnoses of the
    pair (for :func:`failure_causes`), or None where none were made."""
    own = result.layers.own_errors
    if not own:
        return None
    seen = observed(result.layers, [(c.layer, c.kind) for c in result.failures if c.layer])
    try:  # judged on the shapes the layers saw, as the failure's likely causes are
        found = diagnose(ms_cell, torch_module, device=device, mode=mode, seen=seen)
    except Exception:  # the registry helps the message; it never hides the failure
        return None
    likely = [d for d in found if d.score >= UNSUPPORTED]
    result.layers.own_errors = [replace(e, causes=tuple(d.cause() for d in likely if d.path == e.layer)) for e in own]
    return found
