"""The call table: what a traced ``forward`` calls, in MindSpore. :mod:`parity.translation.trace`
meets PyTorch functions (``torch.*``, ``torch.nn.functional.*``, Python's ``operator``/``math``/
builtins) and Tensor methods in a ``torch.fx`` graph; this table gives the MindSpore code that
computes the same, gathered from the topic modules' ``FUNCTIONS`` and ``METHODS``.

Each entry is keyed by the PyTorch API's dotted name (``"torch.flatten"``) or, for a Tensor method,
its name (``"view"``), and takes PyTorch's arguments, with PyTorch's names and defaults, so a node's
``args``/``kwargs`` are passed on as they are. A value is an adapter, or ``(adapter, validator)``
where the validator sees the node's constant arguments and returns why the call cannot be
translated (``stochastic_depth`` in train mode draws random numbers). In-place calls
(``x += y``, ``x.add_(y)``, ``F.relu(x, inplace=True)``) are computed out of place; the graph then
reads the result wherever PyTorch would read the modified tensor. Python's own functions run as
they are (:mod:`.python`).

Besides the layers as functions, the rows are what a runtime capture of ``forward`` (``parity scan
--module``) showed LLaMA, Qwen2, GPT-2, BERT, T5, BART, CLIP, ViT and wav2vec2 (transformers 4.57.1),
torchvision's ViT and Swin and timm's EfficientNet calling: masks (``torch.all``, ``torch.diff`` of
position ids, ``torch.tensor``), rotary tables, grouped heads.
"""

from __future__ import annotations

import importlib
import operator
import sys
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

from . import (
    activations,
    arithmetic,
    casts,
    complex,
    convolution,
    creation,
    decompositions,
    elementwise,
    functional,
    indexing,
    linalg,
    losses,
    numerics,
    ordering,
    pointwise,
    pooling,
    python,
    reductions,
    routing,
    sampling,
    scatters,
    shapes,
    special,
    spectral,
    strides,
    transposed,
    views,
)
from .arguments import Adapter, Entry, Validator, is_tensor
from .python import INPLACE_OPERATORS, is_python

__all__ = ["TOPICS", "FUNCTIONS", "METHODS", "FALLBACKS", "function_for", "method_for", "is_inplace", "api_name"]

TOPICS = (
    shapes,
    views,
    linalg,
    indexing,
    arithmetic,
    reductions,
    ordering,
    routing,
    scatters,
    convolution,
    creation,
    casts,
    activations,
    elementwise,
    pointwise,
    functional,
    pooling,
    losses,
    special,
    strides,
    numerics,
    transposed,
    spectral,
    complex,  # after spectral: its torch.polar/torch.complex make pairs, whose product has a gradient
    decompositions,
    sampling,
    python,
)
# PyTorch's dotted names; Tensor methods by name, a name ending in "_" (in place) mapping to the name without it.
FUNCTIONS: Dict[str, Entry] = {name: entry for topic in TOPICS for name, entry in topic.FUNCTIONS.items()}
METHODS: Dict[str, Adapter] = {name: entry for topic in TOPICS for name, entry in topic.METHODS.items()}

# Asked, in order, for a call_function target the table does not hold: ``(adapter, validator)`` or None
# (:mod:`parity.translation.trace.wrapped` registers the one for ``torch.fx.wrap``ped functions).
FALLBACKS: List[Callable[[Callable[..., Any]], Optional[Tuple[Adapter, Optional[Validator]]]]] = [numerics.aten_adapter]
_BY_ID: Dict[int, Tuple[Adapter, Optional[Validator]]] = {}
_UNRESOLVED = set(FUNCTIONS)


def _resolve(name: str):
    module, _, attr = name.rpartition(".")
    top = module.split(".")[0]
    if top not in sys.modules and top != "torch":
        return None  # never import a package (torchvision) only to look an entry up
    try:
        return getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError):
        return None


_INDEXED_AT = [-1]  # len(sys.modules) when the unresolved names were last looked up


def _index() -> Dict[int, Tuple[Adapter, Optional[Validator]]]:
    """The table by the identity of its targets. A name resolves once its package is imported, so the
    unresolved ones are looked up again only after an import (a trace asks this for every node)."""
    if len(sys.modules) == _INDEXED_AT[0]:
        return _BY_ID
    for name in sorted(_UNRESOLVED):
        target = _resolve(name)
        if target is not None:
            entry = FUNCTIONS[name]
            _BY_ID[id(target)] = entry if isinstance(entry, tuple) else (entry, None)
            _UNRESOLVED.discard(name)
    _INDEXED_AT[0] = len(sys.modules)
    return _BY_ID


def function_for(target: Callable[..., Any]) -> Optional[Tuple[Adapter, Optional[Validator]]]:
    """``(adapter, validator)`` for a ``call_function`` target, or None when it is not translated."""
    found = _index().get(id(target))
    if found is not None:
        return found
    if target in INPLACE_OPERATORS:
        return INPLACE_OPERATORS[target], None
    if is_python(target):
        return target, None
    for fallback in FALLBACKS:
        found = fallback(target)
        if found is not None:
            return found
    return None


def method_for(name: str) -> Optional[Adapter]:
    """The adapter for Tensor method ``name`` (``self`` first), or None."""
    plain = name[:-1] if name.endswith("_") and not name.endswith("__") else name
    entry = METHODS.get(plain)
    if entry is None:
        return None

    def call(receiver, *args, **kwargs):
        if not is_tensor(receiver):  # a method of a plain Python value (a shape tuple)
            return getattr(receiver, name)(*args, **kwargs)
        return entry(receiver, *args, **kwargs)

    return call


def is_inplace(op: str, target: Any, kwargs: Mapping[str, Any]) -> bool:
    """Whether the call modifies its first argument in PyTorch."""
    if op == "call_method":
        return target.endswith("_") and not target.endswith("__")
    return target in INPLACE_OPERATORS or target is operator.setitem or bool(kwargs.get("inplace", False))


_NAMES: Dict[int, str] = {}
_NAMED_AT = [-1]  # len(sys.modules) when _NAMES was built


def _names() -> Dict[int, str]:
    """The table's first name for each target that resolves (PyTorch's aliases are distinct objects),
    built again only after an import."""
    if len(sys.modules) != _NAMED_AT[0]:
        _NAMES.clear()
        for name in FUNCTIONS:
            target = _resolve(name)
            if target is not None:
                _NAMES.setdefault(id(target), name)
        _NAMED_AT[0] = len(sys.modules)
    return _NAMES


def api_name(op: str, target: object) -> str:
    """How an error names the call: ``torch.flatten``, ``Tensor.view``, ``operator.add``."""
    if op == "call_method":
        return f"Tensor.{target}"
    name = _names().get(id(target))
    if name is not None:
        return name
    # __module__, or the owner's __name__: a str as a rule, though an object may hold anything there
    module: Any = getattr(target, "__module__", None) or getattr(getattr(target, "__self__", None), "__name__", "")
    module = {
        "torch._C._nn": "torch.nn.functional",
        "torch._C._VariableFunctions": "torch",
        "_operator": "operator",
    }.get(module, module)
    return f"{module}.{getattr(target, '__name__', target)}" if module else str(target)
