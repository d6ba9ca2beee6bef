"""What a training check compared: per step, the losses and every tensor in stage order."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Optional, Tuple

from ...judge.metrics import Comparison
from ...weights.transfer import WeightReport
from ..diagnosis import messages
from ..diagnosis.verdicts import NonFiniteOrigin
from ..result import Steps, Verdicts

__all__ = ["STAGES", "TrainingStep", "TrainingResult", "where"]

# Stage -> the Comparison kind it is recorded as, in the order a step compares them.
STAGES = {
    "loss": "loss",
    "scale": "loss scale",
    "grads": "param grad",
    "state": "optimizer state",
    "params": "parameter",
    "buffers": "buffer",
}


_DIRECTIONS = {
    "loss": "forward",
    "scale": "backward",
    "grads": "backward",
    "state": "optimizer",
    "params": "optimizer",
    "buffers": "forward",
}

_SPOKEN = {
    "loss": "loss",
    "param grad": "gradient of parameter",
    "optimizer state": "optimizer state",
    "parameter": "parameter after the update",
    "buffer": "running statistic",
}


@dataclass
class TrainingStep:
    """One optimizer step: both losses and every tensor compared after it, in stage order."""

    step: int
    ms_loss: float
    torch_loss: float
    comparisons: List[Comparison]
    scales: Optional[Tuple[float, float]] = None  # with loss_scale: the loss scale each side used
    skipped: Optional[Tuple[bool, bool]] = None  # with loss_scale: whether each side skipped the update

    def stage(self, stage: str) -> List[Comparison]:
        return [c for c in self.comparisons if c.kind == STAGES[stage]]

    def stage_worst(self, stage: str) -> Optional[Tuple[Comparison, bool]]:
        """The stage's tensor with the greatest margin, and whether any tensor of the stage failed
        (None where the step compared nothing at that stage)."""
        group = self.stage(stage)
        if not group:
            return None
        return max(group, key=lambda c: c.margin), not all(c.passed for c in group)

    @property
    def failures(self) -> List[Comparison]:
        return [c for c in self.comparisons if not c.passed]


@dataclass
class TrainingResult(Steps, Verdicts):
    """Everything a training check compared, step by step."""

    ms_type: str
    torch_type: str
    steps: List[TrainingStep]
    weights: WeightReport
    optimizer: str
    loss: str
    batches: str
    seed: int
    mode: str
    reproduce: str = ""
    case: str = ""
    location: str = ""
    notes: List[str] = field(default_factory=list)
    device_setup: Optional[object] = None  # parity.judge.devices.DeviceSetup: where both sides ran

    @property
    def ms_losses(self) -> List[float]:
        return [s.ms_loss for s in self.steps]

    @property
    def torch_losses(self) -> List[float]:
        return [s.torch_loss for s in self.steps]

    @property
    def comparisons(self) -> List[Comparison]:
        return [c for s in self.steps for c in s.comparisons]

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.comparisons)

    @property
    def first_failure(self) -> Optional[Tuple[int, Comparison]]:
        """(step, comparison) of the first tensor out of tolerance, in step and stage order."""
        for s in self.steps:
            if s.failures:
                return s.step, s.failures[0]
        return None

    @property
    def problem(self) -> str:
        return ""

    @property
    def first_nonfinite(self):
        """Where NaN/Inf first appeared on one side only (a :class:`parity.engine.diagnosis.verdicts.NonFiniteOrigin`
        with its step and stage; ``direction`` ``"forward"`` for the loss and running statistics,
        ``"backward"`` for gradients, ``"optimizer"`` for its state and the updated parameters), or None."""
        earlier = False  # a tensor compared before had NaN/Inf (on both sides alike)
        for s in self.steps:
            for c in s.comparisons:
                nf = c.nonfinite
                if nf is not None and not nf.agree:
                    side = "mindspore" if not nf.torch_count else "torch" if not nf.ms_count else "both"
                    stage = next(k for k, v in STAGES.items() if v == c.kind)
                    return NonFiniteOrigin(
                        c.layer,
                        _DIRECTIONS[stage],
                        side,
                        ms_layer=c.ms_name,
                        label=c.name,
                        inputs_finite=not earlier,
                        step=s.step,
                        stage=stage,
                    )
                earlier = earlier or nf is not None
        return None

    def __str__(self) -> str:
        total, failures = len(self.comparisons), self.failures
        pair = f"mindspore {self.ms_type} <-> torch {self.torch_type} ({len(self.steps)} steps, {self.mode})"
        parts = [f"{total - len(failures)} of {total} tensors within tolerance"]
        worst = self.worst
        if worst is not None:
            parts.append(f"worst {worst.kind} '{worst.name}' at {messages.fmt(worst.margin)}x allowed")
        if self.noise_judged:
            parts.append(
                f"{len(self.noise_judged)} noise-judged (beyond the tolerance, inside PyTorch's rounding envelope)"
            )
        first = self.first_failure
        if first is not None:
            parts.append(f"first divergence at step {first[0]}, {where(first[1])}")
        return f"{'ok' if not failures else 'FAIL'}: {pair}; " + "; ".join(parts)


def where(c: Comparison) -> str:
    if c.kind == "loss scale":
        return "loss scaling: the update skipped on one side only"
    if c.kind == "optimizer state":
        param, _, key = c.name.rpartition(":")
        ms_param = c.ms_name.rpartition(":")[0]
        text = f"optimizer state '{key}' of parameter '{param}'"
        return text + (f" (MindSpore '{ms_param}')" if ms_param != param else "")
    text = f"{_SPOKEN[c.kind]} '{c.name}'" if c.kind != "loss" else "loss"
    return text + (f" (MindSpore '{c.ms_name}')" if c.ms_name != c.name else "")
