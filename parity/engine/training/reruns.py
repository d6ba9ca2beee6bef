"""PyTorch's training again, for the judges: from the same start, in float64 or with every input,
weight, layer output, gradient flowing back and parameter gradient moved by a few units in the
last place, as each :class:`parity.judge.envelope.Rerun` asks (see :mod:`parity.judge`)."""

from __future__ import annotations

from typing import Dict

import torch

from ...backends import torch as tb
from ..inputs import seeded_stream
from ..passes import perturbed_inputs
from .steps import stepped, torch_arrays, torch_record

__all__ = ["TorchReruns"]


class TorchReruns:
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
        values the next step overwrites (see :func:`torch_record`), for a caller done with each
        step's before asking for the next."""
        tb.restore_state(self.module, self.start, cast or dtype)
        if hasattr(self.loss_fn, "to"):
            tb.cast_module(self.loss_fn, cast or dtype)
        tb.prepare(seed=self.seed, device=self.device)
        trainer, scheduler = self.trainer(self.module, cast)
        for step in range(max(wanted) + 1):
            yield step, self.step(trainer, scheduler, step, wanted.get(step, ()), draw, ulps, cast, views)

    def trainer(self, module, cast=None):
        """(PyTorch's training step over ``module``, its scheduler), each fresh from the factories."""
        optimizer = self.optimizers.torch(module)
        scheduler = self.schedulers.torch(optimizer)
        return tb.TrainStep(
            module,
            self.loss_fn,
            optimizer,
            accumulate=self.accumulate,
            clip_grad_norm=self.clip,
            device=self.device,
            cast=_dtype(cast),
        ), scheduler

    def step(self, trainer, scheduler, step, wanted, draw=None, ulps=0.0, cast=None, views=False):
        """Step ``step`` of a run (perturbed by ``draw`` and ``ulps``, or in ``cast``): its values at
        the keys ``wanted`` names."""
        micro = self.data[step * self.accumulate : (step + 1) * self.accumulate]
        perturb = None
        if draw is not None:
            step_seed = int(seeded_stream(self.seed, f"training-envelope:{draw}:{step}").random_raw()) >> 1
            micro = [(perturbed_inputs(inputs, step_seed, draw, ulps), target) for inputs, target in micro]
            perturb = (step_seed, ulps)
        record = torch_record(trainer, micro, trainer.model, self.wmap, perturb, cast, wanted, views)
        return torch_arrays(stepped(record, scheduler), self.wmap)

    def rerun_for(self, decide, candidates, **options) -> None:
        """Have ``decide`` (:func:`parity.judge.envelope.judge_envelope` or
        :func:`parity.judge.golden.judge_golden`) give ``candidates`` (keyed ``(step, key)``) their
        verdicts, each rerun asked for made here; then PyTorch's module and loss are as before."""
        if not candidates:
            return
        after = tb.state_of(self.module)
        dtype = next((str(p.dtype).replace("torch.", "") for p in self.module.parameters()), "float32")

        def rerun(spec):
            # Only as far as the last step of a tensor still open. A run whose values the judge
            # keeps past the next step reads copies; the others views.
            wanted: Dict[int, set] = {}
            for step, key in (c.key for c in candidates if spec.keys is None or c.key in spec.keys):
                wanted.setdefault(step, set()).add(key)
            if not wanted:
                return
            for step, found in self._run(
                dtype, wanted, cast=spec.cast, draw=spec.draw, ulps=spec.ulps, views=not spec.kept
            ):
                for key in wanted.get(step, ()):
                    if key in found:
                        yield (step, key), found[key]

        try:
            decide(candidates, rerun, **options)
        finally:
            tb.restore_state(self.module, after, dtype)
            if hasattr(self.loss_fn, "to"):
                tb.cast_module(self.loss_fn, dtype)


def _dtype(name):
    if name is None:
        return None
    return getattr(torch, name)
