"""Each layer call's verdict, and the first divergent layer.

Verdict by error amplification: a layer whose inputs agree (within tolerance) but whose outputs
do not is where the divergence starts. A layer whose inputs already differ is blamed only when
its relative output error exceeds ``AMPLIFICATION`` times its relative input error (plus its
float64 noise floor where known); otherwise it is "downstream" of the real cause. Framework-free:
the nightly records read these types.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, List, Optional, Sequence, Tuple

import numpy as np

from ...judge.layouts import in_layout, one_layout
from ...judge.metrics import relative_error
from ...judge.tolerance import Tolerance

__all__ = [
    "AMPLIFICATION",
    "NonFiniteOrigin",
    "first_nonfinite",
    "pair_metrics",
    "worst_relative_error",
    "Metrics",
    "LayerVerdict",
    "LayerTable",
    "compare_call",
    "settle",
    "first_divergence",
]

AMPLIFICATION = 10.0


@dataclass
class LayerVerdict:
    """How one layer call compares, in one direction."""

    direction: str  # "forward" or "backward"
    path: str  # the PyTorch path
    ms_path: str
    ms_type: str
    torch_type: str
    call: int
    in_error: float  # relative L2 error of what flows in
    in_margin: float  # greatest |diff| / allowed over what flows in
    out_error: float  # relative L2 error of what flows out
    out_margin: float  # greatest |diff| / allowed over what flows out
    max_abs: float
    status: str = "ok"  # "ok", "FAIL" (divergence starts here), "downstream", "contains", "unaligned",
    # "noise" (beyond the tolerance in a check that passed)
    note: str = ""
    noise: float = 0.0  # float64 noise floor of what flows out (relative), when known
    in_noise: float = 0.0
    # The shapes each side saw: what flowed in and out, per tensor (None where a tensor is absent).
    ms_in_shapes: Tuple[Optional[Tuple[int, ...]], ...] = ()
    ms_out_shapes: Tuple[Optional[Tuple[int, ...]], ...] = ()
    in_shapes: Tuple[Optional[Tuple[int, ...]], ...] = ()  # PyTorch's
    out_shapes: Tuple[Optional[Tuple[int, ...]], ...] = ()
    # The dtypes of what flowed out on each side (mixed precision: which precision the layer ran in).
    ms_out_dtypes: Tuple[str, ...] = ()
    out_dtypes: Tuple[str, ...] = ()  # PyTorch's
    # The layer's own error, on a failing check: fed PyTorch's inputs (see parity.engine.diagnosis.own), the
    # relative L2 error and greatest |diff| / allowed of its output; "own", "inherited", "ok" or
    # "" (not measured).
    own_error: Optional[float] = None
    own_margin: Optional[float] = None
    own_status: str = ""
    # NaN/Inf in what flowed in and out: flags MS_NONFINITE | TORCH_NONFINITE | MS_ONLY | TORCH_ONLY.
    in_nonfinite: int = 0
    out_nonfinite: int = 0

    @property
    def shapes_differ(self) -> bool:
        """Whether what flowed out has different shapes on the two sides, other than one layout of
        the same values (see :mod:`parity.judge.layouts`)."""
        if not self.out_shapes or self.ms_out_shapes == self.out_shapes:
            return False
        if len(self.ms_out_shapes) != len(self.out_shapes):
            return True
        return any(
            m != t and (m is None or t is None or not one_layout(m, t))
            for m, t in zip(self.ms_out_shapes, self.out_shapes)
        )

    @property
    def layout_differs(self) -> bool:
        """Whether what flowed out is one layout of the same values on the two sides, in other shapes."""
        return bool(self.out_shapes) and self.ms_out_shapes != self.out_shapes and not self.shapes_differ

    @property
    def label(self) -> str:
        suffix = f" (call {self.call + 1})" if self.call else ""
        return f"{self.path}{suffix}"


class Metrics:
    """(relative L2 error, greatest |diff| / allowed, greatest |diff|, non-finite flags) of one array pair, in the
    arrays' own precision, remembered for the last few pairs: a tensor flows out of a layer, out of
    its container and into the next layer, and is measured once."""

    def __init__(self, size: int = 32):
        self._memo: "OrderedDict[tuple, tuple]" = OrderedDict()
        self._size = size

    def __call__(self, a: np.ndarray, b: np.ndarray, tol: Tolerance) -> Tuple[float, float, float, int]:
        key = (id(a), id(b), tol)
        if key in self._memo:
            return self._memo[key][2]
        found = _pair_metrics(a, b, tol)
        self._memo[key] = (a, b, found)  # the arrays are kept so that their ids stay theirs
        if len(self._memo) > self._size:
            self._memo.popitem(last=False)
        return found


def _pair_metrics(a: np.ndarray, b: np.ndarray, tol: Tolerance) -> Tuple[float, float, float, int]:
    """(relative L2 error, greatest |diff| / allowed, greatest |diff|, non-finite flags: see
    :data:`NONFINITE`) of one array pair."""
    if a.shape != b.shape:
        return float("inf"), float("inf"), float("inf"), 0
    if a.size == 0:
        return 0.0, 0.0, 0.0, 0
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        return _nonfinite_metrics(a, b, tol)
    work = np.result_type(a.dtype, b.dtype, np.float32)
    # Values near the dtype's limits (a mask of finfo.min) may overflow to Inf, and 0 / 0 where
    # atol is 0: measured, not warned about (a suite with warnings as errors keeps its diagnosis).
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        diff = np.subtract(a, b, dtype=work)  # two temporaries in all: these are activations
        np.abs(diff, out=diff)
        allowed = np.abs(b, dtype=work)
        ref_norm = float(np.linalg.norm(allowed.ravel()))
        diff_norm, max_abs = float(np.linalg.norm(diff.ravel())), float(diff.max())
        allowed *= tol.rtol
        allowed += tol.atol
        ratio = np.divide(diff, allowed, out=allowed)
        if tol.atol <= 0:
            np.copyto(ratio, 0.0, where=diff == 0)  # equal elements: within any tolerance
        margin = float(ratio.max())
    error = diff_norm / ref_norm if ref_norm else (0.0 if not max_abs else float("inf"))
    return error, margin, max_abs, 0


# Non-finite flags of a compared pair (OR-ed over a layer call's tensors): which side has NaN/Inf,
# and which has them where the other side does not.
MS_NONFINITE, TORCH_NONFINITE, MS_ONLY, TORCH_ONLY = 1, 2, 4, 8
NONFINITE = {"mindspore": MS_ONLY, "torch": TORCH_ONLY}


def _nonfinite_metrics(a, b, tol):
    """The slow path: NaN/Inf where both sides agree count as equal; elsewhere as infinitely off."""
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    diff = np.abs(a64 - b64)
    same = (np.isnan(a64) & np.isnan(b64)) | (np.isinf(a64) & (a64 == b64))
    diff = np.where(same, 0.0, np.where(np.isnan(diff), np.inf, diff))
    margin = float(np.max(diff / (tol.atol + tol.rtol * np.abs(np.where(same, 0.0, b64)))))
    bad_a, bad_b = ~np.isfinite(a64), ~np.isfinite(b64)
    flags = (
        (MS_NONFINITE if bad_a.any() else 0)
        | (TORCH_NONFINITE if bad_b.any() else 0)
        | (MS_ONLY if (bad_a & ~same).any() and (bad_a & ~bad_b).any() else 0)
        | (TORCH_ONLY if (bad_b & ~same).any() and (bad_b & ~bad_a).any() else 0)
    )
    return relative_error(a, b), margin, float(diff.max()), flags


def pair_metrics(a: np.ndarray, b: np.ndarray, tol: Tolerance) -> Tuple[float, float, float, int]:
    """(relative L2 error, greatest |diff| / allowed, greatest |diff|, non-finite flags) of one array pair."""
    return _pair_metrics(a, b, tol)


def _measure(
    ms: Sequence[np.ndarray], ref: Sequence[np.ndarray], tol: Tolerance, metrics
) -> Tuple[float, float, float, int]:
    """Worst error, margin and |diff|, and every non-finite flag, over the tensors of one side of a layer call."""
    if len(ms) != len(ref):
        return float("inf"), float("inf"), float("inf"), 0
    found = [metrics(in_layout(a, b.shape), b, tol) for a, b in zip(ms, ref) if a is not None and b is not None]
    if not found:
        return 0.0, 0.0, 0.0, 0
    flags = 0
    for item in found:
        flags |= item[3]
    return max(f[0] for f in found), max(f[1] for f in found), max(f[2] for f in found), flags


def worst_relative_error(ms: Sequence[np.ndarray], ref: Sequence[np.ndarray]) -> float:
    """Relative L2 error (for noise floors), comparing arrays only."""
    return _measure(ms, ref, Tolerance(0.0, 1.0), _pair_metrics)[0]


def compare_call(
    direction: str,
    path: str,
    ms_path: str,
    ms_type: str,
    torch_type: str,
    call: int,
    ms_in,
    ms_out,
    ref_in,
    ref_out,
    tol: Tolerance,
    noise: float = 0.0,
    in_noise: float = 0.0,
    metrics=_pair_metrics,
) -> LayerVerdict:
    """Compare one layer call. ``noise``/``in_noise`` are the float64 noise floors (relative
    errors) of what flows out and in, when a float64 reference was captured."""
    in_error, in_margin, _, in_flags = _measure(ms_in, ref_in, tol, metrics)
    out_error, margin, max_abs, out_flags = _measure(ms_out, ref_out, tol, metrics)
    verdict = LayerVerdict(
        direction,
        path,
        ms_path,
        ms_type,
        torch_type,
        call,
        in_error,
        in_margin,
        out_error,
        margin,
        max_abs,
        noise=noise,
        in_noise=in_noise,
        ms_in_shapes=_shapes(ms_in),
        ms_out_shapes=_shapes(ms_out),
        in_shapes=_shapes(ref_in),
        out_shapes=_shapes(ref_out),
        ms_out_dtypes=_dtypes(ms_out),
        out_dtypes=_dtypes(ref_out),
        in_nonfinite=in_flags,
        out_nonfinite=out_flags,
    )
    if margin <= 1.0:
        return verdict
    # Blame only amplification: what flows in already explains this much of what flows out; and
    # NaN/Inf made on one side from finite inputs.
    made = out_flags & (MS_ONLY | TORCH_ONLY) and not in_flags & (MS_NONFINITE | TORCH_NONFINITE)
    verdict.status = "FAIL" if made or out_error > AMPLIFICATION * in_error + noise else "downstream"
    return verdict


def _dtypes(tensors) -> Tuple[str, ...]:
    return tuple("" if t is None else t.dtype.name for t in tensors or ())


def _shapes(tensors) -> Tuple[Optional[Tuple[int, ...]], ...]:
    return tuple(None if t is None else tuple(t.shape) for t in tensors or ())


def settle(verdicts: Sequence[LayerVerdict]) -> None:
    """Mark containers: a FAIL whose own sub-layer failed first only *contains* the divergence;
    a FAIL whose sub-layers all agree diverges in its own code, between the last sub-layer that
    agrees and the first one fed a differing input."""
    failed: List[str] = []
    for i, verdict in enumerate(verdicts):
        inside = [v for v in verdicts[:i] if v.path.startswith(verdict.path + ".")]
        if verdict.status == "FAIL" and any(p.startswith(verdict.path + ".") for p in failed):
            verdict.status = "contains"
        elif verdict.status == "FAIL" and inside:
            fed_badly = next((v for v in inside if _inputs_differ(v)), None)
            agree = [v for v in inside[: inside.index(fed_badly)] if v.status == "ok"] if fed_badly else inside
            after = f"after '{agree[-1].label}'" if agree else "at its start"
            before = f", before '{fed_badly.label}'" if fed_badly else ""
            verdict.note = f"in the code of '{verdict.path}' between its sub-layers ({after}{before})"
        if verdict.status == "FAIL":
            failed.append(verdict.path)


def _inputs_differ(verdict: LayerVerdict) -> bool:
    return (
        verdict.in_margin > 1.0 and verdict.in_error > verdict.in_noise and verdict.status not in ("unaligned", "noise")
    )


@dataclass(frozen=True)
class NonFiniteOrigin:
    """Where NaN or Inf first appeared on one side and not the other: the layer (PyTorch's path),
    the pass (``"forward"`` or ``"backward"``), the side that has them (``"mindspore"``,
    ``"torch"`` or ``"both"``: each where the other has none), whether what flowed into the layer
    was finite on both sides, and in training the step and stage."""

    layer: str
    direction: str
    side: str
    ms_layer: str = ""
    label: str = ""
    inputs_finite: bool = True
    step: Optional[int] = None
    stage: Optional[str] = None

    def as_dict(self) -> dict:
        return {
            "layer": self.layer,
            "direction": self.direction,
            "side": self.side,
            "ms_layer": self.ms_layer,
            "inputs_finite": self.inputs_finite,
            "step": self.step,
            "stage": self.stage,
        }


def first_nonfinite(forward: Sequence[LayerVerdict], backward: Sequence[LayerVerdict]) -> Optional[NonFiniteOrigin]:
    """The first layer call (execution order, then backward order) whose output has NaN/Inf on
    one side where the other side has none, preferring one whose inputs were finite on both sides
    (where NaN/Inf appeared, rather than where it flowed through)."""
    for direction, verdicts in (("forward", forward), ("backward", backward)):
        found = [v for v in verdicts if v.out_nonfinite & (MS_ONLY | TORCH_ONLY) and v.status != "unaligned"]
        if not found:
            continue
        clean = [v for v in found if not v.in_nonfinite & (MS_NONFINITE | TORCH_NONFINITE)]
        v = (clean or found)[0]
        side = {MS_ONLY: "mindspore", TORCH_ONLY: "torch"}.get(v.out_nonfinite & (MS_ONLY | TORCH_ONLY), "both")
        return NonFiniteOrigin(v.path, direction, side, v.ms_path, v.label, bool(clean))
    return None


def first_divergence(verdicts: Sequence[LayerVerdict]) -> Tuple[Optional[LayerVerdict], str]:
    """The first FAIL in the order given (execution order forward, backward order backward), and
    where it lies. With no FAIL, the first layer whose inputs differ while the layer before it
    agreed: the divergence lies in functional code between the two."""
    for verdict in verdicts:
        if verdict.status == "FAIL":
            return verdict, verdict.note or f"'{verdict.label}' ({verdict.ms_type} <-> {verdict.torch_type})"
    previous = None
    for verdict in verdicts:
        if _inputs_differ(verdict):
            before = f"'{previous.label}'" if previous is not None else "the inputs"
            return verdict, f"between {before} and '{verdict.label}' (functional code, no sub-layer)"
        if verdict.status == "ok":
            previous = verdict
    return None, ""


@dataclass
class LayerTable:
    """Every layer call's verdict, forward in execution order and backward in backward order."""

    forward: List[LayerVerdict]
    backward: List[LayerVerdict]
    # The layers whose own error is out of bounds (parity.engine.diagnosis.own.OwnError), in execution order,
    # when a failing check measured them.
    own_errors: List = field(default_factory=list)
    own_measured: bool = False  # whether the own errors were measured (a failing check's layers)
    # what a known mismatch's replay is judged against (parity.engine.diagnosis.feeding.Replayable),
    # from the own errors' measurement until the causes are confirmed
    replayable: Any = field(default=None, repr=False, compare=False)

    def first(self, direction: str) -> Tuple[Optional[LayerVerdict], str]:
        return first_divergence(self.forward if direction == "forward" else self.backward)

    def passed_within_noise(self) -> None:
        """The check passed (every compared tensor within its tolerance or PyTorch's rounding
        envelope): a layer beyond the tolerance is rounding noise, not a divergence. Say so,
        rather than FAIL or downstream."""
        for verdict in self.forward + self.backward:
            if verdict.status in ("FAIL", "downstream", "contains"):
                verdict.status = "noise"
                verdict.note = "beyond the tolerance; the check passed, inside PyTorch's rounding envelope"
