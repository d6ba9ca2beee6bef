"""Optimizers: a ``torch.optim`` optimizer's MindSpore counterpart, computing PyTorch's formulas
with MindSpore ops.

MindSpore facts (mindspore 2.10, measured with a BatchNorm net, see ``optim.toml``):

* ``nn.Adam`` and ``mindspore.experimental.optim.Adam`` add ``eps`` to the uncorrected
  ``sqrt(v)`` and fold the bias correction into the step size; PyTorch adds ``eps`` to the
  corrected ``sqrt(v) / sqrt(1 - beta2^t)``. For a gradient of 1e-6 the first step moves a
  parameter 7.6e-4 in MindSpore and 9.9e-4 in PyTorch (lr 1e-3): neither is a translation.
* ``nn.Adam``'s ``weight_decay`` skips every parameter whose name holds ``gamma`` or ``beta``.
* ``nn.AdamWeightDecay`` has no bias correction.

So every optimizer here is written out: ``SGD`` (momentum, dampening, nesterov, weight decay,
maximize), ``Adam``/``AdamW`` (amsgrad, maximize), ``RMSprop`` (centered, momentum) and
``Adagrad`` (lr_decay, initial accumulator), each with PyTorch's single-tensor formulas in
PyTorch's order of operations, per parameter group. The step counts and bias corrections are
Python floats, as PyTorch computes them. The state of each parameter is exposed under
PyTorch's names (``exp_avg``, ``momentum_buffer``...), so that training parity can compare it.
"""

from __future__ import annotations

import math
from typing import Dict, List

from mindspore import ops

from ..errors import ParityUnsupported

__all__ = ["TorchFormulaOptimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "translate_optimizer",
           "translated_optimizers"]


class TorchFormulaOptimizer:
    """Built like its ``torch.optim`` class: ``Adam(params, lr=1e-3, weight_decay=1e-5)``, where
    ``params`` are MindSpore Parameters or groups (``[{"params": [...], "lr": 0.1}, ...]``), with
    PyTorch's defaults. ``optimizer(grads)`` updates them (grads in the order of ``parameters``)."""

    torch_class = ""
    defaults: Dict[str, object] = {}

    def __init__(self, params, **hyper):
        unknown = sorted(set(hyper) - set(self.defaults))
        if unknown:
            raise ParityUnsupported(f"{type(self).__name__} has no argument {unknown}; it takes "
                                    f"{sorted(self.defaults)}")
        params = list(params)
        groups = params if params and isinstance(params[0], dict) else [{"params": params}]
        self.param_groups: List[dict] = [{**self.defaults, **hyper, **g, "params": list(g["params"])}
                                         for g in groups]
        self.parameters = [p for g in self.param_groups for p in g["params"]]
        self.state: Dict[int, Dict[str, object]] = {id(p): {} for p in self.parameters}

    def __call__(self, grads) -> None:
        grads = list(grads)
        if len(grads) != len(self.parameters):
            raise ParityUnsupported(f"{type(self).__name__} got {len(grads)} gradients for "
                                    f"{len(self.parameters)} parameters")
        at = 0
        for group in self.param_groups:
            for param in group["params"]:
                grad = grads[at]
                at += 1
                if group.get("maximize", False):
                    grad = -grad
                self._update(param, grad, self.state[id(param)], group)

    def _update(self, param, grad, state: dict, group: dict) -> None:
        raise NotImplementedError

    def state_arrays(self, param) -> Dict[str, object]:
        """The state of ``param`` under PyTorch's names, as numpy (step counts as float32 scalars)."""
        import numpy as np

        found = {}
        for name, value in self.state[id(param)].items():
            found[name] = np.float32(value) if isinstance(value, (int, float)) else value.asnumpy().copy()
        return found

    def lr_of(self, param) -> float:
        for group in self.param_groups:
            if any(p is param for p in group["params"]):
                return float(group["lr"])
        raise KeyError(param.name)


def _decayed(grad, param, weight_decay: float):
    """``grad.add(param, alpha=weight_decay)``."""
    return grad + param * weight_decay if weight_decay else grad


class SGD(TorchFormulaOptimizer):
    """``torch.optim.SGD``: ``buf = momentum * buf + (1 - dampening) * g`` (``g`` itself at the first
    step), nesterov ``g + momentum * buf``, ``p -= lr * g``."""

    torch_class = "torch.optim.SGD"
    defaults = {"lr": 1e-3, "momentum": 0.0, "dampening": 0.0, "nesterov": False, "weight_decay": 0.0,
                "maximize": False}

    def _update(self, param, grad, state, group):
        grad = _decayed(grad, param, group["weight_decay"])
        momentum = group["momentum"]
        if momentum:
            if "momentum_buffer" not in state:
                buf = grad  # never modified in place: PyTorch's clone
            else:
                buf = state["momentum_buffer"] * momentum + grad * (1.0 - group["dampening"])
            state["momentum_buffer"] = buf
            grad = grad + buf * momentum if group["nesterov"] else buf
        ops.assign(param, param - grad * float(group["lr"]))


class Adam(TorchFormulaOptimizer):
    """``torch.optim.Adam`` and ``AdamW`` (``decoupled_weight_decay``): moments from zero,
    ``denom = sqrt(v) / sqrt(1 - beta2^t) + eps``, ``p -= lr / (1 - beta1^t) * m / denom``."""

    torch_class = "torch.optim.Adam"
    defaults = {"lr": 1e-3, "betas": (0.9, 0.999), "eps": 1e-8, "weight_decay": 0.0, "amsgrad": False,
                "maximize": False, "decoupled_weight_decay": False}

    def _update(self, param, grad, state, group):
        if not state:
            state.update(step=0.0, exp_avg=ops.zeros_like(param), exp_avg_sq=ops.zeros_like(param))
            if group["amsgrad"]:
                state["max_exp_avg_sq"] = ops.zeros_like(param)
        lr, (beta1, beta2), eps, weight_decay = float(group["lr"]), group["betas"], group["eps"], group["weight_decay"]
        state["step"] += 1.0
        param_value = param
        if group["decoupled_weight_decay"]:
            param_value = param * (1.0 - lr * weight_decay)
        else:
            grad = _decayed(grad, param, weight_decay)
        exp_avg = state["exp_avg"] + (grad - state["exp_avg"]) * (1.0 - beta1)
        exp_avg_sq = state["exp_avg_sq"] * beta2 + grad * grad * (1.0 - beta2)
        state["exp_avg"], state["exp_avg_sq"] = exp_avg, exp_avg_sq
        step = state["step"]
        step_size = lr / (1.0 - beta1 ** step)
        correction2_sqrt = math.sqrt(1.0 - beta2 ** step)
        second = exp_avg_sq
        if group["amsgrad"]:
            second = state["max_exp_avg_sq"] = ops.maximum(state["max_exp_avg_sq"], exp_avg_sq)
        denom = ops.sqrt(second) / correction2_sqrt + eps
        ops.assign(param, param_value - (exp_avg / denom) * step_size)


class RMSprop(TorchFormulaOptimizer):
    """``torch.optim.RMSprop``: ``v = alpha * v + (1 - alpha) * g^2`` from zero, ``avg = sqrt(v) + eps``
    (centered: ``sqrt(v - mean^2) + eps``), momentum on ``g / avg``."""

    torch_class = "torch.optim.RMSprop"
    defaults = {"lr": 1e-2, "alpha": 0.99, "eps": 1e-8, "weight_decay": 0.0, "momentum": 0.0, "centered": False,
                "maximize": False}

    def _update(self, param, grad, state, group):
        alpha, eps, momentum = group["alpha"], group["eps"], group["momentum"]
        if not state:
            state.update(step=0.0, square_avg=ops.zeros_like(param))
            if momentum > 0:
                state["momentum_buffer"] = ops.zeros_like(param)
            if group["centered"]:
                state["grad_avg"] = ops.zeros_like(param)
        state["step"] += 1.0
        grad = _decayed(grad, param, group["weight_decay"])
        square_avg = state["square_avg"] = state["square_avg"] * alpha + grad * grad * (1.0 - alpha)
        if group["centered"]:
            grad_avg = state["grad_avg"] = state["grad_avg"] + (grad - state["grad_avg"]) * (1.0 - alpha)
            avg = ops.sqrt(square_avg - grad_avg * grad_avg) + eps
        else:
            avg = ops.sqrt(square_avg) + eps
        lr = float(group["lr"])
        if momentum > 0:
            buf = state["momentum_buffer"] = state["momentum_buffer"] * momentum + grad / avg
            ops.assign(param, param - buf * lr)
        else:
            ops.assign(param, param - (grad / avg) * lr)


class Adagrad(TorchFormulaOptimizer):
    """``torch.optim.Adagrad``: ``sum += g^2`` from ``initial_accumulator_value``,
    ``p -= lr / (1 + (t - 1) * lr_decay) * g / (sqrt(sum) + eps)``."""

    torch_class = "torch.optim.Adagrad"
    defaults = {"lr": 1e-2, "lr_decay": 0.0, "weight_decay": 0.0, "initial_accumulator_value": 0.0, "eps": 1e-10,
                "maximize": False}

    def _update(self, param, grad, state, group):
        if not state:
            state.update(step=0.0, sum=ops.full_like(param, group["initial_accumulator_value"]))
        state["step"] += 1.0
        grad = _decayed(grad, param, group["weight_decay"])
        clr = float(group["lr"]) / (1.0 + (state["step"] - 1.0) * group["lr_decay"])
        total = state["sum"] = state["sum"] + grad * grad
        ops.assign(param, param - (grad / (ops.sqrt(total) + group["eps"])) * clr)


class AdamW(Adam):
    """``torch.optim.AdamW``: :class:`Adam` with decoupled weight decay, 0.01 by default."""

    torch_class = "torch.optim.AdamW"
    defaults = {**Adam.defaults, "weight_decay": 1e-2, "decoupled_weight_decay": True}


# PyTorch class name -> (translation, the group keys it reads).
_TRANSLATIONS = {
    "SGD": (SGD, ("lr", "momentum", "dampening", "nesterov", "weight_decay", "maximize")),
    "Adam": (Adam, ("lr", "betas", "eps", "weight_decay", "amsgrad", "maximize")),
    "AdamW": (AdamW, ("lr", "betas", "eps", "weight_decay", "amsgrad", "maximize")),
    "RMSprop": (RMSprop, ("lr", "alpha", "eps", "weight_decay", "momentum", "centered", "maximize")),
    "Adagrad": (Adagrad, ("lr", "lr_decay", "eps", "weight_decay", "initial_accumulator_value", "maximize")),
}


def translated_optimizers() -> List[str]:
    """The ``torch.optim`` classes :func:`translate_optimizer` translates."""
    return sorted(f"torch.optim.{name}" for name in _TRANSLATIONS)


def _number(value):
    return float(value.item()) if hasattr(value, "item") else value


def translate_optimizer(torch_optimizer, ms_params_of) -> TorchFormulaOptimizer:
    """The MindSpore counterpart of ``torch_optimizer``: the same class of formulas, the same
    groups with their own hyperparameters. ``ms_params_of(torch_param)`` gives the MindSpore
    Parameter(s) a PyTorch parameter is paired with."""
    import torch

    kind = type(torch_optimizer)
    name = kind.__name__
    if name not in _TRANSLATIONS or getattr(torch.optim, name, None) is not kind:
        raise ParityUnsupported(f"no MindSpore translation of {kind.__module__}.{kind.__qualname__}; translated: "
                                f"{', '.join(translated_optimizers())}. Pass optimizer=(ms_factory, torch_factory) "
                                "to compare your own MindSpore optimizer")
    klass, keys = _TRANSLATIONS[name]
    groups, placed = [], {}
    for index, group in enumerate(torch_optimizer.param_groups):
        missing = [k for k in keys if k not in group]
        if missing:
            raise ParityUnsupported(f"torch.optim.{name} group {index} lacks {missing}: not a PyTorch version "
                                    "this translation knows")
        hyper = {k: (tuple(_number(b) for b in group[k]) if k == "betas" else _number(group[k])) for k in keys}
        if issubclass(klass, Adam):
            hyper["decoupled_weight_decay"] = bool(group.get("decoupled_weight_decay", name == "AdamW"))
        params = []
        for torch_param in group["params"]:
            for ms_param in ms_params_of(torch_param):
                if id(ms_param) in placed and placed[id(ms_param)] != index:
                    raise ParityUnsupported(f"MindSpore parameter {ms_param.name!r} is made of PyTorch parameters "
                                            f"in different groups ({placed[id(ms_param)]} and {index})")
                if id(ms_param) not in placed:
                    placed[id(ms_param)] = index
                    params.append(ms_param)
        groups.append({**hyper, "params": params})
    return klass(groups)
