"""The optimizers, schedulers and losses of both sides: a PyTorch factory and its translation, or
a pair the caller gives; the learning-rate schedule driven from PyTorch's scheduler."""

from __future__ import annotations

from typing import Any, List

import torch

from ...backends import framework_of
from ...backends import mindspore as msb
from ...errors import ParityUsageError
from ...registry.optimizers import lint_optimizer
from ...translation import translate
from ...translation.optim import translate_optimizer

__all__ = ["Optimizers", "Schedulers", "losses_of", "type_name", "lint_ms_optimizer"]


def losses_of(loss, device: str):
    """(MindSpore loss, PyTorch loss, description) from a PyTorch loss or a pair."""
    if isinstance(loss, (tuple, list)):
        if len(loss) != 2 or framework_of(loss[1]) != "torch" or not callable(loss[0]):
            raise ParityUsageError(
                "check_training(): loss=(ms_loss, torch_loss) takes a MindSpore loss Cell (or "
                "function) and a PyTorch loss Module"
            )
        return loss[0], loss[1], f"{type_name(loss[0])} <-> {type_name(loss[1])} (given pair)"
    if framework_of(loss) != "torch":
        raise ParityUsageError(
            f"check_training(): loss must be a PyTorch loss Module (translated to MindSpore) or "
            f"a pair (ms_loss, torch_loss), got {type_name(loss)}"
        )
    ms_loss = translate(loss, device=device)
    return ms_loss, loss, f"{type_name(ms_loss)} <-> {type_name(loss)} (translated)"


def type_name(obj) -> str:
    klass = type(obj)
    return (
        f"{klass.__module__}.{klass.__qualname__}"
        if klass.__module__.split(".")[0] not in ("torch", "mindspore")
        else f"{klass.__module__.split('.')[0]}.{'nn.' if '.nn' in klass.__module__ else ''}"
        f"{'optim.' if '.optim' in klass.__module__ else ''}{klass.__qualname__}"
    )


class Optimizers:
    """The PyTorch optimizer factory and the way to build its MindSpore counterpart."""

    def __init__(self, optimizer, ms_cell, torch_module):
        self.pair = isinstance(optimizer, (tuple, list))
        if self.pair and (len(optimizer) != 2 or not all(callable(f) for f in optimizer)):
            raise ParityUsageError(
                "check_training(): optimizer=(ms_factory, torch_factory) takes two functions of the parameters"
            )
        if not self.pair and not callable(optimizer):
            raise ParityUsageError(
                "check_training(): optimizer must be a function of the parameters returning a "
                "torch.optim optimizer (lambda params: torch.optim.Adam(params, lr=1e-3)), or a "
                f"pair (ms_factory, torch_factory); got {type(optimizer).__qualname__}"
            )
        self.ms_factory, self.torch_factory = optimizer if self.pair else (None, optimizer)
        self.ms_cell, self.torch_module = ms_cell, torch_module

    def torch(self, module=None):
        """PyTorch's optimizer over ``module``'s parameters (the checked module's by default)."""
        built = self.torch_factory((module if module is not None else self.torch_module).parameters())
        if not isinstance(built, torch.optim.Optimizer):
            raise ParityUsageError(
                f"check_training(): the PyTorch optimizer factory returned {type_name(built)}, not a "
                "torch.optim.Optimizer"
            )
        return built

    def mindspore(self, torch_optimizer, wmap):
        if self.pair:
            built = self.ms_factory(self.ms_cell.trainable_params())
            if not hasattr(built, "parameters") or not callable(built):
                raise ParityUsageError(
                    f"check_training(): the MindSpore optimizer factory returned {type_name(built)}, "
                    "not a mindspore.nn.Optimizer"
                )
            return built, f"{type_name(built)} <-> {type_name(torch_optimizer)} (given pair)"
        by_torch = {}
        for pair in wmap.trainable_pairs():
            by_torch.setdefault(pair.torch, []).append(pair.ms)
        names = {id(p): n for n, p in self.torch_module.named_parameters()}

        def ms_params_of(torch_param):
            return [msb.parameter(self.ms_cell, n) for n in by_torch.get(names.get(id(torch_param)), [])]

        built = translate_optimizer(torch_optimizer, ms_params_of)
        return built, f"{type_name(torch_optimizer)} (translated: {type(built).__module__}.{type(built).__name__})"


def lint_ms_optimizer(ms_opt, acknowledge, device) -> List[str]:
    """The registry's findings on the built MindSpore optimizer, before any step (see run_training)."""
    findings = [str(issue) for issue in lint_optimizer(ms_opt, acknowledge or (), device=device)]
    if findings and acknowledge is not None:
        raise ParityUsageError(
            "the MindSpore optimizer is known to train differently from PyTorch's, before "
            "any step:\n  " + "\n  ".join(findings)
        )
    return findings


class Schedulers:
    """The learning-rate schedule of both sides. A PyTorch scheduler factory drives both: the
    PyTorch optimizer's own instance, and, for a translated optimizer, a second instance over a
    shadow PyTorch optimizer with the same groups, whose learning rates are copied into the
    translation after every step. A pair ``(ms_factory, torch_factory)`` gives each side its own
    (``ms_factory(ms_optimizer)`` returns something with ``step()``, or None where the MindSpore
    optimizer schedules itself, as with ``learning_rate=nn.dynamic_lr...``)."""

    def __init__(self, spec, given_optimizer: bool):
        self.pair = isinstance(spec, (tuple, list))
        if self.pair and (len(spec) != 2 or not callable(spec[1]) or not (spec[0] is None or callable(spec[0]))):
            raise ParityUsageError(
                "check_training(): lr_scheduler=(ms_factory, torch_factory) takes two functions of "
                "the optimizer (ms_factory may be None)"
            )
        if not self.pair and spec is not None and not callable(spec):
            raise ParityUsageError(
                "check_training(): lr_scheduler must be a function of the optimizer returning a "
                "torch.optim.lr_scheduler scheduler (lambda opt: StepLR(opt, step_size=2)), or a "
                f"pair (ms_factory, torch_factory); got {type(spec).__qualname__}"
            )
        if spec is not None and not self.pair and given_optimizer:
            raise ParityUsageError(
                "check_training(): a PyTorch scheduler drives a translated optimizer only; with "
                "optimizer=(ms_factory, torch_factory) give lr_scheduler=(ms_factory, "
                "torch_factory), ms_factory None where the MindSpore optimizer schedules itself"
            )
        self.ms_factory: Any
        self.torch_factory: Any
        self.ms_factory, self.torch_factory = spec if self.pair else (None, spec)
        self.driven = spec is not None and not self.pair

    def torch(self, optimizer):
        if self.torch_factory is None:
            return None
        built = self.torch_factory(optimizer)
        if not isinstance(built, torch.optim.lr_scheduler.LRScheduler) or isinstance(
            built, torch.optim.lr_scheduler.ReduceLROnPlateau
        ):
            raise ParityUsageError(
                f"check_training(): the PyTorch scheduler factory returned {type_name(built)}, not a "
                "torch.optim.lr_scheduler scheduler stepped once per step (ReduceLROnPlateau, "
                "which needs a metric, is not one)"
            )
        return built

    def shadow(self, torch_optimizer):
        """A PyTorch optimizer of the same class and groups over stand-in parameters."""
        if not self.driven:
            return None
        groups = [
            {**{k: v for k, v in g.items() if k != "params"}, "params": [torch.zeros(1, requires_grad=True)]}
            for g in torch_optimizer.param_groups
        ]
        return type(torch_optimizer)(groups)

    def mindspore(self, ms_optimizer, shadow):
        if self.driven:
            return _Driven(ms_optimizer, self.torch(shadow))
        if self.ms_factory is None:
            return None
        built = self.ms_factory(ms_optimizer)
        if not callable(getattr(built, "step", None)):
            raise ParityUsageError(
                f"check_training(): the MindSpore scheduler factory returned {type_name(built)}, which has no step()"
            )
        return built

    @staticmethod
    def label(torch_sched, ms_sched) -> str:
        if torch_sched is None:
            return ""
        how = (
            "driving both"
            if isinstance(ms_sched, _Driven)
            else f"MindSpore {type_name(ms_sched)}"
            if ms_sched is not None
            else "MindSpore's own schedule"
        )
        return f"; lr scheduler {type_name(torch_sched)} ({how})"


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
