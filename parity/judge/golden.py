"""The golden judge of half precision (see docs/how-to/half-precision.md).

A tensor computed in float16 or bfloat16 above half the dtype's ``assert_close`` tolerance is judged
against a float64 run of PyTorch's module (the golden): MindSpore's error against it may be at most
``GOLDEN_FACTOR`` times PyTorch's own, as a relative L2 norm and as the greatest element, PyTorch's
counted at least the dtype's unit roundoff. Where PyTorch's own mirrored runs flip a ReLU/max-pool
tie, its error counts their jumps and the tensor is judged by its L2 error alone.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Hashable, Iterable, Optional, Sequence, Tuple

import numpy as np
import numpy.typing as npt

from .dtypes import eps, narrowest
from .envelope import Candidate, Rerun, near
from .metrics import Comparison

__all__ = [
    "GOLDEN_FACTOR",
    "HALF_ULPS",
    "GOLDEN_RERUNS",
    "Golden",
    "golden_verdict",
    "judge_golden",
    "mirrored_jumps",
    "near_golden",
]

# MindSpore's error against the float64 golden may be this many times PyTorch's own (relative L2
# norm, and greatest element over the tensor's greatest magnitude). Measured in float16 (an MLP, a
# CNN and a CNN with BatchNorm, LayerNorm and GELU; 8 seeds each; docs/how-to/half-precision.md):
# identical networks at most 2.1x (L2) and 2.6x (greatest element); MindSpore moved by half an ulp
# at every layer output and gradient (about two roundings more per layer) at most 5.2x and 5.5x;
# a wrong activation 25x (L2, median over the tensors) and up to 6000x.
GOLDEN_FACTOR = 8.0

# The mirrored pair of PyTorch runs that finds ReLU/max-pool ties within rounding of their threshold
# moves every input, weight, layer output and gradient by this many units in the last place of the
# dtype it is computed in (and as much at the tensor's own scale).
HALF_ULPS = 1.0
FLIP_FLOOR = 4.0  # a jump is more than this many times HALF_ULPS at the element's scale and the tensor's


@dataclass(frozen=True)
class Golden:
    """The golden verdict of one half-precision tensor: MindSpore's and PyTorch's errors against
    the float64 golden, as relative L2 norms (``*_error``) and as the greatest element over the
    golden's greatest magnitude (``*_max``). ``floor`` is the dtype's unit roundoff: a PyTorch
    error below it counts as it (an exact PyTorch result leaves MindSpore a rounding's room)."""

    dtype: str
    factor: float
    floor: float
    ms_error: float
    torch_error: float
    ms_max: float
    torch_max: float
    tolerance_margin: float = 0.0  # greatest difference / what the tolerance alone allows
    total: int = 0
    flips: int = 0  # elements whose jump in PyTorch's own mirrored runs exceeds its error (ReLU/max-pool ties)

    @property
    def l2_margin(self) -> float:
        return _ratio(self.ms_error, self.factor * max(self.torch_error, self.floor))

    @property
    def max_margin(self) -> float:
        return _ratio(self.ms_max, self.factor * max(self.torch_max, self.floor))

    @property
    def margin(self) -> float:
        """The greater of the two where PyTorch's runs flip no tie; the L2 one alone where they do
        (which elements flip depends on the last bit of each side's rounding)."""
        return self.l2_margin if self.flips else max(self.l2_margin, self.max_margin)

    @property
    def passed(self) -> bool:
        return self.tolerance_margin <= 1.0 or self.margin <= 1.0

    @property
    def final_margin(self) -> float:
        """The nearer to passing of the tolerance alone and the golden judge."""
        return min(self.tolerance_margin, self.margin)


def _ratio(value: float, allowed: float) -> float:
    if value == 0:
        return 0.0
    return value / allowed if allowed > 0 else math.inf


def _errors(
    value: npt.NDArray[np.float64], golden: npt.NDArray[np.float64], keep: npt.NDArray[np.bool_]
) -> Tuple[float, float]:
    diff = np.abs(value - golden)[keep]
    ref = np.abs(golden[keep])
    norm, top = float(np.linalg.norm(ref)), float(ref.max()) if ref.size else 0.0
    l2 = float(np.linalg.norm(diff))
    worst = float(diff.max()) if diff.size else 0.0
    return (
        l2 / norm if norm else (0.0 if l2 == 0 else math.inf),
        worst / top if top else (0.0 if worst == 0 else math.inf),
    )


def golden_verdict(
    ms: npt.NDArray[Any],
    torch: npt.NDArray[Any],
    golden: npt.NDArray[Any],
    dtype: str,
    tolerance_margin: float,
    jumps: Optional[npt.NDArray[np.float64]] = None,
    factor: float = GOLDEN_FACTOR,
) -> Golden:
    """Judge ``ms`` and ``torch`` (same shape, any floating dtypes) against ``golden`` (float64),
    over the elements finite on all three (non-finite ones are judged by the tolerance route).
    ``jumps``: per element, ``|plus + minus|`` of PyTorch's mirrored runs' movements (rounding where
    it moves smoothly, the jump behind a flipped ReLU/max-pool tie): PyTorch's error at an element
    is at least that, since either side of a tie is as right in this precision."""
    a, b, g = (np.asarray(x).astype(np.float64) for x in (ms, torch, golden))
    keep = np.isfinite(a) & np.isfinite(b) & np.isfinite(g)
    own = np.abs(b - g)
    unit, flips = eps(dtype) / 2, 0
    if jumps is not None:
        keep &= np.isfinite(jumps)
        scale = float(np.sqrt(np.mean(np.square(b[keep])))) if keep.any() else 0.0
        flipped = keep & (jumps > FLIP_FLOOR * HALF_ULPS * eps(dtype) * (np.abs(b) + scale))
        flips = int(np.count_nonzero(flipped))
        if flips:  # PyTorch's error at each element counts what its own runs jump there
            own = np.maximum(own, jumps)
    ms_error, ms_max = _errors(a, g, keep)
    torch_error, torch_max = _errors(g + own, g, keep)
    return Golden(
        dtype,
        factor,
        unit,
        ms_error,
        torch_error,
        ms_max,
        torch_max,
        tolerance_margin,
        int(np.asarray(golden).size),
        flips,
    )


GOLDEN_RERUNS: Tuple[Rerun, ...] = (
    Rerun(cast="float64", kept=True),
    Rerun(draw=0, ulps=HALF_ULPS, kept=True),
    Rerun(draw=0, ulps=-HALF_ULPS, kept=True),
)


def near_golden(c: Comparison) -> bool:
    """Whether a tensor judged by the golden goes to it: within HEADROOM of its tolerance or
    beyond it, shapes and dtypes agreeing, non-finite elements only where both sides have them."""
    return near(c, True)


def mirrored_jumps(
    base: npt.NDArray[Any], plus: Optional[npt.NDArray[Any]], minus: Optional[npt.NDArray[Any]]
) -> Optional[npt.NDArray[np.float64]]:
    """``|plus + minus|`` of a mirrored pair's movements from ``base``, in float64: a smooth element
    moves one way under +u and back under -u, leaving rounding; an element behind a flipped tie
    keeps its jump. None where either run lacks the tensor."""
    if plus is None or minus is None or np.shape(plus) != np.shape(base) or np.shape(minus) != np.shape(base):
        return None
    wide = np.asarray(base).astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):  # Inf - Inf where both agree: NaN, left out
        return np.abs((np.asarray(plus).astype(np.float64) - wide) + (np.asarray(minus).astype(np.float64) - wide))


def judge_golden(
    candidates: Sequence[Candidate], rerun: Callable[[Rerun], Iterable[Tuple[Hashable, Optional[npt.NDArray[Any]]]]]
) -> None:
    """Give every candidate (a half-precision tensor, or any floating one of a mixed-precision
    pair) its golden verdict: ``rerun`` yields ``(key, value)`` of PyTorch's runs as each of
    :data:`GOLDEN_RERUNS` asks (float64, the golden; then a mirrored pair moved by ``HALF_ULPS``),
    every value kept until the last run is in. A tensor both sides hold in float32 (mixed precision) counts
    float32's roundoff as the least error."""
    if not candidates:
        return
    keys = {c.key for c in candidates}
    golden, plus, minus = [{key: value for key, value in rerun(spec) if key in keys} for spec in GOLDEN_RERUNS]
    for c in candidates:
        value = golden.get(c.key)
        if value is None or np.shape(value) != c.torch.shape:
            continue
        comparison = c.comparison
        dtype = narrowest((comparison.ms_dtype, comparison.torch_dtype)) or comparison.torch_dtype
        comparison.golden = golden_verdict(
            c.ms,
            c.torch,
            np.asarray(value),
            dtype,
            comparison.margin,
            mirrored_jumps(c.torch, plus.get(c.key), minus.get(c.key)),
        )
        comparison.margin = comparison.golden.final_margin
