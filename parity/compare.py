"""Numbers only: flatten outputs into named pairs and measure how far apart they are.

Nothing here formats a message (see :mod:`parity.report`), so wording can change without
touching the numerics.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Tuple

import numpy as np

from .tolerance import Tolerance

__all__ = ["Comparison", "NonFinite", "compare_arrays", "structural_problem"]

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
    noise: Optional["NoiseFloor"] = None
    layer: str = ""  # owning sub-Cell/sub-Module, when known

    @property
    def passed(self) -> bool:
        if self.problem is not None:
            return False
        if self.nonfinite is not None and not self.nonfinite.agree:
            return False
        if self.noise is not None:
            return self.mismatched == 0 or self.noise.passed
        return self.mismatched == 0

    @property
    def label(self) -> str:
        prefix = {"output": "forward", "input grad": "grad of", "param grad": "grad of",
                  "buffer": "after the step,"}[self.kind]
        return f"{prefix} {self.name}" if self.kind != "output" else f"forward {self.name}"


@dataclass(frozen=True)
class NoiseFloor:
    """The float64-reference verdict: MindSpore's error against a float64 PyTorch run, relative to
    PyTorch float32's own error against it (both as relative L2 norms)."""

    ms_error: float
    torch_error: float
    factor: float

    @property
    def allowed(self) -> float:
        return self.factor * self.torch_error

    @property
    def passed(self) -> bool:
        return self.ms_error <= self.allowed


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


def relative_error(value: np.ndarray, reference: np.ndarray) -> float:
    """||value - reference|| / ||reference|| over finite elements, in float64."""
    a, b = value.astype(np.float64), reference.astype(np.float64)
    keep = np.isfinite(a) & np.isfinite(b)
    ref_norm = float(np.linalg.norm(b[keep]))
    err = float(np.linalg.norm(a[keep] - b[keep]))
    if ref_norm == 0:
        return 0.0 if err == 0 else float("inf")
    return err / ref_norm
