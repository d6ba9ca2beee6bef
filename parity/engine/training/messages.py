"""The failure message of a training check, with :func:`parity.check`'s anatomy, and the likely
causes it cites (the optimizers', the losses', loss scaling's, half precision's)."""

from __future__ import annotations

from typing import List, Optional, Tuple

import numpy as np

from ...registry import diagnosis
from ...registry.optimizers import optimizer_causes
from ..diagnosis import messages
from .loss_scale import fmt_scale, skip_causes, skip_message
from .result import STAGES, TrainingResult, TrainingStep, where

__all__ = [
    "step_table",
    "failure_message",
    "scale_causes",
    "scale_note",
    "optimizer_likely_causes",
    "labels_seen",
    "loss_causes",
]


def step_table(result: TrainingResult) -> List[str]:
    """Per step: both losses, and per stage the worst tensor's margin."""
    stages = [stage for stage in list(STAGES)[1:] if stage != "scale" or any(s.scales for s in result.steps)]
    lines = [
        "Per step (loss MindSpore vs PyTorch; worst tensor per stage, difference / allowed):",
        f"  {'step':<5} {'loss MindSpore':<15} {'loss PyTorch':<15} "
        + " ".join(f"{stage if stage != 'scale' else 'loss scale MindSpore/PyTorch':<30}" for stage in stages),
    ]
    for s in result.steps:
        cells = []
        for stage in stages:
            if stage == "scale":
                cells.append(f"{_scale_cell(s):<30}")
                continue
            found = s.stage_worst(stage)
            if found is None:
                cells.append(f"{'-':<30}")
                continue
            worst, failed = found
            status = "FAIL" if failed else "ok"
            cells.append(f"{status + ' ' + messages.fmt(worst.margin) + 'x ' + worst.name:<30.30}")
        loss_flag = "" if all(c.passed for c in s.stage("loss")) else " FAIL"
        lines.append(f"  {s.step:<5} {s.ms_loss:<15.7g} {s.torch_loss:<15.7g} " + " ".join(cells) + loss_flag)
    return lines


def failure_message(result: TrainingResult, likely_causes=()) -> str:
    failure = result.first_failure
    assert failure is not None  # a failure message is made for a failed result
    step, first = failure
    lines = [f"MindSpore and PyTorch do not train the same! First at step {step}, {where(first)}", ""]
    if result.case:
        lines.append(f"Case:       {result.case}" + (f"  ({result.location})" if result.location else ""))
    lines += [f"Pair:       mindspore {result.ms_type} <-> torch {result.torch_type} (train mode, {result.mode})"]
    lines += messages.device_lines(result.device_setup)
    lines += [
        f"Optimizer:  {result.optimizer}",
        f"Loss:       {result.loss}",
        f"Divergence: first at step {step} of {len(result.steps)}, stage "
        f"'{next(k for k, v in STAGES.items() if v == first.kind)}', {where(first)}",
    ]
    lines += messages.nonfinite_lines(result.first_nonfinite) + [""]
    if first.kind == "loss scale":
        lines.append(f"Loss scaling: {skip_message(result[step].scales, result[step].skipped)}")
    elif first.problem is None:
        lines += messages.metric_lines(first) + [f"Tolerance: {first.tolerance_source} ({first.tolerance})"]
    else:
        lines.append(
            f"{first.problem.capitalize()}s differ: MindSpore {first.ms_shape or first.ms_dtype} vs "
            f"PyTorch {first.torch_shape or first.torch_dtype}"
        )
    failing = result.failures
    lines += (
        ["", f"Compared tensors ({len(failing)} of {len(result.comparisons)} failed over {len(result.steps)} steps)"]
        + step_table(result)
        + [""]
    )
    lines += [f"Likely cause: {cause}" for cause in likely_causes]
    lines += [f"Weights: {result.weights}", f"Batches: {result.batches}"]
    lines += [f"Note: {note}" for note in result.notes]
    return "\n".join(lines + ["", f"Reproduce: {result.reproduce}"])


def _scale_cell(s: TrainingStep) -> str:
    """A step's loss scales, and which side skipped its update."""
    if s.scales is None or s.skipped is None:
        return "-"
    flag = lambda skipped: " skip" if skipped else ""  # noqa: E731
    status = "FAIL" if s.skipped[0] != s.skipped[1] else "ok"
    return f"{status} 2**{np.log2(s.scales[0]):g}{flag(s.skipped[0])} / 2**{np.log2(s.scales[1]):g}{flag(s.skipped[1])}"


def scale_causes(result: TrainingResult) -> List[str]:
    """Under loss scaling, the first step skipped on one side only: why (see loss_scale.skip_causes)."""
    first = result.first_failure
    if first is None or first[1].kind != "loss scale" or result.steps[0].scales is None:
        return []
    return skip_causes(result.steps[0].scales, first[0], result[first[0]].scales)


def scale_note(steps: List[TrainingStep]) -> List[str]:
    """A note where the loss scales differ but no step was skipped on one side only."""
    differ = next((s for s in steps if s.scales is not None and s.scales[0] != s.scales[1]), None)
    if differ is None or differ.scales is None or any(s.skipped and s.skipped[0] != s.skipped[1] for s in steps):
        return []
    return [
        f"loss scales differ from step {differ.step} (MindSpore {fmt_scale(differ.scales[0])}, PyTorch "
        f"{fmt_scale(differ.scales[1])}), and no step overflowed on one side only"
    ]


def optimizer_likely_causes(ms_opt, torch_opt, device) -> List[str]:
    """The registry's entries this pair of optimizers hits (never raises)."""
    try:
        return optimizer_causes(ms_opt, torch_opt, device=device)
    except Exception:  # the registry helps the message; it never hides the failure
        return []


def labels_seen(data) -> Optional[Tuple[int, ...]]:
    """The distinct integer targets the losses saw (None where some target is not integral): an
    entry about a label value (``ignore_index``) is cited only where such a label was there."""
    found = set()
    for _, target in data:
        target = np.asarray(target)
        if target.dtype.kind not in "iu":
            return None
        found.update(np.unique(target).tolist())
    return tuple(sorted(found))


def loss_causes(ms_loss, torch_loss, device, mode, labels=None) -> List[str]:
    """The registry's entries the pair of losses is built to hit, given the ``labels`` it saw
    (never raises: see likely_causes)."""
    if not hasattr(ms_loss, "cells_and_names"):  # a function: nothing to inspect
        return []
    return diagnosis.likely_causes(
        ms_loss,
        torch_loss,
        device=device,
        mode=mode if mode in ("pynative", "graph") else None,
        threshold=diagnosis.HIGH,
        labels=labels,
    )
