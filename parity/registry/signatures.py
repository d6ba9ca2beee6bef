"""Check the data against the installed frameworks' signatures: every default an entry states, every
PyTorch argument a rule reads, every documented platform. Imports the frameworks (via ``resolve``)."""

from __future__ import annotations

import inspect
import re
from typing import Any, Callable, Dict, List, Optional

from .schema import Argument, Entry

__all__ = ["parameters_of", "check_arguments", "check_rule_arguments", "documented_platforms"]

_EMPTY = inspect.Parameter.empty

# What an entry's dotted path names: a class or a function of a framework.
Api = Callable[..., Any]
# The dotted path -> that class or function (imports its framework; raises where it does not exist).
Resolve = Callable[[str], Api]


def parameters_of(obj: Api, method: str = "__init__") -> Dict[str, inspect.Parameter]:
    """The parameters of ``obj.method`` (a class) or ``obj`` (a function), looking through
    decorators that hide the signature behind ``*args, **kwargs`` (MindSpore's optimizers)."""
    function = getattr(obj, method, None) if inspect.isclass(obj) else obj
    if function is None:
        return {}
    function = inspect.unwrap(function)
    params = dict(inspect.signature(function).parameters)
    if set(p.kind for p in params.values() if p.name != "self") <= {
        inspect.Parameter.VAR_POSITIONAL,
        inspect.Parameter.VAR_KEYWORD,
    }:
        for cell in getattr(function, "__closure__", None) or ():
            inner = cell.cell_contents
            if inspect.isfunction(inner) and inner.__name__ in (function.__name__, method):
                return dict(inspect.signature(inner).parameters)
    return params


def _lookup(obj: Api, name: str, forward: str) -> Optional[inspect.Parameter]:
    for method in ("__init__", forward):
        found = parameters_of(obj, method).get(name)
        if found is not None:
            return found
    return None


def _same_default(stated: Any, actual: Any) -> bool:
    if (
        isinstance(stated, (int, float))
        and isinstance(actual, (int, float))
        and not isinstance(stated, bool)
        and not isinstance(actual, bool)
    ):
        return abs(stated - actual) <= 1e-12 * max(1.0, abs(actual))
    return stated == actual or str(stated) == str(actual)


def _check_side(label: str, obj: Api, name: str, stated_default: Any, has_default: bool, forward: str) -> List[str]:
    param = _lookup(obj, name, forward)
    if param is None:
        return [f"{label} has no argument {name!r}"]
    if has_default and param.default is _EMPTY:
        return [f"{label}'s {name!r} is required, the entry says it defaults to {stated_default!r}"]
    if has_default and not _same_default(stated_default, param.default):
        return [f"{label}'s {name!r} defaults to {param.default!r}, the entry says {stated_default!r}"]
    return []


def check_arguments(entry: Entry, resolve: Resolve) -> List[str]:
    """Problems with the defaults ``entry.arguments`` state, against the installed signatures."""
    problems: List[str] = []
    for argument in entry.arguments:
        problems += _check_argument(entry, argument, resolve)
    return [f"{entry.location}: entry {entry.id!r}: {p}" for p in problems]


def _check_argument(entry: Entry, argument: Argument, resolve: Resolve) -> List[str]:
    found: List[str] = []
    if argument.torch:
        found += _check_side(
            entry.torch,
            resolve(entry.torch),
            argument.torch,
            argument.torch_default,
            argument.has_torch_default,
            "forward",
        )
    if argument.mindspore:
        try:
            target = resolve(entry.mindspore)
        except (ImportError, AttributeError):
            return found + [
                f"{entry.mindspore} does not exist, yet the entry names its argument {argument.mindspore!r}"
            ]
        found += _check_side(
            entry.mindspore,
            target,
            argument.mindspore,
            argument.mindspore_default,
            argument.has_mindspore_default,
            "construct",
        )
    return found


def check_rule_arguments(entry: Entry, resolve: Resolve) -> List[str]:
    """Every ``torch.<name>`` a rule reads is an argument of the PyTorch API."""
    from . import rules

    params = parameters_of(resolve(entry.torch))
    missing = sorted({n for s in entry.rule.values() for n in rules.referenced(s, "torch")} - set(params))
    return [
        f"{entry.location}: entry {entry.id!r}: the rule reads torch.{n}, which {entry.torch} does not take"
        for n in missing
    ]


def documented_platforms(obj: object) -> List[str]:
    """The platforms a MindSpore docstring lists under "Supported Platforms"."""
    match = re.search(r"Supported Platforms:\s*\n\s*(.*)", obj.__doc__ or "")
    return re.findall(r"``(\w+)``", match.group(1)) if match else []
