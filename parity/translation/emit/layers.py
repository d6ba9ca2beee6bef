"""A translated layer as a constructor call a file can hold: its class by import path
(``nn.Conv2d`` for MindSpore's own, ``parity.translation.layers.conv.PaddedConv2d`` for the Cells
parity adds), the constructor arguments read back from the instance (MindSpore's layers keep them
under their own names), and the attributes a builder set after construction
(``PaddedConv2d.torch_pads``).

A recipe is proven before it is written: the call is made, and the layer it builds must hold the
same plain attributes and Parameters of the same names, shapes and dtypes as the translated one.
"""

from __future__ import annotations

import importlib
import inspect
from dataclasses import dataclass
from typing import Any, Dict, List, Tuple

from mindspore import nn, ops

from ...errors import ParityUnsupported

__all__ = ["LayerCall", "layer_call"]

# Arguments that only initialise weights: the package's weights come from its checkpoint.
_SKIPPED = {
    "weight_init",
    "bias_init",
    "gamma_init",
    "beta_init",
    "moving_mean_init",
    "moving_var_init",
    "embedding_table",
    "dtype",
    "param_init_type",
}
# MindSpore layers that keep an argument otherwise than it was given.
_KEPT_OTHERWISE = {
    ("BatchNorm1d", "momentum"): lambda cell: round(1.0 - float(cell.momentum), 7),
    ("BatchNorm2d", "momentum"): lambda cell: round(1.0 - float(cell.momentum), 7),
    ("BatchNorm3d", "momentum"): lambda cell: round(1.0 - float(cell.momentum), 7),
    ("GELU", "approximate"): lambda cell: cell.approximate == "tanh",
    # MaxPool2d with pad_mode "pad" runs a 3-d pooling over a depth of 1 and keeps its arguments so
    ("MaxPool2d", "data_format"): lambda cell: cell.format,
    ("MaxPool2d", "padding"): lambda cell: tuple(cell.padding[-2:]) if cell.use_pad else 0,
    ("MaxPool2d", "dilation"): lambda cell: tuple(cell.max_pool.attrs["dilation"][-2:]) if cell.use_pad else 1,
}
_PLAIN = (bool, int, float, str, type(None))


@dataclass(frozen=True)
class LayerCall:
    """``module.name(**kwargs)``, then ``attributes`` set on the instance."""

    module: str
    name: str
    kwargs: Tuple[Tuple[str, Any], ...]
    attributes: Tuple[Tuple[str, Any], ...]

    def text(self, alias: str) -> str:
        call = f"{alias}.{self.name}({', '.join(f'{k}={v!r}' for k, v in self.kwargs)})"
        if not self.attributes:
            return call
        return f"configured({call}, {', '.join(f'{k}={v!r}' for k, v in self.attributes)})"

    def build(self) -> nn.Cell:
        cell = getattr(importlib.import_module(self.module), self.name)(**dict(self.kwargs))
        for key, value in self.attributes:
            setattr(cell, key, value)
        return cell


def _literal(value: Any) -> bool:
    if isinstance(value, _PLAIN):
        return True
    return isinstance(value, (tuple, list)) and all(_literal(v) for v in value)


def _public(cls: type) -> str:
    """``mindspore.nn`` where the class is exported there, else the module it is defined in."""
    if cls.__module__.startswith("mindspore.") and getattr(nn, cls.__name__, None) is cls:
        return "mindspore.nn"
    return cls.__module__


def _argument(cell: nn.Cell, param: inspect.Parameter) -> Any:
    for klass in type(cell).__mro__:
        kept = _KEPT_OTHERWISE.get((klass.__name__, param.name))
        if kept is not None:
            return kept(cell)
    if param.name not in vars(cell) and not isinstance(getattr(type(cell), param.name, None), property):
        held = [p.attrs[param.name] for p in _primitives(cell) if param.name in p.attrs]
        if held:  # kept by the operator the layer runs (AdaptiveAvgPool2d's output_size)
            return held[0]
        if param.default is inspect.Parameter.empty:
            raise _NoRecipe(f"takes {param.name!r}, which the instance does not keep")
        return inspect.Parameter.empty
    value = getattr(cell, param.name)
    if param.name == "pad_mode" and isinstance(value, str):
        value = value.lower()
    return value


def _primitives(cell: nn.Cell) -> List[Any]:
    return [value for value in vars(cell).values() if isinstance(value, ops.Primitive)]


def _plain_attributes(cell: nn.Cell) -> Dict[str, Any]:
    return {
        k: v
        for k, v in vars(cell).items()
        if not k.startswith("_") and k not in ("training", "requires_grad", "is_top_cell") and _literal(v)
    }


def _tensors(cell: nn.Cell) -> List[Tuple[str, tuple, str]]:
    return [(name, tuple(p.shape), str(p.dtype)) for name, p in cell.parameters_and_names()]


class _NoRecipe(Exception):
    pass


def layer_call(cell: nn.Cell, where: str) -> LayerCall:
    """The proven constructor call of ``cell`` (a layer with no children), or
    :class:`parity.ParityUnsupported` saying why there is none."""
    cls = type(cell)
    try:
        return _proven(cell, cls)
    except _NoRecipe as exc:
        raise ParityUnsupported(
            f"{where} ({cls.__module__}.{cls.__qualname__}) cannot be written as a call: {exc}"
        ) from None


def _proven(cell: nn.Cell, cls: Any) -> LayerCall:
    if "<locals>" in cls.__qualname__ or "." in cls.__qualname__:
        raise _NoRecipe("its class is not importable by name")
    kwargs = []
    for param in list(inspect.signature(cls.__init__).parameters.values())[1:]:
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD) or param.name in _SKIPPED:
            continue
        value = _argument(cell, param)
        if value is inspect.Parameter.empty or (type(value) is type(param.default) and value == param.default):
            continue
        if not _literal(value):
            raise _NoRecipe(f"its argument {param.name!r} is a {type(value).__qualname__}, not a literal")
        kwargs.append((param.name, tuple(value) if isinstance(value, list) else value))
    call = LayerCall(_public(cls), cls.__qualname__, tuple(kwargs), ())
    try:
        built = call.build()
    except Exception as exc:  # noqa: BLE001  (whatever the constructor raises on what was read back)
        raise _NoRecipe(f"{call.text('m')} raises {type(exc).__name__}: {exc}") from None
    own, rebuilt = _plain_attributes(cell), _plain_attributes(built)
    extra = tuple((k, v) for k, v in own.items() if k not in rebuilt or rebuilt[k] != v)
    call = LayerCall(call.module, call.name, call.kwargs, extra)
    if extra:
        built = call.build()
    if _tensors(built) != _tensors(cell) or _plain_attributes(built) != own:
        raise _NoRecipe("the call read back from the instance builds a layer with other attributes or Parameters")
    return call
