"""Weight normalisation: a layer whose ``weight`` is ``g * v / ||v||``, recomputed at every call from
two parameters, in both of PyTorch's forms:

* ``torch.nn.utils.parametrizations.weight_norm`` (wav2vec2's and HuBERT's positional convolution):
  the layer's class becomes ``ParametrizedConv1d``, its parameters
  ``parametrizations.weight.original0`` (g) and ``.original1`` (v);
* ``torch.nn.utils.weight_norm`` (deprecated): the class stays, a forward pre-hook recomputes
  ``weight`` from ``weight_g`` and ``weight_v``.

MindSpore has no weight normalisation. The translation builds the layer as usual (from a copy with
the weight computed, so every argument converts as for the plain layer), replaces its ``weight``
Parameter by ``g`` and ``v`` under PyTorch's names, and computes the weight before each call, so
the gradients reach ``g`` and ``v`` as in PyTorch. The norm is taken over every dimension but
``dim`` (all of them for ``dim=None``), as ``torch._weight_norm`` takes it. Only ``weight``
parametrized by weight norm alone translates; any other parametrization is refused.
"""

from __future__ import annotations

import importlib
from collections import OrderedDict
from typing import Any, Optional, Tuple, Type

import mindspore as ms
import torch
from mindspore import nn, ops

from .table import Context, translates_when

__all__ = ["WeightNormOriginals"]


def _parametrized(module) -> bool:
    return torch.nn.utils.parametrize.is_parametrized(module)


# the module, which torch.nn.utils's function of the same name shadows as an attribute
_HOOK_CLASS = importlib.import_module("torch.nn.utils.weight_norm").WeightNorm


def _hook(module):
    """The deprecated ``weight_norm``'s pre-hook on ``module``, or None."""
    found = [h for h in module._forward_pre_hooks.values() if isinstance(h, _HOOK_CLASS)]
    return found[0] if found else None


class WeightNormOriginals(nn.Cell):
    """``parametrizations.weight``: ``original0`` (g) and ``original1`` (v) under PyTorch's names."""

    def __init__(self, g: ms.Parameter, v: ms.Parameter) -> None:
        super().__init__()
        self.original0, self.original1 = g, v


class _Parametrizations(nn.Cell):
    def __init__(self, originals: WeightNormOriginals):
        super().__init__()
        self.weight = originals


def _norm_except(v, dim):
    if dim is None:
        return ops.sqrt(ops.sum(v * v))
    axes = tuple(i for i in range(v.ndim) if i != dim)
    return ops.sqrt(ops.sum(v * v, axes, keepdim=True))


class _WeightNormed:
    """Mixed into the translated layer's class: sets ``weight`` = g * v / ||v|| before its construct.
    PYNATIVE mode only (``parity_pynative_only``, which ``check`` reads before running in GRAPH mode)."""

    parity_pynative_only = (
        "sets its weight, computed from g and v, as a Python attribute before each call, "
        "which MindSpore's GRAPH compiler cannot compile"
    )
    # set on the layer by weight_norm() below: g and v (the hook's weight_g and weight_v, or the
    # parametrization's originals) and where the weight's norm is taken
    weight_g: ms.Parameter
    weight_v: ms.Parameter
    parametrizations: _Parametrizations
    _weight_norm_hooked: bool
    _weight_norm_dim: Optional[int]
    _weight_norm_shape: Tuple[int, ...]

    def construct(self, *args: Any, **kwargs: Any) -> Any:
        g, v = self._weight_norm_originals()
        weight = v * (g / _norm_except(v, self._weight_norm_dim))
        object.__setattr__(self, "weight", ops.reshape(weight, self._weight_norm_shape))
        return super().construct(*args, **kwargs)  # type: ignore[misc]  # a mixin: the layer's class has it

    def _weight_norm_originals(self):
        if self._weight_norm_hooked:
            return self.weight_g, self.weight_v
        originals = self.parametrizations.weight
        return originals.original0, originals.original1


def _parameter(tensor: torch.Tensor, name: str):
    return ms.Parameter(ms.Tensor(tensor.detach().cpu().numpy().copy()), name=name, requires_grad=tensor.requires_grad)


def _dim(value, ndim: int):
    """PyTorch's weight-norm ``dim``: None or -1 for the whole tensor (``parametrizations``' -1 is
    the whole tensor too, as ``torch._weight_norm`` reads it)."""
    return None if value is None or value == -1 else value % ndim


def _plain(module: Any, parametrized: bool) -> torch.nn.Module:
    """The layer as it would be without weight norm, its weight the computed one; the user's module
    is left as it is (removing the parametrization from a deep copy would change the original's class)."""
    # parametrize made the module's class a subclass of the layer's: its first base
    klass: Type[torch.nn.Module] = type(module).__mro__[1] if parametrized else type(module)
    plain = klass.__new__(klass)
    plain.__dict__.update(module.__dict__)
    plain._parameters = OrderedDict((k, p) for k, p in module._parameters.items() if k not in ("weight_g", "weight_v"))
    plain._parameters["weight"] = torch.nn.Parameter(module.weight.detach().clone())
    plain._modules = OrderedDict((k, m) for k, m in module._modules.items() if k != "parametrizations")
    plain._forward_pre_hooks = OrderedDict()
    plain.__dict__.pop("weight", None)  # the hook's computed attribute
    return plain


@translates_when(lambda module: _parametrized(module) or _hook(module) is not None)
def weight_norm(module: Any, ctx: Context) -> nn.Cell:  # a layer with attributes its type does not show
    from ..modules import translate_module

    hook = _hook(module)
    if hook is None:
        names = set(module.parametrizations.keys())
        chain = list(module.parametrizations["weight"]) if "weight" in names else []
        ctx.require(
            names == {"weight"}
            and len(chain) == 1
            and isinstance(chain[0], torch.nn.utils.parametrizations._WeightNorm),
            f"parametrizations {sorted(names)} other than weight_norm on 'weight' have no translation",
        )
        g, v, dim = module.parametrizations.weight.original0, module.parametrizations.weight.original1, chain[0].dim
    else:
        ctx.require(hook.name == "weight", f"weight_norm of {hook.name!r} (not 'weight') has no translation")
        g, v, dim = module.weight_g, module.weight_v, hook.dim
    cell = translate_module(_plain(module, hook is None), ctx)
    ctx.require(
        isinstance(getattr(cell, "weight", None), ms.Parameter),
        f"the translated {type(cell).__name__} holds no 'weight' Parameter to normalise",
    )
    shape = tuple(cell.weight.shape)
    del cell._params["weight"]
    if hook is None:
        originals = WeightNormOriginals(_parameter(g, "original0"), _parameter(v, "original1"))
        cell.insert_child_to_cell("parametrizations", _Parametrizations(originals))
    else:
        cell.weight_g, cell.weight_v = _parameter(g, "weight_g"), _parameter(v, "weight_v")
    cell._weight_norm_dim = _dim(dim, v.ndim)
    cell._weight_norm_shape = shape
    cell._weight_norm_hooked = hook is not None
    cell.__class__ = type(f"WeightNormed{type(cell).__name__}", (_WeightNormed, type(cell)), {})
    return cell
