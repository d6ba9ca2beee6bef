"""How to build one layer again from scratch: its class's import path and the constructor arguments
recovered from the instance's attributes (a framework's own layers keep them, mostly under the
same names), as literals a file can hold.

A recovered recipe is only a guess until it is proven: :mod:`.capture` builds it, loads the
instance's weights and requires the very numbers the instance computed.
"""

from __future__ import annotations

import importlib
import inspect
from dataclasses import dataclass
from typing import Any, Callable, Dict, Tuple

__all__ = ["Recipe", "CannotRebuild", "recipe_of"]

# Constructor arguments that only initialise weights or choose a dtype or device: the weights come
# from the data file, in the instance's own dtype.
_SKIPPED = {
    "dtype",
    "device",
    "weight_init",
    "bias_init",
    "gamma_init",
    "beta_init",
    "moving_mean_init",
    "moving_var_init",
    "embedding_table",
    "param_init_type",
    "compute_dtype",
}

# MindSpore layers that keep an argument other than as given.
_MS_KEPT_OTHERWISE: Dict[Tuple[str, str], Callable[[Any], Any]] = {
    **{(f"BatchNorm{n}d", "momentum"): lambda cell: round(1.0 - float(cell.momentum), 7) for n in (1, 2, 3)},
    ("GELU", "approximate"): lambda cell: cell.approximate == "tanh",
}


class CannotRebuild(Exception):
    """This layer cannot be built again standalone; the message says why."""


@dataclass(frozen=True)
class Recipe:
    """A class by import path, and the keyword arguments that differ from its defaults."""

    module: str  # where the class is imported from: "mindspore.nn", "torch.nn" or the user's module
    name: str  # its qualified name there
    kwargs: Tuple[Tuple[str, Any], ...]
    builtin: bool  # the framework's own layer

    @property
    def call(self) -> str:
        """The constructor call as the file writes it (the module imported by its full name)."""
        args = ", ".join(f"{key}={value!r}" for key, value in self.kwargs)
        return f"{self.module}.{self.name}({args})"

    @property
    def label(self) -> str:
        return f"{self.module}.{self.name}"

    def build(self):
        owner = importlib.import_module(self.module)
        for part in self.name.split("."):
            owner = getattr(owner, part)
        return owner(**dict(self.kwargs))


def _is_literal(value) -> bool:
    if value is None or isinstance(value, (bool, int, float, str)):
        return True
    return isinstance(value, (tuple, list)) and all(_is_literal(v) for v in value)


def _public_module(cls, framework: str) -> Tuple[str, bool]:
    """``torch.nn`` / ``mindspore.nn`` for a framework layer exported there, else the class's own
    module; and whether the class is the framework's own."""
    root = "torch" if framework == "torch" else "mindspore"
    if cls.__module__.split(".")[0] != root:
        return cls.__module__, False
    public = importlib.import_module(f"{root}.nn")
    return (f"{root}.nn" if getattr(public, cls.__name__, None) is cls else cls.__module__), True


def _importable(module: str, qualname: str, cls) -> str:
    """Why ``cls`` cannot be imported by name, or ""."""
    if module == "__main__" or "<locals>" in qualname:
        return f"{qualname} is defined in {'a function' if '<locals>' in qualname else '__main__'}, not importable"
    try:
        owner = importlib.import_module(module)
        for part in qualname.split("."):
            owner = getattr(owner, part)
    except Exception as exc:  # noqa: BLE001 - any failure to import means the same
        return f"{module}.{qualname} does not import ({type(exc).__name__}: {exc})"
    return "" if owner is cls else f"{module}.{qualname} is another class than the instance's"


def _argument(layer, framework: str, param: inspect.Parameter):
    """The value of one constructor argument, read back from the instance (``inspect._empty``: the default)."""
    kept = (
        next(
            (
                _MS_KEPT_OTHERWISE[(k.__name__, param.name)]
                for k in type(layer).__mro__
                if (k.__name__, param.name) in _MS_KEPT_OTHERWISE
            ),
            None,
        )
        if framework == "mindspore"
        else None
    )
    if kept is not None:
        return kept(layer)
    if not _kept(layer, param.name):
        if param.default is inspect.Parameter.empty:
            raise CannotRebuild(f"{type(layer).__qualname__}() takes {param.name!r}, which the instance does not keep")
        return inspect.Parameter.empty
    value = getattr(layer, param.name)
    if isinstance(param.default, bool) and not isinstance(value, bool):  # torch's bias=True kept as a Parameter
        value = value is not None
    if framework == "mindspore" and param.name == "pad_mode" and isinstance(value, str):
        value = value.lower()
    return value


def _kept(layer, name: str) -> bool:
    """Whether the instance keeps ``name``: as an attribute, a property, or a registered parameter
    (PyTorch keeps ``bias=None`` among its parameters, not in the instance's ``__dict__``)."""
    stores = ("_parameters", "_buffers", "_modules", "_params", "_cells")  # PyTorch's, then MindSpore's
    registered = (getattr(layer, key, None) or {} for key in stores)
    return (
        name in vars(layer)
        or isinstance(getattr(type(layer), name, None), property)
        or any(name in found for found in registered)
    )


def _is_default(value, default) -> bool:
    """``value`` is what the constructor would take anyway (``(1, 1)`` for a default stride of 1 too)."""
    if default is inspect.Parameter.empty:
        return False
    if isinstance(value, tuple) and len(value) > 1 and isinstance(default, int) and not isinstance(default, bool):
        return all(type(v) is int and v == default for v in value)
    return type(value) is type(default) and value == default


def _has_children(layer, framework: str) -> bool:
    return bool(list(layer.children() if framework == "torch" else layer.cells()))


def recipe_of(layer, framework: str) -> Recipe:
    """The recipe of ``layer`` (``framework``: "mindspore" or "torch"), or :class:`CannotRebuild`."""
    cls = type(layer)
    module, builtin = _public_module(cls, framework)
    why = _importable(module, cls.__qualname__, cls)
    if why:
        raise CannotRebuild(why)
    kwargs = []
    for param in list(inspect.signature(cls.__init__).parameters.values())[1:]:
        if param.kind == param.VAR_POSITIONAL and _has_children(layer, framework):
            raise CannotRebuild(
                f"{cls.__qualname__}() takes *{param.name} (a container's layers), which are not "
                "recovered from the instance"
            )
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD) or param.name in _SKIPPED:
            continue
        value = _argument(layer, framework, param)
        if value is inspect.Parameter.empty or _is_default(value, param.default):
            continue
        if not _is_literal(value):
            raise CannotRebuild(
                f"{cls.__qualname__}() argument {param.name!r} is kept as a "
                f"{type(value).__qualname__}, which a file cannot write as a literal"
            )
        kwargs.append((param.name, tuple(value) if isinstance(value, list) else value))
    return Recipe(module, cls.__qualname__, tuple(kwargs), builtin)
