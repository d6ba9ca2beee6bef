"""Half-precision training: each side in its own dtype, judged against the float64 golden
(:mod:`parity.judge.golden`); refused before any step where it could not agree."""

from __future__ import annotations

from typing import List, Optional

import numpy as np

from ...backends import amp as amp_backend
from ...backends import mindspore as msb
from ...backends import torch as tb
from ...errors import ParityUsageError
from ...judge.dtypes import cast, is_floating, narrowest, round_through
from ...judge.golden import GOLDEN_FACTOR
from ...judge.metrics import Comparison
from ..inputs import per_side_inputs
from ..pairing import refuse_unsupported_dtype
from .optimizers import type_name
from .result import TrainingResult

__all__ = ["half_precision", "per_side", "in_half", "halved", "half_notes", "half_causes"]


def half_precision(ms_cell, torch_module, device: str, loss_scale) -> Optional[str]:
    """The half dtype both sides compute in (None: float32), once the pair is known to train in
    one precision with kernels for it; else a usage error (or ParityUnsupported) before any step."""
    ms_dtype, torch_dtype = msb.compute_dtype(ms_cell), tb.compute_dtype(torch_module)
    # a Cell whose own flag is unset holds its precision in its layers: auto_mixed_precision's
    # wrapper (its loss and output run in float32), or to_float on some layers
    own = any(ms_cell.get_flags().get(flag) for flag in ("fp16", "bf16", "fp32"))
    mixed = [] if ms_dtype and (own or not _mixed_layers(ms_cell)) else _mixed_layers(ms_cell)
    if mixed:
        raise ParityUsageError(
            f"check_training(): the MindSpore Cell trains in mixed precision ({len(mixed)} of its layers compute in "
            f"half precision, such as {mixed[0]!r}: mindspore.amp.auto_mixed_precision, or to_float on some "
            "layers); check_training has no torch.autocast counterpart yet. Check the mixed-precision forward and "
            "backward with parity.check(cell, module, inputs, amp='O2') (the level you use), and train the float32 "
            "pair, or to_float(mindspore.float16) on the whole Cell against Module.half()"
        )
    if ms_dtype != torch_dtype:
        raise ParityUsageError(
            f"check_training(): MindSpore computes in {ms_dtype or 'float32'}, PyTorch in {torch_dtype or 'float32'}; "
            "no step could agree in precision. Give both sides one precision (Cell.to_float(mindspore.float16) and "
            "Module.half(), or bfloat16 on both), or neither"
        )
    if ms_dtype is not None and loss_scale is not None:
        raise ParityUsageError(
            f"check_training(): loss_scale with a {ms_dtype} pair is not supported yet (the float64 golden's reruns "
            f"take no loss scaler, and {ms_dtype} training could not be judged). Check loss scaling on the float32 "
            f"pair, and {ms_dtype} training without it"
        )
    refuse_unsupported_dtype(ms_cell, torch_module, ms_dtype, device)
    return ms_dtype


def _mixed_layers(ms_cell) -> List[str]:
    """Paths of sub-Cells that compute in a half dtype where the Cell as a whole does not: to_float
    flags (O2, O3, by hand) and O1's casts rewritten into their code."""
    flagged = [
        path or "(root)"
        for path, cell in ms_cell.cells_and_names()
        if any(cell.get_flags().get(flag) for flag in ("fp16", "bf16"))
    ]
    return flagged or [path for dtype in ("float16", "bfloat16") for path in amp_backend.half_casts(ms_cell, dtype)]


def per_side(data, half: Optional[str]):
    """Each side's (inputs, target) batches: floating inputs and targets in the half dtype its
    side computes in, the same values on both (see :func:`parity.engine.inputs.per_side_inputs`)."""
    if half is None:
        return data, data
    ms_data, torch_data = [], []
    for inputs, target in data:
        ms_in, torch_in, _ = per_side_inputs(inputs, half, half)
        wanted = is_floating(target.dtype) and target.dtype.kind != "c"
        target = cast(round_through(target, (half,)), half) if wanted else target
        ms_data.append((ms_in, target))
        torch_data.append((torch_in, target))
    return ms_data, torch_data


def in_half(record, half: Optional[str]):
    """A step's record with its loss in the half dtype its side computed it in."""
    if half is not None:
        record[("loss", "loss")] = cast(np.asarray(record[("loss", "loss")]), half)
    return record


def halved(c: Comparison) -> bool:
    return narrowest((c.ms_dtype, c.torch_dtype)) is not None


def half_notes(half: Optional[str], ms_cell, wmap) -> List[str]:
    if half is None:
        return []
    notes = [
        f"half precision: both sides train in {half}, inputs and floating targets given to each as {half} (the "
        "same values); a tensor above half its tolerance is judged against PyTorch's training in float64 "
        f"(MindSpore's error within {GOLDEN_FACTOR:g}x PyTorch's own)"
    ]
    masters = [p.ms for p in wmap.trainable_pairs() if msb.read(ms_cell, p.ms).dtype.name == "float32"]
    if masters:
        notes.append(
            f"master weights: MindSpore keeps {len(masters)} parameters in float32 (to_float) and updates "
            f"them in float32, where PyTorch's are {half} and updated in {half}; they and their optimizer "
            f"state are compared in {half}, a more precise MindSpore update passing the golden judge"
        )
    return notes


def half_causes(half: Optional[str], torch_opt, result: TrainingResult) -> List[str]:
    """An eps that float16 cannot hold, where PyTorch's tensors went non-finite and MindSpore's did not."""
    lost = sorted(
        {
            g["eps"]
            for g in torch_opt.param_groups
            if isinstance(g.get("eps"), float)
            and g["eps"] > 0
            and half is not None
            and float(cast(np.asarray(g["eps"]), half)) == 0.0
        }
    )
    if not lost or not any(c.nonfinite is not None and not c.nonfinite.agree for c in result.comparisons):
        return []
    return [
        f"{type_name(torch_opt)}(eps={lost[0]:g}) on {half} parameters keeps its state in {half}, where eps is 0: "
        "an exp_avg_sq that underflows divides by zero (NaN/Inf in PyTorch's tensors). MindSpore's to_float "
        f"keeps float32 parameters and state. Give both sides an eps that {half} holds (1e-4 is usual for "
        f"{half} Adam), or keep float32 parameters on the PyTorch side too"
    ]
