"""Numbers only: flatten outputs into named pairs and measure how far apart they are.

Nothing here formats a message (see :mod:`parity.engine.diagnosis.messages`), so wording can change without
touching the numerics.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Dict, Iterable, Optional, Tuple, Union

import numpy as np
import numpy.typing as npt

from .dtypes import narrowest
from .tolerance import DeviceDefaults, Tolerance, ToleranceSpec, resolve

if TYPE_CHECKING:
    from .envelope import Envelope
    from .golden import Golden

__all__ = [
    "ArrayPair",
    "Comparison",
    "NonFinite",
    "compare_arrays",
    "compare_pair",
    "relative_error",
    "structural_problem",
]

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
    envelope: Optional[Envelope] = None  # the rounding-envelope judge, when the tolerance alone was too close
    layer: str = ""  # owning sub-Cell/sub-Module, when known
    golden: Optional[Golden] = None  # the half-precision judge, when it ran

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
        prefix = {"output": "forward", "input grad": "grad of", "param grad": "grad of", "buffer": "after the step,"}[
            self.kind
        ]
        return f"{prefix} {self.name}" if self.kind != "output" else f"forward {self.name}"


def _index(flat_index: int, shape: Tuple[int, ...]) -> Tuple[int, ...]:
    return tuple(int(i) for i in np.unravel_index(flat_index, shape)) if shape else ()


def structural_problem(ms: npt.NDArray[Any], ref: npt.NDArray[Any], *, check_dtype: bool = True) -> Optional[str]:
    """ "shape" or "dtype" when values cannot (or must not) be compared, else None."""
    if ms.shape != ref.shape:
        return "shape"
    if check_dtype and ms.dtype != ref.dtype:
        return "dtype"
    return None


def _nonfinite(
    ms: npt.NDArray[Any], ref: npt.NDArray[Any]
) -> Union[Tuple[None, None], Tuple[npt.NDArray[np.bool_], NonFinite]]:
    """Masks of positions to ignore (agreeing non-finite) and the NonFinite record, if any."""
    ms_bad, ref_bad = ~np.isfinite(ms), ~np.isfinite(ref)
    if not (ms_bad.any() or ref_bad.any()):
        return None, None
    same = (np.isnan(ms) & np.isnan(ref)) | (np.isinf(ms) & (ms == ref))  # complex: NaN if either part is
    disagree = (ms_bad | ref_bad) & ~same
    shown = np.argwhere(disagree if disagree.any() else same)[:_MAX_POSITIONS]
    record = NonFinite(
        int(ms_bad.sum()), int(ref_bad.sum()), int(disagree.sum()), tuple(tuple(int(i) for i in row) for row in shown)
    )
    return same | disagree, record


def compare_arrays(ms: npt.NDArray[Any], ref: npt.NDArray[Any], tolerance: Tolerance) -> Dict[str, object]:
    """Metrics of ``ms`` against the reference ``ref`` (same shape), as Comparison fields."""
    total = int(ref.size)
    if total == 0:
        return {"total": 0}
    if ms.dtype == np.bool_:
        ms, ref = ms.astype(np.int8), ref.astype(np.int8)
    wide = np.complex128 if "c" in (ms.dtype.kind, ref.dtype.kind) else np.float64
    a: npt.NDArray[Any] = ms.astype(wide)
    b: npt.NDArray[Any] = ref.astype(wide)
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


def _finite_metrics(
    a: npt.NDArray[np.float64], b: npt.NDArray[np.float64], shape: Tuple[int, ...], tolerance: Tolerance, norm: float
) -> Dict[str, object]:
    """:func:`compare_arrays` of finite float64 ``a`` against ``b`` (flat), block by block, with
    the same results: counts add up, maxima and their first positions carry over (a block's
    maximum replaces the one so far only when strictly greater), and the norms and the dot product
    of the cosine are taken over the whole arrays, as ``np.linalg.norm`` takes them."""
    mismatched, margin = 0, 0.0
    max_abs, i_abs, max_rel, i_rel = -1.0, 0, -1.0, 0
    positive = tolerance.atol > 0  # then every allowed difference is > 0 and diff / allowed is never 0 / 0
    with np.errstate(divide="ignore", invalid="ignore"):
        for start in range(0, a.size, _BLOCK):
            diff = np.subtract(a[start : start + _BLOCK], b[start : start + _BLOCK])
            np.abs(diff, out=diff)
            magnitude = np.abs(b[start : start + _BLOCK])
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
    return {
        "total": int(a.size),
        "mismatched": mismatched,
        "max_abs": max_abs,
        "max_abs_index": _index(i_abs, shape),
        "max_rel": max_rel,
        "max_rel_index": _index(i_rel, shape),
        "cosine": cosine,
        "margin": margin,
        "nonfinite": None,
    }


def relative_error(value: npt.NDArray[Any], reference: npt.NDArray[Any]) -> float:
    """||value - reference|| / ||reference|| over finite elements, in float64."""
    a, b = value.astype(np.float64), reference.astype(np.float64)
    keep = np.isfinite(a) & np.isfinite(b)
    ref_norm = float(np.linalg.norm(b[keep]))
    err = float(np.linalg.norm(a[keep] - b[keep]))
    if ref_norm == 0:
        return 0.0 if err == 0 else float("inf")
    return err / ref_norm


@dataclass(frozen=True)
class ArrayPair:
    """Two arrays to compare and what to call them."""

    kind: str
    name: str
    ms_name: str
    torch_name: str
    mode: str
    ms: npt.NDArray[Any]
    torch: npt.NDArray[Any]
    layer: str = ""

    @property
    def key(self) -> Tuple[str, str]:
        return self.kind, self.torch_name


def compare_pair(
    pair: ArrayPair, chain: Iterable[Union[ToleranceSpec, DeviceDefaults]], check_dtype: bool
) -> Comparison:
    dtype = str(pair.torch.dtype)
    # A parameter's gradient (or statistic) takes the parameter's dtype: where MindSpore keeps float32
    # parameters and computes in half precision (to_float), it is compared in the half dtype.
    master = pair.kind in ("param grad", "buffer") and pair.ms.dtype != pair.torch.dtype
    compared = narrowest((str(pair.ms.dtype), dtype)) if master else None
    tol, source = resolve(chain, (pair.name, pair.ms_name, pair.torch_name), compared or dtype)
    item = Comparison(
        pair.kind,
        pair.name,
        pair.ms_name,
        pair.torch_name,
        pair.mode,
        tuple(pair.ms.shape),
        tuple(pair.torch.shape),
        str(pair.ms.dtype),
        dtype,
        tol,
        source,
        layer=pair.layer,
    )
    item.problem = structural_problem(
        pair.ms, pair.torch, check_dtype=check_dtype and pair.kind != "buffer" and compared is None
    )
    if item.problem is not None:
        item.margin = float("inf")
        return item
    for key, value in compare_arrays(pair.ms, pair.torch, tol).items():
        setattr(item, key, value)
    return item
