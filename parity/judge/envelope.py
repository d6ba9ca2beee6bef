"""The rounding envelope: is a difference larger than PyTorch's own rounding could make?

A tensor within ``HEADROOM`` of its tolerance (or beyond it) is judged again against how far
PyTorch's own result moves when every input, weight, layer output and gradient is moved by
``ENVELOPE_ULPS`` units in the last place, in ``ENVELOPE_DRAWS`` seeded runs (mirrored pairs, +u
and -u) plus one in float64 (see docs/explanation/judging.md). MindSpore passes where it
lies within the tolerance plus ``NOISE_FACTOR`` times that spread, element by element, or, where
the elements outside are ones PyTorch's runs flipped save a few, as a whole. A real fault is orders
of magnitude above.

This module owns every rule of that judgement; its callers (``check``, ``check_training``,
``check_data_parallel``) own only the runs. The interface is :func:`judge_envelope`: a caller
gives its candidate tensors (:class:`Candidate`, chosen by :func:`near`) and a function that runs
PyTorch again as each :class:`Rerun` of :data:`RERUNS` asks; the judge widens each tensor's
:class:`Spread` run by run and gives each comparison its :class:`Envelope` verdict. Numbers only:
numpy, nothing else.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Callable, Dict, FrozenSet, Hashable, Iterable, List, Optional, Sequence, Tuple, Union

import numpy as np
import numpy.typing as npt

from .metrics import Comparison
from .tolerance import Tolerance

__all__ = [
    "NOISE_FACTOR",
    "ENVELOPE_DRAWS",
    "ENVELOPE_ULPS",
    "HEADROOM",
    "Envelope",
    "Rerun",
    "RERUNS",
    "STAGES",
    "Candidate",
    "Spread",
    "near",
    "judge_envelope",
    "first_pair_spread",
    "judge_first_pair",
    "judge_tensor",
    "jumps",
    "rms",
    "envelope_metrics",
    "typical_relative_spread",
]

NOISE_FACTOR = 2.0
ENVELOPE_DRAWS = 4
ENVELOPE_ULPS = 16.0
HEADROOM = 0.5
FLIP_FLOOR = 4.0  # a jump is more than this many times the perturbation at the element's scale
_BLOCK = 1 << 15  # elements per block: a block's float64 temporaries stay in the CPU's cache

OUTLIER_FRACTION = 1e-3  # elements outside the envelope that a tensor judged whole may have, at most

# Where PyTorch's runs flip masks, the elements outside that jumped in none of them may be more:
# MindSpore's kernels break ties too, other ones on another CPU, where PyTorch's runs may not
# reach. At most STEADY_FEW, or STEADY_SHARE of the elements PyTorch's runs flipped up to
# STEADY_FRACTION of the tensor. Measured on the catalogue's training loops, MindSpore's side moved
# by 4 ulps as on another CPU (3 seeds each; ResNet-50 at seeds 1 and 3): at most 4 such elements
# against 22 flips (a BatchNorm weight of 256 after Adam's first step), 7 against 114 (of 1,024),
# 6 against 59 (of 512): at most 0.36x of what this allows. Trained with MindSpore's own nn.Adam,
# whose update differs, ResNet-50's conv weights had 306,101 such elements against 218,823 flips
# (of 2,359,296: 2.8x what this allows), 142,849 against 235,785, 11,802 against 18,766.
STEADY_FEW = 3
STEADY_SHARE = 0.5
STEADY_FRACTION = 0.05

# What :func:`rms` gives: numpy's float64 scalar, or 0.0 for an empty tensor.
_Scale = Union[np.floating[Any], float]


@dataclass(frozen=True)
class Envelope:
    """The rounding-envelope verdict of one tensor.

    PyTorch was run again under rounding-level perturbations (``draws`` seeded runs, plus float64
    when ``float64``); each element's spread is the greatest distance of those runs from PyTorch's
    own float32 result. An element of MindSpore passes when its difference is within the tolerance
    plus ``factor`` times that spread. ``margin`` is the greatest difference / allowed over the
    tensor (<= 1 passes); ``outside`` counts the elements beyond it. ``ms_error`` and ``spread`` are
    relative L2 norms (MindSpore's distance from PyTorch, PyTorch's own greatest distance), for the
    reader. ``flips`` counts elements that jumped in one run of a mirrored pair instead of moving
    smoothly with the perturbation (a mask flipped at a ReLU/max-pool near-tie). A tensor whose own runs
    flip masks, or with a few elements outside among many, is judged as a whole (see
    :attr:`judged_whole`)."""

    draws: int
    float64: bool
    factor: float
    margin: float
    outside: int
    ms_error: float
    spread: float
    flips: int = 0
    tolerance_margin: float = 0.0  # greatest difference / what the tolerance alone allows
    total: int = 0  # elements compared
    steady: Optional[int] = None  # of ``outside``, those that jumped in no run of PyTorch's (None: all)
    unused: int = 0  # elements where a run was not finite and PyTorch's own is: that run was not used there

    @property
    def passed(self) -> bool:
        return self.outside == 0 or self.judged_whole

    @property
    def judged_whole(self) -> bool:
        """Elements fell outside, and the tensor passes as a whole: MindSpore's relative error is
        within ``factor`` x PyTorch's spread, and the elements outside are those PyTorch's own runs
        flipped (which ties flip depends on the CPU) save a few: at most OUTLIER_FRACTION of the
        tensor (four runs sample each element's spread, and among millions some samples come out
        small), and where its runs flip masks, STEADY_FEW, or STEADY_SHARE of the flips up to
        STEADY_FRACTION of the tensor."""
        return self.outside > 0 and self.whole_margin is not None and self.whole_margin <= 1.0

    @property
    def whole_margin(self) -> Optional[float]:
        """MindSpore's relative error / (``factor`` x PyTorch's relative spread), where the tensor may
        be judged whole (see :attr:`judged_whole`); else None."""
        steady = self.outside if self.steady is None else self.steady
        excused = max(STEADY_FEW, min(STEADY_SHARE * self.flips, STEADY_FRACTION * self.total)) if self.flips else 0
        if steady > max(OUTLIER_FRACTION * self.total, excused):
            return None
        if self.spread == 0:
            return 0.0 if self.ms_error == 0 else float("inf")
        return self.ms_error / (self.factor * self.spread)

    @property
    def final_margin(self) -> float:
        """How close the tensor is to failing: the smaller of its two routes' margins (it passes when
        either passes), element by element or whole where it may be judged whole."""
        whole = self.whole_margin
        return self.margin if whole is None else min(self.margin, whole)


def typical_relative_spread(
    spread: npt.NDArray[Any], ref: npt.NDArray[Any], magnitude: Optional[npt.NDArray[Any]] = None
) -> float:
    """The median over non-zero elements of spread / |value|: how far PyTorch's own runs move a
    typical element, relative to its size. Four runs sample each element's spread; an element
    whose sample happens to come out small still moves as much as its peers do, at its own scale.
    ``magnitude``: ``|ref|``, where the caller has it."""
    magnitude = np.abs(ref) if magnitude is None else magnitude
    nonzero = magnitude != 0
    if nonzero.all():  # the usual case: nothing to leave out, so no selection to copy (the median ignores order)
        relative = np.divide(spread, magnitude).ravel()
    elif nonzero.any():
        relative = spread[nonzero] / magnitude[nonzero]
    else:
        return 0.0
    return float(np.median(relative, overwrite_input=True))  # our own array: the median may reorder it


def envelope_metrics(
    ms: npt.NDArray[Any],
    ref: npt.NDArray[Any],
    spread: npt.NDArray[Any],
    tolerance: Tolerance,
    factor: float,
    jumped: npt.NDArray[np.bool_],
) -> Tuple[float, int, float, float, int, int]:
    """(margin, outside, ms_error, spread_error, flips, steady) of ``ms`` against ``ref`` allowed the tolerance
    plus ``factor`` x ``spread`` (the per-element envelope, same shape) at every element, the spread
    of each element at least the tensor's typical relative spread at its own size. ``jumped`` marks
    the elements that flipped in some run (counted as ``flips``); ``steady`` counts the elements
    outside that did not. Worked on few temporaries: copies made here (in the inputs' memory
    order), written over in place; |ref| taken once; the norm of ``ref`` from the sum of squares
    its finiteness check took (``np.linalg.norm`` takes that same sum, in memory order)."""
    a, b = np.array(ms, dtype=np.float64, order="K"), np.array(ref, dtype=np.float64, order="K")
    with np.errstate(over="ignore", invalid="ignore"):  # finite only where every element is (see compare_arrays)
        flat_b = b.ravel(order="K")
        square_b = flat_b.dot(flat_b)
        finite = np.isfinite(a.ravel(order="K").dot(a.ravel(order="K"))) and np.isfinite(square_b)
    keep: Union[bool, npt.NDArray[np.bool_]]
    if finite:
        keep, s = True, spread
    else:
        keep = np.isfinite(a) & np.isfinite(b)
        a, b, s = np.where(keep, a, 0.0), np.where(keep, b, 0.0), np.where(keep, spread, 0.0)
    magnitude = np.abs(b, out=np.empty_like(b))
    s = np.maximum(s, typical_relative_spread(s, b, magnitude) * magnitude, out=np.empty_like(b))
    diff = np.abs(np.subtract(a, b, out=a), out=a)
    ref_norm = float(np.sqrt(square_b)) if finite else float(np.linalg.norm(b))
    ms_error = float(np.linalg.norm(diff)) / ref_norm if ref_norm else (float("inf") if diff.any() else 0.0)
    spread_error = float(np.linalg.norm(s)) / ref_norm if ref_norm else 0.0
    allowed = np.multiply(magnitude, tolerance.rtol, out=magnitude)
    allowed += tolerance.atol
    allowed += np.multiply(s, factor, out=s)
    flips = int(np.count_nonzero(jumped if keep is True else jumped & keep))
    beyond = diff > allowed
    outside = int(np.count_nonzero(beyond))
    steady = int(np.count_nonzero(beyond & ~jumped)) if outside else 0
    return _envelope_margin(diff, allowed, tolerance.atol), outside, ms_error, spread_error, flips, steady


def _envelope_margin(diff: npt.NDArray[np.float64], allowed: npt.NDArray[np.float64], atol: float) -> float:
    """The greatest ``diff / allowed``, 0 where ``diff`` is 0. With ``atol > 0`` every allowed
    difference is > 0 (or NaN, which the maximum shows), so 0 / allowed is 0 already."""
    if not diff.size:
        return 0.0
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.divide(diff, allowed)
        margin = ratio.max()
        if not atol > 0 or np.isnan(margin):
            margin = np.where(diff == 0, 0.0, ratio).max()
    return float(margin)


def near(c: Comparison, floating: bool) -> bool:
    """Whether a compared tensor goes to the envelope: within HEADROOM of its tolerance or beyond
    it, floating (``floating``: the reference's dtype is a numpy float), shapes and dtypes agreeing,
    and any non-finite elements where both sides have them."""
    return bool(
        c.problem is None
        and c.total
        and c.margin > HEADROOM
        and floating
        and (c.nonfinite is None or c.nonfinite.agree)
    )


@dataclass(frozen=True)
class Rerun:
    """One of PyTorch's runs again: in ``cast`` (``"float64"``), or with everything moved by
    ``ulps`` units in the last place, its perturbation seeded by ``draw`` (a mirrored pair shares
    one draw, +u then -u). ``kept``: the judge holds this run's values until the last run is in, so
    they must be copies; the values of a run not kept may be views that the next step overwrites.
    ``keys``: the candidates whose verdicts are still open (None: all of them); a caller may run only
    as far as they need, and the judge ignores values of other keys."""

    cast: Optional[str] = None
    draw: Optional[int] = None
    ulps: float = 0.0
    kept: bool = False  # the judge keeps this run's values until every run is in (else only until the next)
    keys: Optional[FrozenSet[Hashable]] = None

    @property
    def mirror(self) -> int:
        """+1 for the first run of a mirrored pair (its values are kept until the second), -1 for
        the second, 0 for a run on its own."""
        return 1 if self.ulps > 0 else -1 if self.ulps < 0 else 0


def _pair(draw: int) -> Tuple[Rerun, Rerun]:
    return Rerun(draw=draw, ulps=ENVELOPE_ULPS, kept=True), Rerun(draw=draw, ulps=-ENVELOPE_ULPS)


# The runs in the order the judge asks for them, cheapest evidence first: mirrored pairs, one at a
# time, then float64. A stage is asked for only for the tensors it may still decide (see
# :func:`judge_envelope`). Measured on the whole envelope (translated inception_v3 at 75 px, 279
# tensors; a 30-layer tanh MLP): the first pair alone left 1 of 279 open, the second pair none,
# and the float64 run alone decided no tensor of inception_v3 and moved no margin once both pairs
# were in.
STAGES: Tuple[Tuple[Rerun, ...], ...] = tuple(_pair(d) for d in range(ENVELOPE_DRAWS // 2)) + (
    (Rerun(cast="float64"),),
)
RERUNS: Tuple[Rerun, ...] = tuple(spec for stage in STAGES for spec in stage)


@dataclass(frozen=True)
class Candidate:
    """A tensor for the envelope: its comparison (given its verdict in place), both sides' values,
    and ``base``, the value of PyTorch's own run that the reruns' spread is drawn around (PyTorch's
    value, unless another reference run stands for it)."""

    key: Any  # hashable: a name, or a tuple the caller indexes (("forward", path, ...), (step, name))
    comparison: Comparison
    ms: npt.NDArray[Any]
    torch: npt.NDArray[Any]
    base: Optional[npt.NDArray[Any]] = None

    @property
    def reference(self) -> npt.NDArray[Any]:
        return self.torch if self.base is None else self.base


class Spread:
    """Per element of ``base``: the farthest PyTorch's reruns land from it (``values``), and
    whether a mirrored pair of runs jumped there (``jumped``, see :func:`jumps`).

    ``dtype`` is the arithmetic of the moves: ``None`` keeps the reference's own dtype, as ``check``
    does; ``float64`` takes moves in float64, as the training checks do. Either way, a run that is
    not finite where ``base`` is finite says nothing about rounding there (a float64 run in which
    ``torch.finfo(float64).min`` became ``-inf`` in a float32 softmax, a nudged run that overflowed):
    it is not used at that element (it widens nothing there), and :attr:`unused` marks the element
    and ``unused_runs`` names the runs. A move of Inf would allow any difference; one of NaN none."""

    def __init__(self, base: npt.ArrayLike, dtype: npt.DTypeLike = None) -> None:
        self.base: npt.NDArray[Any] = np.asarray(base)
        self.exact = dtype is None
        self.values: npt.NDArray[Any] = np.zeros(self.base.shape, self.base.dtype if self.exact else dtype)
        self.jumped: npt.NDArray[np.bool_] = np.zeros(self.base.shape, bool)
        self.unused: Optional[npt.NDArray[np.bool_]] = None  # like ``jumped``, once some run was not used somewhere
        self.unused_runs: List[str] = []  # "float64", "perturbed": the runs not used somewhere
        self._plus: Optional[npt.NDArray[Any]] = None
        self._scale: Optional[_Scale] = None

    @property
    def shape(self) -> Tuple[int, ...]:
        return self.base.shape

    def _move(
        self, value: npt.NDArray[Any], base: npt.NDArray[Any], part: Optional[slice] = None, run: str = ""
    ) -> npt.NDArray[Any]:
        moved = np.subtract(value, base, dtype=self.values.dtype)
        if not np.isfinite(moved.sum()):  # a sum is finite only where every term is
            bad = ~np.isfinite(moved)
            unused = bad & np.isfinite(base)
            if part is not None and unused.any():
                if self.unused is None:
                    self.unused = np.zeros(self.base.size, bool)
                self.unused[part] |= unused
                if run not in self.unused_runs:
                    self.unused_runs.append(run)
            moved[unused if self.exact else bad] = 0.0  # exact: where both are Inf or NaN, NaN (skipped)
        return moved

    @property
    def unused_count(self) -> int:
        return 0 if self.unused is None else int(np.count_nonzero(self.unused))

    def add(self, value: npt.NDArray[Any], mirror: int = 0, run: str = "perturbed") -> None:
        """Widen by one run's ``value``; ``mirror`` as :attr:`Rerun.mirror` (the first run of a
        pair is kept, so it must not change before its second run comes); ``run`` names it where it
        is not used somewhere (see :attr:`unused_runs`). Block by block: every
        operation is element by element, save the scale of :func:`jumps`, taken over the whole
        ``base`` once."""
        if mirror > 0:
            self._plus = value
        plus = self._plus if mirror < 0 else None
        if mirror < 0:
            self._plus = None
        value, base = np.ravel(value), np.ravel(self.base)
        spread, jumped = self.values.reshape(-1), self.jumped.reshape(-1)  # views: both made by np.zeros
        if plus is not None:
            plus = np.ravel(plus)
            if self._scale is None:
                self._scale = rms(base)
        with np.errstate(invalid="ignore", over="ignore"):  # Inf - Inf where both agree: NaN
            for start in range(0, base.size, _BLOCK):
                part = slice(start, start + _BLOCK)
                moved = self._move(value[part], base[part], part, run)
                if plus is not None:  # the first run of the pair was marked where it was not used already
                    jumped[part] |= jumps(self._move(plus[part], base[part]), moved, base[part], self._scale)
                np.fmax(spread[part], np.abs(moved), out=spread[part])  # fmax skips NaN


def judge_envelope(
    candidates: Sequence[Candidate],
    rerun: Callable[[Rerun], Iterable[Tuple[Hashable, Optional[npt.NDArray[Any]]]]],
    *,
    dtype: npt.DTypeLike = None,
    adaptive: bool = True,
    spreads: Optional[Dict[Hashable, Spread]] = None,
    start: int = 0,
) -> Dict[Hashable, Spread]:
    """Give every candidate its rounding-envelope verdict, and return each key's :class:`Spread`.
    ``rerun(spec)`` runs PyTorch again as ``spec`` says, from the same start, and yields
    ``(key, value)`` of the candidates' keys (others are ignored; see :attr:`Rerun.kept` and
    :attr:`Rerun.keys`). ``dtype``: the arithmetic of the spread (see :class:`Spread`).

    The runs come stage by stage (:data:`STAGES`). With ``adaptive``, a tensor whose margin after a
    stage is at most HEADROOM is decided and asks for no more runs: every further run can only
    widen its spread, so it would pass with them all, and its margin stays an upper bound of the
    one they would give. A tensor above HEADROOM, failing ones included, takes every run, and its
    verdict is exactly the whole envelope's. Each :class:`Envelope` says how many runs it took.
    Without ``adaptive`` (a caller that reads the spreads themselves), every run for every tensor.

    ``start`` and ``spreads``: the first ``start`` stages were taken elsewhere (see
    :func:`judge_first_pair`), ``spreads`` holding what they gave each candidate, all still open;
    the judge goes on from stage ``start``."""
    if not candidates:
        return {}
    spreads = dict(spreads or {})
    for c in candidates:
        if c.key not in spreads:
            spreads[c.key] = Spread(c.reference, dtype)
    pending: List[Candidate] = list(candidates)
    draws, float64 = _taken(STAGES[:start])
    for index, stage in enumerate(STAGES[start:], start):
        keys = frozenset(c.key for c in pending)
        for spec in stage:
            for key, value in rerun(replace(spec, keys=keys)):
                spread = spreads.get(key) if key in keys else None
                if spread is not None and value is not None and np.shape(value) == spread.shape:
                    spread.add(value, spec.mirror, "perturbed" if spec.cast is None else spec.cast)
            draws, float64 = (draws, True) if spec.cast is not None else (draws + 1, float64)
        if not adaptive and index < len(STAGES) - 1:
            continue
        for c in pending:
            judge_tensor(c.comparison, c.ms, c.torch, spreads[c.key], draws=draws, float64=float64)
        pending = [c for c in pending if c.comparison.margin > HEADROOM]
        if not pending:
            break
    return spreads


def first_pair_spread(
    reference: npt.NDArray[Any],
    plus: Optional[npt.NDArray[Any]],
    minus: Optional[npt.NDArray[Any]],
    *,
    dtype: npt.DTypeLike = None,
) -> Spread:
    """The :class:`Spread` of the first stage of :func:`judge_envelope` (``STAGES[0]``, one mirrored
    pair) around ``reference``, from the two runs' values at hand (None where a run did not give it)."""
    spread = Spread(reference, dtype)
    for spec, value in zip(STAGES[0], (plus, minus)):
        if value is not None and np.shape(value) == spread.shape:
            spread.add(value, spec.mirror, "perturbed" if spec.cast is None else spec.cast)
    return spread


def judge_first_pair(c: Candidate, spread: Spread) -> bool:
    """``c``'s verdict after the first stage, its ``spread`` from :func:`first_pair_spread`, exactly
    as :func:`judge_envelope` would give it. True where the tensor is still open (above HEADROOM:
    the later stages decide it, through ``judge_envelope(..., spreads=..., start=1)``)."""
    draws, float64 = _taken(STAGES[:1])
    judge_tensor(c.comparison, c.ms, c.torch, spread, draws=draws, float64=float64)
    return c.comparison.margin > HEADROOM


def _taken(stages: Iterable[Tuple[Rerun, ...]]) -> Tuple[int, bool]:
    """(perturbed runs, whether the float64 run) of ``stages``."""
    specs = [spec for stage in stages for spec in stage]
    return sum(spec.cast is None for spec in specs), any(spec.cast is not None for spec in specs)


def judge_tensor(
    c: Comparison,
    ms: npt.NDArray[Any],
    torch: npt.NDArray[Any],
    spread: Spread,
    *,
    draws: int = ENVELOPE_DRAWS,
    float64: bool = True,
) -> None:
    """Give ``c`` its rounding-envelope verdict from the ``draws`` perturbed runs (and the float64
    run, with ``float64``) in ``spread``; again after more runs, as the judge asks. The margin shown
    becomes the one against what the tensor was finally allowed: the nearer to passing of element
    by element and, where the tensor may be judged whole, its relative error against the factor
    times PyTorch's spread."""
    tolerance_margin = c.margin if c.envelope is None else c.envelope.tolerance_margin
    margin, outside, ms_error, spread_error, flips, steady = envelope_metrics(
        ms, torch, spread.values, c.tolerance, NOISE_FACTOR, spread.jumped
    )
    c.envelope = Envelope(
        draws,
        float64,
        NOISE_FACTOR,
        margin,
        outside,
        ms_error,
        spread_error,
        flips,
        tolerance_margin=tolerance_margin,
        total=c.total,
        steady=steady,
        unused=spread.unused_count,
    )
    c.margin = c.envelope.final_margin


def jumps(
    plus: npt.NDArray[Any], minus: npt.NDArray[Any], base: npt.NDArray[Any], scale: Optional[_Scale] = None
) -> npt.NDArray[np.bool_]:
    """Elements that jumped in one run of a mirrored pair. A smooth element moves one way under +u
    and back the other way under -u (the response is linear at this scale), so ``plus + minus`` is
    next to nothing; a flipped ReLU/max-pool mask moves it in one run only. Moves within a few
    times the perturbation at the element's own scale are left alone (rounding of the runs).
    ``scale``: :func:`rms` of the whole tensor, where ``base`` is a block of it."""
    bigger = np.maximum(np.abs(plus), np.abs(minus))
    scale = rms(base) if scale is None else scale
    floor = FLIP_FLOOR * ENVELOPE_ULPS * float(np.finfo(base.dtype).eps) * (np.abs(base) + scale)
    jumped: npt.NDArray[np.bool_] = (np.abs(plus + minus) > 0.5 * bigger) & (bigger > floor)
    return jumped


def rms(base: npt.NDArray[Any]) -> _Scale:
    """The root mean square of ``base``, in float64 (0 for an empty tensor)."""
    return np.sqrt(np.mean(np.square(base, dtype=np.float64))) if base.size else 0.0
