"""The rounding envelope's first mirrored pair of PyTorch's training, stepping beside the main run.

The envelope's runs of a training check start from the same weights and take the same steps as
PyTorch's own run. Run after it, they need every near tensor of every step kept until they are in:
on ResNet-50 with Adam, where from the second step nearly every tensor is near, gigabytes. The
first pair of runs (``STAGES[0]``), which decides nearly every tensor, runs here instead on two
copies of the module, each step taken just after the main run's same step (and only once a step
has a near tensor: the copies catch up from the start then). Each step's near tensors are judged
on that pair at once (:func:`parity.judge.envelope.judge_first_pair`); only those still open are
kept, for the later stages, which run from the start as before. Same runs, same seeds, same
values: the verdicts are those of the runs made afterwards.

Where the copies cannot be made (a module ``copy.deepcopy`` refuses, an optimizer factory that
does not build its optimizer over the parameters it is given), :attr:`Lockstep.why_not` says so and
every near tensor is kept for the runs afterwards, as before.
"""

from __future__ import annotations

import copy
from typing import Dict, List, Optional, Tuple

import numpy as np
import torch

from ...backends import torch as tb
from ...judge.envelope import HEADROOM, STAGES, Candidate, first_pair_spread, judge_first_pair
from .reruns import TorchReruns

__all__ = ["Lockstep"]


class _Run:
    """One run of the pair on its own copy of the module: its trainer, scheduler, random state and
    the next step it will take."""

    def __init__(self, reruns: TorchReruns, spec):
        self.module = copy.deepcopy(reruns.module)  # after a step of PyTorch's: no gradients held (TrainStep.step)
        tb.restore_state(self.module, reruns.start)
        self.trainer, self.scheduler = reruns.trainer(self.module)
        own = {id(p) for p in self.module.parameters()}
        given = [p for group in self.trainer.optimizer.param_groups for p in group["params"]]
        if not given or any(id(p) not in own for p in given):
            raise _CannotCopy(
                "the PyTorch optimizer factory did not build its optimizer over the parameters it was given"
            )
        saved = torch.get_rng_state()
        torch.manual_seed(reruns.seed)  # as a run from the start seeds itself (TorchReruns._run)
        self.rng = torch.get_rng_state()
        torch.set_rng_state(saved)
        self.spec, self.next = spec, 0

    def advance(self, reruns: TorchReruns, step: int, wanted) -> Dict:
        """Take the steps up to ``step``; its values at ``wanted``, as views valid until the next step."""
        saved = torch.get_rng_state()
        torch.set_rng_state(self.rng)
        try:
            found: Dict = {}
            while self.next <= step:
                found = reruns.step(
                    self.trainer,
                    self.scheduler,
                    self.next,
                    wanted if self.next == step else (),
                    self.spec.draw,
                    self.spec.ulps,
                    views=True,
                )
                self.next += 1
            return found
        finally:
            self.rng = torch.get_rng_state()
            torch.set_rng_state(saved)


class _CannotCopy(Exception):
    pass


class Lockstep:
    """The first mirrored pair beside the main run (see the module's docstring)."""

    def __init__(self, reruns: TorchReruns):
        self.reruns = reruns
        self.runs: Optional[Tuple[_Run, _Run]] = None
        self.why_not: Optional[str] = None
        self.kept: List[Candidate] = []  # candidates still open after the pair
        self.spreads: Dict = {}  # their spreads
        self.given: List[Candidate] = []  # where the pair could not be run: every candidate, for the runs after

    def first_pair(self, step: int, candidates: List[Candidate]) -> None:
        """Judge step ``step``'s near tensors on the first pair (keyed ``(step, key)``); keep the open ones."""
        if not candidates:
            return
        if self.runs is None and self.why_not is None:
            try:
                first, second = (_Run(self.reruns, spec) for spec in STAGES[0])
                self.runs = (first, second)
            except _CannotCopy as exc:
                self.why_not = str(exc)
            except Exception as exc:  # noqa: BLE001 - deepcopy of a user's module: any failure means "not here"
                self.why_not = f"copy.deepcopy of the PyTorch module failed ({type(exc).__name__}: {exc})"[:300]
        if self.runs is None:
            self.given += [Candidate(c.key, c.comparison, np.array(c.ms), np.array(c.torch)) for c in candidates]
            return
        wanted = {c.key[1] for c in candidates}
        plus, minus = (run.advance(self.reruns, step, wanted) for run in self.runs)
        by_key: Dict = {}  # MindSpore's modes share PyTorch's values, and so each key's spread
        for c in candidates:
            by_key.setdefault(c.key, []).append(c)
        for key, group in by_key.items():  # one spread at a time
            spread = first_pair_spread(group[0].reference, plus.get(key[1]), minus.get(key[1]), dtype=np.float64)
            for c in group:
                if c is not group[0] and c.ms is group[0].ms:  # another mode's very values (see compare_modes)
                    first = group[0].comparison
                    c.comparison.envelope, c.comparison.margin = first.envelope, first.margin
                elif not judge_first_pair(c, spread):
                    continue
                if c.comparison.margin <= HEADROOM:
                    continue
                kept = Candidate(c.key, c.comparison, np.array(c.ms), np.array(c.torch))  # views until the next step
                if key not in self.spreads:
                    spread.base = kept.reference  # the spread is drawn around PyTorch's value of this step
                    self.spreads[key] = spread
                self.kept.append(kept)

    def notes(self) -> List[str]:
        if self.why_not is None:
            return []
        return [
            f"rounding envelope: its first runs came after PyTorch's run, every tensor near its tolerance kept "
            f"until then, because {self.why_not}"
        ]

    def release(self) -> None:
        """Let the copies go (the runs after the main one need their memory)."""
        self.runs = None

    def finish(self, decide) -> None:
        """The later stages for the tensors still open, from the start: ``decide`` is
        :func:`parity.judge.envelope.judge_envelope`."""
        self.release()
        if self.given:
            self.reruns.rerun_for(decide, self.given, dtype=np.float64)
        if self.kept:
            self.reruns.rerun_for(decide, self.kept, dtype=np.float64, spreads=self.spreads, start=1)
