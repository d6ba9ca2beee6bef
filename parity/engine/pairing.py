"""The pair's weights, on every check before anything runs: the weight map (a parameter that
cannot be paired explained by the registry's known mismatches), the half dtypes MindSpore has
no kernel for refused, the weights set as ``weights=`` asks, and the running statistics kept to
start again from. :func:`transfer` is :func:`parity.transfer_weights`."""

from __future__ import annotations

from typing import Optional

from ..backends import amp as amp_backend
from ..backends import framework_of
from ..backends import mindspore as msb
from ..backends import torch as tb
from ..errors import ParityUnsupported, ParityUsageError
from ..registry.diagnosis import parameter_causes, unsupported_dtype
from ..weights.transfer import TORCH_ONLY, WeightMap, WeightReport, copy_weights, fill_weights, map_weights
from .settings import CheckOptions, Constant

__all__ = ["map_pair_weights", "refuse_unsupported_dtype", "set_weights", "snapshot", "transfer"]


def map_pair_weights(ms_cell, torch_module, name_map, device: str, ignore=CheckOptions.ignore) -> WeightMap:
    """:func:`map_weights`; where parameters cannot be paired, the usage error names the known
    mismatches that explain a missing or extra parameter (``has_bias`` and the like)."""
    __tracebackhide__ = True
    ms_slots, torch_slots = msb.slots(ms_cell), tb.slots(torch_module)
    try:
        return map_weights(ms_slots, torch_slots, name_map, leave_constants=True, ignore=ignore)
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


def set_weights(weights, wmap, ms_cell, torch_module) -> WeightReport:
    if isinstance(weights, Constant):
        return fill_weights(wmap, ms_cell, torch_module, weights.value)
    if weights == "copy":
        return copy_weights(wmap, torch_module, ms_cell, to_torch=False)
    if weights == "copy_to_torch":
        return copy_weights(wmap, ms_cell, torch_module, to_torch=True)
    return WeightReport(wmap, "as is")


def snapshot(ms_cell, torch_module, wmap):
    """Every non-trainable tensor on both sides (running statistics), and a function restoring them."""
    saved = [
        (backend, model, name, backend.read(model, name))
        for pair in wmap.pairs
        if not pair.trainable
        for backend, model, name in ((msb, ms_cell, pair.ms), (tb, torch_module, pair.torch))
    ]

    def restore():
        for backend, model, name, value in saved:
            backend.write(model, name, value)

    return restore


def transfer(src, dst, *, name_map=None, ignore=()) -> WeightReport:
    """See :func:`parity.transfer_weights`."""
    src_kind, dst_kind = framework_of(src), framework_of(dst)
    if {src_kind, dst_kind} != {"mindspore", "torch"}:
        raise ParityUsageError(
            "transfer_weights(src, dst) needs one mindspore.nn.Cell and one torch.nn.Module, got "
            f"{type(src).__qualname__} ({src_kind or 'neither'}) and {type(dst).__qualname__} ({dst_kind or 'neither'})"
        )
    ms_model, torch_model = (src, dst) if src_kind == "mindspore" else (dst, src)
    wmap = map_weights(msb.slots(ms_model), tb.slots(torch_model), name_map, ignore=ignore)
    return copy_weights(wmap, src, dst, to_torch=src_kind == "mindspore")
