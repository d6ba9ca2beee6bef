"""The known-mismatch registry at work in a check: what explains a failure, a parameter that
cannot be paired, or a dtype MindSpore has no kernel for (see :mod:`parity.registry`)."""

from __future__ import annotations

from typing import List, Optional

from ..backends import amp as amp_backend
from ..errors import ParityUnsupported, ParityUsageError
from ..weights.transfer import TORCH_ONLY, WeightMap, map_weights

__all__ = ["map_pair_weights", "refuse_unsupported_dtype", "failure_causes", "own_error_causes"]


def map_pair_weights(ms_cell, torch_module, name_map, device: str) -> WeightMap:
    """:func:`map_weights`; where parameters cannot be paired, the usage error names the known
    mismatches that explain a missing or extra parameter (``has_bias`` and the like)."""
    __tracebackhide__ = True
    from ..backends import mindspore as msb
    from ..backends import torch as tb
    from ..registry.diagnosis import parameter_causes

    ms_slots, torch_slots = msb.slots(ms_cell), tb.slots(torch_module)
    try:
        return map_weights(ms_slots, torch_slots, name_map)
    except ParityUsageError as exc:
        causes = parameter_causes(ms_cell, torch_module, ms_slots, torch_slots, device=device, ignore=TORCH_ONLY)
        if not causes:
            raise
        raise ParityUsageError("\n".join([str(exc), ""] + [f"Likely cause: {c}" for c in causes])) from None


def refuse_unsupported_dtype(
    ms_cell, torch_module, dtype: Optional[str], device: str, amp=None, user_cell=None
) -> None:
    """Before anything runs: layers the registry knows to lack a kernel for the half dtype
    MindSpore computes in on ``device`` (bfloat16 on CPU) make a :class:`ParityUnsupported`
    (``amp``: a mixed-precision level chose the dtype; O1's layers cast inside their code, and their
    classes derive from copies of MindSpore's, so they are looked up on ``user_cell``, same paths)."""
    if dtype is None:
        return
    from ..registry.diagnosis import unsupported_dtype

    casts = amp_backend.half_casts(ms_cell, dtype) if amp is not None else None
    found = unsupported_dtype(
        user_cell if casts else ms_cell, torch_module, dtype=dtype, device=device, layer_dtypes=casts
    )
    if found:
        lines = [f"  '{d.ms_path or d.path}': {d.entry.summary} (known mismatch '{d.entry.id}')" for d in found]
        how = f"mixed precision {amp.level}" if amp is not None else "its Cell's to_float or parameters"
        raise ParityUnsupported(
            "\n".join(
                [
                    f"MindSpore computes in {dtype} here ({how}), and {len(found)} of its layers "
                    f"have no {dtype} kernel on {device}:"
                ]
                + lines
                + [f"Check this pair in float32 (or float16) on {device}, or where MindSpore has {dtype} kernels."]
            )
        )


def failure_causes(ms_cell, torch_module, result, device: str, mode: str, found=None) -> List[str]:
    """The registry's known mismatches that plausibly explain the failure, most likely first,
    those at the first divergent layer ahead of the rest; judged on the shapes the layers saw
    and, where a layer diverged, only at layers that did (when the layers were captured).
    ``found``: the registry's diagnoses of the pair, where they were made already."""
    from ..registry.diagnosis import likely_causes, observed

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
    return likely_causes(ms_cell, torch_module, at=at, device=device, mode=mode, seen=seen, found=found)


def own_error_causes(ms_cell, torch_module, result, device: str, mode: str):
    """Give each layer with its own error (``result.layers.own_errors``) the registry's known
    mismatches found at that layer, most likely first; return the registry's diagnoses of the
    pair (for :func:`failure_causes`), or None where none were made."""
    from dataclasses import replace

    from ..registry.diagnosis import UNSUPPORTED, diagnose, observed

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
