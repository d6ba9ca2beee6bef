"""Numbers only: flatten outputs into named pairs and measure how far apart they are.

Nothing here formats a message (see :mod:`parity.report`), so wording can change without
touching the numerics.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Tuple

import numpy as np

from .tolerance import Tolerance

__all__ = ["Comparison", "Envelope", "NonFinite", "compare_arrays", "envelope_metrics", "relative_error",
           "structural_problem"]

_MAX_POSITIONS = 5


@dataclass(frozen=True)
class NonFinite:
    """Where NaN/Inf appear and whether both sides agree on them."""

    ms_count: int
    torch_count: int
    disagreeing: int
    positions: Tuple[Tuple[int, ...], ...]  # first few disagreeing (or, if all agree, present) positions

    @property
    def agree(self) -> bool:
        return self.disagreeing == 0


@dataclass
class Comparison:
    """One compared tensor: its identity, both sides' layout, the metrics and the verdict."""

    kind: str  # "output", "input grad", "param grad", "buffer"
    name: str  # how messages name it, e.g. "output[0]" or "features.3.weight"
    ms_name: str
    torch_name: str
    mode: str
    ms_shape: Tuple[int, ...]
    torch_shape: Tuple[int, ...]
    ms_dtype: str
    torch_dtype: str
    tolerance: Tolerance
    tolerance_source: str
    problem: Optional[str] = None  # "shape" or "dtype": values were not compared
    total: int = 0
    mismatched: int = 0
    max_abs: float = 0.0
    max_abs_index: Tuple[int, ...] = ()
    max_rel: float = 0.0
    max_rel_index: Tuple[int, ...] = ()
    cosine: float = 1.0
    margin: float = 0.0  # greatest |diff| / allowed: <= 1 passes
    nonfinite: Optional[NonFinite] = None
    envelope: Optional["Envelope"] = None  # the rounding-envelope judge, when the tolerance alone was too close
    layer: str = ""  # owning sub-Cell/sub-Module, when known
    golden: Optional[object] = None  # parity.precision.Golden: the half-precision judge, when it ran

    @property
    def passed(self) -> bool:
        if self.problem is not None:
            return False
        if self.nonfinite is not None and not self.nonfinite.agree:
            return False
        if self.envelope is not None:
            return self.envelope.passed
        if self.golden is not None:
            return self.golden.passed
        return self.mismatched == 0

    @property
    def noise_judged(self) -> bool:
        """Passed only because the difference lies inside PyTorch's own rounding envelope."""
        return self.passed and self.envelope is not None and self.mismatched > 0

    @property
    def label(self) -> str:
        prefix = {"output": "forward", "input grad": "grad of", "param grad": "grad of",
                  "buffer": "after the step,"}[self.kind]
        return f"{prefix} {self.name}" if self.kind != "output" else f"forward {self.name}"


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


def _index(flat_index: int, shape) -> Tuple[int, ...]:
    return tuple(int(i) for i in np.unravel_index(flat_index, shape)) if shape else ()


def structural_problem(ms: np.ndarray, ref: np.ndarray, *, check_dtype: bool = True) -> Optional[str]:
    """"shape" or "dtype" when values cannot (or must not) be compared, else None."""
    if ms.shape != ref.shape:
        return "shape"
    if check_dtype and ms.dtype != ref.dtype:
        return "dtype"
    return None


def _nonfinite(ms: np.ndarray, ref: np.ndarray):
    """Masks of positions to ignore (agreeing non-finite) and the NonFinite record, if any."""
    ms_bad, ref_bad = ~np.isfinite(ms), ~np.isfinite(ref)
    if not (ms_bad.any() or ref_bad.any()):
        return None, None
    same = (np.isnan(ms) & np.isnan(ref)) | (np.isinf(ms) & (ms == ref))  # complex: NaN if either part is
    disagree = (ms_bad | ref_bad) & ~same
    shown = np.argwhere(disagree if disagree.any() else same)[:_MAX_POSITIONS]
    record = NonFinite(int(ms_bad.sum()), int(ref_bad.sum()), int(disagree.sum()),
                       tuple(tuple(int(i) for i in row) for row in shown))
    return same | disagree, record


def compare_arrays(ms: np.ndarray, ref: np.ndarray, tolerance: Tolerance) -> dict:
    """Metrics of ``ms`` against the reference ``ref`` (same shape), as Comparison fields."""
    total = int(ref.size)
    if total == 0:
        return {"total": 0}
    if ms.dtype == np.bool_:
        ms, ref = ms.astype(np.int8), ref.astype(np.int8)
    wide = np.complex128 if "c" in (ms.dtype.kind, ref.dtype.kind) else np.float64
    a = ms.astype(wide)
    b = ref.astype(wide)
    if wide is np.float64:
        # ||a||^2 and ||b||^2 are finite only where every element is (a sum of squares cannot
        # cancel an Inf or lose a NaN): then there is nothing non-finite to set aside.
        flat_a, flat_b = a.ravel(), b.ravel()
        with np.errstate(over="ignore", invalid="ignore"):
            square_a, square_b = flat_a.dot(flat_a), flat_b.dot(flat_b)
        if np.isfinite(square_a) and np.isfinite(square_b):
            return _finite_metrics(flat_a, flat_b, ref.shape, tolerance, np.sqrt(square_a) * np.sqrt(square_b))
    skip, nonfinite = _nonfinite(a, b) if a.dtype.kind in "fc" else (None, None)
    if skip is not None:
        a, b = np.where(skip, 0.0, a), np.where(skip, 0.0, b)
    diff = np.abs(a - b)
    allowed = tolerance.atol + tolerance.rtol * np.abs(b)
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(diff == 0, 0.0, diff / np.abs(b))
        ratio = np.where(diff == 0, 0.0, diff / allowed)
    mismatched = int((diff > allowed).sum())
    i_abs, i_rel = int(np.argmax(diff)), int(np.argmax(rel))
    norm = float(np.linalg.norm(a) * np.linalg.norm(b))
    cosine = float(np.real(np.vdot(b.ravel(), a.ravel())) / norm) if norm > 0 else float(np.array_equal(a, b))
    return {
        "total": total,
        "mismatched": mismatched + (nonfinite.disagreeing if nonfinite else 0),
        "max_abs": float(diff.flat[i_abs]),
        "max_abs_index": _index(i_abs, ref.shape),
        "max_rel": float(rel.flat[i_rel]),
        "max_rel_index": _index(i_rel, ref.shape),
        "cosine": cosine,
        "margin": float(ratio.max()) if nonfinite is None or nonfinite.agree else float("inf"),
        "nonfinite": nonfinite,
    }


_BLOCK = 1 << 15  # elements per block: a block's float64 temporaries stay in the CPU's cache


def _finite_metrics(a: np.ndarray, b: np.ndarray, shape, tolerance: Tolerance, norm) -> dict:
    """:func:`compare_arrays` of finite float64 ``a`` against ``b`` (flat), block by block, with
    the same results: counts add up, maxima and their first positions carry over (a block's
    maximum replaces the one so far only when strictly greater), and the norms and the dot product
    of the cosine are taken over the whole arrays, as ``np.linalg.norm`` takes them."""
    mismatched, margin = 0, 0.0
    max_abs, i_abs, max_rel, i_rel = -1.0, 0, -1.0, 0
    positive = tolerance.atol > 0  # then every allowed difference is > 0 and diff / allowed is never 0 / 0
    with np.errstate(divide="ignore", invalid="ignore"):
        for start in range(0, a.size, _BLOCK):
            diff = np.subtract(a[start:start + _BLOCK], b[start:start + _BLOCK])
            np.abs(diff, out=diff)
            magnitude = np.abs(b[start:start + _BLOCK])
            allowed = magnitude * tolerance.rtol
            allowed += tolerance.atol
            mismatched += int(np.count_nonzero(diff > allowed))
            at = int(np.argmax(diff))
            if diff[at] > max_abs:
                max_abs, i_abs = float(diff[at]), start + at
            ratio = np.divide(diff, allowed)
            if not positive:
                ratio[diff == 0] = 0.0
            zero_b = not magnitude.all()  # diff / |b| is 0 / 0 where both are 0
            rel = np.divide(diff, magnitude, out=magnitude)
            if zero_b:
                rel[diff == 0] = 0.0
            margin = max(margin, float(ratio.max()))
            at = int(np.argmax(rel))
            if rel[at] > max_rel:
                max_rel, i_rel = float(rel[at]), start + at
    cosine = float(np.real(np.vdot(b, a)) / norm) if norm > 0 else float(np.array_equal(a, b))
    return {"total": int(a.size), "mismatched": mismatched, "max_abs": max_abs, "max_abs_index": _index(i_abs, shape),
            "max_rel": max_rel, "max_rel_index": _index(i_rel, shape), "cosine": cosine, "margin": margin,
            "nonfinite": None}


def relative_error(value: np.ndarray, reference: np.ndarray) -> float:
    """||value - reference|| / ||reference|| over finite elements, in float64."""
    a, b = value.astype(np.float64), reference.astype(np.float64)
    keep = np.isfinite(a) & np.isfinite(b)
    ref_norm = float(np.linalg.norm(b[keep]))
    err = float(np.linalg.norm(a[keep] - b[keep]))
    if ref_norm == 0:
        return 0.0 if err == 0 else float("inf")
    return err / ref_norm


def typical_relative_spread(spread: np.ndarray, ref: np.ndarray, magnitude: Optional[np.ndarray] = None) -> float:
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


def envelope_metrics(ms: np.ndarray, ref: np.ndarray, spread: np.ndarray, tolerance: Tolerance,
                     factor: float, jumped: np.ndarray) -> Tuple[float, int, float, float, int, int]:
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


def _envelope_margin(diff: np.ndarray, allowed: np.ndarray, atol: float) -> float:
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
