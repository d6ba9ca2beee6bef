"""Name the first divergent layer: per-layer records from both sides, aligned and judged.

The PyTorch side runs first and keeps its layer inputs and outputs (as numpy arrays, each
tensor once). The MindSpore side compares each layer call *as it happens* against the aligned
PyTorch record and keeps only a summary, so memory stays bounded by one side's activations.

Verdict by error amplification: a layer whose inputs agree (within tolerance) but whose outputs
do not is where the divergence starts. A layer whose inputs already differ is blamed only when
its relative output error exceeds ``AMPLIFICATION`` times its relative input error (plus its
float64 noise floor where known); otherwise it is "downstream" of the real cause.
"""

from __future__ import annotations

from collections import Counter, OrderedDict
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ..judge.metrics import relative_error
from ..judge.tolerance import Tolerance

__all__ = [
    "AMPLIFICATION",
    "NonFiniteOrigin",
    "first_nonfinite",
    "pair_metrics",
    "align_layers",
    "by_name",
    "LayerCall",
    "LayerVerdict",
    "LayerTable",
    "Recording",
    "Localizer",
    "judge",
    "settle",
    "first_divergence",
]

AMPLIFICATION = 10.0


@dataclass
class LayerCall:
    """One call of one sub-Cell/sub-Module: its forward tensors and, later, its gradients."""

    path: str
    type: str
    call: int
    inputs: Optional[List[np.ndarray]]
    outputs: Optional[List[np.ndarray]]
    grad_outputs: Optional[List[np.ndarray]] = None  # flowing in during backward
    grad_inputs: Optional[List[np.ndarray]] = None  # flowing out during backward
    # The name of each input and grad_input (a positional argument's is its parameter's), by
    # which the two sides are paired where either was given keyword arguments (``keywords``).
    input_names: Optional[Tuple[str, ...]] = None
    grad_input_names: Optional[Tuple[str, ...]] = None
    keywords: bool = False

    @property
    def key(self) -> Tuple[str, int]:
        return self.path, self.call


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
    # The layer's own error, on a failing check: fed PyTorch's inputs (see parity.engine.own), the
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
        """Whether what flowed out has different shapes on the two sides."""
        return bool(self.out_shapes) and self.ms_out_shapes != self.out_shapes

    @property
    def label(self) -> str:
        suffix = f" (call {self.call + 1})" if self.call else ""
        return f"{self.path}{suffix}"


class Recording:
    """Collects LayerCalls from hooks; backward calls are matched to their forward call."""

    def __init__(
        self,
        on_forward: Optional[Callable[[LayerCall], None]] = None,
        on_backward: Optional[Callable[[LayerCall], None]] = None,
    ):
        self.calls: List[LayerCall] = []
        self.backward_order: List[LayerCall] = []
        self._counts: Counter = Counter()
        self._by_key: Dict[Tuple[str, int], LayerCall] = {}
        self.unmatched: List[str] = []  # backward calls with no forward record
        self._on_forward = on_forward
        self._on_backward = on_backward

    def forward(self, path: str, type_name: str, inputs, outputs, *, names=None, keywords: bool = False) -> None:
        """A forward call; ``names`` names its inputs, ``keywords`` says it was given keyword arguments."""
        call = LayerCall(path, type_name, self._counts[path], inputs, outputs, input_names=names, keywords=keywords)
        self._counts[path] += 1
        if self._on_forward is not None:
            self._on_forward(call)
            call.inputs, call.outputs = [], []  # compared already: keep no arrays
        self.calls.append(call)
        self._by_key[call.key] = call

    def backward(self, path: str, grad_inputs, grad_outputs, call: int, *, names=None, keywords: bool = False) -> None:
        """The gradients of call number ``call`` of ``path``; ``names`` names the grad_inputs."""
        record = self._by_key.get((path, call))
        if record is not None:
            record.grad_inputs, record.grad_outputs = grad_inputs, grad_outputs
            record.grad_input_names, record.keywords = names, record.keywords or keywords
            if self._on_backward is not None:
                self._on_backward(record)
                record.grad_inputs, record.grad_outputs = [], []
            self.backward_order.append(record)
        else:
            self.unmatched.append(path)

    def get(self, path: str, call: int) -> Optional[LayerCall]:
        return self._by_key.get((path, call))


class _Metrics:
    """(relative L2 error, greatest |diff| / allowed, greatest |diff|) of one array pair, in the
    arrays' own precision, remembered for the last few pairs: a tensor flows out of a layer, out of
    its container and into the next layer, and is measured once."""

    def __init__(self, size: int = 32):
        self._memo: "OrderedDict[tuple, tuple]" = OrderedDict()
        self._size = size

    def __call__(self, a: np.ndarray, b: np.ndarray, tol: Tolerance) -> Tuple[float, float, float]:
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
    diff = np.subtract(a, b, dtype=work)  # two temporaries in all: these are activations
    np.abs(diff, out=diff)
    allowed = np.abs(b, dtype=work)
    ref_norm = float(np.linalg.norm(allowed.ravel()))
    diff_norm, max_abs = float(np.linalg.norm(diff.ravel())), float(diff.max())
    allowed *= tol.rtol
    allowed += tol.atol
    margin = float(np.divide(diff, allowed, out=allowed).max())
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
    found = [metrics(a, b, tol) for a, b in zip(ms, ref) if a is not None and b is not None]
    if not found:
        return 0.0, 0.0, 0.0, 0
    flags = 0
    for item in found:
        flags |= item[3]
    return max(f[0] for f in found), max(f[1] for f in found), max(f[2] for f in found), flags


def _error(ms: Sequence[np.ndarray], ref: Sequence[np.ndarray]) -> float:
    """Relative L2 error (for noise floors), comparing arrays only."""
    return _measure(ms, ref, Tolerance(0.0, 1.0), _pair_metrics)[0]


def judge(
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


class Localizer:
    """Compares MindSpore layer calls against the PyTorch recording as they happen.

    Each PyTorch array is released once the MindSpore call aligned with it has been compared, so
    the recording shrinks while the MindSpore side runs. Noise floors are measured while the
    float64 pass runs and kept as numbers only."""

    def __init__(
        self,
        torch_recording: Recording,
        align: Callable[[str], Optional[str]],
        resolve_tol,
        noise_factor: float = 10.0,
        *,
        keep: bool = False,
    ):
        self.torch = torch_recording
        # ``keep``: PyTorch's arrays stay after comparing (each layer's own error feeds them again).
        self.keep = keep
        self._compared: set = set()
        self.noise: Dict[Tuple[str, str, int], Tuple[float, float]] = {}  # (direction, path, call) -> floors
        self.noise_factor = noise_factor
        self.align = align
        self.resolve_tol = resolve_tol
        self.forward: List[LayerVerdict] = []
        self.backward: List[LayerVerdict] = []
        self.metrics = _Metrics()

    def _judge(self, direction: str, call: LayerCall) -> LayerVerdict:
        path = self.align(call.path)
        ref = self.torch.get(path, call.call) if path is not None else None
        if (direction, path, call.call) in self._compared:
            ref = None  # a second MindSpore call aligned with the same PyTorch call
        ref_in, ref_out = _sides(ref, direction) if ref is not None else (None, None)
        ms_in, ms_out = _sides(call, direction)
        if ref_out is None:
            return LayerVerdict(
                direction,
                path or call.path,
                call.path,
                call.type,
                "",
                call.call,
                0.0,
                0.0,
                0.0,
                0.0,
                0.0,
                status="unaligned",
            )
        outs = [a for a in ref_out if a is not None]
        tol = self.resolve_tol((path, call.path), str(outs[0].dtype) if outs else "float32")
        noise, in_noise = self.noise.get((direction, path, call.call), (0.0, 0.0))
        if call.keywords or ref.keywords:
            if direction == "forward":
                ms_in, ref_in = by_name(ms_in, call.input_names, ref_in, ref.input_names)
            else:
                ms_out, ref_out = by_name(ms_out, call.grad_input_names, ref_out, ref.grad_input_names)
        verdict = judge(
            direction,
            path,
            call.path,
            call.type,
            ref.type,
            call.call,
            ms_in,
            ms_out,
            ref_in,
            ref_out,
            tol,
            noise,
            in_noise,
            self.metrics,
        )
        self._compared.add((direction, path, call.call))
        if not self.keep:
            _release(ref, direction)
        return verdict

    def on_forward(self, call: LayerCall) -> None:
        self.forward.append(self._judge("forward", call))

    def on_backward(self, call: LayerCall) -> None:
        self.backward.append(self._judge("backward", call))

    def float64_recording(self) -> Recording:
        """A recording for the float64 PyTorch pass: each call's noise floors (``noise_factor`` x
        PyTorch float32's own relative error against float64, out and in) are measured as it
        comes, against the float32 recording, and its arrays are dropped."""
        return Recording(lambda call: self._floor("forward", call), lambda call: self._floor("backward", call))

    def _floor(self, direction: str, call64: LayerCall) -> None:
        ref = self.torch.get(call64.path, call64.call)
        if ref is None:
            return
        ref_in, ref_out = _sides(ref, direction)
        in64, out64 = _sides(call64, direction)
        if ref_out is None or out64 is None:
            return
        finite = lambda x: x if x != float("inf") else 0.0  # noqa: E731
        self.noise[(direction, call64.path, call64.call)] = (
            self.noise_factor * finite(_error(ref_out, out64)),
            self.noise_factor * finite(_error(ref_in or [], in64 or [])),
        )


def by_name(ms: Sequence, ms_names: Optional[Sequence[str]], ref: Sequence, ref_names: Optional[Sequence[str]]):
    """The tensors of one layer call's two sides to compare, paired by name, for a call that
    either side gave keyword arguments: tensors are named by argument (``hidden_states``,
    ``position_embeddings[0]``...; a positional argument by its parameter's name), the names
    both sides have are compared in PyTorch's order, and a name one side alone has
    (transformers' ``position_ids``, ``cache_position``) is not. By position where a side has no
    names or the two share none."""
    ms_named = dict(zip(ms_names or (), ms))
    common = [name for name in ref_names or () if name in ms_named]
    if not common:
        return ms, ref
    ref_named = dict(zip(ref_names, ref))
    return [ms_named[name] for name in common], [ref_named[name] for name in common]


def _sides(call: LayerCall, direction: str):
    """What flows in and what flows out of ``call`` in ``direction``."""
    if direction == "forward":
        return call.inputs, call.outputs
    return call.grad_outputs, call.grad_inputs


def _release(call: LayerCall, direction: str) -> None:
    """Drop a PyTorch call's arrays once compared (a second MindSpore call aligned with the same
    PyTorch call then reads as unaligned)."""
    if direction == "forward":
        call.inputs, call.outputs = None, None
    else:
        call.grad_outputs, call.grad_inputs = None, None


# mindspore.nn classes named differently from their torch.nn counterparts (lower case).
_SAME_KIND = {
    "dense": "linear",
    "sequentialcell": "sequential",
    "celllist": "modulelist",
    "celldict": "moduledict",
    "conv1dtranspose": "convtranspose1d",
    "conv2dtranspose": "convtranspose2d",
    "conv3dtranspose": "convtranspose3d",
    "hsigmoid": "hardsigmoid",
    "hswish": "hardswish",
    "hshrink": "hardshrink",
    "softshrink": "softshrink",
    "fastgelu": "gelu",
    "logsoftmax": "logsoftmax",
}


def _kind(ms_name: str) -> str:
    name = ms_name.lower()
    return _SAME_KIND.get(name, name)


def align_layers(
    ms_kinds: Dict[str, Tuple[str, bool]], torch_kinds: Dict[str, Tuple[str, bool]], known: Dict[str, str]
) -> Dict[str, str]:
    """MindSpore layer path -> PyTorch layer path.

    ``known`` holds what names and weights already paired. Parents of paired layers are paired
    too, when all their paired children lie under one PyTorch layer. Then, under each paired
    parent (the roots included, and a wrapper whose paired children all lie under one layer on the
    other side), the children still unpaired are paired by structure, in definition order: all of
    them in order when both sides have as many, each pair is two containers or two leaves, and no
    two built-in layers of different kinds would meet; else those of the same kind, in order.
    ``*_kinds`` map a path to (class name, whether the class is the framework's own), in
    definition order."""
    mapping = {m: t for m, t in known.items() if m in ms_kinds and t in torch_kinds}
    frames = _pair_parents(mapping, torch_kinds)
    taken = set(mapping.values())
    order = {path: i for i, path in enumerate(ms_kinds)}
    queue = [("", "")] + sorted(list(mapping.items()) + frames, key=lambda item: order[item[0]])
    containers = ({_parent(p) for p in ms_kinds if p}, {_parent(p) for p in torch_kinds if p})
    expanded = set()
    while queue:
        parent = queue.pop(0)
        if parent in expanded:
            continue
        expanded.add(parent)
        ms_kids = [c for c in _children(ms_kinds, parent[0]) if c not in mapping]
        torch_kids = [c for c in _children(torch_kinds, parent[1]) if c not in taken]
        for m, t in _match(ms_kids, torch_kids, ms_kinds, torch_kinds, containers):
            mapping[m] = t
            taken.add(t)
            queue.append((m, t))
    return mapping


def _parent(path: str) -> str:
    return path.rpartition(".")[0]


def _children(kinds, parent: str) -> List[str]:
    return [p for p in kinds if p and _parent(p) == parent]


def _pair_parents(mapping: Dict[str, str], torch_kinds) -> List[Tuple[str, str]]:
    """Pair each MindSpore parent whose paired descendants all lie under one PyTorch layer with
    it (unless that layer is paired already); return every such (parent, layer) as a frame for
    structural pairing, paired or not."""
    votes: Dict[str, set] = {}
    for m, t in mapping.items():
        while m:
            m, t = _parent(m), (_parent(t) if t else None)
            if t is None:
                break
            votes.setdefault(m, set()).add(t)
    taken = set(mapping.values())
    frames = []
    for m, ts in votes.items():
        if not m or m in mapping or len(ts) != 1:
            continue
        t = next(iter(ts))
        frames.append((m, t))
        if t and t not in taken and t in torch_kinds:
            mapping[m] = t
            taken.add(t)
    return frames


def _match(ms_kids: List[str], torch_kids: List[str], ms_kinds, torch_kinds, containers) -> List[Tuple[str, str]]:
    def same(m, t):
        return _kind(ms_kinds[m][0]) == torch_kinds[t][0].lower()

    def fits(m, t):
        if (m in containers[0]) != (t in containers[1]):
            return False
        return same(m, t) or not (ms_kinds[m][1] and torch_kinds[t][1])

    if ms_kids and len(ms_kids) == len(torch_kids) and all(fits(m, t) for m, t in zip(ms_kids, torch_kids)):
        return list(zip(ms_kids, torch_kids))
    pairs, start = [], 0
    for m in ms_kids:
        for j in range(start, len(torch_kids)):
            if same(m, torch_kids[j]):
                pairs.append((m, torch_kids[j]))
                start = j + 1
                break
    return pairs


@dataclass
class LayerTable:
    """Every layer call's verdict, forward in execution order and backward in backward order."""

    forward: List[LayerVerdict]
    backward: List[LayerVerdict]
    # The layers whose own error is out of bounds (parity.engine.own.OwnError), in execution order,
    # when a failing check measured them.
    own_errors: List = field(default_factory=list)
    own_measured: bool = False  # whether the own errors were measured (a failing check's layers)

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
