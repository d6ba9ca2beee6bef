"""Build and run one pair for a self-test, and say what it did: a module pair through
:func:`parity.check`, a loss pair under training through :func:`parity.check_training`,
initial-weight spreads, dropout rates, or an optimizer's updates.

Imports MindSpore and PyTorch when a pair runs, never at import.
"""

from __future__ import annotations

import contextlib
import importlib
import re
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional, Sequence, Tuple, TypeVar

import numpy as np

from ..errors import ParityMismatch, ParityUsageError
from ..registry.diagnosis import replay_of
from ..registry.schema import Entry, SelfTestSpec

__all__ = [
    "Measurement",
    "fmt2",
    "resolve",
    "quiet",
    "module_pair",
    "loss_training_pair",
    "init_stats",
    "zero_fraction",
    "optimizer_pair",
    "clip_pair",
    "schedule_pair",
    "check_available",
    "flush_mindspore",
    "first_shape",
    "dtype_pair",
    "raised_measurement",
    "input_specs",
]

_T = TypeVar("_T")
_STATS_LIMIT = {"init": 1.5, "zero_fraction": 0.1}  # std ratio; difference of zero fractions


def fmt2(value: Optional[float]) -> str:
    """Two significant digits, so that a generated document stays stable."""
    if value is None:
        return "-"
    return "0" if value == 0 else f"{value:.2g}"


@dataclass(frozen=True)
class Measurement:
    """What one pair did: ``observed`` is "agrees" or one of the ``differs_in`` words (or "usage"),
    ``value`` the headline number (max abs difference; std ratio; zero-fraction difference)."""

    observed: str
    value: Optional[float] = None
    detail: str = ""
    text: str = field(default="", compare=False, repr=False)  # the whole error, for `raises`

    @property
    def display(self) -> str:
        """The number (or shape, or error) a person reads in the document."""
        return fmt2(self.value) if self.detail in ("", "agrees") else self.detail


def resolve(path: str):
    """``"package.module:Name"`` or a dotted path ``"mindspore.nn.Conv2d"`` -> the object (imports)."""
    if ":" in path:
        module, _, attr = path.partition(":")
        target = importlib.import_module(module)
        for part in attr.split("."):
            target = getattr(target, part)
        return target
    module, _, attr = path.rpartition(".")
    try:
        return getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError):
        target = resolve(module)
        return getattr(target, attr)


@contextlib.contextmanager
def quiet():
    """Framework warnings (deprecations, implicit choices) are noise for a self-test."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


_NOISE = re.compile(
    r"^(-+|- .*|\w+(Error|Exception):?|The (MindSpore|PyTorch) side raised during .*|"
    r"Check that the net accepts .*)$"
)


def raised_measurement(exc: BaseException) -> Measurement:
    """A failure to build or run: the most telling line as detail, the whole text for ``raises``."""
    text = str(exc)
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    telling = [line for line in lines if not _NOISE.match(line)]
    kind = next(
        (m.group(1) for m in (re.match(r"^(\w+(Error|Exception)):", line) for line in lines) if m), type(exc).__name__
    )
    line = telling[0] if telling else kind
    if not line.startswith(kind):
        line = f"{kind}: {line}"
    return Measurement("raises", None, line if len(line) <= 100 else line[:97] + "...", f"{type(exc).__name__}: {text}")


def input_specs(specs: Sequence[Mapping[str, Any]]):
    from ..engine import inputs as parity_inputs

    made = []
    for spec in specs:
        dtype = {"dtype": spec["dtype"]} if "dtype" in spec else {}
        if "randn" in spec:
            made.append(parity_inputs.randn(tuple(spec["randn"]), **dtype))
        elif "uniform" in spec:
            shape, low, high = spec["uniform"]
            made.append(parity_inputs.uniform(tuple(shape), low, high, **dtype))
        else:
            shape, low, high = spec["randint"]
            made.append(parity_inputs.randint(tuple(shape), low, high, **dtype))
    return made[0] if len(made) == 1 else tuple(made)


def _given(value: Optional[_T]) -> _T:
    """A spec's field that the kind of pair guarantees (the self-test chose the pair by it)."""
    assert value is not None
    return value


def first_shape(specs) -> Optional[Tuple[int, ...]]:
    if not specs:
        return None
    spec = specs[0]
    shape = spec.get("randn") or (spec.get("uniform") or spec.get("randint"))[0]
    return tuple(shape)


def flush_mindspore() -> None:
    """After a failed MindSpore kernel, PyNative may raise the same error again on the next op."""
    from ..backends import mindspore as msb

    msb.recover()


def module_pair(
    entry: Entry,
    api: str,
    ms_kwargs,
    spec: SelfTestSpec,
    inputs,
    *,
    fixed: bool,
    device: str,
    seed: int,
    replayed: bool = False,
) -> Measurement:
    """The pair checked as :func:`parity.check` checks it; with ``replayed``, PyTorch's layer
    altered by the entry's replay (it must then agree with the naive MindSpore layer)."""
    from ..backends import torch as tb
    from ..engine.check import run_check
    from ..engine.settings import Settings

    torch_module = resolve(spec.torch_api or entry.torch)(**spec.torch_kwargs)
    try:
        ms_cell = resolve(api)(**ms_kwargs)
    except Exception as exc:  # the naive MindSpore construction is rejected
        return raised_measurement(exc)
    name_map = _weights_map(entry) if fixed and entry.weights else None
    weights = "copy" if fixed else spec.weights
    mode = (spec.fixed_ms_mode or spec.ms_mode) if fixed else spec.ms_mode
    changes = {}
    if replayed:
        found, why = replay_of(entry, ms_cell, torch_module, [s for s in [first_shape(inputs)] if s])
        if found is None:
            return Measurement("usage", None, f"not replayed: {why}", why)
        changes = {"": (found.attributes, found.pads, found.value)}
    try:
        with tb.altered(torch_module, changes):
            result = run_check(
                ms_cell,
                torch_module,
                input_specs(inputs),
                weights=weights,
                grads=spec.grads,
                train=spec.train,
                ms_mode=mode,
                name_map=name_map,
                settings=Settings(seed=seed, device=device),
            )
    except ParityMismatch as exc:
        return _classify(exc)
    except ParityUsageError as exc:
        flush_mindspore()
        text = str(exc)
        if text.startswith(("Unmapped parameters", "Parameter shapes differ")):
            return Measurement("params", None, _params_detail(text), text)
        if "raised during" in text:
            return raised_measurement(exc)
        return Measurement("usage", None, text.splitlines()[0][:100], text)
    values = [c.max_abs for c in result.comparisons if c.problem is None and c.max_abs is not None]
    return Measurement("agrees", max(values, default=0.0), "agrees")


def dtype_pair(entry: Entry, api: str, ms_kwargs, spec: SelfTestSpec, inputs, *, device: str, seed: int) -> Measurement:
    """The MindSpore Cell alone in ``spec.dtype`` (``to_float``, floating inputs in that dtype),
    forward and backward: "raises" with MindSpore's error where its kernel is missing, "agrees" (it
    runs: the entry is stale) otherwise. PyTorch computes in any dtype, so it is not run."""
    import mindspore as ms

    from ..backends import mindspore as msb
    from ..engine import inputs as parity_inputs
    from ..engine.passes import seeded_cotangents
    from ..judge.dtypes import cast, is_floating

    msb.prepare(seed=seed, device=device)
    try:
        cell = resolve(api)(**ms_kwargs).to_float(getattr(ms, spec.dtype))
    except Exception as exc:  # the construction is rejected
        return raised_measurement(exc)
    cell.set_train(spec.train)
    data = parity_inputs.materialize(input_specs(inputs), seed)
    data = parity_inputs.Inputs(
        tuple(cast(a, spec.dtype) if is_floating(a.dtype) else a for a in data.args), {}, data.descriptions
    )
    try:
        side = msb.Pass(cell, data, grads=spec.grads, mode=spec.ms_mode)
        # the attribute engine.passes.seeded_cotangents reads a pass's outputs from
        side.values = side.outputs()  # type: ignore[attr-defined]
        if spec.grads:
            side.backward(seeded_cotangents(side, seed), [])
    except Exception as exc:  # the missing kernel
        flush_mindspore()
        return raised_measurement(exc)
    return Measurement("agrees", 0.0, f"runs in {spec.dtype}")


def _params_detail(text: str) -> str:
    """'Unmapped parameters: ...' / 'Parameter shapes differ ...' -> one short line."""
    first = text.splitlines()[0]
    match = re.match(r"Unmapped parameters: in MindSpore only (\[.*?\]); in PyTorch only (\[.*?\])", first)
    if match:
        parts = [
            f"{side} only {names}"
            for side, names in (("MindSpore", match.group(1)), ("PyTorch", match.group(2)))
            if names != "[]"
        ]
        return "unmapped parameters: " + "; ".join(parts)
    rows = [line.split() for line in text.splitlines()[2:4]]
    if len(rows) == 2 and all(len(r) >= 3 for r in rows):
        shapes = [" ".join(r[2:-1]) for r in rows]
        return f"'{rows[1][1]}' shape {shapes[0]} vs {shapes[1]}"
    return first[:100]


def _weights_map(entry: Entry) -> Callable[[str], Optional[str]]:
    def name_map(torch_name: str) -> Optional[str]:
        return entry.name_map([torch_name]).get(torch_name)

    return name_map


def _classify(exc: ParityMismatch) -> Measurement:
    result = exc.result
    if result is None:
        return Measurement("shape", None, str(exc).splitlines()[0][:120])
    failures = result.failures
    shaped = [c for c in failures if c.problem == "shape"]
    if shaped:
        c = shaped[0]
        return Measurement("shape", None, f"{c.kind} shape {tuple(c.ms_shape)} vs {tuple(c.torch_shape)}")
    kinds = {c.kind for c in failures}
    observed = "values" if "output" in kinds else "grads" if kinds & {"input grad", "param grad"} else "buffers"
    group = {"values": ("output",), "grads": ("input grad", "param grad"), "buffers": ("buffer",)}[observed]
    values = [c.max_abs for c in failures if c.kind in group and c.max_abs is not None]
    worst = max(values, default=None)
    label = {"values": "outputs", "grads": "gradients", "buffers": "running stats"}[observed]
    return Measurement(observed, worst, f"{label}: {fmt2(worst)}")


def loss_training_pair(entry: Entry, api: str, ms_kwargs, spec: SelfTestSpec, *, device: str, seed: int) -> Measurement:
    """The loss pair under training: a ``Linear(features, features)`` (``features``: the last
    dimension of the first batch's input) and its translation, one SGD step per batch of
    ``spec.batches``, each side under its loss. Observed: the stage of the first tensor out of
    tolerance (a parameter's gradient: grads; running statistics: buffers; the loss, optimizer
    state or parameters: values)."""
    import torch

    from ..engine.settings import Settings
    from ..engine.training.loop import run_training
    from ..translation import translate

    batches = [input_specs(batch) for batch in _given(spec.batches)]
    torch.manual_seed(seed)
    features = _given(first_shape(_given(spec.batches)[0]))[-1]
    model = torch.nn.Linear(features, features)
    try:
        ms_loss = resolve(api)(**ms_kwargs)
    except Exception as exc:  # the naive MindSpore construction is rejected
        return raised_measurement(exc)
    torch_loss = resolve(entry.torch)(**spec.torch_kwargs)
    try:
        result = run_training(
            translate(model),
            model,
            batches,
            loss=(ms_loss, torch_loss),
            steps=len(batches),
            optimizer=lambda params: torch.optim.SGD(params, lr=0.1),
            settings=Settings(seed=seed, device=device),
        )
    except ParityMismatch as exc:
        return _classify_training(exc.result)
    except ParityUsageError as exc:
        flush_mindspore()
        return raised_measurement(exc)
    values = [c.max_abs for c in result.comparisons if c.problem is None and c.max_abs is not None]
    return Measurement("agrees", max(values, default=0.0), "agrees")


_TRAINING_STAGES = {
    "loss": ("values", "loss"),
    "param grad": ("grads", "gradients"),
    "optimizer state": ("values", "optimizer state"),
    "parameter": ("values", "parameters"),
    "buffer": ("buffers", "running stats"),
}


def _classify_training(result) -> Measurement:
    step, first = result.first_failure
    observed, label = _TRAINING_STAGES[first.kind]
    values = [c.max_abs for c in result[step].failures if c.kind == first.kind and c.max_abs is not None]
    worst = max(values, default=None)
    return Measurement(observed, worst, f"{label} at step {step}: {fmt2(worst)}")


def _build_pair(entry: Entry, api: str, ms_kwargs, spec: SelfTestSpec, device: str, seed: int):
    from ..backends import mindspore as msb
    from ..backends import torch as tb

    msb.prepare(seed=seed, device=device)
    tb.prepare(seed=seed, device=device)
    return resolve(api)(**ms_kwargs), resolve(entry.torch)(**spec.torch_kwargs)


def init_stats(entry: Entry, api: str, ms_kwargs, spec: SelfTestSpec, device: str, seed: int) -> Measurement:
    """Initial weights drawn from different distributions: compare each tensor's spread."""
    from ..backends import mindspore as msb
    from ..backends import torch as tb
    from ..weights.transfer import map_weights

    ms_cell, torch_module = _build_pair(entry, api, ms_kwargs, spec, device, seed)
    wmap = map_weights(msb.slots(ms_cell), tb.slots(torch_module), None)
    worst, detail = 1.0, ""
    for pair in wmap.trainable_pairs():
        ms_std = float(np.std(msb.read(ms_cell, pair.ms)))
        torch_std = float(np.std(tb.read(torch_module, pair.torch)))
        ratio = max(ms_std, torch_std) / max(min(ms_std, torch_std), 1e-12)
        if ratio >= worst:
            worst, detail = ratio, f"'{pair.torch}' std {fmt2(ms_std)} vs {fmt2(torch_std)}"
    observed = "init" if worst > _STATS_LIMIT["init"] else "agrees"
    return Measurement(observed, worst, detail or "no weights")


def zero_fraction(entry: Entry, api: str, ms_kwargs, spec: SelfTestSpec, device: str, seed: int) -> Measurement:
    """Dropout masks come from different generators: compare the fraction dropped in train mode."""
    import mindspore as ms
    import torch

    ms_cell, torch_module = _build_pair(entry, api, ms_kwargs, spec, device, seed)
    ms_cell.set_train(True)
    torch_module.train(True)
    ones = np.ones(_given(first_shape(spec.inputs)), np.float32)
    ms_zero = float(np.mean(ms_cell(ms.Tensor(ones)).asnumpy() == 0))
    torch_zero = float(np.mean(torch_module(torch.from_numpy(ones)).detach().numpy() == 0))
    gap = abs(ms_zero - torch_zero)
    observed = "zero_fraction" if gap > _STATS_LIMIT["zero_fraction"] else "agrees"
    return Measurement(observed, gap, f"zeros {ms_zero:.0%} vs {torch_zero:.0%}")


def optimizer_pair(
    entry: Entry, api: str, ms_kwargs, spec: SelfTestSpec, mode: str, device: str, seed: int
) -> Measurement:
    """The same parameter and the same gradients, ``steps`` updates on each side. ``grad_scale``
    scales the N(0, 1) gradients; ``name`` names the MindSpore Parameter (filters read it).
    ``pair = "clip"`` compares gradient clipping instead, ``pair = "schedule"`` learning-rate
    schedules (:func:`clip_pair`, :func:`schedule_pair`)."""
    import mindspore as ms
    import torch

    from ..backends import mindspore as msb

    table = _given(spec.optimizer)
    other = {"clip": clip_pair, "schedule": schedule_pair}.get(table.get("pair", "step"))
    if other is not None:
        return other(entry, api, ms_kwargs, spec, device, seed)
    shape = tuple(table["shape"])
    rng = np.random.default_rng(seed)
    start = rng.standard_normal(shape).astype(np.float32)
    scale = float(table.get("grad_scale", 1.0))
    grads = [(rng.standard_normal(shape) * scale).astype(np.float32) for _ in range(int(table.get("steps", 3)))]
    msb.prepare(seed=seed, device=device)
    ms_param = ms.Parameter(ms.Tensor(start.copy()), name=table.get("name", f"w_{entry.id.replace('-', '_')}"))
    try:
        ms_opt = resolve(api)([ms_param], **ms_kwargs)
        with msb.execution_mode(mode):
            for grad in grads:
                ms_opt((ms.Tensor(grad),))
        ms_final = ms_param.asnumpy()
    except Exception as exc:  # no kernel, or the arguments are rejected
        flush_mindspore()
        return raised_measurement(exc)
    torch_param = torch.nn.Parameter(torch.from_numpy(start.copy()))
    torch_opt = resolve(entry.torch)([torch_param], **spec.torch_kwargs)
    for grad in grads:
        torch_param.grad = torch.from_numpy(grad.copy())
        torch_opt.step()
    torch_final = torch_param.detach().numpy()
    diff = float(np.max(np.abs(ms_final - torch_final)))
    close = np.allclose(ms_final, torch_final, rtol=1.3e-6, atol=1e-5)
    detail = "agrees" if close else f"parameters after {len(grads)} steps: {fmt2(diff)}"
    return Measurement("agrees" if close else "values", diff, detail)


def clip_pair(entry: Entry, api: str, ms_kwargs, spec: SelfTestSpec, device: str, seed: int) -> Measurement:
    """The same ``tensors`` gradients (N(0, 1) times ``grad_scale``) clipped on each side: the MindSpore
    function takes the tuple, the PyTorch one the parameters holding them. Compared in units of
    ``grad_scale``, so that the gap shows for gradients of any size."""
    import mindspore as ms
    import torch

    from ..backends import mindspore as msb

    table = _given(spec.optimizer)
    shape = tuple(table["shape"])
    rng = np.random.default_rng(seed)
    scale = float(table.get("grad_scale", 1.0))
    grads = [(rng.standard_normal(shape) * scale).astype(np.float32) for _ in range(int(table.get("tensors", 2)))]
    msb.prepare(seed=seed, device=device)
    try:
        ms_out = [t.asnumpy() for t in resolve(api)(tuple(ms.Tensor(g) for g in grads), **ms_kwargs)]
    except Exception as exc:  # no kernel, or the arguments are rejected
        flush_mindspore()
        return raised_measurement(exc)
    params = [torch.nn.Parameter(torch.zeros(shape)) for _ in grads]
    for param, grad in zip(params, grads):
        param.grad = torch.from_numpy(grad.copy())
    resolve(entry.torch)(params, **spec.torch_kwargs)
    ms_units, torch_units = (np.stack(ms_out) / scale, np.stack([_given(p.grad).numpy() for p in params]) / scale)
    diff = float(np.max(np.abs(ms_units - torch_units)))
    close = np.allclose(ms_units, torch_units, rtol=1.3e-6, atol=1e-5)
    return Measurement(
        "agrees" if close else "values", diff, "agrees" if close else f"clipped gradients / grad_scale: {fmt2(diff)}"
    )


def schedule_pair(entry: Entry, api: str, ms_kwargs, spec: SelfTestSpec, device: str, seed: int) -> Measurement:
    """A MindSpore learning-rate list (``api(**ms_kwargs)``) against the learning rate a PyTorch
    scheduler over SGD(lr=``lr``) gives each step, for as many steps as the list is long."""
    import torch

    try:
        ms_lrs = [float(v) for v in resolve(api)(**ms_kwargs)]
    except Exception as exc:  # the arguments are rejected
        return raised_measurement(exc)
    param = torch.nn.Parameter(torch.zeros(1))
    optimizer = torch.optim.SGD([param], lr=float(_given(spec.optimizer).get("lr", 0.1)))
    scheduler = resolve(entry.torch)(optimizer, **spec.torch_kwargs)
    torch_lrs = []
    for _ in ms_lrs:
        torch_lrs.append(float(optimizer.param_groups[0]["lr"]))
        optimizer.step()
        scheduler.step()
    gaps = [abs(a - b) for a, b in zip(ms_lrs, torch_lrs)]
    diff = max(gaps, default=0.0)
    if np.allclose(ms_lrs, torch_lrs, rtol=1.3e-6, atol=0.0):
        return Measurement("agrees", diff, "agrees")
    at = next(i for i, (a, b) in enumerate(zip(ms_lrs, torch_lrs)) if not np.isclose(a, b, rtol=1.3e-6, atol=0.0))
    return Measurement(
        "values",
        diff,
        f"learning rate from step {at + 1}: {fmt2(ms_lrs[at])} vs {fmt2(torch_lrs[at])}; at most {fmt2(diff)} apart",
    )


def check_available(record, *, device: str = "CPU", seed: int = 1234) -> Measurement:
    """Run an ``[[available]]`` record: the API must build, run and agree with PyTorch."""
    from ..engine.check import run_check
    from ..engine.settings import Settings

    with quiet():
        torch_module = resolve(record.torch)(**record.kwargs)
        ms_cell = resolve(record.mindspore)(**record.kwargs)
        try:
            result = run_check(
                ms_cell, torch_module, input_specs(record.inputs), settings=Settings(seed=seed, device=device)
            )
        except ParityMismatch as exc:
            return _classify(exc)
        except ParityUsageError as exc:
            flush_mindspore()
            return raised_measurement(exc)
    values = [c.max_abs for c in result.comparisons if c.problem is None and c.max_abs is not None]
    return Measurement("agrees", max(values, default=0.0), "agrees")
