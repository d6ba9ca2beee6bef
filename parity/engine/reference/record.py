"""``parity.record``: PyTorch's side of a check, run once and written down (see :mod:`.store`).

Everything a check asks of PyTorch is recorded, computed as the check computes it: the weights
(by PyTorch's names) and the inputs drawn from the seed; the forward's outputs, the seeded
cotangents, the input and parameter gradients and, in train mode, the running statistics; every
run of the rounding envelope (:data:`parity.judge.envelope.RERUNS`, each for every tensor: which
tensors a check sends to the envelope depends on MindSpore's values); each layer call's inputs,
outputs and gradients as the localiser captures them, with the per-layer float64 noise floors;
and the tolerance the check was given, the environment and the content key.
"""

from __future__ import annotations

import inspect
import platform
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Dict, List, Optional, Tuple

import numpy as np
import torch

from ...backends import framework_of
from ...backends import torch as tb
from ...backends.device import torch_reference
from ...errors import ParityUsageError
from ...judge.envelope import RERUNS
from ...judge.golden import GOLDEN_RERUNS
from ...judge.tolerance import ToleranceSpec
from ...options import parse_seed
from ...registry import load
from ...registry.rules import referenced
from ...registry.store import resolve_api
from ...weights.transfer import TORCH_ONLY
from ..diagnosis.feeding import torch_feeds
from ..diagnosis.own import rerun_fed
from ..diagnosis.recording import Localizer, Recording
from ..inputs import Inputs, materialize, per_side_inputs
from ..passes import draw_seed, perturbed_inputs, seeded_cotangents
from ..settings import DEFAULT_SEED, REFERENCES, Constant, Settings, check_choice
from ..side_errors import backward, run_side
from .store import Arrays, array_chunks, calls_to_json, digest, key_of, write_reference

__all__ = ["run_record", "key_parts", "code_digests", "tolerance_json"]


def run_record(
    torch_module,
    inputs,
    path,
    *,
    grads: bool = True,
    train: bool = False,
    seed=None,
    tolerance=None,
    reference=None,
    layers=True,
    weights="copy",
    force: bool = False,
    settings: Settings = Settings(),
) -> Path:
    """See :func:`parity.record`. The module's train flags, weights and buffers are as they were
    when it returns or raises."""
    if framework_of(torch_module) != "torch":
        raise ParityUsageError(
            f"record(): torch_module must be a torch.nn.Module, got "
            f"{type(torch_module).__module__}.{type(torch_module).__qualname__}"
        )
    check_choice("reference", reference, REFERENCES, "record()")
    check_choice("layers", layers, (True, "calls", False), "record()")
    if not isinstance(weights, Constant) and weights not in ("copy", "as_is"):
        raise ParityUsageError(
            f"record(): weights={weights!r}; a reference holds PyTorch's side, so its weights are PyTorch's "
            "('copy', copied to MindSpore when checked; 'as_is') or parity.constant(value) on both sides"
        )
    fill = weights.value if isinstance(weights, Constant) else None
    seed = parse_seed(seed, "record(seed=...)")
    seed = seed if seed is not None else settings.seed if settings.seed is not None else DEFAULT_SEED
    spec = ToleranceSpec.parse(tolerance)

    def make(arrays: Arrays) -> Dict[str, Any]:
        restore, state = tb.train_flags(torch_module), tb.state_of(torch_module)
        try:
            manifest = _record(
                torch_module, inputs, seed, bool(grads), bool(train), settings.device, layers, fill, arrays
            )
        finally:  # the module as it was: its train flags, and the statistics its passes updated
            restore()
            tb.restore_state(torch_module, state)
        manifest["options"] = {
            "seed": seed,
            "grads": bool(grads),
            "train": bool(train),
            "reference": reference,
            "weights": {"constant": fill} if fill is not None else weights,
        }
        manifest["tolerance"] = tolerance_json(spec)
        manifest["case"] = settings.case
        return manifest

    return write_reference(path, make, force=force)


def tolerance_json(spec: ToleranceSpec) -> Dict[str, Any]:
    pair = lambda tol: None if tol is None else [tol.rtol, tol.atol]  # noqa: E731
    return {
        "default": pair(spec.default),
        "overrides": [[g, pair(t)] for g, t in spec.overrides],
        "source": spec.source,
    }


def code_digests(module) -> Dict[str, str]:
    """Per class in ``module``'s tree defined outside torch, the digest of its source (of every
    class it derives from outside torch too): a change to a forward shows as its class."""
    found: Dict[str, str] = {}
    for sub in module.modules():
        for klass in type(sub).__mro__:
            name = f"{klass.__module__}.{klass.__qualname__}"
            if klass.__module__.split(".")[0] in ("torch", "builtins") or name in found:
                continue
            try:
                source = inspect.getsource(klass)
            except (OSError, TypeError):  # a class made at run time: its name stands for it
                source = f"<no source: {name}>"
            found[name] = digest([source.encode()])
    return found


def key_parts(module, data: Inputs) -> Tuple[Dict[str, str], Dict[str, str]]:
    """The parts of the content key (``weights``, ``code``, ``inputs``, ``torch``), and the per-class
    code digests (to name what changed)."""
    slots = tb.slots(module)
    weights = digest(array_chunks((s.name, tb.read(module, s.name)) for s in slots))
    classes = code_digests(module)
    parts = {
        "weights": weights,
        "code": digest(f"{name}={value}".encode() for name, value in sorted(classes.items())),
        "inputs": digest(array_chunks(data.named())),
        "torch": str(torch.__version__),
    }
    return parts, classes


def _fill(module, value: float) -> None:
    """Every floating tensor a check pairs set to ``value``, as ``weights=parity.constant(value)``
    sets PyTorch's (:func:`parity.weights.transfer.fill_weights`): not those a weight map leaves out."""
    for slot in tb.slots(module):
        if slot.persistent and slot.leaf not in TORCH_ONLY:
            current = tb.read(module, slot.name)
            if current.dtype.kind == "f":
                tb.write(module, slot.name, np.full(slot.shape, value, current.dtype))


def _record(module, inputs, seed: int, grads: bool, train: bool, device: str, layers: bool, fill, arrays: Arrays):
    tb.prepare(seed=seed, device=device)
    slots = tb.slots(module)
    data = materialize(inputs, seed)
    parts, classes = key_parts(module, data)
    if fill is not None:
        _fill(module, fill)
    weights = arrays.put_named((s.name, tb.read(module, s.name)) for s in slots)
    tb.set_train(module, train)
    dtype = tb.compute_dtype(module)
    torch_data = per_side_inputs(data, dtype, dtype)[1]
    trainable = [s.name for s in slots if s.trainable]
    kept = [s.name for s in slots if not s.trainable]
    start = tb.buffers(module)
    side = run_side(lambda: tb.Pass(module, torch_data, grads=grads, device=device), "PyTorch")
    cotangents = seeded_cotangents(side, seed)
    statistics = [(name, tb.read(module, name)) for name in kept] if train else []
    result = backward(side, cotangents, trainable, "PyTorch") if grads else None
    manifest: Dict[str, Any] = {
        "key": key_of(parts),
        "parts": parts,
        "classes": classes,
        "module": f"{type(module).__module__}.{type(module).__qualname__}",
        "torch_type": type(module).__name__,
        "slots": [_slot_json(s) for s in slots],
        "layer_kinds": [[path, kind[0], kind[1]] for path, kind in tb.layer_kinds(module).items()],
        "layer_facts": layer_facts(module),
        "compute_dtype": dtype,
        "weights": weights,
        "start": arrays.put_named(start.items()),
        "inputs": arrays.put_named(data.named()),
        "descriptions": data.descriptions,
        "keywords": sorted(data.kwargs),
        "torch_inputs": arrays.put_named(torch_data.named()),
        "outputs": arrays.put_named(side.values),
        "changed": list(getattr(side, "changed", ())),
        "cotangents": arrays.put_named(cotangents.items()),
        "trainable": trainable,
        "input_grads": arrays.put_named(result.inputs.items()) if result is not None else None,
        "param_grads": arrays.put_named((n, result.params[n]) for n in trainable) if result is not None else None,
        "statistics": arrays.put_named(statistics),
        "environment": _environment(device, getattr(sys.modules.get("parity"), "__version__", "")),
    }
    arrays.flush()  # one part per stage: a recording holds one of PyTorch's runs at a time
    after = tb.buffers(module)
    context = (torch_data, seed, grads, train, device, start, kept, trainable, cotangents)
    specs = list(RERUNS) + ([s for s in GOLDEN_RERUNS if s.cast is None] if dtype is not None else [])
    manifest["reruns"] = [_rerun(module, spec, context, arrays) for spec in specs]
    tb.set_buffers(module, after)
    if layers:
        found = _layers(module, torch_data, seed, grads, device, start, trainable, arrays, own=layers != "calls")
        manifest["layers"], manifest["noise"], manifest["own_reruns"] = found
    return manifest


def layer_facts(module) -> Optional[Dict[str, Any]]:
    """Per layer of ``module`` (by path), what the known-mismatch registry reads of it: its class
    name, the registry's PyTorch APIs it is an instance of, and the attributes their rules read
    (None where the registry cannot be loaded: the likely causes then need the module)."""
    try:
        entries = load().entries
    except Exception:  # the registry helps a failure's message; it never stops a recording
        return None
    apis: Dict[str, type] = {}
    names: Dict[str, set] = {}
    for entry in entries:
        klass = resolve_api(entry.torch) if entry.torch else None
        if not isinstance(klass, type):
            continue
        apis[entry.torch] = klass
        sources = [entry.when, *entry.inspect_torch.values(), *entry.inspect_fix.values()]
        names.setdefault(entry.torch, set()).update(n for text in sources if text for n in referenced(text, "torch"))
    found = {}
    for path, layer in module.named_modules():
        mine = [api for api, klass in apis.items() if isinstance(layer, klass)]
        attributes = {}
        for name in sorted({n for api in mine for n in names[api]}):
            try:
                attributes[name] = _fact(getattr(layer, name))
            except AttributeError:  # the rule says it is missing, as it would of the module
                continue
        found[path] = {"type": type(layer).__name__, "apis": mine, "attributes": attributes}
    return found


def _fact(value) -> Any:
    """An attribute's value in JSON: a tuple marked as one, an object by its type."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, tuple):
        return {"tuple": [_fact(v) for v in value]}
    if isinstance(value, list):
        return [_fact(v) for v in value]
    return {"object": type(value).__name__}


def _slot_json(slot) -> Dict[str, Any]:
    return {
        "name": slot.name,
        "shape": list(slot.shape),
        "dtype": slot.dtype,
        "trainable": slot.trainable,
        "layer": slot.layer,
        "layer_type": slot.layer_type,
        "aliases": list(slot.aliases),
        "persistent": slot.persistent,
    }


def _environment(device: str, version: str) -> Dict[str, Any]:
    label, note, name, flags = torch_reference(device)
    return {
        "parity": version,
        "torch": str(torch.__version__),
        "numpy": np.__version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "device": device,
        "torch_device": label,
        "torch_note": note,
        "torch_name": name,
        "torch_precision": [[k, v] for k, v in flags],
        "argv": sys.argv[:1],
    }


def _values(module, data, grads, device, cotangents, trainable, train, kept, cast=None) -> List[Tuple[str, str, Any]]:
    """PyTorch's forward and VJP again (as :mod:`parity.engine.passes` reruns it): (kind, name, array)."""
    dtype = getattr(torch, cast) if cast else None
    label = f"PyTorch {cast}" if cast else "PyTorch (rounding envelope)"
    side = run_side(lambda: tb.Pass(module, data, grads=grads, device=device, cast=dtype), label)
    found = [("output", path, value) for path, value in side.values]
    if grads:
        result = backward(side, cotangents, trainable, label)
        found += [("input grad", k, v) for k, v in result.inputs.items()]
        found += [("param grad", k, v) for k, v in result.params.items()]
    if train:
        found += [("buffer", name, tb.read(module, name)) for name in kept]
    return found


def _rerun(module, spec, context, arrays: Arrays) -> Dict[str, Any]:
    """One run of the envelope's, for every tensor."""
    data, seed, grads, train, device, start, kept, trainable, cotangents = context
    if spec.cast is not None:
        module64 = tb.float64_copy(module)
        tb.set_buffers(module64, start)
        found = _values(module64, data, grads, device, cotangents, trainable, train, kept, cast=spec.cast)
    else:
        tb.set_buffers(module, start)
        tb.prepare(seed=seed, device=device)  # the same dropout masks as the first run
        with tb.perturbed(module, seed=draw_seed(seed, spec.draw), ulps=spec.ulps):
            moved = perturbed_inputs(data, seed, spec.draw, spec.ulps)
            found = _values(module, moved, grads, device, cotangents, trainable, train, kept)
    run = {
        "cast": spec.cast,
        "draw": spec.draw,
        "ulps": spec.ulps,
        "values": [[kind, name, arrays.put(value)] for kind, name, value in found],
    }
    arrays.flush()
    return run


def _layers(module, data, seed, grads, device, start, trainable, arrays: Arrays, *, own: bool):
    """Every layer call captured as the localiser captures it (one more pass from the start), each
    call's float64 noise floors, and (``own``) the envelope's runs of every layer fed."""
    tb.set_buffers(module, start)
    tb.prepare(seed=seed, device=device)
    recording = Recording()
    module64 = tb.float64_copy(module)
    with tb.capture(module, recording, backward=grads) as layers:
        side = run_side(lambda: tb.Pass(module, data, grads=grads, device=device), "PyTorch")
        cotangents = seeded_cotangents(side, seed)
        if grads:
            backward(side, cotangents, trainable, "PyTorch")
            layers.flush()
    localizer = Localizer(recording, lambda path: path, None, keep=True)
    # Floors are measured as the calls come: where both runs hold the same Inf (a mask's -inf), their
    # difference is NaN, which the floor leaves out; numpy's warning of it is no error of the module.
    with (
        np.errstate(invalid="ignore", over="ignore"),
        tb.capture(module64, localizer.float64_recording(), backward=grads),
    ):
        side64 = run_side(
            lambda: tb.Pass(module64, data, grads=grads, device=device, cast=torch.float64), "PyTorch float64"
        )
        if grads:
            backward(side64, cotangents, trainable, "PyTorch float64")
    noise = [
        [direction, path, call, floors[0], floors[1]] for (direction, path, call), floors in localizer.noise.items()
    ]
    calls = calls_to_json(recording, arrays)
    arrays.flush()
    if not own:
        return calls, noise, []
    return calls, noise, _own_reruns(module, recording, data, seed, grads, device, start, cotangents, arrays)


def _own_reruns(module, recording, data, seed, grads, device, start, cotangents, arrays: Arrays):
    """The envelope's runs of each layer's own error (:func:`parity.engine.diagnosis.own.rerun_fed`):
    PyTorch with every layer call fed its recorded inputs (and, with ``grads``, the gradients at its
    outputs), each call's values kept, one run per :data:`RERUNS` spec."""
    feeds, grad_feeds = torch_feeds(recording, grads)
    kept = [s.name for s in tb.slots(module) if not s.trainable]
    run = SimpleNamespace(
        torch_module=module,
        seed=seed,
        torch_start=start,
        device=device,
        data=data,
        train=module.training,
        cotangents=cotangents,
        wmap=SimpleNamespace(pairs=[SimpleNamespace(torch=name, trainable=False) for name in kept]),
    )
    found = []
    for spec in RERUNS:
        values = rerun_fed(run, feeds, grad_feeds, spec, None)
        found.append(
            {
                "cast": spec.cast,
                "draw": spec.draw,
                "ulps": spec.ulps,
                "values": [[*key, arrays.put(np.asarray(value))] for key, value in values if value is not None],
            }
        )
        del values
        arrays.flush()
    tb.set_buffers(module, start)
    return found
