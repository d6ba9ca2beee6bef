"""What every translation shares: the table from PyTorch class to builder, the ``Context`` a builder
gets (where in the tree it is, which device), and the small argument converters the families use.

A builder is ``build(module, ctx) -> mindspore.nn.Cell``. It reads the PyTorch module's attributes
(never its constructor call, which is gone), builds the MindSpore Cell with the equivalent
arguments, and raises through ``ctx.unsupported(reason)`` where MindSpore has no counterpart.
Weights are not copied by builders: :func:`parity.translate` copies them all at the end through
parity's own name mapping, so the translated Cell must use PyTorch-compatible parameter names
(or MindSpore's known renames) and layouts.
"""

from __future__ import annotations

import types
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, List, Optional, Tuple, Type, TypeVar, Union

import mindspore as ms
import numpy as np

from ...errors import ParityInternalError, ParityUnsupported

if TYPE_CHECKING:
    import torch

__all__ = [
    "Context",
    "translates",
    "translates_when",
    "builder_for",
    "translated_names",
    "ntuple",
    "single",
    "as_constant",
    "as_parameter",
    "torch_name",
]

# build(module, ctx) -> the mindspore.nn.Cell; ``module`` is an instance of the class it is registered for
Builder = Callable[[Any, "Context"], Any]
_Registered = TypeVar("_Registered", bound=Builder)
_BUILDERS: Dict[type, Builder] = {}
# a size as PyTorch's layers store it: an int, or one per dimension
Size = Union[int, Tuple[int, ...], List[int]]


def torch_name(klass: type) -> str:
    """``torch.nn.Conv2d`` for the public classes, the full module path for anything else."""
    import torch.nn

    if getattr(torch.nn, klass.__name__, None) is klass:
        return f"torch.nn.{klass.__name__}"
    return f"{klass.__module__}.{klass.__qualname__}"


@dataclass(frozen=True)
class Context:
    """Where a builder is: the attribute path from the root (``""`` for the root), the device, the
    PyTorch module, and ``kind``, the registered ``torch.nn`` class it is translated as."""

    path: str
    device: str
    module: Optional[torch.nn.Module] = None
    kind: Optional[type] = None
    # id(submodule) -> [(args, kwargs)] of its calls on the example inputs
    examples: Optional[Dict[int, List[Tuple[tuple, dict]]]] = None

    def child(self, name: str, module: torch.nn.Module) -> "Context":
        return Context(f"{self.path}.{name}" if self.path else name, self.device, module, examples=self.examples)

    @property
    def where(self) -> str:
        shown = self.path or "<root>"
        return f"{shown} ({torch_name(type(self.module))})"

    @property
    def layer_class(self) -> Type[Any]:
        """``kind`` where a builder reads it, which :func:`builder_for`'s caller always sets."""
        if self.kind is None:
            raise ParityInternalError(f"{self.where}: a layer builder ran without the class it builds for")
        return self.kind

    def unsupported(self, reason: str) -> ParityUnsupported:
        """The error a builder raises: names the path and the type, then why."""
        return ParityUnsupported(f"{self.where}: {reason}")

    def no_translation(self) -> ParityUnsupported:
        return ParityUnsupported(
            f"{self.where} has no translation; translate() supports "
            f"{len(_BUILDERS)} torch.nn layers (parity.translation.translated_names()), "
            "the containers and custom Modules built from them"
        )

    def require(self, condition: bool, reason: str) -> None:
        if not condition:
            raise self.unsupported(reason)

    def require_default(self, attr: str, default: object, why: str = "") -> None:
        """Refuse a PyTorch argument that has no MindSpore counterpart unless it has its default."""
        value = getattr(self.module, attr, default)
        if value != default:
            extra = f" ({why})" if why else ""
            raise self.unsupported(f"{attr}={value!r} has no MindSpore counterpart{extra}")


def translates(*classes: type) -> Callable[[_Registered], _Registered]:
    """Register ``build`` for these PyTorch classes (and user subclasses that only configure them)."""

    def register(build: _Registered) -> _Registered:
        for klass in classes:
            _BUILDERS[klass] = build
        return build

    return register


_CONDITIONAL: List[Tuple[Callable[[Any], bool], Builder]] = []


def translates_when(condition: Callable[[Any], bool]) -> Callable[[_Registered], _Registered]:
    """Register ``build`` for any module ``condition(module)`` holds for, asked before the class
    table: a state a class does not show (a weight-norm parametrization or hook on a Conv1d)."""

    def register(build: _Registered) -> _Registered:
        _CONDITIONAL.append((condition, build))
        return build

    return register


def builder_for(module: torch.nn.Module) -> Optional[Tuple[type, Builder]]:
    """``(kind, builder)`` for the module's class or, for a user subclass that only configures a
    registered layer (``class MyConv(nn.Conv2d)`` defining nothing but ``__init__``), that layer's;
    first, a builder registered with :func:`translates_when` whose condition holds."""
    klass = type(module)
    for condition, build in _CONDITIONAL:
        if condition(module):
            return klass, build
    if klass in _BUILDERS:
        return klass, _BUILDERS[klass]
    for base in klass.__mro__[1:]:
        if _from_torch(base):
            return (base, _BUILDERS[base]) if base in _BUILDERS and _only_configures(klass, base) else None
    return None


def _from_torch(klass: type) -> bool:
    return klass.__module__ == "torch" or klass.__module__.startswith("torch.")


def _only_configures(klass: type, base: type) -> bool:
    """True when the user classes between ``klass`` and ``base`` define no function but ``__init__``."""
    user = klass.__mro__[: klass.__mro__.index(base)]
    return not any(
        isinstance(v, types.FunctionType) and name != "__init__" for k in user for name, v in vars(k).items()
    )


def translated_names() -> Tuple[str, ...]:
    """Every PyTorch class with a registered translation, as ``torch.nn.Name``, sorted."""
    return tuple(sorted(torch_name(k) for k in _BUILDERS))


def ntuple(value: Size, n: int) -> Tuple[int, ...]:
    """PyTorch stores most sizes as tuples already; accept ints too."""
    if isinstance(value, (tuple, list)):
        if len(value) == 1 and n > 1:
            return tuple(value) * n
        return tuple(value)
    return (value,) * n


def single(value: Size) -> int:
    """``(3,)`` -> ``3``: the 1-d layers of MindSpore take ints."""
    return value[0] if isinstance(value, (tuple, list)) else value


def as_constant(cell: ms.nn.Cell, names: Iterable[str]) -> None:
    """Turn parameters that PyTorch does not have (an affine-free norm's gamma, a stats-free
    BatchNorm's moving mean) into constant tensors, so that the parameter lists line up."""
    for name in names:
        value = getattr(cell, name).asnumpy()
        delattr(cell, name)
        setattr(cell, name, ms.Tensor(np.array(value)))


def as_parameter(cell: ms.nn.Cell, name: str, tensor: torch.Tensor) -> None:
    """Hold a PyTorch buffer that a MindSpore Cell keeps as a plain attribute (a loss's ``weight``)
    as a non-trainable parameter of the same name, so that the buffer pairs with it."""
    array = tensor.detach().cpu().numpy().copy()
    setattr(cell, name, ms.Parameter(ms.Tensor(array), name=name, requires_grad=False))
