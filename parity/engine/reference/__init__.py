"""Recorded references: PyTorch's side of a check run once and written down (:mod:`.record`,
``parity.record``), and MindSpore checked against it later without PyTorch (:mod:`.replay`,
``parity.check(ms_cell, "path/to/reference")``). :mod:`.store` reads and writes a reference (a
folder of ``reference.json`` and ``part-N.safetensors`` files) and computes its content key;
:mod:`.side` answers what the engine asks of PyTorch from the recording; :mod:`.passes` runs
MindSpore's side as :mod:`parity.engine.passes` does. Only :mod:`.record` imports PyTorch.

May import what the engine may, and :mod:`parity.files` (the reference's two files are written
whole and read bounded through it)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Union

__all__ = ["Recorded", "recorded"]


@dataclass(frozen=True)
class Recorded:
    """A recorded reference as :func:`parity.check` takes it in place of the PyTorch module, with
    the module it was recorded from where PyTorch is at hand (see :func:`recorded`)."""

    path: Union[str, "os.PathLike[str]"]
    torch_module: Any = None


def recorded(path, torch_module=None) -> Recorded:
    """``parity.check(ms_cell, parity.recorded(path, torch_module), ...)``: check against the
    reference at ``path``, refused where ``torch_module`` (its weights, its classes' code, or
    PyTorch's version) is no longer what was recorded. A path alone (``parity.check(ms_cell,
    path)``) checks without PyTorch."""
    return Recorded(path, torch_module)
