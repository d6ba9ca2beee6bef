"""``parity.check(ms_cell, "path/to/reference")``: a check of MindSpore against PyTorch's recorded
side, importing no PyTorch. The steps are :func:`parity.engine.check.run_check`'s, in its order,
with PyTorch's values read from the reference: the weights copied from PyTorch's recorded ones
through the same weight map and layouts, the same inputs, tolerances, rounding envelope (its runs
recorded), localisation and message.

A reference stands for one module, its code, its inputs and the PyTorch that ran it (its content
key, see :mod:`.store`). Where the check is given the inputs, or the module itself where PyTorch is
installed, and they are not those recorded, the reference is refused, naming what changed.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from ...backends import framework_of
from ...backends import mindspore as msb
from ...backends.device import ascend_precision, gpu_precision
from ...errors import ParityMismatch, ParityUnsupported, ParityUsageError
from ...judge.devices import DeviceSetup
from ...judge.devices import profile as device_profile
from ...judge.dtypes import narrowest
from ...judge.envelope import Candidate, judge_envelope, near
from ...judge.golden import judge_golden, near_golden
from ...judge.metrics import compare_pair
from ...judge.tolerance import ToleranceSpec, check_globs_used
from ...options import parse_seed
from ...registry.diagnosis import parameter_causes
from ...weights.layouts import by_torch_name, torch_layout
from ...weights.transfer import TORCH_ONLY, WeightReport, copy_weights, map_weights
from ..diagnosis import messages
from ..diagnosis.causes import failure_causes, own_error_causes
from ..diagnosis.feeding import measure
from ..diagnosis.verdicts import first_nonfinite
from ..inputs import materialize, per_side_inputs
from ..outputs import little_power, nothing_compared, outputs_compared, warn_little_power
from ..result import Result
from ..settings import DEVICES, LOCALIZE, MODES, REFERENCES, Constant, Settings, check_choice
from .passes import RecordedPasses
from .side import RecordedTorch
from .store import array_chunks, digest

__all__ = ["run_reference", "refuse_changed"]

WHERE = "check() against a recorded reference"


def run_reference(ms_cell, path, inputs=None, **options) -> Result:
    """See :func:`parity.check` with a reference's path in place of the PyTorch module."""
    __tracebackhide__ = True
    if framework_of(ms_cell) != "mindspore":
        raise ParityUsageError(
            f"ms_cell must be a mindspore.nn.Cell, got {type(ms_cell).__module__}.{type(ms_cell).__qualname__}"
        )
    side = RecordedTorch.read(path)
    restore_ms = msb.train_flags(ms_cell)
    try:
        return _run(ms_cell, side, inputs, **options)
    finally:
        restore_ms()
        msb.release_graphs()


def _recorded_option(side: RecordedTorch, name: str, given, default=None):
    """The recorded value of option ``name``; a different one given is refused."""
    recorded = side.options()[name]
    if given is not None and given != default and given != recorded:
        raise ParityUsageError(
            f"{WHERE}: {name}={given!r}, but {side.reference.path} was recorded with {name}={recorded!r}; "
            f"check with {name}={recorded!r}, or record the reference again with {name}={given!r}"
        )
    return recorded


def _inputs_differ(recorded_inputs, data) -> Optional[str]:
    """What differs between ``data`` and ``recorded_inputs``, or None."""
    recorded = dict(recorded_inputs.named())
    given = dict(data.named())
    if sorted(recorded) != sorted(given):
        return f"the inputs are {sorted(given)}, the recorded ones {sorted(recorded)}"
    for name, array in given.items():
        kept = recorded[name]
        if (array.dtype, array.shape) != (kept.dtype, kept.shape):
            return f"{name} is {array.dtype}{list(array.shape)}, recorded {kept.dtype}{list(kept.shape)}"
        if digest(array_chunks([(name, array)])) != digest(array_chunks([(name, kept)])):
            return f"{name} holds other values than the recorded one"
    return None


def refuse_changed(side: RecordedTorch, torch_module=None, data=None) -> None:
    """Refuse a reference that no longer stands for what the check is given: ``data`` (its inputs),
    ``torch_module`` (where PyTorch is installed: its weights, its classes' code, PyTorch's version)."""
    where = side.reference.path
    if data is not None:
        differs = _inputs_differ(side.inputs(), data)
        if differs is not None:
            raise ParityUsageError(
                f"{WHERE}: {where} was recorded on other inputs: {differs}. Record it again on these inputs, "
                "or leave inputs out to check on the recorded ones"
            )
    if torch_module is None:
        return
    from .record import key_parts  # PyTorch is there: the module was given

    parts, classes = key_parts(torch_module, data if data is not None else side.inputs())
    recorded = side.manifest["parts"]
    changed: List[str] = []
    if parts["weights"] != recorded["weights"]:
        changed.append("the module's weights")
    if parts["code"] != recorded["code"]:
        old = side.manifest["classes"]
        named = sorted(n for n in set(classes) | set(old) if classes.get(n) != old.get(n))
        changed.append(f"the code of {', '.join(named)}")
    if parts["torch"] != recorded["torch"]:
        changed.append(f"PyTorch's version ({recorded['torch']} recorded, {parts['torch']} installed)")
    if changed:
        raise ParityUsageError(
            f"{WHERE}: {where} no longer matches the module: {'; '.join(changed)} changed since it was "
            "recorded. Record it again (parity.record, or pytest --parity --parity-record=DIR)"
        )


def _setup(device: str, env: Dict[str, Any]) -> DeviceSetup:
    """The device setup as :func:`parity.backends.device.setup` gives it, PyTorch's part recorded."""
    precision, by = ascend_precision() if device == "Ascend" else gpu_precision() if device == "GPU" else ((), "")
    return DeviceSetup(
        device=device,
        torch_device=env.get("torch_device", "cpu"),
        torch_note=env.get("torch_note", ""),
        torch_name=env.get("torch_name"),
        precision=precision,
        precision_by=by,
        torch_precision=tuple((k, v) for k, v in env.get("torch_precision", [])),
    )


def _run(
    ms_cell,
    side: RecordedTorch,
    inputs=None,
    *,
    weights="copy",
    grads=None,
    train=None,
    ms_mode=None,
    tolerance=None,
    name_map=None,
    ignore=(),
    seed=None,
    reference=None,
    check_dtype=True,
    localize="auto",
    amp=None,
    torch_module=None,
    settings: Settings = Settings(),
) -> Result:
    __tracebackhide__ = True
    if amp is not None:
        raise ParityUnsupported(f"{WHERE}: amp= needs PyTorch to run under autocast: check the live module")
    weights = _recorded_weights(side, weights)
    mode = settings.mode or ms_mode or "pynative"
    check_choice("ms_mode", mode, MODES, "check()")
    check_choice("reference", reference, REFERENCES, "check()")
    check_choice("localize", localize, LOCALIZE, "check()")
    check_choice("device", settings.device, DEVICES, "settings")
    given_seed = parse_seed(seed, "check(seed=...)")
    seed = _recorded_option(side, "seed", given_seed if given_seed is not None else settings.seed)
    grads = _recorded_option(side, "grads", grads, True)
    train = _recorded_option(side, "train", train, False)
    reference = reference if reference is not None else side.options()["reference"]
    recorded_device = side.manifest["environment"]["device"]
    if settings.device != recorded_device:
        raise ParityUsageError(
            f"{WHERE}: device {settings.device}, but {side.reference.path} was recorded with PyTorch on "
            f"{recorded_device}; record it again for {settings.device}"
        )
    data = materialize(inputs, seed) if inputs is not None else side.inputs()
    refuse_changed(side, torch_module, data if inputs is not None else None)
    chain: Tuple[Any, ...] = (
        ToleranceSpec.parse(tolerance) if tolerance is not None else side.tolerance(),
    ) + settings.tolerances

    msb.prepare(seed=seed, device=settings.device)
    setup = _setup(settings.device, side.manifest["environment"])
    chain += (device_profile(setup),)
    wmap = _weight_map(ms_cell, side, torch_module, name_map, settings.device, ignore)
    dtypes = {"ms": msb.compute_dtype(ms_cell), "torch": side.compute_dtype()}
    wreport = _set_weights(weights, wmap, ms_cell, side)
    msb.set_train(ms_cell, train)
    data = side.inputs()
    ms_data, torch_data, precision_notes = per_side_inputs(data, dtypes["ms"], dtypes["torch"])
    if _inputs_differ(side.torch_inputs(), torch_data) is not None:
        raise ParityUsageError(
            f"{WHERE}: MindSpore computes in {dtypes['ms'] or 'float32'} and PyTorch was recorded computing in "
            f"{dtypes['torch'] or 'float32'}: the inputs PyTorch was given no longer fit; record the reference "
            "again with the module in the Cell's precision"
        )
    modes = ("pynative", "graph") if mode == "both" else (mode,)
    ms_start = {p.ms: msb.read(ms_cell, p.ms) for p in wmap.pairs if not p.trainable}
    options = dict(grads=grads, train=train, ms_data=ms_data, check_dtype=check_dtype, reference=reference)
    unrecorded = None
    if localize is not False and not side.has_layers():  # recorded with layers=False: nothing to localise against
        unrecorded = f"layers were not compared: {side.reference.path} was recorded without them (layers=False)"
        localize = False
    run, comparisons = _execute(
        ms_cell, side, wmap, chain, modes, capture=localize is True, keep=localize is True, **options
    )
    if unrecorded is not None:
        run.notes.append(unrecorded)
    if run.structure is None and not any(c.problem == "shape" for c in comparisons if c.kind == "output"):
        check_globs_used(chain[0], [n for c in comparisons for n in (c.name, c.ms_name, c.torch_name)])
    layered = run if localize is True else None
    if localize == "auto" and (run.structure is not None or not all(c.passed for c in comparisons)):
        for name, value in ms_start.items():
            msb.write(ms_cell, name, value)
        msb.prepare(seed=seed, device=settings.device)
        if any(c.golden is not None or narrowest((c.ms_dtype, c.torch_dtype)) is not None for c in comparisons):
            options["reference"] = "float64"
        layered = _execute(ms_cell, side, wmap, chain, ("pynative",), capture=True, reruns=False, keep=True, **options)[
            0
        ]
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
    if passed and layers is not None:
        layers.passed_within_noise()
    nonfinite, own_notes = None, []
    if not passed and layers is not None and not problem:
        nonfinite = first_nonfinite(layers.forward, layers.backward)
        own_reruns = side.has_own_reruns()
        if not own_reruns:
            own_notes.append(
                f"each layer's own error was judged by its tolerance alone: {side.reference.path} was recorded "
                "without PyTorch's runs of the layers fed (layers='calls')"
            )
        try:  # each layer fed PyTorch's recorded inputs: its own error, apart from what flowed in
            rerun = (lambda feeds, grad_feeds, spec, keep: side.own_rerun(spec, keep)) if own_reruns else None
            measure(layered, layers, chain, rerun)
        except Exception as exc:  # the own errors help the message; they never hide the failure
            first = str(exc).splitlines()[0] if str(exc) else ""
            own_notes.append(f"each layer's own error was not measured: {type(exc).__name__}: {first}")
    if not passed and settings.repro_dir is not None:
        own_notes.append(
            "no standalone repro was written: a repro rebuilds PyTorch's layers, and this check ran against "
            "a recorded reference (check it live to have one)"
        )
    result = Result(
        ms_type=type(ms_cell).__name__,
        torch_type=side.type_name,
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
        notes=data.notes()
        + precision_notes
        + run.notes
        + [f"PyTorch's side read from {side.reference.path}"]
        + finite_notes
        + power_notes
        + own_notes,
        layers=layers,
        problem=problem,
        device_setup=setup,
        first_nonfinite=nonfinite,
    )
    if passed:
        warn_little_power(power_notes)
        return result
    layers_of = torch_module if torch_module is not None else side.module_view()
    diagnoses = None
    if layers is not None and not problem and layers_of is not None:
        diagnoses = own_error_causes(ms_cell, layers_of, result, settings.device, modes[-1])
    causes = _causes(ms_cell, layers_of, result, settings.device, modes[-1], diagnoses)
    message = messages.failure_message(result, likely_causes=causes, verbose=settings.verbose)
    raise ParityMismatch(message, result, causes)


def _recorded_weights(side: RecordedTorch, weights):
    """How the check sets the weights: as recorded ('copy', 'as_is' or a constant); the call's
    ``weights`` other than its default must say the same."""
    recorded = side.options().get("weights", "copy")
    recorded = Constant(recorded["constant"]) if isinstance(recorded, dict) else recorded
    if weights != "copy" and weights != recorded:
        raise ParityUsageError(
            f"{WHERE}: weights={weights!r}, but {side.reference.path} was recorded with weights={recorded!r}; "
            "a reference holds PyTorch's side as its weights were then: record it again with these weights"
        )
    return recorded


def _set_weights(weights, wmap, ms_cell, side: RecordedTorch) -> WeightReport:
    """MindSpore's weights set as a live check sets them, PyTorch's side recorded: copied from the
    recorded ones, filled with the constant (and verified against PyTorch's recorded filling), or
    left as built."""
    if weights == "copy":
        return copy_weights(wmap, side.weights, ms_cell, to_torch=False)
    if weights == "as_is":
        return WeightReport(wmap, "as is")
    filled = set()
    for pair in wmap.pairs:
        if pair.ms not in filled:
            filled.add(pair.ms)
            current = msb.read(ms_cell, pair.ms)
            if current.dtype.kind == "f":
                msb.write(ms_cell, pair.ms, np.full(pair.ms_shape, weights.value, current.dtype))
    verified = 0
    for torch_name, pairs in by_torch_name(wmap.pairs).items():
        ms_arrays = {p.ms: msb.read(ms_cell, p.ms) for p in pairs}
        if np.array_equal(torch_layout(pairs, ms_arrays), side.weights[torch_name]):
            verified += len(pairs)
    return WeightReport(wmap, f"constant {weights.value:g}", verified)


def _weight_map(ms_cell, side: RecordedTorch, torch_module, name_map, device: str, ignore=()):
    """:func:`map_weights` over the recorded slots; where parameters cannot be paired, the usage
    error names the known mismatches that explain it, as :func:`parity.engine.pairing.map_pair_weights` does."""
    __tracebackhide__ = True
    ms_slots, torch_slots = msb.slots(ms_cell), side.slots()
    try:
        return map_weights(ms_slots, torch_slots, name_map, ignore=ignore)
    except ParityUsageError as exc:
        layers_of = torch_module if torch_module is not None else side.module_view()
        causes = (
            parameter_causes(ms_cell, layers_of, ms_slots, torch_slots, device=device, ignore=TORCH_ONLY)
            if layers_of is not None
            else []
        )
        if not causes:
            raise
        raise ParityUsageError("\n".join([str(exc), ""] + [f"Likely cause: {c}" for c in causes])) from None


def _causes(ms_cell, torch_module, result, device: str, mode: str, diagnoses) -> List[str]:
    """The registry's likely causes, as a live check finds them, read from PyTorch's layers: the
    module's where it was given, else as recorded."""
    if torch_module is None:
        result.notes.append(
            "the known-mismatch registry's likely causes read PyTorch's layers, which this reference does not "
            "hold: record it again, or give the module too (parity.recorded(path, torch_module))"
        )
        return []
    causes = failure_causes(ms_cell, torch_module, result, device, mode, diagnoses)
    if result.layers is not None:
        causes += list(dict.fromkeys(c for e in result.layers.own_errors for c in e.causes if c not in causes))
    return causes


def _execute(ms_cell, side, wmap, chain, modes, *, capture, keep, reference, check_dtype, reruns=True, **options):
    """MindSpore once per mode against the recorded PyTorch side; the compared pairs (judged against
    the recorded rounding envelope too, unless ``reruns`` is False: a pass for layers only)."""
    run = RecordedPasses(
        ms_cell, side, options["ms_data"], wmap, chain, grads=options["grads"], train=options["train"],
        capture=capture, keep_layers=keep, noise=reference == "float64",
    )  # fmt: skip
    for run_mode in modes:
        run.ms_pass(run_mode)
        if run.structure is not None:
            break
    comparisons = [compare_pair(p, chain, check_dtype) for p in run.pairs]
    if reruns:
        half = lambda c: narrowest((c.ms_dtype, c.torch_dtype)) is not None  # noqa: E731
        close = [
            Candidate(p.key, c, p.ms, p.torch)
            for p, c in zip(run.pairs, comparisons)
            if near(c, p.torch.dtype.kind == "f") and not half(c)
        ]
        if close:
            run.rerun_for(judge_envelope, close)
        golden = [
            Candidate(p.key, c, p.ms, p.torch) for p, c in zip(run.pairs, comparisons) if near_golden(c) and half(c)
        ]
        if golden:
            run.rerun_for(judge_golden, golden)
    if run.localizer is not None and "pynative" not in modes:
        run.localize_in_pynative()
    run.notes += run.changed_notes()
    return run, comparisons
