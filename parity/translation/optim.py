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
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, List, Optional, Tuple, Union

from mindspore import Parameter, Tensor, jit, mutable, ops
from mindspore.common import dtype as mstype

from ..errors import ParityUnsupported

if TYPE_CHECKING:
    import torch

__all__ = [
    "TorchFormulaOptimizer",
    "SGD",
    "Adam",
    "AdamW",
    "RMSprop",
    "Adagrad",
    "translate_optimizer",
    "translated_optimizers",
]


class TorchFormulaOptimizer:
    """Built like its ``torch.optim`` class: ``Adam(params, lr=1e-3, weight_decay=1e-5)``, where
    ``params`` are MindSpore Parameters or groups (``[{"params": [...], "lr": 0.1}, ...]``), with
    PyTorch's defaults. ``optimizer(grads)`` updates them (grads in the order of ``parameters``).

    Each class splits a step in two: ``_scalars`` computes, in Python floats as PyTorch does, every
    number the step multiplies by (step counts, bias corrections, ``1 - beta``...), and ``_kernel``
    is the tensor arithmetic of one parameter. ``use_graph()`` makes the kernels of a group run as one
    ``mindspore.jit`` graph, the scalars passed in as float32 tensors: the same values MindSpore
    makes of the Python floats when it runs eagerly, so both modes compute the same numbers."""

    torch_class = ""
    defaults: Dict[str, object] = {}
    state_keys: Tuple[str, ...] = ()

    def __init__(self, params: Iterable[Union[Parameter, Dict[str, Any]]], **hyper: Any):
        unknown = sorted(set(hyper) - set(self.defaults))
        if unknown:
            raise ParityUnsupported(
                f"{type(self).__name__} has no argument {unknown}; it takes {sorted(self.defaults)}"
            )
        params = list(params)
        groups = params if params and isinstance(params[0], dict) else [{"params": params}]
        self.param_groups: List[dict] = [{**self.defaults, **hyper, **g, "params": list(g["params"])} for g in groups]
        self.parameters = [p for g in self.param_groups for p in g["params"]]
        self.state: Dict[int, Dict[str, Any]] = {id(p): {} for p in self.parameters}
        self._compiled: Optional[dict] = None

    def use_graph(self) -> None:
        """Run every later step as compiled graphs (MindSpore GRAPH mode), one per group."""
        self._compiled = {}

    def __call__(self, grads: Iterable[Tensor]) -> None:
        grads = list(grads)
        if len(grads) != len(self.parameters):
            raise ParityUnsupported(
                f"{type(self).__name__} got {len(grads)} gradients for {len(self.parameters)} parameters"
            )
        at = 0
        for group in self.param_groups:
            params = group["params"]
            part = grads[at : at + len(params)]
            at += len(params)
            if params:
                self._group_step(group, params, [-g if group.get("maximize", False) else g for g in part])

    def _group_step(self, group: dict, params, grads) -> None:
        states = [self.state[id(p)] for p in params]
        for param, state in zip(params, states):
            if not state:
                self._init(param, state, group)
            if "step" in state:
                state["step"] += 1.0
        flags, scalars = self._scalars(group, states[0])
        held = tuple(tuple(state[k] for k in self.state_keys if k in state) for state in states)
        keys = self._written_keys(group, states[0])
        if self._compiled is None:
            kernel = self._kernel(flags)
            updated = [kernel(p.value(), g, h, scalars) for p, g, h in zip(params, grads, held)]
        else:
            run = self._compiled.get(flags)
            if run is None:
                run = self._compiled[flags] = _group_graph(self._kernel(flags))
            values, tensors = run(
                mutable(tuple(p.value() for p in params)),
                mutable(tuple(grads)),
                mutable(held) if any(held) else held,  # no state yet: nothing to vary
                mutable(tuple(Tensor(s, mstype.float32) for s in scalars)),
            )
            updated = list(zip(values, tensors))
        for param, state, (value, tensors) in zip(params, states, updated):
            ops.assign(param, value)
            state.update(zip(keys, tensors))

    def _init(self, param, state: dict, group: dict) -> None:
        """The state of ``param`` before its first step."""

    def _written_keys(self, group: dict, state: dict) -> Tuple[str, ...]:
        """The state tensors a step writes, in the kernel's order (it reads those already held)."""
        return tuple(k for k in self.state_keys if k in state)

    def _scalars(self, group: dict, state: dict):
        """(flags: Python constants that shape the kernel, scalars: the step's numbers)."""
        raise NotImplementedError

    def _kernel(self, flags):
        """``kernel(param, grad, state_tensors, scalars) -> (new value, new state tensors)``."""
        raise NotImplementedError

    def state_arrays(self, param: Parameter, copy: bool = True) -> Dict[str, object]:
        """The state of ``param`` under PyTorch's names, as numpy (step counts as float32 scalars);
        ``copy=False``: views of the tensors held now (a step replaces them, the views keep them)."""
        import numpy as np

        found = {}
        for name, value in self.state[id(param)].items():
            found[name] = (
                np.float32(value)
                if isinstance(value, (int, float))
                else value.asnumpy().copy()
                if copy
                else value.asnumpy()
            )
        return found

    def lr_of(self, param: Parameter) -> float:
        for group in self.param_groups:
            if any(p is param for p in group["params"]):
                return float(group["lr"])
        raise KeyError(param.name)


def _group_graph(kernel):
    """``kernel`` over every parameter of a group, compiled as one graph."""

    def run(values, grads, held, scalars):
        new_values, new_held = (), ()
        for i in range(len(values)):
            value, tensors = kernel(values[i], grads[i], held[i], scalars)
            new_values = new_values + (value,)  # type: ignore[assignment]  # the tuple grows; MindSpore compiles this source as written
            new_held = new_held + (tensors,)  # type: ignore[assignment]  # the tuple grows; MindSpore compiles this source as written
        return new_values, new_held

    return jit(run)


class SGD(TorchFormulaOptimizer):
    """``torch.optim.SGD``: ``buf = momentum * buf + (1 - dampening) * g`` (``g`` itself at the first
    step), nesterov ``g + momentum * buf``, ``p -= lr * g``."""

    torch_class = "torch.optim.SGD"
    defaults = {
        "lr": 1e-3,
        "momentum": 0.0,
        "dampening": 0.0,
        "nesterov": False,
        "weight_decay": 0.0,
        "maximize": False,
    }
    state_keys = ("momentum_buffer",)

    def _scalars(self, group, state):
        momentum = group["momentum"]
        first = bool(momentum) and "momentum_buffer" not in state
        flags = (bool(group["weight_decay"]), bool(momentum), first, bool(group["nesterov"]))
        return flags, (group["weight_decay"], momentum, 1.0 - group["dampening"], float(group["lr"]))

    def _kernel(self, flags):
        decays, has_momentum, first, nesterov = flags

        def kernel(param, grad, held, scalars):
            weight_decay, momentum, undamped, lr = scalars
            if decays:
                grad = grad + param * weight_decay
            tensors = ()
            if has_momentum:
                buf = grad if first else held[0] * momentum + grad * undamped  # first: PyTorch's clone
                tensors = (buf,)  # type: ignore[assignment]  # the tuple grows; MindSpore compiles this source as written
                grad = grad + buf * momentum if nesterov else buf
            return param - grad * lr, tensors

        return kernel

    def _written_keys(self, group, state):
        return ("momentum_buffer",) if group["momentum"] else ()


class Adam(TorchFormulaOptimizer):
    """``torch.optim.Adam`` and ``AdamW`` (``decoupled_weight_decay``): moments from zero,
    ``denom = sqrt(v) / sqrt(1 - beta2^t) + eps``, ``p -= lr / (1 - beta1^t) * m / denom``."""

    torch_class = "torch.optim.Adam"
    defaults = {
        "lr": 1e-3,
        "betas": (0.9, 0.999),
        "eps": 1e-8,
        "weight_decay": 0.0,
        "amsgrad": False,
        "maximize": False,
        "decoupled_weight_decay": False,
    }
    state_keys = ("exp_avg", "exp_avg_sq", "max_exp_avg_sq")

    def _init(self, param, state, group):
        state.update(step=0.0, exp_avg=ops.zeros_like(param), exp_avg_sq=ops.zeros_like(param))
        if group["amsgrad"]:
            state["max_exp_avg_sq"] = ops.zeros_like(param)

    def _scalars(self, group, state):
        lr, (beta1, beta2), weight_decay, step = (
            float(group["lr"]),
            group["betas"],
            group["weight_decay"],
            state["step"],
        )
        flags = (bool(group["decoupled_weight_decay"]), bool(weight_decay), bool(group["amsgrad"]))
        return flags, (
            1.0 - lr * weight_decay,
            weight_decay,
            1.0 - beta1,
            beta2,
            1.0 - beta2,
            math.sqrt(1.0 - beta2**step),
            group["eps"],
            lr / (1.0 - beta1**step),
        )

    def _kernel(self, flags):
        decoupled, decays, amsgrad = flags

        def kernel(param, grad, held, scalars):
            kept, weight_decay, one_minus_beta1, beta2, one_minus_beta2, correction2_sqrt, eps, step_size = scalars
            if decoupled:
                value = param * kept
            else:
                value = param
                if decays:
                    grad = grad + param * weight_decay
            exp_avg = held[0] + (grad - held[0]) * one_minus_beta1
            exp_avg_sq = held[1] * beta2 + grad * grad * one_minus_beta2
            tensors = (exp_avg, exp_avg_sq)
            second = exp_avg_sq
            if amsgrad:
                second = ops.maximum(held[2], exp_avg_sq)
                tensors = (exp_avg, exp_avg_sq, second)  # type: ignore[assignment]  # the tuple grows; MindSpore compiles this source as written
            denom = ops.sqrt(second) / correction2_sqrt + eps
            return value - (exp_avg / denom) * step_size, tensors

        return kernel


class RMSprop(TorchFormulaOptimizer):
    """``torch.optim.RMSprop``: ``v = alpha * v + (1 - alpha) * g^2`` from zero, ``avg = sqrt(v) + eps``
    (centered: ``sqrt(v - mean^2) + eps``), momentum on ``g / avg``."""

    torch_class = "torch.optim.RMSprop"
    defaults = {
        "lr": 1e-2,
        "alpha": 0.99,
        "eps": 1e-8,
        "weight_decay": 0.0,
        "momentum": 0.0,
        "centered": False,
        "maximize": False,
    }
    state_keys = ("square_avg", "grad_avg", "momentum_buffer")

    def _init(self, param, state, group):
        state.update(step=0.0, square_avg=ops.zeros_like(param))
        if group["momentum"] > 0:
            state["momentum_buffer"] = ops.zeros_like(param)
        if group["centered"]:
            state["grad_avg"] = ops.zeros_like(param)

    def _scalars(self, group, state):
        alpha = group["alpha"]
        flags = (bool(group["weight_decay"]), bool(group["centered"]), group["momentum"] > 0)
        return flags, (group["weight_decay"], alpha, 1.0 - alpha, group["eps"], group["momentum"], float(group["lr"]))

    def _kernel(self, flags):
        decays, centered, has_momentum = flags

        def kernel(param, grad, held, scalars):
            weight_decay, alpha, one_minus_alpha, eps, momentum, lr = scalars
            if decays:
                grad = grad + param * weight_decay
            square_avg = held[0] * alpha + grad * grad * one_minus_alpha
            tensors = (square_avg,)
            if centered:
                grad_avg = held[1] + (grad - held[1]) * one_minus_alpha
                tensors = (square_avg, grad_avg)  # type: ignore[assignment]  # the tuple grows; MindSpore compiles this source as written
                avg = ops.sqrt(square_avg - grad_avg * grad_avg) + eps
            else:
                avg = ops.sqrt(square_avg) + eps
            if has_momentum:
                buf = held[len(tensors)] * momentum + grad / avg
                return param - buf * lr, tensors + (buf,)
            return param - (grad / avg) * lr, tensors

        return kernel


class Adagrad(TorchFormulaOptimizer):
    """``torch.optim.Adagrad``: ``sum += g^2`` from ``initial_accumulator_value``,
    ``p -= lr / (1 + (t - 1) * lr_decay) * g / (sqrt(sum) + eps)``."""

    torch_class = "torch.optim.Adagrad"
    defaults = {
        "lr": 1e-2,
        "lr_decay": 0.0,
        "weight_decay": 0.0,
        "initial_accumulator_value": 0.0,
        "eps": 1e-10,
        "maximize": False,
    }
    state_keys = ("sum",)

    def _init(self, param, state, group):
        state.update(step=0.0, sum=ops.full_like(param, group["initial_accumulator_value"]))

    def _scalars(self, group, state):
        clr = float(group["lr"]) / (1.0 + (state["step"] - 1.0) * group["lr_decay"])
        return (bool(group["weight_decay"]),), (group["weight_decay"], group["eps"], clr)

    def _kernel(self, flags):
        (decays,) = flags

        def kernel(param, grad, held, scalars):
            weight_decay, eps, clr = scalars
            if decays:
                grad = grad + param * weight_decay
            total = held[0] + grad * grad
            return param - (grad / (ops.sqrt(total) + eps)) * clr, (total,)

        return kernel


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


def translate_optimizer(
    torch_optimizer: torch.optim.Optimizer, ms_params_of: Callable[[torch.nn.Parameter], Iterable[Parameter]]
) -> TorchFormulaOptimizer:
    """The MindSpore counterpart of ``torch_optimizer``: the same class of formulas, the same
    groups with their own hyperparameters. ``ms_params_of(torch_param)`` gives the MindSpore
    Parameter(s) a PyTorch parameter is paired with."""
    import torch

    kind = type(torch_optimizer)
    name = kind.__name__
    if name not in _TRANSLATIONS or getattr(torch.optim, name, None) is not kind:
        raise ParityUnsupported(
            f"no MindSpore translation of {kind.__module__}.{kind.__qualname__}; translated: "
            f"{', '.join(translated_optimizers())}. Pass optimizer=(ms_factory, torch_factory) "
            "to compare your own MindSpore optimizer"
        )
    klass, keys = _TRANSLATIONS[name]
    groups: List[Dict[str, Any]] = []
    placed: Dict[int, int] = {}  # id(MindSpore parameter) -> its group
    for index, group in enumerate(torch_optimizer.param_groups):
        missing = [k for k in keys if k not in group]
        if missing:
            raise ParityUnsupported(
                f"torch.optim.{name} group {index} lacks {missing}: not a PyTorch version this translation knows"
            )
        hyper = {k: (tuple(_number(b) for b in group[k]) if k == "betas" else _number(group[k])) for k in keys}
        if issubclass(klass, Adam):
            hyper["decoupled_weight_decay"] = bool(group.get("decoupled_weight_decay", name == "AdamW"))
        params = []
        for torch_param in group["params"]:
            for ms_param in ms_params_of(torch_param):
                if id(ms_param) in placed and placed[id(ms_param)] != index:
                    raise ParityUnsupported(
                        f"MindSpore parameter {ms_param.name!r} is made of PyTorch parameters "
                        f"in different groups ({placed[id(ms_param)]} and {index})"
                    )
                if id(ms_param) not in placed:
                    placed[id(ms_param)] = index
                    params.append(ms_param)
        groups.append({**hyper, "params": params})
    return klass(groups)
