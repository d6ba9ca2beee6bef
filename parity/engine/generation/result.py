"""What :func:`parity.check_generation` returns: every decoding step's logits compared, each
side's tokens, and the tokens the sides chose differently. Framework-free: the nightly records
read it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, List, Optional, Tuple

import numpy as np

from ...judge.metrics import Comparison
from ..diagnosis import messages
from ..result import Verdicts

__all__ = ["GenerationResult", "GenerationStep", "TokenDifference"]


@dataclass(frozen=True)
class TokenDifference:
    """A token the sides chose differently. It is a near-tie, reported and not a failure, where
    PyTorch's own rounding could have chosen either: the gap between PyTorch's logits of the two
    tokens is within what the tolerance and PyTorch's rounding envelope allow the two logits."""

    step: int
    row: int
    ms_token: int
    torch_token: int
    gap: float  # PyTorch's logit of its token minus its logit of MindSpore's
    allowed: float  # how far the two logits may move: their allowances added

    @property
    def near_tie(self) -> bool:
        return self.gap <= self.allowed


@dataclass
class GenerationStep:
    """One decoding step: the last position's logits compared, and each side's tokens (per row)."""

    step: int
    comparison: Comparison
    ms_tokens: List[int]
    torch_tokens: List[int]


@dataclass
class GenerationResult(Verdicts):
    """Everything a generation check compared, step by step (steps counted from 1)."""

    ms_type: str
    torch_type: str
    steps: List[GenerationStep]
    prompt: str
    seed: int
    use_cache: bool
    weights: object
    differences: List[TokenDifference] = field(default_factory=list)
    reproduce: str = ""
    notes: List[str] = field(default_factory=list)
    layers: Optional[Any] = None  # the layer table of the first failing step, when it was localised

    @property
    def comparisons(self) -> List[Comparison]:
        return [s.comparison for s in self.steps]

    @property
    def ms_tokens(self) -> np.ndarray:
        """MindSpore's chosen tokens, (batch, steps)."""
        return np.array([s.ms_tokens for s in self.steps], np.int64).T

    @property
    def torch_tokens(self) -> np.ndarray:
        """PyTorch's chosen tokens, (batch, steps)."""
        return np.array([s.torch_tokens for s in self.steps], np.int64).T

    @property
    def near_ties(self) -> List[TokenDifference]:
        return [d for d in self.differences if d.near_tie]

    @property
    def first_difference(self) -> Optional[Tuple[int, int]]:
        """(step, row) of the first token the sides chose differently (a near-tie too), or None."""
        return (self.differences[0].step, self.differences[0].row) if self.differences else None

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.comparisons) and all(d.near_tie for d in self.differences)

    def __str__(self) -> str:
        worst = self.worst
        parts = [
            f"{len(self.steps)} steps x {len(self.steps[0].torch_tokens) if self.steps else 0} rows",
            f"worst logits at step {self.comparisons.index(worst) + 1}, {messages.fmt(worst.margin)}x allowed"
            if worst is not None
            else "nothing compared",
        ]
        if self.near_ties:
            parts.append(
                f"{len(self.near_ties)} near-tie(s), first at step {self.near_ties[0].step}, "
                f"row {self.near_ties[0].row}"
            )
        return (
            f"{'ok' if self.passed else 'FAIL'}: mindspore {self.ms_type} <-> torch {self.torch_type} "
            f"(greedy, {'with' if self.use_cache else 'without'} cache); " + "; ".join(parts)
        )
