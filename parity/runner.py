"""The one engine behind the fixture, the catalogue items and the CLI: ``run_check``."""

from __future__ import annotations

import contextlib
import traceback
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

import numpy as np

from . import report
from .backends import framework_of, is_float
from .compare import Comparison, Envelope, compare_arrays, envelope_metrics, structural_problem
from .devices import profile as device_profile
from .errors import ParityMismatch, ParityUnsupported, ParityUsageError
from .inputs import Inputs, _normal, _unit_floats, materialize, seeded_stream
from .options import parse_seed
from .mixed_precision import parse as parse_amp, precision_causes, precision_rows, rewrite_cause
from .precision import HALF_ULPS, eps, golden_verdict, is_floating, missing_kernel, narrowest, per_side_inputs
from .localize import LayerTable, Localizer, Recording, align_layers, settle
from .result import Result
from .tolerance import ToleranceSpec, check_globs_used, resolve
from .layouts import by_torch_name, ms_label, torch_layout
from .weights import TORCH_ONLY, WeightMap, WeightReport, copy_weights, fill_weights, map_weights

__all__ = ["Settings", "Constant", "run_check", "DEFAULT_SEED", "MODES", "DEVICES"]

DEFAULT_SEED = 1234
MODES = ("pynative", "graph", "both")
DEVICES = ("CPU", "GPU", "Ascend")
WEIGHTS = ("copy", "copy_to_torch", "as_is")
REFERENCES = (None, "float64")
LOCALIZE = ("auto", True, False)
# The rounding envelope (see README, "How a tensor is judged"): a tensor within HEADROOM of its
# tolerance is judged again against how far PyTorch's own result moves when every input, weight and
# layer output (and gradient) is moved by ENVELOPE_ULPS units in the last place, in ENVELOPE_DRAWS
# seeded runs plus one in float64. MindSpore passes where it lies within the tolerance plus
# NOISE_FACTOR times that spread, element by element. A real fault is orders of magnitude above.
NOISE_FACTOR = 2.0
ENVELOPE_DRAWS = 4
ENVELOPE_ULPS = 16.0
HEADROOM = 0.5
FLIP_FLOOR = 4.0  # a jump is more than this many times the perturbation at the element's scale


@dataclass(frozen=True)
class Constant:
    """``weights=parity.constant(0.1)``: every floating weight and buffer on both sides set to value."""

    value: float

    def __str__(self):
        return f"constant({self.value:g})"


@dataclass(frozen=True)
class Settings:
    """How a run behaves (decided by the command line or the caller), and where it comes from."""

    seed: Optional[int] = None
    mode: Optional[str] = None
    device: str = "CPU"
    tolerances: Tuple[ToleranceSpec, ...] = ()  # most specific first, after the call's own
    case: str = ""
    location: str = ""
    reproduce: str = ""  # command prefix; the seed is appended
    verbose: int = 0  # pytest -v count: 2 and more show every layer

    @property
    def resolved_seed(self) -> int:
        return self.seed if self.seed is not None else DEFAULT_SEED


def _check_choice(label: str, value, choices, where: str):
    if value not in choices:
        shown = ", ".join(repr(c) for c in choices)
        raise ParityUsageError(f"{where}: unknown {label} {value!r}; expected one of {shown}")


def _check_pair(ms_cell, torch_module) -> None:
    ms_kind, torch_kind = framework_of(ms_cell), framework_of(torch_module)
    if ms_kind == "torch" and torch_kind == "mindspore":
        raise ParityUsageError("the arguments are swapped: check(ms_cell, torch_module, ...) takes the "
                               "MindSpore Cell first and the PyTorch Module second")
    for given, want, label in ((ms_kind, "mindspore", "ms_cell"), (torch_kind, "torch", "torch_module")):
        if given != want:
            obj = ms_cell if label == "ms_cell" else torch_module
            expected = "a mindspore.nn.Cell" if want == "mindspore" else "a torch.nn.Module"
            raise ParityUsageError(f"{label} must be {expected}, got {type(obj).__module__}."
                                   f"{type(obj).__qualname__}")


def _framework_error(label: str, exc: BaseException, what: str) -> ParityUsageError:
    lines = traceback.format_exception_only(type(exc), exc)
    text = "".join(lines).strip().splitlines()
    shown = "\n    ".join(text[:12] + (["..."] if len(text) > 12 else []))
    return ParityUsageError(f"The {label} side raised during {what}:\n    {shown}\n"
                            "Check that the net accepts these inputs (shapes, dtypes, argument names).")


def run_check(ms_cell, torch_module, inputs, **options) -> Result:
    """See :func:`parity.check`. Both sides' train/eval flags, every sub-module's own, are as they
    were when the check returns or raises."""
    __tracebackhide__ = True
    _check_pair(ms_cell, torch_module)
    from .backends import mindspore as msb, torch as tb

    restore_ms, restore_torch = msb.train_flags(ms_cell), tb.train_flags(torch_module)
    try:
        return _run_check(ms_cell, torch_module, inputs, **options)
    finally:
        restore_ms()
        restore_torch()
        msb.release_graphs()


def _check_globs(spec: ToleranceSpec, run, comparisons) -> None:
    """The call's name globs must each match a compared tensor (unless a structural failure left
    tensors uncompared: the failure is reported instead)."""
    if run.structure is None and not any(c.problem == "shape" for c in comparisons if c.kind == "output"):
        check_globs_used(spec, [n for c in comparisons for n in (c.name, c.ms_name, c.torch_name)])


def _run_check(ms_cell, torch_module, inputs, *, weights="copy", grads=True, train=False, ms_mode=None,
              tolerance=None, name_map=None, seed=None, reference=None, check_dtype=True, localize="auto",
              amp=None, settings: Settings = Settings()) -> Result:
    """See :func:`parity.check`."""
    __tracebackhide__ = True  # a failing test shows its own line and the message, not parity's frames
    _check_pair(ms_cell, torch_module)
    mode = settings.mode or ms_mode or "pynative"  # the command line decides how the run behaves
    _check_choice("ms_mode", mode, MODES, "check()")
    _check_choice("reference", reference, REFERENCES, "check()")
    _check_choice("localize", localize, LOCALIZE, "check()")
    _check_choice("device", settings.device, DEVICES, "settings")
    spec = parse_amp(amp, "check()")
    if not isinstance(weights, Constant) and weights not in WEIGHTS:
        shown = ", ".join(repr(w) for w in WEIGHTS)
        raise ParityUsageError(f"check(): unknown weights {weights!r}; expected one of {shown} or parity.constant(value)")
    seed = parse_seed(seed, "check(seed=...)")
    seed = seed if seed is not None else settings.seed if settings.seed is not None else DEFAULT_SEED
    chain = (ToleranceSpec.parse(tolerance),) + settings.tolerances

    from .backends import mindspore as msb, torch as tb
    from .backends.device import setup as device_setup

    msb.prepare(seed=seed, device=settings.device)
    tb.prepare(seed=seed, device=settings.device)
    setup = device_setup(settings.device)
    chain += (device_profile(setup),)  # the dtype defaults on this device, last
    user_cell = ms_cell
    ms_cell, torch_module, region = _amp_pair(ms_cell, torch_module, spec)
    wmap = _map_weights(ms_cell, torch_module, name_map, settings.device)
    dtypes = {"ms": None if spec else msb.compute_dtype(ms_cell), "torch": tb.compute_dtype(torch_module)}
    _refuse_unsupported_dtype(ms_cell, torch_module, spec.dtype if spec else dtypes["ms"], settings.device, spec,
                              user_cell)
    wreport = _set_weights(weights, wmap, ms_cell, torch_module)
    msb.set_train(ms_cell, train)
    tb.set_train(torch_module, train)
    data = materialize(inputs, seed)
    ms_data, torch_data, precision_notes = per_side_inputs(data, dtypes["ms"], dtypes["torch"])
    if spec is not None:  # each side casts where its mixed-precision lists say
        precision_notes = [f"mixed precision: {spec}; every floating tensor judged against the float64 golden"]
    modes = ("pynative", "graph") if mode == "both" else (mode,)
    restore = _snapshot(ms_cell, torch_module, wmap)
    options = dict(grads=grads, train=train, seed=seed, device=settings.device, amp=spec,
                   check_dtype=check_dtype and spec is None, reference=reference, ms_data=ms_data)
    with region():
        run, comparisons = _execute(ms_cell, torch_module, torch_data, wmap, chain, modes, capture=localize is True,
                                    **options)
    _check_globs(chain[0], run, comparisons)
    layered = run if localize is True else None
    if localize == "auto" and (run.structure is not None or not all(c.passed for c in comparisons)):
        # Passing checks pay nothing for localisation; a failing one gets one captured pass per side.
        restore()
        msb.prepare(seed=seed, device=settings.device)
        tb.prepare(seed=seed, device=settings.device)
        if spec or any(c.golden is not None or _half_pair(c.ms_dtype, c.torch_dtype) for c in comparisons):
            options["reference"] = "float64"  # half precision: the layers' noise floors against float64
        with region():
            layered = _execute(ms_cell, torch_module, torch_data, wmap, chain, ("pynative",), capture=True,
                               judge=False, **options)[0]
        layered.notes.append("layers were compared in one extra pass per side, with hooks (localize='auto')")
    layers = layered.layer_verdicts() if layered is not None else None
    if layered is not None and layered is not run:
        run.notes += layered.notes
    result = Result(
        ms_type=type(user_cell).__name__, torch_type=type(torch_module).__name__, comparisons=comparisons,
        weights=wreport, inputs=data.describe(seed), seed=seed, modes=modes, train=train,
        reference=reference, case=settings.case, location=settings.location,
        reproduce=report.reproduce_line(settings.reproduce, seed), notes=data.notes() + precision_notes + run.notes,
        problem=run.structure or "", device_setup=setup)
    result.layers = layers
    if spec is not None and layers is not None:
        result.precisions = precision_rows(layers.forward, msb.half_casts(ms_cell, spec.dtype))
    if result.passed and layers is not None:
        layers.passed_within_noise()
    if not result.passed:
        causes = _likely_causes(ms_cell, torch_module, result, settings.device, modes[-1])
        if spec is not None:
            causes = _amp_causes(result, spec) + causes
        raise ParityMismatch(report.failure_message(result, likely_causes=causes, verbose=settings.verbose),
                             result, causes)
    return result


def _amp_pair(ms_cell, torch_module, spec):
    """The pair a mixed-precision check runs (copies: the user's Cell and Module are left as they
    were), and a function making the region PyTorch's forward passes run in."""
    if spec is None:
        return ms_cell, torch_module, contextlib.nullcontext
    from .backends import mindspore as msb, torch as tb

    try:
        ms_amp = msb.mixed_precision(ms_cell, spec.level, spec.dtype)
    except Exception as exc:  # the rewrite rejected the Cell's code (O1 and nn.LSTMCell: a NameError)
        text = "".join(traceback.format_exception_only(type(exc), exc)).strip().splitlines()[:6]
        known = rewrite_cause(_amp_entries(spec), {type(c).__name__ for _, c in ms_cell.cells_and_names()}, spec)
        raise ParityUnsupported("mindspore.amp.auto_mixed_precision(ms_cell, {!r}, {}) raised:\n    {}\nThis Cell "
                                "cannot be converted at this level here: try another level, or check it in float32 "
                                "or with to_float.{}".format(spec.level, spec.dtype, "\n    ".join(text),
                                                             f"\n{known}" if known else "")) from None
    if spec.torch == "half":
        return ms_amp, tb.half_copy(torch_module, spec.dtype), contextlib.nullcontext
    return ms_amp, torch_module, lambda: tb.autocast(spec.dtype)


def _amp_causes(result, spec) -> List[str]:
    """A layer that ran in different precisions on the two sides, at or before the divergence."""
    if not result.precisions:
        return []
    at = None
    for direction in ("forward", "backward"):
        verdict, _ = result.layers.first(direction)
        if verdict is not None:
            at = verdict.path
            break
    return precision_causes(result.precisions, spec, at, _amp_entries(spec))


def _amp_entries(spec) -> list:
    """The registry's ``precision`` entries for this level and the installed versions."""
    from .registry import installed_versions, load

    versions = installed_versions()
    return [e for e in load().entries if e.kind == "precision" and e.amp is not None and spec.level in e.amp.levels
            and e.applies(*versions)]


def _execute(ms_cell, torch_module, data, wmap, chain, modes, *, capture, reference, judge=True, **options):
    """PyTorch once (and in float64 for ``reference``), MindSpore once per mode; the compared pairs
    (judged against the rounding envelope too, unless ``judge`` is False: a pass for layers only)."""
    from .backends import torch as tb

    check_dtype = options.pop("check_dtype")
    run = _Run(ms_cell, torch_module, data, wmap, chain, capture=capture, **options)
    reference_module = tb.float64_copy(torch_module) if reference == "float64" else None
    with run:
        run.torch_forward()
        references = run.float64_reference(reference_module) if reference_module is not None else {}
        for run_mode in modes:
            run.ms_pass(run_mode)
            if run.structure is not None:
                break
        comparisons = [_compare(p, chain, check_dtype) for p in run.pairs]
        if judge:
            _judge_close_ones(run, comparisons, references)
            _judge_half(run, comparisons, references)
        if run.localizer is not None and "pynative" not in modes:
            run.localize_in_pynative()
    return run, comparisons


def _judge_close_ones(run, comparisons, references) -> None:
    """Tensors within HEADROOM of their tolerance (or beyond it) are judged against PyTorch's own
    rounding envelope; the rest keep the plain verdict and pay nothing."""
    close = [(pair, c) for pair, c in zip(run.pairs, comparisons)
             if c.problem is None and c.total and c.margin > HEADROOM and pair.torch.dtype.kind == "f"
             and not _half_judged(run, c) and (c.nonfinite is None or c.nonfinite.agree)]
    if not close:
        return
    spread, jumped = run.rounding_spread({pair.key for pair, _ in close}, references)
    for pair, c in close:
        judge_in_envelope(c, pair.ms, pair.torch, spread[pair.key], jumped[pair.key])


def _half_pair(ms_dtype: str, torch_dtype: str) -> bool:
    return narrowest((ms_dtype, torch_dtype)) is not None


def _half_judged(run, c) -> bool:
    """Judged by the float64 golden: a half-precision tensor, or any floating one of a mixed-precision pair."""
    return _half_pair(c.ms_dtype, c.torch_dtype) or (run.amp is not None and is_floating(c.torch_dtype))


def _judge_half(run, comparisons, references) -> None:
    """Half-precision tensors within HEADROOM of their tolerance (or beyond it) are judged against
    the float64 golden: MindSpore's error may be GOLDEN_FACTOR times PyTorch's own (see
    :mod:`parity.precision`). The golden is the ``reference="float64"`` pass where one ran."""
    close = [(pair, c) for pair, c in zip(run.pairs, comparisons)
             if c.problem is None and c.total and c.margin > HEADROOM and _half_judged(run, c)
             and (c.nonfinite is None or c.nonfinite.agree)]
    if not close:
        return
    golden, jumps = run.golden({pair.key for pair, _ in close}, references)
    for pair, c in close:
        value = golden.get(pair.key)
        if value is not None and value.shape == pair.torch.shape:
            # Mixed precision: a tensor both sides hold in float32 counts float32's roundoff as the least error.
            dtype = narrowest((c.ms_dtype, c.torch_dtype)) or c.torch_dtype
            c.golden = golden_verdict(pair.ms, pair.torch, value, dtype, c.margin, jumps.get(pair.key))
            c.margin = c.golden.final_margin


def judge_in_envelope(c: Comparison, ms: np.ndarray, torch: np.ndarray, spread: np.ndarray,
                      jumped: np.ndarray) -> None:
    """Give ``c`` its rounding-envelope verdict. The margin shown becomes the one against what the
    tensor was finally allowed: the nearer to passing of element by element and, where the tensor
    may be judged whole, its relative error against the factor times PyTorch's spread."""
    margin, outside, ms_error, spread_error, flips, steady = envelope_metrics(ms, torch, spread, c.tolerance,
                                                                              NOISE_FACTOR, jumped)
    c.envelope = Envelope(ENVELOPE_DRAWS, True, NOISE_FACTOR, margin, outside, ms_error, spread_error, flips,
                          tolerance_margin=c.margin, total=c.total, steady=steady)
    c.margin = c.envelope.final_margin


def _jumps(plus: np.ndarray, minus: np.ndarray, base: np.ndarray, scale=None) -> np.ndarray:
    """Elements that jumped in one run of a mirrored pair. A smooth element moves one way under +u
    and back the other way under -u (the response is linear at this scale), so ``plus + minus`` is
    next to nothing; a flipped ReLU/max-pool mask moves it in one run only. Moves within a few
    times the perturbation at the element's own scale are left alone (rounding of the runs).
    ``scale``: :func:`_rms` of the whole tensor, where ``base`` is a block of it."""
    bigger = np.maximum(np.abs(plus), np.abs(minus))
    scale = _rms(base) if scale is None else scale
    floor = FLIP_FLOOR * ENVELOPE_ULPS * float(np.finfo(base.dtype).eps) * (np.abs(base) + scale)
    return (np.abs(plus + minus) > 0.5 * bigger) & (bigger > floor)


def _rms(base: np.ndarray):
    """The root mean square of ``base``, in float64 (0 for an empty tensor)."""
    return np.sqrt(np.mean(np.square(base, dtype=np.float64))) if base.size else 0.0


def _perturbed_inputs(data: Inputs, seed: int, draw: int, ulps: float) -> Inputs:
    """The inputs with every floating element moved by ``ulps`` units in the last place, up or down."""
    def move(name, array):
        if not is_float(array) or array.dtype.kind == "c" or array.size == 0:
            return array
        u = _unit_floats(seeded_stream(seed, f"envelope:{draw}:{name}"), array.size).reshape(array.shape)
        step = eps(array.dtype) * ulps * np.where(u < 0.5, -1.0, 1.0)
        return (array * (1.0 + step)).astype(array.dtype)

    args = tuple(move(f"input[{i}]", a) for i, a in enumerate(data.args))
    return Inputs(args, {k: move(k, a) for k, a in data.kwargs.items()}, data.descriptions)


def _snapshot(ms_cell, torch_module, wmap):
    """Every non-trainable tensor on both sides (running statistics), and a function restoring them."""
    from .backends import mindspore as msb, torch as tb

    saved = [(backend, model, name, backend.read(model, name))
             for pair in wmap.pairs if not pair.trainable
             for backend, model, name in ((msb, ms_cell, pair.ms), (tb, torch_module, pair.torch))]

    def restore():
        for backend, model, name, value in saved:
            backend.write(model, name, value)

    return restore


def _map_weights(ms_cell, torch_module, name_map, device: str) -> WeightMap:
    """:func:`map_weights`; where parameters cannot be paired, the usage error names the known
    mismatches that explain a missing or extra parameter (``has_bias`` and the like)."""
    __tracebackhide__ = True
    from .backends import mindspore as msb, torch as tb
    from .registry.diagnosis import parameter_causes

    ms_slots, torch_slots = msb.slots(ms_cell), tb.slots(torch_module)
    try:
        return map_weights(ms_slots, torch_slots, name_map)
    except ParityUsageError as exc:
        causes = parameter_causes(ms_cell, torch_module, ms_slots, torch_slots, device=device, ignore=TORCH_ONLY)
        if not causes:
            raise
        raise ParityUsageError("\n".join([str(exc), ""] + [f"Likely cause: {c}" for c in causes])) from None


def _refuse_unsupported_dtype(ms_cell, torch_module, dtype: Optional[str], device: str, amp=None,
                              user_cell=None) -> None:
    """Before anything runs: layers the registry knows to lack a kernel for the half dtype
    MindSpore computes in on ``device`` (bfloat16 on CPU) make a :class:`ParityUnsupported`
    (``amp``: a mixed-precision level chose the dtype; O1's layers cast inside their code, and their
    classes derive from copies of MindSpore's, so they are looked up on ``user_cell``, same paths)."""
    if dtype is None:
        return
    from .backends import mindspore as msb
    from .registry.diagnosis import unsupported_dtype

    casts = msb.half_casts(ms_cell, dtype) if amp is not None else None
    found = unsupported_dtype(user_cell if casts else ms_cell, torch_module, dtype=dtype, device=device,
                              layer_dtypes=casts)
    if found:
        lines = [f"  '{d.ms_path or d.path}': {d.entry.summary} (known mismatch '{d.entry.id}')" for d in found]
        how = f"mixed precision {amp.level}" if amp is not None else "its Cell's to_float or parameters"
        raise ParityUnsupported("\n".join(
            [f"MindSpore computes in {dtype} here ({how}), and {len(found)} of its layers "
             f"have no {dtype} kernel on {device}:"] + lines
            + [f"Check this pair in float32 (or float16) on {device}, or where MindSpore has {dtype} kernels."]))


def _likely_causes(ms_cell, torch_module, result, device: str, mode: str) -> List[str]:
    """The registry's known mismatches that plausibly explain the failure, most likely first,
    those at the first divergent layer ahead of the rest; judged on the shapes the layers saw
    and, where a layer diverged, only at layers that did (when the layers were captured)."""
    from .registry.diagnosis import likely_causes, observed

    at = None
    if result.layers is not None:
        for direction in ("forward", "backward"):
            verdict, _ = result.layers.first(direction)
            if verdict is not None:
                at = verdict.path
                break
    if at is None and result.failures and result.failures[0].layer:
        at = result.failures[0].layer
    seen = None
    if result.layers is not None:
        seen = observed(result.layers, [(c.layer, c.kind) for c in result.failures if c.layer])
    return likely_causes(ms_cell, torch_module, at=at, device=device, mode=mode, seen=seen)


class _Run:
    """The passes of one check: PyTorch once, MindSpore once per mode, layer capture riding along."""

    def __init__(self, ms_cell, torch_module, data, wmap, chain, *, grads, train, seed, device, capture, ms_data=None,
                 amp=None):
        from .backends import mindspore as msb, torch as tb

        self.ms_cell, self.torch_module, self.data, self.wmap = ms_cell, torch_module, data, wmap
        self.ms_data = ms_data if ms_data is not None else data  # each side's inputs in its own dtype
        self.grads, self.train, self.seed, self.device = grads, train, seed, device
        self.amp = amp  # parity.amp.Amp of a mixed-precision pair
        self.trainable = wmap.trainable_pairs()
        self.pairs: List[_ArrayPair] = []
        self.structure: Optional[str] = None  # set when the two sides return different output structures
        self.ms_recording: Optional[Recording] = None  # the hooked MindSpore pass, when layers are captured
        self.notes: List[str] = []
        self.torch_grads = None
        self.torch_layers = None  # the PyTorch capture, while layers are captured
        self.ms_start = {p.ms: msb.read(ms_cell, p.ms) for p in wmap.pairs if not p.trainable}
        self.torch_start = tb.buffers(torch_module)  # every buffer, counters too: the envelope's runs start here
        self.torch_recording = Recording() if capture else None
        self.backward_layers = capture and grads
        self.localizer = None
        if capture:
            align = _layer_alignment(ms_cell, torch_module, wmap)
            self.localizer = Localizer(self.torch_recording, align,
                                       lambda names, dtype: resolve(chain, names, dtype)[0])

    def __enter__(self):
        self._stack = contextlib.ExitStack()
        return self

    def __exit__(self, *exc_info):
        return self._stack.__exit__(*exc_info)

    def _torch_pass(self):
        from .backends import torch as tb

        if self.torch_recording is not None:
            self.torch_layers = self._stack.enter_context(tb.capture(self.torch_module, self.torch_recording,
                                                                     backward=self.backward_layers))
        return tb.Pass(self.torch_module, self.data, grads=self.grads, device=self.device)

    def torch_forward(self) -> None:
        from .backends import torch as tb

        self.torch_side = _run_side(self._torch_pass, "PyTorch")
        self.torch_buffers = _buffers(tb, self.torch_module, self.wmap, "torch") if self.train else {}
        self.cotangents = _cotangents(self.torch_side, self.seed)

    def _torch_backward(self):
        if self.torch_grads is None:
            self.torch_grads = _backward(self.torch_side, self.cotangents, [p.torch for p in self.trainable],
                                         "PyTorch")
            if self.torch_layers is not None:
                self.torch_layers.flush()  # the layers' gradients, into the recording
        return self.torch_grads

    def ms_pass(self, mode: str, *, compare: bool = True) -> None:
        from .backends import mindspore as msb

        for name, value in self.ms_start.items():
            msb.write(self.ms_cell, name, value)
        hooks = self.localizer is not None and mode == "pynative"
        recording = Recording(self.localizer.on_forward, self.localizer.on_backward) if hooks else None
        capture = (msb.capture(self.ms_cell, recording, backward=self.backward_layers) if hooks
                   else contextlib.nullcontext())
        self.ms_recording = recording or self.ms_recording
        with capture as layers:
            ms_side = _run_side(lambda: msb.Pass(self.ms_cell, self.ms_data, grads=self.grads, mode=mode), "MindSpore")
            if layers is not None:
                layers.flush()  # the forward's layers, compared before the backward starts
            self.structure = _structure_problem(ms_side, self.torch_side)
            if self.structure is not None:
                return
            outputs = _output_pairs(ms_side, self.torch_side, mode)
            # Read statistics before the backward: in GRAPH mode the VJP re-runs the forward.
            ms_buffers = _buffers(msb, self.ms_cell, self.wmap, "ms") if self.train else {}
            shapes_agree = all(p.ms.shape == p.torch.shape for p in outputs)
            if self.grads and shapes_agree:
                torch_grads = self._torch_backward()
                ms_grads = _backward(ms_side, self.cotangents, [p.ms for p in self.trainable], "MindSpore")
        if not compare:
            return
        self.pairs += outputs
        if self.grads and shapes_agree:
            self.pairs += _grad_pairs(ms_grads, torch_grads, self.trainable, mode)
        if self.train:
            self.pairs += _buffer_pairs(ms_buffers, self.torch_buffers, self.wmap, mode)

    def localize_in_pynative(self) -> None:
        """GRAPH mode runs no hooks: compare the layers in one extra PYNATIVE pass."""
        self.notes.append("GRAPH mode has no layer hooks: layers were compared in an extra PYNATIVE pass")
        self.ms_pass("pynative", compare=False)

    def layer_verdicts(self):
        unmatched = self.ms_recording.unmatched if self.ms_recording is not None else []
        if unmatched:
            self.notes.append(f"{len(unmatched)} MindSpore backward hook calls had no forward record and "
                              f"were not compared: {sorted(set(unmatched))[:5]}")
        settle(self.localizer.forward)
        settle(self.localizer.backward)
        return LayerTable(self.localizer.forward, self.localizer.backward)

    def rounding_spread(self, keys, references):
        """Per element of each of ``keys``: how far PyTorch's result moves from its float32 result
        under rounding-level perturbations (ENVELOPE_DRAWS perturbed runs and a float64 run), and
        where it jumped (see :func:`_jumps`)."""
        from .backends import torch as tb

        base = {p.key: p.torch for p in self.pairs if p.key in keys}
        spread = {key: np.zeros(value.shape, value.dtype) for key, value in base.items()}
        jumped = {key: np.zeros(value.shape, bool) for key, value in base.items()}
        mirrored: Dict[Tuple[str, str], np.ndarray] = {}

        def widen(values, sign=0):
            for key, value in values.items():
                if key in spread and value.shape == spread[key].shape:
                    with np.errstate(invalid="ignore", over="ignore"):  # Inf - Inf where both agree: NaN
                        moved = np.subtract(value, base[key], dtype=spread[key].dtype)
                        np.fmax(spread[key], np.abs(moved), out=spread[key])  # fmax skips NaN
                    if sign > 0:
                        mirrored[key] = moved
                    elif sign < 0:
                        jumped[key] |= _jumps(mirrored.pop(key), moved, base[key])

        after = tb.buffers(self.torch_module)
        if not references:
            module64 = tb.float64_copy(self.torch_module)
            tb.set_buffers(module64, self.torch_start)
            references = _reference_values(module64, self.data, self.grads, self.device, self.cotangents,
                                           self.wmap, self.train, cast="float64")
        widen(references)
        for draw in range(ENVELOPE_DRAWS):
            # Draws come in mirrored pairs (+u, -u): a near-tie within reach of the perturbation
            # then flips in one of the two, whichever way it leans.
            ulps = ENVELOPE_ULPS if draw % 2 == 0 else -ENVELOPE_ULPS
            tb.set_buffers(self.torch_module, self.torch_start)
            tb.prepare(seed=self.seed, device=self.device)  # the same dropout masks as the first run
            with tb.perturbed(self.torch_module, seed=_draw_seed(self.seed, draw // 2), ulps=ulps):
                widen(_reference_values(self.torch_module, _perturbed_inputs(self.data, self.seed, draw // 2, ulps),
                                        self.grads, self.device, self.cotangents, self.wmap, self.train),
                      sign=1 if ulps > 0 else -1)
        tb.set_buffers(self.torch_module, after)
        return spread, jumped

    def golden(self, keys, references):
        """The half-precision judge's references for ``keys``: PyTorch's module in float64 from the
        same start (weights, buffers, inputs and cotangents, each exact in float64), unless
        ``references`` holds it already; and how far each element jumps in a mirrored pair of
        PyTorch runs in its own precision, everything moved by HALF_ULPS (0 where it moves
        smoothly): a ReLU or max-pool tie within rounding of its threshold, which either side may
        take (see :func:`_jumps`)."""
        from .backends import torch as tb

        if not references:
            module64 = tb.float64_copy(self.torch_module)
            tb.set_buffers(module64, self.torch_start)
            references = _reference_values(module64, self.data, self.grads, self.device, self.cotangents, self.wmap,
                                           self.train, cast="float64")
        base = {p.key: p.torch for p in self.pairs if p.key in keys}
        after, runs = tb.buffers(self.torch_module), []
        for ulps in (HALF_ULPS, -HALF_ULPS):
            tb.set_buffers(self.torch_module, self.torch_start)
            tb.prepare(seed=self.seed, device=self.device)  # the same dropout masks as the first run
            with tb.perturbed(self.torch_module, seed=_draw_seed(self.seed, 0), ulps=ulps):
                runs.append(_reference_values(self.torch_module, _perturbed_inputs(self.data, self.seed, 0, ulps),
                                              self.grads, self.device, self.cotangents, self.wmap, self.train))
        tb.set_buffers(self.torch_module, after)
        jumps = {}
        for key, value in base.items():
            plus, minus = runs[0].get(key), runs[1].get(key)
            if plus is None or minus is None or plus.shape != value.shape or minus.shape != value.shape:
                continue
            wide = value.astype(np.float64)
            with np.errstate(invalid="ignore", over="ignore"):  # Inf - Inf where both agree: NaN, left out
                # A smooth element moves one way under +u and back under -u: what is left of
                # plus + minus is rounding; an element behind a flipped tie keeps its jump.
                jumps[key] = np.abs((plus.astype(np.float64) - wide) + (minus.astype(np.float64) - wide))
        return references, jumps

    def float64_reference(self, module64):
        """The float64 PyTorch pass; its layers too, as the localiser's noise floor."""
        from .backends import torch as tb

        capture = contextlib.nullcontext()
        if self.localizer is not None:
            if self.grads:
                self._torch_backward()  # first, so that each float64 layer call is measured as it comes
            capture = tb.capture(module64, self.localizer.float64_recording(), backward=self.backward_layers)
        with capture:
            return _reference_values(module64, self.data, self.grads, self.device, self.cotangents, self.wmap,
                                     self.train, cast="float64")


def _layer_alignment(ms_cell, torch_module, wmap):
    """MindSpore layer path -> PyTorch layer path: same path, else as the weight map paired them,
    else by structure (see :func:`parity.localize.align_layers`)."""
    from .backends import mindspore as msb, torch as tb

    ms_kinds, torch_kinds = msb.layer_kinds(ms_cell), tb.layer_kinds(torch_module)
    known = {path: path for path in ms_kinds if path and path in torch_kinds}
    for pair in wmap.pairs:
        if pair.ms_part is None and pair.torch_part is None:  # a fused layer has no one counterpart
            known.setdefault(pair.ms.rpartition(".")[0], pair.torch.rpartition(".")[0])
    return align_layers(ms_kinds, torch_kinds, known).get


def _set_weights(weights, wmap, ms_cell, torch_module) -> WeightReport:
    if isinstance(weights, Constant):
        return fill_weights(wmap, ms_cell, torch_module, weights.value)
    if weights == "copy":
        return copy_weights(wmap, torch_module, ms_cell, to_torch=False)
    if weights == "copy_to_torch":
        return copy_weights(wmap, ms_cell, torch_module, to_torch=True)
    return WeightReport(wmap, "as is")


def _run_side(make, label: str):
    """Run a forward pass; framework errors become usage errors (a kernel missing for a dtype:
    :class:`ParityUnsupported`)."""
    try:
        side = make()
        side.values = side.outputs()  # MindSpore may raise here: PYNATIVE runs asynchronously
    except ParityUsageError:
        raise
    except Exception as exc:  # the framework rejected the net or the inputs
        _recover(label)
        raise (missing_kernel(label, exc, "the forward pass") or _framework_error(label, exc, "the forward pass")) \
            from None
    return side


def _backward(side, cotangents, params, label: str):
    try:
        return side.backward(cotangents, params)
    except ParityUsageError:
        raise
    except Exception as exc:
        _recover(label)
        raise (missing_kernel(label, exc, "the backward pass") or _framework_error(label, exc, "the backward pass")) \
            from None


def _recover(label: str) -> None:
    if label == "MindSpore":
        from .backends import mindspore as msb

        msb.recover()


def _cotangents(torch_side, seed: int) -> Dict[str, np.ndarray]:
    """A seeded N(0, 1) cotangent for every floating output: the VJP direction, never ``.sum()``."""
    cots = {}
    for path, value in torch_side.values:
        if is_float(value):
            count = int(value.size)
            cots[path] = _normal(seeded_stream(seed, f"cotangent:{path}"), count).reshape(value.shape).astype(value.dtype)
    return cots


@dataclass(frozen=True)
class _ArrayPair:
    """Two arrays to compare and what to call them."""

    kind: str
    name: str
    ms_name: str
    torch_name: str
    mode: str
    ms: np.ndarray
    torch: np.ndarray
    layer: str = ""

    @property
    def key(self) -> Tuple[str, str]:
        return self.kind, self.torch_name


def _compare(pair: _ArrayPair, chain, check_dtype: bool) -> Comparison:
    dtype = str(pair.torch.dtype)
    # A parameter's gradient (or statistic) takes the parameter's dtype: where MindSpore keeps float32
    # parameters and computes in half precision (to_float), it is compared in the half dtype.
    master = pair.kind in ("param grad", "buffer") and pair.ms.dtype != pair.torch.dtype
    compared = narrowest((str(pair.ms.dtype), dtype)) if master else None
    tol, source = resolve(chain, (pair.name, pair.ms_name, pair.torch_name), compared or dtype)
    item = Comparison(pair.kind, pair.name, pair.ms_name, pair.torch_name, pair.mode, tuple(pair.ms.shape),
                      tuple(pair.torch.shape), str(pair.ms.dtype), dtype, tol, source, layer=pair.layer)
    item.problem = structural_problem(pair.ms, pair.torch,
                                      check_dtype=check_dtype and pair.kind != "buffer" and compared is None)
    if item.problem is not None:
        item.margin = float("inf")
        return item
    for key, value in compare_arrays(pair.ms, pair.torch, tol).items():
        setattr(item, key, value)
    return item


def _structure_problem(ms_side, torch_side) -> Optional[str]:
    ms_paths, torch_paths = [p for p, _ in ms_side.values], [p for p, _ in torch_side.values]
    if ms_paths != torch_paths:
        return report.structure_message(ms_paths, torch_paths)
    return None


def _output_pairs(ms_side, torch_side, mode) -> List[_ArrayPair]:
    return [_ArrayPair("output", path, path, path, mode, ms_value, torch_value)
            for (path, ms_value), (_, torch_value) in zip(ms_side.values, torch_side.values)]


def _grad_pairs(ms_grads, torch_grads, trainable, mode) -> List[_ArrayPair]:
    found = [_ArrayPair("input grad", name, name, name, mode, ms_grads.inputs[name], value)
             for name, value in torch_grads.inputs.items()]
    # Backward order: the last layer's grads are computed first. One comparison per PyTorch
    # tensor, the MindSpore gradient moved through the weight map's layout (part of a fused one,
    # parts joined, transposed).
    for name, pairs in reversed(list(by_torch_name(trainable).items())):
        found.append(_ArrayPair("param grad", name, ms_label(pairs), name, mode, torch_layout(pairs, ms_grads.params),
                                torch_grads.params[name], name.rpartition(".")[0]))
    return found


def _buffers(backend, model, wmap, side: str) -> Dict[str, np.ndarray]:
    """Non-trainable tensors by PyTorch name, in the PyTorch layout."""
    groups = by_torch_name(p for p in wmap.pairs if not p.trainable)
    if side != "ms":
        return {name: backend.read(model, name) for name in groups}
    arrays = {p.ms: backend.read(model, p.ms) for pairs in groups.values() for p in pairs}
    return {name: torch_layout(pairs, arrays) for name, pairs in groups.items()}


def _buffer_pairs(ms_buffers, torch_buffers, wmap, mode) -> List[_ArrayPair]:
    groups = by_torch_name(p for p in wmap.pairs if not p.trainable)
    return [_ArrayPair("buffer", name, ms_label(pairs), name, mode, ms_buffers[name], torch_buffers[name],
                       name.rpartition(".")[0]) for name, pairs in groups.items()]


def _draw_seed(seed: int, draw: int) -> int:
    return int(seeded_stream(seed, f"envelope:{draw}").random_raw()) >> 1


def _reference_values(module, data, grads, device, cotangents, wmap, train, cast=None):
    """The same forward and VJP on the PyTorch side again (in float64 with ``cast``), keyed like
    ``_ArrayPair.key``."""
    import torch

    from .backends import torch as tb

    dtype = getattr(torch, cast) if cast else None
    label = f"PyTorch {cast}" if cast else "PyTorch (rounding envelope)"
    side = _run_side(lambda: tb.Pass(module, data, grads=grads, device=device, cast=dtype), label)
    found = {("output", path): value for path, value in side.values}
    if grads:
        trainable = [p.torch for p in wmap.trainable_pairs()]
        result = _backward(side, cotangents, trainable, label)
        found.update({("input grad", k): v for k, v in result.inputs.items()})
        found.update({("param grad", k): v for k, v in result.params.items()})
    if train:
        found.update({("buffer", k): v for k, v in _buffers(tb, module, wmap, "torch").items()})
    return found


def transfer(src, dst, *, name_map=None) -> WeightReport:
    """See :func:`parity.transfer_weights`."""
    src_kind, dst_kind = framework_of(src), framework_of(dst)
    if {src_kind, dst_kind} != {"mindspore", "torch"}:
        raise ParityUsageError(
            "transfer_weights(src, dst) needs one mindspore.nn.Cell and one torch.nn.Module, got "
            f"{type(src).__qualname__} ({src_kind or 'neither'}) and {type(dst).__qualname__} ({dst_kind or 'neither'})")
    from .backends import mindspore as msb, torch as tb

    ms_model, torch_model = (src, dst) if src_kind == "mindspore" else (dst, src)
    wmap = map_weights(msb.slots(ms_model), tb.slots(torch_model), name_map)
    return copy_weights(wmap, src, dst, to_torch=src_kind == "mindspore")
