"""The one engine behind the fixture, the catalogue items and the CLI: ``run_check``."""

from __future__ import annotations

import contextlib
import traceback
from typing import Any, List, Tuple

from ..backends import amp as amp_backend
from ..backends import framework_of
from ..backends import mindspore as msb
from ..backends import torch as tb
from ..backends.device import setup as device_setup
from ..errors import ParityMismatch, ParityUnsupported, ParityUsageError
from ..judge.devices import profile as device_profile
from ..judge.dtypes import is_floating, narrowest
from ..judge.envelope import Candidate, judge_envelope, near
from ..judge.golden import judge_golden, near_golden
from ..judge.metrics import compare_pair
from ..judge.tolerance import ToleranceSpec, check_globs_used
from ..options import MODE, parse_seed
from ..registry import installed_versions, load
from .amp import parse as parse_amp
from .amp import precision_causes, precision_rows, rewrite_cause
from .diagnosis import messages
from .diagnosis.causes import failure_causes, own_error_causes
from .diagnosis.own import measure_own_errors
from .diagnosis.repro.capture import Source
from .diagnosis.repro.cut import offer
from .diagnosis.verdicts import first_nonfinite
from .inputs import materialize, per_side_inputs
from .outputs import little_power, nothing_compared, outputs_compared, warn_little_power
from .pairing import map_pair_weights, refuse_unsupported_dtype, set_weights, snapshot
from .passes import Passes
from .result import Result
from .settings import (
    DEFAULT_SEED,
    DEVICES,
    LOCALIZE,
    MODES,
    REFERENCES,
    WEIGHTS,
    CheckOptions,
    Constant,
    Settings,
    check_choice,
)

__all__ = ["run_check", "check_pair", "refuse_graph_mode"]


def check_pair(ms_cell, torch_module) -> None:
    ms_kind, torch_kind = framework_of(ms_cell), framework_of(torch_module)
    if ms_kind == "torch" and torch_kind == "mindspore":
        raise ParityUsageError(
            "the arguments are swapped: check(ms_cell, torch_module, ...) takes the "
            "MindSpore Cell first and the PyTorch Module second"
        )
    for given, want, label in ((ms_kind, "mindspore", "ms_cell"), (torch_kind, "torch", "torch_module")):
        if given != want:
            obj = ms_cell if label == "ms_cell" else torch_module
            expected = "a mindspore.nn.Cell" if want == "mindspore" else "a torch.nn.Module"
            raise ParityUsageError(f"{label} must be {expected}, got {type(obj).__module__}.{type(obj).__qualname__}")


def refuse_graph_mode(ms_cell, mode: str, settings: Settings, where: str) -> None:
    """Refuse GRAPH mode, before anything runs, for a Cell holding sub-Cells that run in PYNATIVE
    mode only (``parity.translate``'s ``GraphForward`` and ``TorchForward``): compiling them fails
    deep inside MindSpore with a message that would read as a problem of the inputs."""
    if mode not in ("graph", "both"):
        return
    found = msb.pynative_only(ms_cell)
    if not found:
        return
    asked = f"the session's {MODE.flag}={mode}" if settings.mode else f"ms_mode={mode!r}"
    shown = [
        f"{path or '<root>'} ({type(cell).__name__} of {getattr(cell, 'torch_class', '?')})" for path, cell in found[:3]
    ]
    more = f" and {len(found) - 3} more" if len(found) > 3 else ""
    reasons = sorted({f"{type(cell).__name__} {type(cell).parity_pynative_only}" for _, cell in found})
    raise ParityUnsupported(
        f"{where}: {asked} asks for MindSpore's GRAPH mode, but this Cell holds {len(found)} Cells that "
        f"parity.translate made from custom Modules, which run in PYNATIVE mode only: {', '.join(shown)}{more}. "
        f"A {'; a '.join(reasons)}. Check it with ms_mode='pynative' (and, for GRAPH mode, a Cell written "
        "for MindSpore)."
    )


def run_check(ms_cell, torch_module, inputs, **options) -> Result:
    """See :func:`parity.check`. Both sides' train/eval flags, every sub-module's own, are as they
    were when the check returns or raises."""
    __tracebackhide__ = True
    check_pair(ms_cell, torch_module)
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


def _run_check(
    ms_cell,
    torch_module,
    inputs,
    *,
    weights=CheckOptions.weights,
    grads=CheckOptions.grads,
    train=CheckOptions.train,
    ms_mode=CheckOptions.ms_mode,
    tolerance=CheckOptions.tolerance,
    name_map=CheckOptions.name_map,
    ignore=CheckOptions.ignore,
    seed=CheckOptions.seed,
    reference=CheckOptions.reference,
    check_dtype=CheckOptions.check_dtype,
    localize=CheckOptions.localize,
    amp=CheckOptions.amp,
    settings: Settings = Settings(),
) -> Result:
    """See :func:`parity.check`."""
    __tracebackhide__ = True  # a failing test shows its own line and the message, not parity's frames
    mode = settings.mode or ms_mode or CheckOptions.ms_mode  # the command line decides how the run behaves
    check_choice("ms_mode", mode, MODES, "check()")
    check_choice("reference", reference, REFERENCES, "check()")
    refuse_graph_mode(ms_cell, mode, settings, "check()")
    check_choice("localize", localize, LOCALIZE, "check()")
    check_choice("device", settings.device, DEVICES, "settings")
    spec = parse_amp(amp, "check()")
    if not isinstance(weights, Constant) and weights not in WEIGHTS:
        shown = ", ".join(repr(w) for w in WEIGHTS)
        raise ParityUsageError(
            f"check(): unknown weights {weights!r}; expected one of {shown} or parity.constant(value)"
        )
    seed = parse_seed(seed, "check(seed=...)")
    seed = seed if seed is not None else settings.seed if settings.seed is not None else DEFAULT_SEED
    chain: Tuple[Any, ...] = (ToleranceSpec.parse(tolerance),) + settings.tolerances

    msb.prepare(seed=seed, device=settings.device)
    tb.prepare(seed=seed, device=settings.device)
    setup = device_setup(settings.device)
    chain += (device_profile(setup),)  # the dtype defaults on this device, last
    user_cell = ms_cell
    ms_cell, torch_module, region = _amp_pair(ms_cell, torch_module, spec)
    wmap = map_pair_weights(ms_cell, torch_module, name_map, settings.device, ignore)
    dtypes = {"ms": None if spec else msb.compute_dtype(ms_cell), "torch": tb.compute_dtype(torch_module)}
    refuse_unsupported_dtype(
        ms_cell, torch_module, spec.dtype if spec else dtypes["ms"], settings.device, spec, user_cell
    )
    wreport = set_weights(weights, wmap, ms_cell, torch_module)
    msb.set_train(ms_cell, train)
    tb.set_train(torch_module, train)
    data = materialize(inputs, seed)
    ms_data, torch_data, precision_notes = per_side_inputs(data, dtypes["ms"], dtypes["torch"])
    if spec is not None:  # each side casts where its mixed-precision lists say
        precision_notes = [f"mixed precision: {spec}; every floating tensor judged against the float64 golden"]
    modes = ("pynative", "graph") if mode == "both" else (mode,)
    restore = snapshot(ms_cell, torch_module, wmap)
    options = dict(
        grads=grads,
        train=train,
        seed=seed,
        device=settings.device,
        amp=spec,
        check_dtype=check_dtype and spec is None,
        reference=reference,
        ms_data=ms_data,
    )
    with region():
        run, comparisons = _execute(
            ms_cell,
            torch_module,
            torch_data,
            wmap,
            chain,
            modes,
            capture=localize is True,
            keep_layers=localize is True,
            **options,
        )
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
            layered = _execute(
                ms_cell,
                torch_module,
                torch_data,
                wmap,
                chain,
                ("pynative",),
                capture=True,
                reruns=False,
                keep_layers=True,
                **options,
            )[0]
        layered.notes.append("layers were compared in one extra pass per side, with hooks (localize='auto')")
    layers = layered.layer_verdicts() if layered is not None else None
    if layered is not None and layered is not run:
        run.notes += [note for note in layered.notes if note not in run.notes]
    problem = run.structure or ""
    passed = not problem and all(c.passed for c in comparisons)  # Result.passed, before the Result
    compared, finite_notes = outputs_compared(run.pairs)
    power_notes = little_power(run.pairs, comparisons) if passed else []
    if passed and not compared:
        raise ParityUsageError(nothing_compared(run.pairs, data))
    precisions = None
    if spec is not None and layers is not None:
        precisions = precision_rows(layers.forward, amp_backend.half_casts(ms_cell, spec.dtype))
    if passed and layers is not None:
        layers.passed_within_noise()
    nonfinite, own_notes = None, []
    if not passed and layers is not None and not problem:
        nonfinite = first_nonfinite(layers.forward, layers.backward)
        try:
            with region():  # each layer fed PyTorch's inputs: its own error, apart from what flowed in
                measure_own_errors(layered, layers, chain)
        except Exception as exc:  # the own errors help the message; they never hide the failure
            own_notes.append(
                f"each layer's own error was not measured: {type(exc).__name__}: "
                f"{str(exc).splitlines()[0] if str(exc) else ''}"
            )
    repro_source = None
    if not passed and spec is None:  # what write_repro rebuilds the pair from
        repro_source = Source(
            ms_cell, torch_module, torch_data, chain, seed, train, grads, settings.device, wmap, restore, settings.case
        )
    result = Result(
        ms_type=type(user_cell).__name__,
        torch_type=type(torch_module).__name__,
        comparisons=comparisons,
        weights=wreport,
        inputs=data.describe(seed),
        seed=seed,
        modes=modes,
        train=train,
        reference=reference,
        case=settings.case,
        location=settings.location,
        reproduce=messages.reproduce_line(settings.reproduce, seed),
        notes=data.notes() + precision_notes + run.notes + finite_notes + power_notes + own_notes,
        layers=layers,
        problem=problem,
        device_setup=setup,
        precisions=precisions,
        repro_source=repro_source,
        first_nonfinite=nonfinite,
    )
    diagnoses = None
    if not passed and layers is not None and not problem:
        diagnoses = own_error_causes(ms_cell, torch_module, result, settings.device, modes[-1])
    if layered is not None:
        layered.torch_recording = None  # PyTorch's layer arrays, kept until now
    if not result.passed:
        causes = failure_causes(ms_cell, torch_module, result, settings.device, modes[-1], diagnoses)
        if layers is not None:  # a layer with its own error: its causes too, whatever the first divergence
            causes += list(dict.fromkeys(c for e in layers.own_errors for c in e.causes if c not in causes))
        if spec is not None:
            causes = _amp_causes(result, spec) + causes
        message = messages.failure_message(result, likely_causes=causes, verbose=settings.verbose)
        if settings.repro_dir is not None:
            message = _with_line(message, offer(result, settings.repro_dir))
        raise ParityMismatch(message, result, causes)
    warn_little_power(power_notes)
    return result


def _with_line(message: str, line: str) -> str:
    """``line`` before the message's ``Reproduce:`` line (at its end where it has none)."""
    lines = message.splitlines()
    at = next((i for i, text in enumerate(lines) if text.startswith("Reproduce:")), len(lines))
    return "\n".join(lines[:at] + [line] + lines[at:])


def _amp_pair(ms_cell, torch_module, spec):
    """The pair a mixed-precision check runs (copies: the user's Cell and Module are left as they
    were), and a function making the region PyTorch's forward passes run in."""
    if spec is None:
        return ms_cell, torch_module, contextlib.nullcontext
    try:
        ms_amp = amp_backend.mixed_precision(ms_cell, spec.level, spec.dtype)
    except Exception as exc:  # the rewrite rejected the Cell's code (O1 and nn.LSTMCell: a NameError)
        text = "".join(traceback.format_exception_only(type(exc), exc)).strip().splitlines()[:6]
        known = rewrite_cause(_amp_entries(spec), {type(c).__name__ for _, c in ms_cell.cells_and_names()}, spec)
        raise ParityUnsupported(
            "mindspore.amp.auto_mixed_precision(ms_cell, {!r}, {}) raised:\n    {}\nThis Cell "
            "cannot be converted at this level here: try another level, or check it in float32 "
            "or with to_float.{}".format(spec.level, spec.dtype, "\n    ".join(text), f"\n{known}" if known else "")
        ) from None
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
    versions = installed_versions()
    return [
        e
        for e in load().entries
        if e.kind == "precision" and e.amp is not None and spec.level in e.amp.levels and e.applies(*versions)
    ]


def _execute(ms_cell, torch_module, data, wmap, chain, modes, *, capture, reference, reruns=True, **options):
    """PyTorch once (and in float64 for ``reference``), MindSpore once per mode; the compared pairs
    (judged against the rounding envelope too, unless ``reruns`` is False: a pass for layers only)."""
    check_dtype = options.pop("check_dtype")
    run = Passes(ms_cell, torch_module, data, wmap, chain, capture=capture, **options)
    reference_module = tb.float64_copy(torch_module) if reference == "float64" else None
    with run:
        run.torch_forward()
        references = run.float64_reference(reference_module) if reference_module is not None else {}
        for run_mode in modes:
            run.ms_pass(run_mode)
            if run.structure is not None:
                break
        comparisons = [compare_pair(p, chain, check_dtype) for p in run.pairs]
        if reruns:
            _close_ones_to_envelope(run, comparisons, references)
            _halves_to_golden(run, comparisons, references)
        if run.localizer is not None and "pynative" not in modes:
            run.localize_in_pynative()
    run.notes += run.changed_notes()
    return run, comparisons


def _close_ones_to_envelope(run, comparisons, references) -> None:
    """Tensors within HEADROOM of their tolerance (or beyond it) are judged against PyTorch's own
    rounding envelope; the rest keep the plain verdict and pay nothing."""
    close = [
        Candidate(pair.key, c, pair.ms, pair.torch)
        for pair, c in zip(run.pairs, comparisons)
        if near(c, pair.torch.dtype.kind == "f") and not _half_judged(run, c)
    ]
    if close:
        run.rerun_for(judge_envelope, close, references)


def _half_pair(ms_dtype: str, torch_dtype: str) -> bool:
    return narrowest((ms_dtype, torch_dtype)) is not None


def _half_judged(run, c) -> bool:
    """Judged by the float64 golden: a half-precision tensor, or any floating one of a mixed-precision pair."""
    return _half_pair(c.ms_dtype, c.torch_dtype) or (run.amp is not None and is_floating(c.torch_dtype))


def _halves_to_golden(run, comparisons, references) -> None:
    """Half-precision tensors within HEADROOM of their tolerance (or beyond it) are judged against
    the float64 golden (see :mod:`parity.judge.golden`); the golden is the ``reference="float64"``
    pass where one ran."""
    close = [
        Candidate(pair.key, c, pair.ms, pair.torch)
        for pair, c in zip(run.pairs, comparisons)
        if near_golden(c) and _half_judged(run, c)
    ]
    if close:
        run.rerun_for(judge_golden, close, references)
