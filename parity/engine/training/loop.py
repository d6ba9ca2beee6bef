"""Training parity: the same optimizer steps on both sides, compared step by step.

One more use of the engine behind :func:`parity.check`: the same weight map and copy, the same
seeded inputs, the same per-tensor comparison and tolerance chain, the same rounding-envelope
judge (PyTorch's whole training run repeated under mirrored rounding-level perturbations and in
float64), the same message anatomy and registry. Per step, in order: the loss, every parameter
gradient, the optimizer state (moments, momentum buffers, step counts, the learning rate used),
the parameters after the update, and the running statistics.
"""

from __future__ import annotations

import contextlib
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from ...backends import mindspore as msb
from ...backends import torch as tb
from ...backends.device import setup as device_setup
from ...errors import ParityMismatch, ParityUsageError
from ...judge.devices import profile as device_profile
from ...judge.envelope import Candidate, judge_envelope, near
from ...judge.golden import judge_golden, near_golden
from ...judge.tolerance import ToleranceSpec, check_globs_used
from ...options import parse_seed
from ..check import check_pair, refuse_graph_mode
from ..diagnosis import messages
from ..inputs import Inputs, materialize, seeded_stream
from ..pairing import map_pair_weights, set_weights
from ..settings import DEFAULT_SEED, CheckOptions, Settings, check_choice
from ..side_errors import side_step
from .half import half_causes, half_notes, half_precision, halved, in_half, per_side
from .lockstep import Lockstep
from .loss_scale import LossScaling
from .messages import failure_message, labels_seen, loss_causes, optimizer_likely_causes, scale_causes, scale_note
from .optimizers import Optimizers, Schedulers, lint_ms_optimizer, losses_of
from .reruns import TorchReruns
from .result import TrainingResult, TrainingStep
from .steps import compare_modes, ms_collect, ms_launch, ms_record, step_scalings, stepped, torch_record

__all__ = ["run_training", "batch_list", "refuse_dropout", "MODES"]

MODES = ("pynative", "graph", "both")


def run_training(
    ms_cell,
    torch_module,
    batches,
    *,
    loss,
    optimizer,
    steps: int = CheckOptions.steps,
    lr_scheduler=CheckOptions.lr_scheduler,
    clip_grad_norm=CheckOptions.clip_grad_norm,
    loss_scale=CheckOptions.loss_scale,
    accumulate: int = CheckOptions.accumulate,
    weights=CheckOptions.weights,
    ms_mode=CheckOptions.ms_mode,
    tolerance=CheckOptions.tolerance,
    name_map=CheckOptions.name_map,
    ignore=CheckOptions.ignore,
    seed=CheckOptions.seed,
    acknowledge=None,
    settings: Settings = Settings(),
) -> TrainingResult:
    """See :func:`parity.check_training`. Train/eval flags are restored on return; the weights,
    running statistics and optimizers are left as the steps left them. ``acknowledge``: None
    (a call) keeps what the optimizer lint finds as notes of the result and of its failure; a
    tuple of known-mismatch ids (a catalogue case) makes any other finding a usage error raised
    before the first step."""
    __tracebackhide__ = True
    check_pair(ms_cell, torch_module)
    restore_ms, restore_torch = msb.train_flags(ms_cell), tb.train_flags(torch_module)
    try:
        return _run_training(
            ms_cell,
            torch_module,
            batches,
            loss=loss,
            optimizer=optimizer,
            steps=steps,
            lr_scheduler=lr_scheduler,
            clip_grad_norm=clip_grad_norm,
            loss_scale=loss_scale,
            accumulate=accumulate,
            weights=weights,
            ms_mode=ms_mode,
            tolerance=tolerance,
            name_map=name_map,
            ignore=ignore,
            seed=seed,
            acknowledge=acknowledge,
            settings=settings,
        )
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
    if clip_grad_norm is not None and (
        isinstance(clip_grad_norm, bool) or not isinstance(clip_grad_norm, (int, float)) or not clip_grad_norm > 0
    ):
        raise ParityUsageError(
            f"check_training(): clip_grad_norm must be a number > 0 (PyTorch's max_norm), got {clip_grad_norm!r}"
        )
    check_choice("ms_mode", mode, MODES, "check_training()")


def batch_list(batches, count: int, seed: int) -> Tuple[List[Tuple[Inputs, np.ndarray]], str]:
    """``count`` (inputs, target) pairs, cycling through ``batches``; specs drawn once per batch."""
    if isinstance(batches, tuple) and len(batches) == 2 and not isinstance(batches[0], tuple):
        raise ParityUsageError(
            "check_training(): batches is a list of (inputs, target) pairs; for one batch write [(inputs, target)]"
        )
    try:
        items = list(batches)
    except TypeError:
        raise ParityUsageError(
            f"check_training(): batches must be a list of (inputs, target) pairs, got {type(batches).__qualname__}"
        ) from None
    if not items:
        raise ParityUsageError("check_training(): batches is empty; give at least one (inputs, target) pair")
    made, described = [], []
    for index, item in enumerate(items):
        if not isinstance(item, (tuple, list)) or len(item) != 2:
            raise ParityUsageError(
                f"check_training(): batches[{index}] must be an (inputs, target) pair, got "
                f"{type(item).__qualname__}" + (f" of {len(item)}" if isinstance(item, (tuple, list)) else "")
            )
        batch_seed = int(seeded_stream(seed, f"batch:{index}").random_raw()) >> 1
        inputs = materialize(item[0], batch_seed)
        target = materialize(item[1], batch_seed ^ 0x5A5A)
        made.append((inputs, target.args[0]))
        described.append(
            f"[{index}] "
            + "; ".join(list(inputs.descriptions.values()) + [f"target {d}" for d in target.descriptions.values()])
        )
    return [made[i % len(made)] for i in range(count)], f"seed {seed} -> " + ", ".join(described)


def _run_training(
    ms_cell,
    torch_module,
    batches,
    *,
    loss,
    optimizer,
    steps,
    lr_scheduler,
    clip_grad_norm,
    loss_scale,
    accumulate,
    weights,
    ms_mode,
    tolerance,
    name_map,
    ignore,
    seed,
    acknowledge,
    settings,
) -> TrainingResult:
    __tracebackhide__ = True
    mode = settings.mode or ms_mode or CheckOptions.ms_mode
    _validate(steps, accumulate, clip_grad_norm, mode)
    refuse_graph_mode(ms_cell, mode, settings, "check_training()")
    seed = parse_seed(seed, "check_training(seed=...)")
    seed = seed if seed is not None else settings.seed if settings.seed is not None else DEFAULT_SEED
    chain = (ToleranceSpec.parse(tolerance, source="check_training(tolerance=...)"),) + settings.tolerances
    msb.prepare(seed=seed, device=settings.device)
    tb.prepare(seed=seed, device=settings.device)
    setup = device_setup(settings.device)
    chain += (device_profile(setup),)  # the dtype defaults on this device, last
    refuse_dropout(msb.refuse_dropout(ms_cell), tb.dropout_layers(torch_module))
    half = half_precision(ms_cell, torch_module, settings.device, loss_scale)
    data, described = batch_list(batches, steps * accumulate, seed)
    ms_data, torch_data = per_side(data, half)
    ms_loss, torch_loss, loss_label = losses_of(loss, settings.device)
    optimizers = Optimizers(optimizer, ms_cell, torch_module)
    schedulers = Schedulers(lr_scheduler, optimizers.pair)
    scaling = LossScaling(loss_scale)
    wmap = map_pair_weights(ms_cell, torch_module, name_map, settings.device, ignore)
    wreport = set_weights(weights, wmap, ms_cell, torch_module)
    msb.set_train(ms_cell, True)
    tb.set_train(torch_module, True)
    torch_start = tb.state_of(torch_module)
    torch_opt = optimizers.torch()
    torch_scaler = scaling.torch()
    modes = ["pynative", "graph"] if mode == "both" else [mode]
    ms_runs: Dict[str, List[Any]] = {}
    findings: Optional[List[str]] = None
    earlier: List[Any] = []
    for ms_mode_now in modes:  # every MindSpore run from the same start, before PyTorch's scheduler moves an lr
        shadow = schedulers.shadow(torch_opt)
        ms_opt, opt_label = optimizers.mindspore(torch_opt, wmap)
        ms_sched = schedulers.mindspore(ms_opt, shadow)
        if findings is None:
            findings = lint_ms_optimizer(ms_opt, acknowledge, settings.device)
        ms_scaler = scaling.mindspore(torch_scaler)
        ms_steps = msb.TrainStep(
            ms_cell,
            ms_loss,
            ms_opt,
            accumulate=accumulate,
            clip_grad_norm=clip_grad_norm,
            mode=ms_mode_now,
            scaler=ms_scaler,
        )
        ms_runs[ms_mode_now] = [None] * steps
        if ms_mode_now != modes[-1]:
            earlier.append(_EarlierMode(ms_mode_now, ms_steps, ms_sched))
    torch_sched = schedulers.torch(torch_opt)
    opt_label += schedulers.label(torch_sched, ms_sched) + scaling.label(ms_scaler, torch_scaler)
    torch_steps = tb.TrainStep(
        torch_module,
        torch_loss,
        torch_opt,
        accumulate=accumulate,
        clip_grad_norm=clip_grad_norm,
        device=settings.device,
        scaler=torch_scaler,
    )
    reruns = TorchReruns(
        torch_module,
        torch_loss,
        (optimizers, schedulers),
        torch_data,
        steps,
        accumulate,
        clip_grad_norm,
        wmap,
        settings.device,
        seed,
        torch_start,
    )
    lockstep = Lockstep(reruns)  # the envelope's first pair, step by step (not under a loss scaler: see below)
    losses, trained, scalings, halves = [], [], [], []
    ms_side = f"MindSpore ({modes[-1]})"
    for step in range(steps):
        # The last MindSpore run steps beside PyTorch: its step is handed to MindSpore, which runs it
        # asynchronously while PyTorch takes the same step, then read. Each step is compared as it
        # comes, and only what the rounding envelope needs is kept.
        micro = slice(step * accumulate, (step + 1) * accumulate)
        # The lambdas below are called at once by side_step (B023: the loop variables cannot change under them).
        for run in earlier:  # an earlier mode takes its step first, on its own weights (each has its optimizer)
            with run.own_weights(ms_cell):
                ms_runs[run.mode][step] = side_step(
                    lambda: stepped(in_half(ms_record(run.steps, ms_data[micro], ms_cell, wmap), half), run.scheduler),  # noqa: B023
                    f"MindSpore ({run.mode})",
                    step,
                )
        launched = side_step(lambda: ms_launch(ms_steps, ms_data[micro]), ms_side, step)  # noqa: B023
        # Parameters and optimizer state as views: this step's tensors are judged before either side's
        # next step, and what the envelope keeps longer, it copies.
        torch_r = side_step(
            lambda: stepped(
                in_half(torch_record(torch_steps, torch_data[micro], torch_module, wmap, views=True), half),  # noqa: B023
                torch_sched,
            ),
            "PyTorch",
            step,
        )
        ms_runs[modes[-1]][step] = side_step(
            lambda: stepped(in_half(ms_collect(ms_steps, launched, ms_cell, wmap, views=True), half), ms_sched),  # noqa: B023
            ms_side,
            step,
        )
        pairs, comparisons = compare_modes(step, ms_runs, torch_r, wmap, chain)
        losses.append((float(ms_runs[modes[0]][step][("loss", "loss")]), float(torch_r[("loss", "loss")])))
        scalings.append(step_scalings(ms_runs[modes[0]][step], torch_r))
        for runs in ms_runs.values():
            runs[step] = None
        trained.append(comparisons)
        if not scaling.active:
            lockstep.first_pair(
                step,
                [
                    Candidate((step, pair.key), c, pair.ms, pair.torch)
                    for pair, c in zip(pairs, comparisons)
                    if near(c, pair.torch.dtype.kind == "f") and not halved(c)
                ],
            )
        halves += [
            Candidate((step, pair.key), c, np.array(pair.ms), np.array(pair.torch))
            for pair, c in zip(pairs, comparisons)
            if halved(c) and near_golden(c)
        ]
        del pairs, torch_r  # what the envelope still needs of this step, it holds
    check_globs_used(chain[0], [n for s in trained for c in s for n in (c.name, c.ms_name, c.torch_name)])
    if not scaling.active:  # the envelope's reruns take no loss scaler: tolerance alone
        lockstep.release()
        reruns.rerun_for(judge_golden, halves)
        lockstep.finish(judge_envelope)
    notes = half_notes(half, ms_cell, wmap) + lockstep.notes()
    result = TrainingResult(
        type(ms_cell).__name__,
        type(torch_module).__name__,
        [
            TrainingStep(i + 1, ms_l, torch_l, comparisons, *scaled)
            for i, ((ms_l, torch_l), comparisons, scaled) in enumerate(zip(losses, trained, scalings))
        ],
        wreport,
        opt_label,
        loss_label,
        described,
        seed,
        mode,
        case=settings.case,
        location=settings.location,
        reproduce=messages.reproduce_line(settings.reproduce, seed, "parity.check_training"),
        notes=[f"optimizer lint: {finding}" for finding in findings or ()] + notes,
        device_setup=setup,
    )
    result.notes += scale_note(result.steps)
    if not result.passed:
        causes = scale_causes(result) + optimizer_likely_causes(ms_opt, torch_opt, settings.device)
        causes += loss_causes(ms_loss, torch_loss, settings.device, mode, labels_seen(torch_data))
        causes += half_causes(half, torch_opt, result)
        raise ParityMismatch(failure_message(result, causes), result, causes)
    return result


class _EarlierMode:
    """A MindSpore mode other than the last (``ms_mode="both"``: PYNATIVE) trained step by step
    beside the last one on the same Cell: before each of its steps the Cell gets its weights and
    statistics back, and after it the last mode's. Its optimizer and scheduler are its own. Only
    the Cell's state is held between steps, not every step's record."""

    def __init__(self, mode, steps, scheduler):
        self.mode, self.steps, self.scheduler = mode, steps, scheduler
        self.parked = None  # the Cell's state after this mode's last step (None: the start)

    @contextlib.contextmanager
    def own_weights(self, ms_cell):
        """The block runs on this mode's weights; the last mode's are back after it."""
        held = msb.state_of(ms_cell)  # the last mode's (before the first step: the start, which both share)
        if self.parked is not None:
            msb.restore_state(ms_cell, self.parked)
            self.parked = None
        try:
            yield
        finally:
            self.parked = msb.state_of(ms_cell)
            msb.restore_state(ms_cell, held)


def refuse_dropout(ms_paths, torch_paths) -> None:
    if ms_paths or torch_paths:
        raise ParityUsageError(
            "check_training(): Dropout draws different masks in MindSpore and PyTorch, so no step could agree: "
            f"MindSpore {ms_paths or 'none'}, PyTorch {torch_paths or 'none'}. Set their rate to 0 "
            "(torch p=0.0, MindSpore p=0.0) for the check, or replace them with a fixed mask on both sides"
        )
