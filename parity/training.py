"""Training parity: the same optimizer steps on both sides, compared step by step.

One more use of the engine behind :func:`parity.check`: the same weight map and copy, the same
seeded inputs, the same per-tensor comparison and tolerance chain, the same rounding-envelope
judge (PyTorch's whole training run repeated under mirrored rounding-level perturbations and in
float64), the same message anatomy and registry. Per step, in order: the loss, every parameter
gradient, the optimizer state (moments, momentum buffers, step counts, the learning rate used),
the parameters after the update, and the running statistics.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

import numpy as np

from . import report
from .backends import framework_of
from .compare import Comparison
from .devices import profile as device_profile
from .errors import ParityMismatch, ParityUsageError
from .inputs import Inputs, materialize, seeded_stream
from .layouts import by_torch_name, ms_label, torch_layout
from .loss_scale import LossScaling, fmt_scale, skip_causes, skip_message
from .options import parse_seed
from .precision import (GOLDEN_FACTOR, HALF_ULPS, cast, golden_verdict, is_floating, is_half, missing_kernel, narrowest,
                        per_side_inputs, round_through)
from .runner import (DEFAULT_SEED, ENVELOPE_DRAWS, ENVELOPE_ULPS, HEADROOM, Settings, _ArrayPair,
                     _buffers, _check_choice, _check_pair, _compare, _framework_error, _jumps, _map_weights,
                     _perturbed_inputs, _refuse_unsupported_dtype, _rms, _set_weights, judge_in_envelope)
from .tolerance import Tolerance, ToleranceSpec, check_globs_used
from .result import Steps, Verdicts
from .weights import WeightReport

__all__ = ["TrainingResult", "TrainingStep", "run_training", "STAGES"]

# Stage -> the Comparison kind it is recorded as, in the order a step compares them.
STAGES = {"loss": "loss", "scale": "loss scale", "grads": "param grad", "state": "optimizer state",
          "params": "parameter", "buffers": "buffer"}
_SPOKEN = {"loss": "loss", "param grad": "gradient of parameter", "optimizer state": "optimizer state",
           "parameter": "parameter after the update", "buffer": "running statistic"}
# A step skipped on one side and applied on the other is a difference whatever the tolerance.
_EXACT = (ToleranceSpec.parse(Tolerance(0.0, 0.0), source="exact: both sides skip the same steps"),)
MODES = ("pynative", "graph", "both")


@dataclass
class TrainingStep:
    """One optimizer step: both losses and every tensor compared after it, in stage order."""

    step: int
    ms_loss: float
    torch_loss: float
    comparisons: List[Comparison]
    scales: Optional[Tuple[float, float]] = None  # with loss_scale: the loss scale each side used
    skipped: Optional[Tuple[bool, bool]] = None  # with loss_scale: whether each side skipped the update

    def stage(self, stage: str) -> List[Comparison]:
        return [c for c in self.comparisons if c.kind == STAGES[stage]]

    def stage_worst(self, stage: str) -> Optional[Tuple[Comparison, bool]]:
        """The stage's tensor with the greatest margin, and whether any tensor of the stage failed
        (None where the step compared nothing at that stage)."""
        group = self.stage(stage)
        if not group:
            return None
        return max(group, key=lambda c: c.margin), not all(c.passed for c in group)

    @property
    def failures(self) -> List[Comparison]:
        return [c for c in self.comparisons if not c.passed]


@dataclass
class TrainingResult(Steps, Verdicts):
    """Everything a training check compared, step by step."""

    ms_type: str
    torch_type: str
    steps: List[TrainingStep]
    weights: WeightReport
    optimizer: str
    loss: str
    batches: str
    seed: int
    mode: str
    reproduce: str = ""
    case: str = ""
    location: str = ""
    notes: List[str] = field(default_factory=list)
    device_setup: Optional[object] = None  # parity.devices.DeviceSetup: where both sides ran

    @property
    def ms_losses(self) -> List[float]:
        return [s.ms_loss for s in self.steps]

    @property
    def torch_losses(self) -> List[float]:
        return [s.torch_loss for s in self.steps]

    @property
    def comparisons(self) -> List[Comparison]:
        return [c for s in self.steps for c in s.comparisons]

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.comparisons)

    @property
    def first_failure(self) -> Optional[Tuple[int, Comparison]]:
        """(step, comparison) of the first tensor out of tolerance, in step and stage order."""
        for s in self.steps:
            if s.failures:
                return s.step, s.failures[0]
        return None

    @property
    def problem(self) -> str:
        return ""

    def __str__(self) -> str:
        total, failures = len(self.comparisons), self.failures
        pair = f"mindspore {self.ms_type} <-> torch {self.torch_type} ({len(self.steps)} steps, {self.mode})"
        parts = [f"{total - len(failures)} of {total} tensors within tolerance"]
        worst = self.worst
        if worst is not None:
            parts.append(f"worst {worst.kind} '{worst.name}' at {report.fmt(worst.margin)}x allowed")
        if self.noise_judged:
            parts.append(f"{len(self.noise_judged)} noise-judged (beyond the tolerance, inside PyTorch's "
                         "rounding envelope)")
        first = self.first_failure
        if first is not None:
            parts.append(f"first divergence at step {first[0]}, {_where(first[1])}")
        return f"{'ok' if not failures else 'FAIL'}: {pair}; " + "; ".join(parts)


def run_training(ms_cell, torch_module, batches, *, loss, optimizer, steps: int = 3, lr_scheduler=None,
                 clip_grad_norm=None, loss_scale=None,
                 accumulate: int = 1, weights="copy", ms_mode="pynative", tolerance=None, name_map=None,
                 seed=None, acknowledge=None, settings: Settings = Settings()) -> TrainingResult:
    """See :func:`parity.check_training`. Train/eval flags are restored on return; the weights,
    running statistics and optimizers are left as the steps left them. ``acknowledge``: None
    (a call) keeps what the optimizer lint finds as notes of the result and of its failure; a
    tuple of known-mismatch ids (a catalogue case) makes any other finding a usage error raised
    before the first step."""
    __tracebackhide__ = True
    _check_pair(ms_cell, torch_module)
    from .backends import mindspore as msb, torch as tb

    restore_ms, restore_torch = msb.train_flags(ms_cell), tb.train_flags(torch_module)
    try:
        return _run_training(ms_cell, torch_module, batches, loss=loss, optimizer=optimizer, steps=steps,
                             lr_scheduler=lr_scheduler,
                             clip_grad_norm=clip_grad_norm, loss_scale=loss_scale, accumulate=accumulate,
                             weights=weights, ms_mode=ms_mode, tolerance=tolerance, name_map=name_map, seed=seed,
                             acknowledge=acknowledge, settings=settings)
    finally:
        restore_ms()
        restore_torch()
        msb.release_graphs()


def _positive_int(value, label: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ParityUsageError(f"check_training(): {label} must be an integer >= 1, got {value!r}")
    return value


def _validate(steps, accumulate, clip_grad_norm, mode) -> None:
    _positive_int(steps, "steps")
    _positive_int(accumulate, "accumulate")
    if clip_grad_norm is not None and (isinstance(clip_grad_norm, bool) or not isinstance(clip_grad_norm, (int, float))
                                       or not clip_grad_norm > 0):
        raise ParityUsageError(f"check_training(): clip_grad_norm must be a number > 0 (PyTorch's max_norm), "
                               f"got {clip_grad_norm!r}")
    _check_choice("ms_mode", mode, MODES, "check_training()")


def _batch_list(batches, count: int, seed: int) -> Tuple[List[Tuple[Inputs, np.ndarray]], str]:
    """``count`` (inputs, target) pairs, cycling through ``batches``; specs drawn once per batch."""
    if isinstance(batches, tuple) and len(batches) == 2 and not isinstance(batches[0], tuple):
        raise ParityUsageError("check_training(): batches is a list of (inputs, target) pairs; for one batch "
                               "write [(inputs, target)]")
    try:
        items = list(batches)
    except TypeError:
        raise ParityUsageError(f"check_training(): batches must be a list of (inputs, target) pairs, got "
                               f"{type(batches).__qualname__}") from None
    if not items:
        raise ParityUsageError("check_training(): batches is empty; give at least one (inputs, target) pair")
    made, described = [], []
    for index, item in enumerate(items):
        if not isinstance(item, (tuple, list)) or len(item) != 2:
            raise ParityUsageError(f"check_training(): batches[{index}] must be an (inputs, target) pair, got "
                                   f"{type(item).__qualname__}" + (f" of {len(item)}" if isinstance(item, (tuple, list))
                                                                    else ""))
        batch_seed = int(seeded_stream(seed, f"batch:{index}").random_raw()) >> 1
        inputs = materialize(item[0], batch_seed)
        target = materialize(item[1], batch_seed ^ 0x5A5A)
        made.append((inputs, target.args[0]))
        described.append(f"[{index}] " + "; ".join(list(inputs.descriptions.values())
                                                   + [f"target {d}" for d in target.descriptions.values()]))
    return [made[i % len(made)] for i in range(count)], f"seed {seed} -> " + ", ".join(described)


def _losses(loss, device: str):
    """(MindSpore loss, PyTorch loss, description) from a PyTorch loss or a pair."""
    if isinstance(loss, (tuple, list)):
        if len(loss) != 2 or framework_of(loss[1]) != "torch" or not callable(loss[0]):
            raise ParityUsageError("check_training(): loss=(ms_loss, torch_loss) takes a MindSpore loss Cell (or "
                                   "function) and a PyTorch loss Module")
        return loss[0], loss[1], f"{_type(loss[0])} <-> {_type(loss[1])} (given pair)"
    if framework_of(loss) != "torch":
        raise ParityUsageError(f"check_training(): loss must be a PyTorch loss Module (translated to MindSpore) or "
                               f"a pair (ms_loss, torch_loss), got {_type(loss)}")
    from .translation import translate

    ms_loss = translate(loss, device=device)
    return ms_loss, loss, f"{_type(ms_loss)} <-> {_type(loss)} (translated)"


def _type(obj) -> str:
    klass = type(obj)
    return f"{klass.__module__}.{klass.__qualname__}" if klass.__module__.split(".")[0] not in ("torch", "mindspore") \
        else f"{klass.__module__.split('.')[0]}.{'nn.' if '.nn' in klass.__module__ else ''}" \
             f"{'optim.' if '.optim' in klass.__module__ else ''}{klass.__qualname__}"


class _Optimizers:
    """The PyTorch optimizer factory and the way to build its MindSpore counterpart."""

    def __init__(self, optimizer, ms_cell, torch_module):
        self.pair = isinstance(optimizer, (tuple, list))
        if self.pair and (len(optimizer) != 2 or not all(callable(f) for f in optimizer)):
            raise ParityUsageError("check_training(): optimizer=(ms_factory, torch_factory) takes two functions of "
                                   "the parameters")
        if not self.pair and not callable(optimizer):
            raise ParityUsageError("check_training(): optimizer must be a function of the parameters returning a "
                                   "torch.optim optimizer (lambda params: torch.optim.Adam(params, lr=1e-3)), or a "
                                   f"pair (ms_factory, torch_factory); got {type(optimizer).__qualname__}")
        self.ms_factory, self.torch_factory = optimizer if self.pair else (None, optimizer)
        self.ms_cell, self.torch_module = ms_cell, torch_module

    def torch(self):
        import torch

        built = self.torch_factory(self.torch_module.parameters())
        if not isinstance(built, torch.optim.Optimizer):
            raise ParityUsageError(f"check_training(): the PyTorch optimizer factory returned {_type(built)}, not a "
                                   "torch.optim.Optimizer")
        return built

    def mindspore(self, torch_optimizer, wmap):
        if self.pair:
            built = self.ms_factory(self.ms_cell.trainable_params())
            if not hasattr(built, "parameters") or not callable(built):
                raise ParityUsageError(f"check_training(): the MindSpore optimizer factory returned {_type(built)}, "
                                       "not a mindspore.nn.Optimizer")
            return built, f"{_type(built)} <-> {_type(torch_optimizer)} (given pair)"
        from .backends import mindspore as msb
        from .translation.optim import translate_optimizer

        by_torch = {}
        for pair in wmap.trainable_pairs():
            by_torch.setdefault(pair.torch, []).append(pair.ms)
        names = {id(p): n for n, p in self.torch_module.named_parameters()}

        def ms_params_of(torch_param):
            return [msb._parameter(self.ms_cell, n) for n in by_torch.get(names.get(id(torch_param)), [])]

        built = translate_optimizer(torch_optimizer, ms_params_of)
        return built, f"{_type(torch_optimizer)} (translated: {type(built).__module__}.{type(built).__name__})"


def _run_training(ms_cell, torch_module, batches, *, loss, optimizer, steps, lr_scheduler, clip_grad_norm,
                  loss_scale, accumulate, weights,
                  ms_mode, tolerance, name_map, seed, acknowledge, settings) -> TrainingResult:
    __tracebackhide__ = True
    mode = settings.mode or ms_mode or "pynative"
    _validate(steps, accumulate, clip_grad_norm, mode)
    seed = parse_seed(seed, "check_training(seed=...)")
    seed = seed if seed is not None else settings.seed if settings.seed is not None else DEFAULT_SEED
    chain = (ToleranceSpec.parse(tolerance, source="check_training(tolerance=...)"),) + settings.tolerances
    from .backends import mindspore as msb, torch as tb

    from .backends.device import setup as device_setup

    msb.prepare(seed=seed, device=settings.device)
    tb.prepare(seed=seed, device=settings.device)
    setup = device_setup(settings.device)
    chain += (device_profile(setup),)  # the dtype defaults on this device, last
    _refuse_dropout(msb.refuse_dropout(ms_cell), tb.dropout_layers(torch_module))
    half = _precision(ms_cell, torch_module, settings.device, loss_scale)
    data, described = _batch_list(batches, steps * accumulate, seed)
    ms_data, torch_data = _per_side(data, half)
    ms_loss, torch_loss, loss_label = _losses(loss, settings.device)
    optimizers = _Optimizers(optimizer, ms_cell, torch_module)
    schedulers = _Schedulers(lr_scheduler, optimizers.pair)
    scaling = LossScaling(loss_scale)
    wmap = _map_weights(ms_cell, torch_module, name_map, settings.device)
    wreport = _set_weights(weights, wmap, ms_cell, torch_module)
    msb.set_train(ms_cell, True)
    tb.set_train(torch_module, True)
    torch_start = tb.state_of(torch_module)
    torch_opt = optimizers.torch()
    torch_scaler = scaling.torch()
    modes = ["pynative", "graph"] if mode == "both" else [mode]
    ms_start = msb.state_of(ms_cell) if len(modes) > 1 else None
    ms_runs, findings = {}, None
    for ms_mode_now in modes:  # every MindSpore run from the same start, before PyTorch's scheduler moves an lr
        if ms_mode_now != modes[0]:
            msb.restore_state(ms_cell, ms_start)
        shadow = schedulers.shadow(torch_opt)
        ms_opt, opt_label = optimizers.mindspore(torch_opt, wmap)
        ms_sched = schedulers.mindspore(ms_opt, shadow)
        if findings is None:
            findings = _lint_optimizer(ms_opt, acknowledge, settings.device)
        ms_scaler = scaling.mindspore(torch_scaler)
        ms_steps = msb.TrainStep(ms_cell, ms_loss, ms_opt, accumulate=accumulate, clip_grad_norm=clip_grad_norm,
                                 mode=ms_mode_now, scaler=ms_scaler)
        ms_runs[ms_mode_now] = [None] * steps
        if ms_mode_now != modes[-1]:
            ms_runs[ms_mode_now] = [
                _side_step(lambda: _stepped(_in_half(_ms_record(ms_steps, ms_data[step * accumulate:
                                                                          (step + 1) * accumulate], ms_cell, wmap),
                                                     half), ms_sched), f"MindSpore ({ms_mode_now})", step)
                for step in range(steps)]
    torch_sched = schedulers.torch(torch_opt)
    opt_label += schedulers.label(torch_sched, ms_sched) + scaling.label(ms_scaler, torch_scaler)
    torch_steps = tb.TrainStep(torch_module, torch_loss, torch_opt, accumulate=accumulate,
                               clip_grad_norm=clip_grad_norm, device=settings.device, scaler=torch_scaler)
    losses, trained, close, scalings, halves = [], [], [], [], []
    ms_side = f"MindSpore ({modes[-1]})"
    for step in range(steps):
        # The last MindSpore run steps beside PyTorch: its step is handed to MindSpore, which runs it
        # asynchronously while PyTorch takes the same step, then read. Each step is compared as it
        # comes, and only what the rounding envelope needs is kept.
        micro = slice(step * accumulate, (step + 1) * accumulate)
        launched = _side_step(lambda: _ms_launch(ms_steps, ms_data[micro]), ms_side, step)
        torch_r = _side_step(lambda: _stepped(_in_half(_torch_record(torch_steps, torch_data[micro], torch_module,
                                                                     wmap), half), torch_sched), "PyTorch", step)
        ms_runs[modes[-1]][step] = _side_step(lambda: _stepped(_in_half(_ms_collect(ms_steps, launched, ms_cell, wmap),
                                                                        half), ms_sched), ms_side, step)
        pairs, comparisons = _compare_modes(step, ms_runs, torch_r, wmap, chain)
        losses.append((float(ms_runs[modes[0]][step][("loss", "loss")]), float(torch_r[("loss", "loss")])))
        scalings.append(_scalings(ms_runs[modes[0]][step], torch_r))
        for runs in ms_runs.values():
            runs[step] = None
        trained.append(comparisons)
        close += [(step, pair, c) for pair, c in zip(pairs, comparisons) if _near(pair, c) and not _halved(c)]
        halves += [(step, pair, c) for pair, c in zip(pairs, comparisons) if _near_half(c)]
    check_globs_used(chain[0], [n for s in trained for c in s for n in (c.name, c.ms_name, c.torch_name)])
    if (close or halves) and not scaling.active:  # the envelope's reruns take no loss scaler: tolerance alone
        envelope = _Envelope(torch_module, torch_loss, (optimizers, schedulers), torch_data, steps, accumulate,
                             clip_grad_norm, wmap, settings.device, seed, torch_start)
        _judge_half(envelope, halves)
        spread, jumped = envelope.spread({(i, pair.key): pair.torch for i, pair, _ in close}) if close else ({}, {})
        for i, pair, c in close:
            key = (i, pair.key)
            judge_in_envelope(c, pair.ms, pair.torch, spread[key], jumped[key])
    notes = _half_notes(half, ms_cell, wmap)
    result = TrainingResult(
        type(ms_cell).__name__, type(torch_module).__name__,
        [TrainingStep(i + 1, ms_l, torch_l, comparisons, *scaled)
         for i, ((ms_l, torch_l), comparisons, scaled) in enumerate(zip(losses, trained, scalings))],
        wreport, opt_label, loss_label, described, seed, mode, case=settings.case, location=settings.location,
        reproduce=report.reproduce_line(settings.reproduce, seed, "parity.check_training"),
        notes=[f"optimizer lint: {finding}" for finding in findings] + notes, device_setup=setup)
    result.notes += _scale_note(result.steps)
    if not result.passed:
        causes = _scale_causes(result) + _likely_causes(ms_opt, torch_opt, settings.device)
        causes += _loss_causes(ms_loss, torch_loss, settings.device, mode, _labels(torch_data))
        causes += _half_causes(half, torch_opt, result)
        raise ParityMismatch(failure_message(result, causes), result, causes)
    return result


def _near(pair, c) -> bool:
    """Whether a compared tensor is within HEADROOM of its tolerance (or beyond it) and can be
    judged against PyTorch's rounding envelope (as in :func:`parity.runner._judge_close_ones`)."""
    return (c.problem is None and c.total and c.margin > HEADROOM and pair.torch.dtype.kind == "f"
            and (c.nonfinite is None or c.nonfinite.agree))


def _lint_optimizer(ms_opt, acknowledge, device) -> List[str]:
    """The registry's findings on the built MindSpore optimizer, before any step (see run_training)."""
    from .registry.optimizers import lint_optimizer

    findings = [str(issue) for issue in lint_optimizer(ms_opt, acknowledge or (), device=device)]
    if findings and acknowledge is not None:
        raise ParityUsageError("the MindSpore optimizer is known to train differently from PyTorch's, before "
                               "any step:\n  " + "\n  ".join(findings))
    return findings


def _stepped(record, scheduler):
    """``record`` of a step, once the step's scheduler (if any) has moved the learning rate on."""
    if scheduler is not None:
        scheduler.step()
    return record


class _Schedulers:
    """The learning-rate schedule of both sides. A PyTorch scheduler factory drives both: the
    PyTorch optimizer's own instance, and, for a translated optimizer, a second instance over a
    shadow PyTorch optimizer with the same groups, whose learning rates are copied into the
    translation after every step. A pair ``(ms_factory, torch_factory)`` gives each side its own
    (``ms_factory(ms_optimizer)`` returns something with ``step()``, or None where the MindSpore
    optimizer schedules itself, as with ``learning_rate=nn.dynamic_lr...``)."""

    def __init__(self, spec, given_optimizer: bool):
        self.pair = isinstance(spec, (tuple, list))
        if self.pair and (len(spec) != 2 or not callable(spec[1]) or not (spec[0] is None or callable(spec[0]))):
            raise ParityUsageError("check_training(): lr_scheduler=(ms_factory, torch_factory) takes two functions of "
                                   "the optimizer (ms_factory may be None)")
        if not self.pair and spec is not None and not callable(spec):
            raise ParityUsageError("check_training(): lr_scheduler must be a function of the optimizer returning a "
                                   "torch.optim.lr_scheduler scheduler (lambda opt: StepLR(opt, step_size=2)), or a "
                                   f"pair (ms_factory, torch_factory); got {type(spec).__qualname__}")
        if spec is not None and not self.pair and given_optimizer:
            raise ParityUsageError("check_training(): a PyTorch scheduler drives a translated optimizer only; with "
                                   "optimizer=(ms_factory, torch_factory) give lr_scheduler=(ms_factory, "
                                   "torch_factory), ms_factory None where the MindSpore optimizer schedules itself")
        self.ms_factory, self.torch_factory = spec if self.pair else (None, spec)
        self.driven = spec is not None and not self.pair

    def torch(self, optimizer):
        if self.torch_factory is None:
            return None
        import torch

        built = self.torch_factory(optimizer)
        if not isinstance(built, torch.optim.lr_scheduler.LRScheduler) or \
                isinstance(built, torch.optim.lr_scheduler.ReduceLROnPlateau):
            raise ParityUsageError(f"check_training(): the PyTorch scheduler factory returned {_type(built)}, not a "
                                   "torch.optim.lr_scheduler scheduler stepped once per step (ReduceLROnPlateau, "
                                   "which needs a metric, is not one)")
        return built

    def shadow(self, torch_optimizer):
        """A PyTorch optimizer of the same class and groups over stand-in parameters."""
        if not self.driven:
            return None
        import torch

        groups = [{**{k: v for k, v in g.items() if k != "params"}, "params": [torch.zeros(1, requires_grad=True)]}
                  for g in torch_optimizer.param_groups]
        return type(torch_optimizer)(groups)

    def mindspore(self, ms_optimizer, shadow):
        if self.driven:
            return _Driven(ms_optimizer, self.torch(shadow))
        if self.ms_factory is None:
            return None
        built = self.ms_factory(ms_optimizer)
        if not callable(getattr(built, "step", None)):
            raise ParityUsageError(f"check_training(): the MindSpore scheduler factory returned {_type(built)}, "
                                   "which has no step()")
        return built

    @staticmethod
    def label(torch_sched, ms_sched) -> str:
        if torch_sched is None:
            return ""
        how = "driving both" if isinstance(ms_sched, _Driven) else \
            f"MindSpore {_type(ms_sched)}" if ms_sched is not None else "MindSpore's own schedule"
        return f"; lr scheduler {_type(torch_sched)} ({how})"


_SCHEDULED = ("momentum", "betas")


class _Driven:
    """A translated optimizer's learning rates, set from a PyTorch scheduler over its shadow."""

    def __init__(self, ms_optimizer, scheduler):
        self.ms_optimizer, self.scheduler = ms_optimizer, scheduler
        self._copy()

    def _copy(self) -> None:
        for ms_group, group in zip(self.ms_optimizer.param_groups, self.scheduler.optimizer.param_groups):
            ms_group["lr"] = float(group["lr"])
            for key in _SCHEDULED:  # OneCycleLR cycles the momentum (or Adam's beta1) too
                if key in ms_group and key in group:
                    ms_group[key] = tuple(map(float, group[key])) if key == "betas" else float(group[key])

    def step(self) -> None:
        self.scheduler.optimizer.step()  # its stand-ins have no gradient: nothing moves, the order is PyTorch's
        self.scheduler.step()
        self._copy()


def _refuse_dropout(ms_paths, torch_paths) -> None:
    if ms_paths or torch_paths:
        raise ParityUsageError(
            "check_training(): Dropout draws different masks in MindSpore and PyTorch, so no step could agree: "
            f"MindSpore {ms_paths or 'none'}, PyTorch {torch_paths or 'none'}. Set their rate to 0 "
            "(torch p=0.0, MindSpore p=0.0) for the check, or replace them with a fixed mask on both sides")


# Half precision: each side in its own dtype, judged against the float64 golden (parity.precision).

def _precision(ms_cell, torch_module, device: str, loss_scale) -> Optional[str]:
    """The half dtype both sides compute in (None: float32), once the pair is known to train in
    one precision with kernels for it; else a usage error (or ParityUnsupported) before any step."""
    from .backends import mindspore as msb, torch as tb

    ms_dtype, torch_dtype = msb.compute_dtype(ms_cell), tb.compute_dtype(torch_module)
    mixed = [] if ms_dtype else _mixed_layers(ms_cell)
    if mixed:
        raise ParityUsageError(
            f"check_training(): the MindSpore Cell trains in mixed precision ({len(mixed)} of its layers compute in "
            f"half precision, such as {mixed[0]!r}: mindspore.amp.auto_mixed_precision, or to_float on some "
            "layers); check_training has no torch.autocast counterpart yet. Check the mixed-precision forward and "
            "backward with parity.check(cell, module, inputs, amp='O2') (the level you use), and train the float32 "
            "pair, or to_float(mindspore.float16) on the whole Cell against Module.half()")
    if ms_dtype != torch_dtype:
        raise ParityUsageError(
            f"check_training(): MindSpore computes in {ms_dtype or 'float32'}, PyTorch in {torch_dtype or 'float32'}; "
            "no step could agree in precision. Give both sides one precision (Cell.to_float(mindspore.float16) and "
            "Module.half(), or bfloat16 on both), or neither")
    if ms_dtype is not None and loss_scale is not None:
        raise ParityUsageError(
            f"check_training(): loss_scale with a {ms_dtype} pair is not supported yet (the float64 golden's reruns "
            f"take no loss scaler, and {ms_dtype} training could not be judged). Check loss scaling on the float32 "
            f"pair, and {ms_dtype} training without it")
    _refuse_unsupported_dtype(ms_cell, torch_module, ms_dtype, device)
    return ms_dtype


def _mixed_layers(ms_cell) -> List[str]:
    """Paths of sub-Cells that compute in a half dtype where the Cell as a whole does not: to_float
    flags (O2, O3, by hand) and O1's casts rewritten into their code."""
    from .backends import mindspore as msb

    flagged = [path or "(root)" for path, cell in ms_cell.cells_and_names()
               if any(cell.get_flags().get(flag) for flag in ("fp16", "bf16"))]
    return flagged or [path for dtype in ("float16", "bfloat16") for path in msb.half_casts(ms_cell, dtype)]


def _per_side(data, half: Optional[str]):
    """Each side's (inputs, target) batches: floating inputs and targets in the half dtype its
    side computes in, the same values on both (see :func:`parity.precision.per_side_inputs`)."""
    if half is None:
        return data, data
    ms_data, torch_data = [], []
    for inputs, target in data:
        ms_in, torch_in, _ = per_side_inputs(inputs, half, half)
        wanted = is_floating(target.dtype) and target.dtype.kind != "c"
        target = cast(round_through(target, (half,)), half) if wanted else target
        ms_data.append((ms_in, target))
        torch_data.append((torch_in, target))
    return ms_data, torch_data


def _in_half(record, half: Optional[str]):
    """A step's record with its loss in the half dtype its side computed it in."""
    if half is not None:
        record[("loss", "loss")] = cast(np.asarray(record[("loss", "loss")]), half)
    return record


def _master(pair) -> bool:
    """MindSpore's float32 copy (to_float's master weight, its optimizer state) of a half PyTorch tensor."""
    return pair.ms.dtype.name == "float32" and is_half(pair.torch.dtype)


def _halved(c: Comparison) -> bool:
    return narrowest((c.ms_dtype, c.torch_dtype)) is not None


def _near_half(c: Comparison) -> bool:
    """A half-precision tensor within HEADROOM of its tolerance (or beyond): judged by the golden."""
    return (_halved(c) and c.problem is None and bool(c.total) and c.margin > HEADROOM
            and (c.nonfinite is None or c.nonfinite.agree))


def _judge_half(envelope, halves) -> None:
    """Judge each (step, pair, comparison) of ``halves`` as :func:`parity.check` judges a
    half-precision tensor: against PyTorch's whole training run in float64 from the same start
    (the golden), MindSpore's error at most GOLDEN_FACTOR times PyTorch's own, PyTorch's counting
    what its runs with everything moved by +-HALF_ULPS jump (:func:`parity.precision.golden_verdict`)."""
    if not halves:
        return
    from .backends import torch as tb

    wanted: Dict[int, set] = {}
    for step, pair, _ in halves:
        wanted.setdefault(step, set()).add(pair.key)
    module = envelope.module
    dtype = next(str(p.dtype).replace("torch.", "") for p in module.parameters())
    after, runs = tb.state_of(module), []
    try:
        for options in ({"cast": "float64"}, {"draw": 0, "ulps": HALF_ULPS}, {"draw": 0, "ulps": -HALF_ULPS}):
            runs.append({(step, key): found[key] for step, found in envelope._run(dtype, wanted, **options)
                         for key in wanted.get(step, ()) if key in found})
    finally:
        tb.restore_state(module, after, dtype)
        if hasattr(envelope.loss_fn, "to"):
            tb.cast_module(envelope.loss_fn, dtype)
    golden, plus, minus = runs
    for step, pair, c in halves:
        at = (step, pair.key)
        if at not in golden or np.shape(golden[at]) != pair.torch.shape:
            continue
        jumps = None
        if at in plus and at in minus:
            base = np.asarray(pair.torch).astype(np.float64)
            with np.errstate(invalid="ignore", over="ignore"):  # smooth elements move back and forth: ~0 left
                jumps = np.abs((np.asarray(plus[at]).astype(np.float64) - base)
                               + (np.asarray(minus[at]).astype(np.float64) - base))
        c.golden = golden_verdict(pair.ms, pair.torch, np.asarray(golden[at]), narrowest((c.ms_dtype, c.torch_dtype)),
                                  c.margin, jumps)
        c.margin = c.golden.final_margin


def _half_notes(half: Optional[str], ms_cell, wmap) -> List[str]:
    if half is None:
        return []
    from .backends import mindspore as msb

    notes = [f"half precision: both sides train in {half}, inputs and floating targets given to each as {half} (the "
             "same values); a tensor above half its tolerance is judged against PyTorch's training in float64 "
             f"(MindSpore's error within {GOLDEN_FACTOR:g}x PyTorch's own)"]
    masters = [p.ms for p in wmap.trainable_pairs() if msb.read(ms_cell, p.ms).dtype.name == "float32"]
    if masters:
        notes.append(f"master weights: MindSpore keeps {len(masters)} parameters in float32 (to_float) and updates "
                     f"them in float32, where PyTorch's are {half} and updated in {half}; they and their optimizer "
                     f"state are compared in {half}, a more precise MindSpore update passing the golden judge")
    return notes


def _half_causes(half: Optional[str], torch_opt, result: TrainingResult) -> List[str]:
    """An eps that float16 cannot hold, where PyTorch's tensors went non-finite and MindSpore's did not."""
    lost = sorted({g["eps"] for g in torch_opt.param_groups if isinstance(g.get("eps"), float) and g["eps"] > 0
                   and half is not None and float(cast(np.asarray(g["eps"]), half)) == 0.0})
    if not lost or not any(c.nonfinite is not None and not c.nonfinite.agree for c in result.comparisons):
        return []
    return [f"{_type(torch_opt)}(eps={lost[0]:g}) on {half} parameters keeps its state in {half}, where eps is 0: "
            "an exp_avg_sq that underflows divides by zero (NaN/Inf in PyTorch's tensors). MindSpore's to_float "
            f"keeps float32 parameters and state. Give both sides an eps that {half} holds (1e-4 is usual for "
            f"{half} Adam), or keep float32 parameters on the PyTorch side too"]


def _side_step(run, label: str, step: int):
    """One side's step; what the framework raises becomes a usage error naming the side and step."""
    try:
        return run()
    except ParityUsageError:
        raise
    except Exception as exc:
        if label.startswith("MindSpore"):
            from .backends import mindspore as msb

            msb.recover()
        what = f"training step {step + 1}"
        raise (missing_kernel(label.partition(" ")[0], exc, what) or _framework_error(label, exc, what)) from None


def _ms_record(trainer, micro, ms_cell, wmap) -> Dict[Tuple[str, str], object]:
    """What one MindSpore step left, keyed (stage, MindSpore name); state by (stage, name, key)."""
    return _ms_collect(trainer, _ms_launch(trainer, micro), ms_cell, wmap)


def _ms_launch(trainer, micro):
    """The learning rates the step will use, and the step handed to MindSpore (see _ms_collect)."""
    return trainer.lrs(), trainer.launch(micro)


def _ms_collect(trainer, launched, ms_cell, wmap) -> Dict[Tuple[str, str], object]:
    """:func:`_ms_record` of a step :func:`_ms_launch` handed to MindSpore, once it has run."""
    from .backends import mindspore as msb

    lrs, pending = launched
    loss, grads = trainer.collect(pending)
    return {("loss", "loss"): np.float32(loss), "grads": grads, "lr": lrs, "state": trainer.state(),
            "params": {p.ms: msb.read(ms_cell, p.ms) for p in wmap.trainable_pairs()},
            "buffers": _buffers(msb, ms_cell, wmap, "ms"), "scaling": trainer.scaling}


def _torch_record(trainer, micro, torch_module, wmap, perturb=None, cast=None, wanted=None, views=False):
    """What one PyTorch step left, as :func:`_ms_record`; with ``wanted`` (Comparison keys, see
    :func:`_torch_arrays`) the loss, the learning rates and only the tensors it names. ``views``:
    the parameters, statistics and optimizer state as views of PyTorch's tensors rather than
    copies, for a caller done with them before the next step (the gradients, which the step
    moves or clips after reading them, are copies all the same)."""
    from .backends import torch as tb

    lrs = trainer.lrs()
    if wanted is None:
        loss, grads = trainer.step(micro, perturb)
        return {("loss", "loss"): np.float32(loss) if cast is None else np.float64(loss), "grads": grads, "lr": lrs,
                "state": trainer.state(),
                "params": {p.torch: tb.read(torch_module, p.torch) for p in wmap.trainable_pairs()},
                "buffers": _buffers(tb, torch_module, wmap, "torch"), "scaling": trainer.scaling}
    names = {kind: {name for k, name in wanted if k == kind} for kind in ("param grad", "parameter", "buffer")}
    loss, grads = trainer.step(micro, perturb, keep=names["param grad"])
    state = trainer.state(only={name.rpartition(":")[0] for k, name in wanted if k == "optimizer state"},
                          copy=not views)
    read = functools.partial(tb.read, torch_module, copy=not views)
    return {("loss", "loss"): np.float32(loss) if cast is None else np.float64(loss), "grads": grads, "lr": lrs,
            "state": state, "params": {name: read(name) for name in names["parameter"]},
            "buffers": {name: read(name) for name in names["buffer"]},
            "scaling": trainer.scaling}


def _torch_arrays(record, wmap) -> Dict[Tuple[str, str], np.ndarray]:
    """A PyTorch record flattened to Comparison keys (kind, PyTorch name)."""
    found = {("loss", "loss"): np.asarray(record[("loss", "loss")])}
    for name in by_torch_name(wmap.trainable_pairs()):
        if name in record["grads"]:
            found[("param grad", name)] = record["grads"][name]
        for key, value in record["state"].get(name, {}).items():
            found[("optimizer state", f"{name}:{key}")] = np.asarray(value)
        if name in record["lr"]:
            found[("optimizer state", f"{name}:lr")] = np.float32(record["lr"][name])
        if name in record["params"]:
            found[("parameter", name)] = record["params"][name]
    for name, value in record["buffers"].items():
        found[("buffer", name)] = value
    return found


def _compare_modes(i, ms_runs, torch_r, wmap, chain):
    """Step ``i``'s pairs and comparisons for every MindSpore mode run, in stage order."""
    found = [_compare_step(runs[i], torch_r, wmap, chain, mode) for mode, runs in ms_runs.items()]
    order = list(STAGES.values())
    merged = sorted(((p, c) for pairs, comparisons in found for p, c in zip(pairs, comparisons)),
                    key=lambda pc: order.index(pc[1].kind))
    return [p for p, _ in merged], [c for _, c in merged]


def _compare_step(ms_r, torch_r, wmap, chain, mode):
    """The pairs and comparisons of one step, in stage order."""
    pairs: List[_ArrayPair] = [_ArrayPair("loss", "loss", "loss", "loss", mode, np.asarray(ms_r[("loss", "loss")]),
                                          np.asarray(torch_r[("loss", "loss")]))]
    skipped = _scalings(ms_r, torch_r)[1]
    if skipped is not None:  # 1 where the update was skipped (a gradient overflowed at the step's loss scale)
        pairs.append(_ArrayPair("loss scale", "update skipped", "update skipped", "update skipped", mode,
                                np.float32(skipped[0]), np.float32(skipped[1])))
    groups = by_torch_name(wmap.trainable_pairs())
    stages = {"param grad": [], "optimizer state": [], "parameter": []}
    for name, group in groups.items():
        held = [p.ms for p in group]
        layer = name.rpartition(".")[0]
        label = ms_label(group)
        if all(h in ms_r["grads"] for h in held) and skipped != (True, True):  # both threw overflowed ones away
            torch_grad = torch_r["grads"].get(name)
            ms_grad = torch_layout(group, ms_r["grads"])
            stages["param grad"].append(_ArrayPair("param grad", name, label, name, mode, ms_grad,
                                                   torch_grad if torch_grad is not None else np.zeros_like(ms_grad),
                                                   layer))
        ms_state = {h: ms_r["state"].get(h, {}) for h in held}
        for key, value in torch_r["state"].get(name, {}).items():
            if all(key in ms_state[h] for h in held):
                parts = {h: np.asarray(ms_state[h][key]) for h in held}
                ms_value = parts[held[0]] if np.ndim(value) == 0 else torch_layout(group, parts)
                stages["optimizer state"].append(_ArrayPair("optimizer state", f"{name}:{key}", f"{label}:{key}",
                                                            f"{name}:{key}", mode, np.asarray(ms_value, np.float32)
                                                            if np.ndim(value) == 0 else ms_value, np.asarray(value),
                                                            layer))
        if name in torch_r["lr"] and held[0] in ms_r["lr"]:
            stages["optimizer state"].append(_ArrayPair("optimizer state", f"{name}:lr", f"{label}:lr", f"{name}:lr",
                                                        mode, np.float32(ms_r["lr"][held[0]]),
                                                        np.float32(torch_r["lr"][name]), layer))
        stages["parameter"].append(_ArrayPair("parameter", name, label, name, mode, torch_layout(group, ms_r["params"]),
                                              torch_r["params"][name], layer))
    for kind in ("param grad", "optimizer state", "parameter"):
        pairs += stages[kind]
    groups = by_torch_name(p for p in wmap.pairs if not p.trainable)
    pairs += [_ArrayPair("buffer", name, ms_label(g), name, mode, ms_r["buffers"][name], torch_r["buffers"][name],
                         name.rpartition(".")[0]) for name, g in groups.items()]
    return pairs, [_compare(p, _EXACT if p.kind == "loss scale" else chain,
                            check_dtype=p.kind != "buffer" and not _master(p)) for p in pairs]


def _scalings(ms_r, torch_r):
    """((MindSpore scale, PyTorch scale), (MindSpore skipped, PyTorch skipped)) of a step under
    loss scaling, else (None, None)."""
    ms_s, torch_s = ms_r.get("scaling"), torch_r.get("scaling")
    if ms_s is None or torch_s is None:
        return None, None
    return (ms_s[0], torch_s[0]), (bool(ms_s[1]), bool(torch_s[1]))


class _Envelope:
    """PyTorch's whole training run again: once in float64, and ENVELOPE_DRAWS times with every
    input, weight, layer output, gradient flowing back and parameter gradient moved by
    ENVELOPE_ULPS units in the last place (mirrored pairs, a fresh draw per step), each from the
    same start and with a fresh optimizer from the same factory. Each tensor's spread is the
    farthest any run lands from PyTorch's own float32 run, step by step."""

    def __init__(self, module, loss_fn, optimizers, data, steps, accumulate, clip, wmap, device, seed, start):
        self.module, self.loss_fn, self.data = module, loss_fn, data
        self.optimizers, self.schedulers = optimizers
        self.steps, self.accumulate, self.clip, self.wmap = steps, accumulate, clip, wmap
        self.device, self.seed, self.start = device, seed, start

    def _run(self, dtype: str, wanted, cast=None, draw=None, ulps=0.0, views=False):
        """One run from the start, in ``cast`` (a dtype name) or the module's own ``dtype``: yields
        (step, its values at the keys ``wanted`` names for that step), up to the last step that
        names any. A step depends on the steps before it only, so the run stops there. ``views``:
        values the next step overwrites (see :func:`_torch_record`), for a caller done with each
        step's before asking for the next."""
        from .backends import torch as tb

        tb.restore_state(self.module, self.start, cast or dtype)
        if hasattr(self.loss_fn, "to"):
            tb.cast_module(self.loss_fn, cast or dtype)
        tb.prepare(seed=self.seed, device=self.device)
        optimizer = self.optimizers.torch()
        scheduler = self.schedulers.torch(optimizer)
        trainer = tb.TrainStep(self.module, self.loss_fn, optimizer, accumulate=self.accumulate,
                               clip_grad_norm=self.clip, device=self.device, cast=_dtype(cast))
        for step in range(max(wanted) + 1):
            micro = self.data[step * self.accumulate:(step + 1) * self.accumulate]
            perturb = None
            if draw is not None:
                step_seed = int(seeded_stream(self.seed, f"training-envelope:{draw}:{step}").random_raw()) >> 1
                micro = [(_perturbed_inputs(inputs, step_seed, draw, ulps), target) for inputs, target in micro]
                perturb = (step_seed, ulps)
            record = _torch_record(trainer, micro, self.module, self.wmap, perturb, cast, wanted.get(step, ()), views)
            yield step, _torch_arrays(_stepped(record, scheduler), self.wmap)

    def spread(self, base):
        """Per (step, key) of ``base`` (PyTorch's own float32 value there): the spread and the
        elements that jumped (see :func:`parity.runner._jumps`)."""
        from .backends import torch as tb

        wanted: Dict[int, set] = {}
        for step, key in base:
            wanted.setdefault(step, set()).add(key)
        spread = {k: np.zeros(np.shape(v), np.float64) for k, v in base.items()}
        jumped = {k: np.zeros(np.shape(v), bool) for k, v in base.items()}
        after = tb.state_of(self.module)
        dtype = next((str(p.dtype).replace("torch.", "") for p in self.module.parameters()), "float32")
        mirrored, scales = {}, {}  # scales: _rms of each base, taken once for both mirrored pairs

        def widen(runs, sign=0):
            for step, found in runs:
                for key in wanted.get(step, ()):
                    at, value = (step, key), found.get(key)
                    if value is None or np.shape(value) != spread[at].shape:
                        continue
                    if sign > 0:  # kept as the run's own value (half the bytes of its float64 move)
                        mirrored[at] = value
                    plus = mirrored.pop(at) if sign < 0 else None
                    if plus is not None and at not in scales:
                        scales[at] = _rms(np.ravel(base[at]))
                    _widen(spread[at], jumped[at], np.asarray(base[at]), value, plus, scales.get(at))

        try:  # widen is done with a step's values before the run takes the next: only the +u runs' are kept
            widen(self._run(dtype, wanted, cast="float64", views=True))
            for draw in range(ENVELOPE_DRAWS):
                ulps = ENVELOPE_ULPS if draw % 2 == 0 else -ENVELOPE_ULPS
                widen(self._run(dtype, wanted, draw=draw // 2, ulps=ulps, views=ulps < 0), sign=1 if ulps > 0 else -1)
        finally:
            tb.restore_state(self.module, after, dtype)
            if hasattr(self.loss_fn, "to"):
                tb.cast_module(self.loss_fn, dtype)
        return spread, jumped


_BLOCK = 1 << 15  # elements per block: a block's float64 temporaries stay in the CPU's cache


def _widen(spread, jumped, base, value, plus=None, scale=None) -> None:
    """``spread = max(spread, |value - base|)`` element by element, in float64, a move that is
    not finite counting 0; with ``plus`` (the value of the mirrored run), also ``jumped |=``
    :func:`parity.runner._jumps` of the two moves (``scale``: :func:`parity.runner._rms` of
    ``base``, where the caller has it). Block by block, with the results of the whole arrays: every
    operation is element by element, but the scale of ``_jumps``, taken over the whole ``base``
    first."""
    flat_spread, flat_jumped = spread.reshape(-1), jumped.reshape(-1)  # views: both made by np.zeros
    value, base = np.ravel(value), np.ravel(base)
    if plus is not None:
        plus = np.ravel(plus)
        scale = _rms(base) if scale is None else scale
    with np.errstate(invalid="ignore", over="ignore"):
        for start in range(0, base.size, _BLOCK):
            part = slice(start, start + _BLOCK)
            moved = _moved(value[part], base[part])
            if plus is not None:
                flat_jumped[part] |= _jumps(_moved(plus[part], base[part]), moved, base[part], scale)
            np.maximum(flat_spread[part], np.abs(moved), out=flat_spread[part])


def _moved(value, base):
    """``value - base`` in float64, 0 where that is not finite."""
    moved = np.subtract(value, base, dtype=np.float64)
    if not np.isfinite(moved.sum()):  # a sum is finite only where every term is (or it overflowed)
        moved[~np.isfinite(moved)] = 0.0
    return moved


def _dtype(name):
    if name is None:
        return None
    import torch

    return getattr(torch, name)


# Text: the failure message, with check's anatomy.

def _where(c: Comparison) -> str:
    if c.kind == "loss scale":
        return "loss scaling: the update skipped on one side only"
    if c.kind == "optimizer state":
        param, _, key = c.name.rpartition(":")
        ms_param = c.ms_name.rpartition(":")[0]
        text = f"optimizer state '{key}' of parameter '{param}'"
        return text + (f" (MindSpore '{ms_param}')" if ms_param != param else "")
    text = f"{_SPOKEN[c.kind]} '{c.name}'" if c.kind != "loss" else "loss"
    return text + (f" (MindSpore '{c.ms_name}')" if c.ms_name != c.name else "")


def step_table(result: TrainingResult) -> List[str]:
    """Per step: both losses, and per stage the worst tensor's margin."""
    stages = [stage for stage in list(STAGES)[1:] if stage != "scale" or any(s.scales for s in result.steps)]
    lines = ["Per step (loss MindSpore vs PyTorch; worst tensor per stage, difference / allowed):",
             f"  {'step':<5} {'loss MindSpore':<15} {'loss PyTorch':<15} " + " ".join(
                 f"{stage if stage != 'scale' else 'loss scale MindSpore/PyTorch':<30}" for stage in stages)]
    for s in result.steps:
        cells = []
        for stage in stages:
            if stage == "scale":
                cells.append(f"{_scale_cell(s):<30}")
                continue
            found = s.stage_worst(stage)
            if found is None:
                cells.append(f"{'-':<30}")
                continue
            worst, failed = found
            status = "FAIL" if failed else "ok"
            cells.append(f"{status + ' ' + report.fmt(worst.margin) + 'x ' + worst.name:<30.30}")
        loss_flag = "" if all(c.passed for c in s.stage("loss")) else " FAIL"
        lines.append(f"  {s.step:<5} {s.ms_loss:<15.7g} {s.torch_loss:<15.7g} " + " ".join(cells) + loss_flag)
    return lines


def failure_message(result: TrainingResult, likely_causes=()) -> str:
    step, first = result.first_failure
    lines = [f"MindSpore and PyTorch do not train the same! First at step {step}, {_where(first)}", ""]
    if result.case:
        lines.append(f"Case:       {result.case}" + (f"  ({result.location})" if result.location else ""))
    lines += [f"Pair:       mindspore {result.ms_type} <-> torch {result.torch_type} (train mode, {result.mode})"]
    lines += report.device_lines(result.device_setup)
    lines += [f"Optimizer:  {result.optimizer}", f"Loss:       {result.loss}",
              f"Divergence: first at step {step} of {len(result.steps)}, stage "
              f"'{next(k for k, v in STAGES.items() if v == first.kind)}', {_where(first)}", ""]
    if first.kind == "loss scale":
        lines.append(f"Loss scaling: {skip_message(result[step].scales, result[step].skipped)}")
    elif first.problem is None:
        lines += report._metrics(first) + [f"Tolerance: {first.tolerance_source} ({first.tolerance})"]
    else:
        lines.append(f"{first.problem.capitalize()}s differ: MindSpore {first.ms_shape or first.ms_dtype} vs "
                     f"PyTorch {first.torch_shape or first.torch_dtype}")
    failing = result.failures
    lines += ["", f"Compared tensors ({len(failing)} of {len(result.comparisons)} failed over {len(result.steps)} "
                  "steps)"] + step_table(result) + [""]
    lines += [f"Likely cause: {cause}" for cause in likely_causes]
    lines += [f"Weights: {result.weights}", f"Batches: {result.batches}"]
    lines += [f"Note: {note}" for note in result.notes]
    return "\n".join(lines + ["", f"Reproduce: {result.reproduce}"])


def _scale_cell(s: TrainingStep) -> str:
    """A step's loss scales, and which side skipped its update."""
    if s.scales is None:
        return "-"
    flag = lambda skipped: " skip" if skipped else ""  # noqa: E731
    status = "FAIL" if s.skipped[0] != s.skipped[1] else "ok"
    return (f"{status} 2**{np.log2(s.scales[0]):g}{flag(s.skipped[0])} / 2**{np.log2(s.scales[1]):g}"
            f"{flag(s.skipped[1])}")


def _scale_causes(result: TrainingResult) -> List[str]:
    """Under loss scaling, the first step skipped on one side only: why (see loss_scale.skip_causes)."""
    first = result.first_failure
    if first is None or first[1].kind != "loss scale" or result.steps[0].scales is None:
        return []
    return skip_causes(result.steps[0].scales, first[0], result[first[0]].scales)


def _scale_note(steps: List[TrainingStep]) -> List[str]:
    """A note where the loss scales differ but no step was skipped on one side only."""
    differ = next((s for s in steps if s.scales is not None and s.scales[0] != s.scales[1]), None)
    if differ is None or any(s.skipped[0] != s.skipped[1] for s in steps):
        return []
    return [f"loss scales differ from step {differ.step} (MindSpore {fmt_scale(differ.scales[0])}, PyTorch "
            f"{fmt_scale(differ.scales[1])}), and no step overflowed on one side only"]


def _likely_causes(ms_opt, torch_opt, device) -> List[str]:
    """The registry's entries this pair of optimizers hits (never raises)."""
    from .registry.optimizers import optimizer_causes

    try:
        return optimizer_causes(ms_opt, torch_opt, device=device)
    except Exception:  # the registry helps the message; it never hides the failure
        return []


def _labels(data) -> Optional[Tuple[int, ...]]:
    """The distinct integer targets the losses saw (None where some target is not integral): an
    entry about a label value (``ignore_index``) is cited only where such a label was there."""
    found = set()
    for _, target in data:
        target = np.asarray(target)
        if target.dtype.kind not in "iu":
            return None
        found.update(np.unique(target).tolist())
    return tuple(sorted(found))


def _loss_causes(ms_loss, torch_loss, device, mode, labels=None) -> List[str]:
    """The registry's entries the pair of losses is built to hit, given the ``labels`` it saw
    (never raises: see likely_causes)."""
    from .registry import diagnosis

    if not hasattr(ms_loss, "cells_and_names"):  # a function: nothing to inspect
        return []
    return diagnosis.likely_causes(ms_loss, torch_loss, device=device, mode=mode if mode in ("pynative", "graph")
                                   else None, threshold=diagnosis.HIGH, labels=labels)
