"""How a pair's sides are named: a callable, a dotted path ``"package.module:Name"`` imported when
it is called (:func:`resolve`), or :data:`TRANSLATE`, the MindSpore side made by
:func:`parity.translate` from the PyTorch side. The catalogue's cases, the data-parallel workers
and the command line name factories so. Imports no framework."""

from __future__ import annotations

import importlib
from typing import Any, Callable, Union

from ..errors import ParityUsageError

__all__ = ["Factory", "TRANSLATE", "resolve"]

Factory = Union[str, Callable[..., Any]]
TRANSLATE = "translate"  # ParityCase(mindspore=TRANSLATE): the MindSpore side is parity.translate(torch side)


def resolve(factory: Factory, where: str) -> Callable[..., Any]:
    """``factory`` itself where it is callable, else what its dotted path names, imported;
    ``where`` names the caller in the usage error of a path that does not import."""
    if callable(factory):
        return factory
    module_name, _, attr = factory.partition(":")
    try:
        target: Any = importlib.import_module(module_name)
        for part in attr.split("."):
            target = getattr(target, part)
    except (ImportError, AttributeError) as exc:
        raise ParityUsageError(f"{where}: cannot import {factory!r}: {exc}") from None
    return target
