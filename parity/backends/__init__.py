"""The framework adapters: tensors in and out as numpy, passes, layer capture, perturbation and
training steps of each framework (:mod:`.mindspore`, :mod:`.torch`), their devices
(:mod:`.device`), checkpoint files (:mod:`.checkpoints`) and layers fed the other side's inputs
(:mod:`.replay`). Both adapters satisfy :class:`.protocol.Framework`: a function both define
takes the same arguments on both sides.

Importing this package imports no framework: :mod:`.mindspore` and :mod:`.torch` do, and are
imported when a check runs; :mod:`.device`, :mod:`.checkpoints` and :mod:`.replay` import one inside the function
that needs it. Besides the translation and the self-tests, these are the only modules that import a
framework at their top. May import: the judge and :mod:`parity.errors`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Tuple

import numpy as np

from ..errors import ParityUsageError

__all__ = ["Slot", "Grads", "framework_of", "flatten_outputs", "is_float", "last_logits", "changed_inputs"]


@dataclass(frozen=True)
class Slot:
    """One parameter or buffer, known by its attribute path."""

    name: str
    shape: Tuple[int, ...]
    dtype: str
    trainable: bool
    layer: str  # attribute path of the owning sub-Cell/sub-Module ("" for the root)
    layer_type: str
    aliases: Tuple[str, ...] = ()  # other paths to the same tensor (tied weights)
    persistent: bool = True  # False for a PyTorch buffer left out of state_dict

    @property
    def leaf(self) -> str:
        return self.name.rsplit(".", 1)[-1]


@dataclass
class Grads:
    """Gradients by input name and by parameter path (numpy, on the host)."""

    inputs: Dict[str, np.ndarray]
    params: Dict[str, np.ndarray]


def framework_of(obj) -> str:
    """ "mindspore", "torch" or "" for anything else, judged without importing either."""
    for klass in type(obj).__mro__:
        where = f"{klass.__module__}.{klass.__qualname__}"
        if where == "mindspore.nn.cell.Cell":
            return "mindspore"
        if where == "torch.nn.modules.module.Module":
            return "torch"
    return ""


def is_float(array: np.ndarray) -> bool:
    """Floating or complex, bfloat16 (``ml_dtypes``, numpy kind 'V') included."""
    return array.dtype.kind in "fc" or array.dtype.name == "bfloat16"


def flatten_outputs(value, path: str = "output") -> List[Tuple[str, object]]:
    """(path, leaf) for every leaf of nested tuples/lists/dicts, in order."""
    if isinstance(value, dict):
        items = []
        for key, item in value.items():
            items += flatten_outputs(item, f"{path}[{key!r}]")
        return items
    if isinstance(value, (tuple, list)):
        items = []
        for i, item in enumerate(value):
            items += flatten_outputs(item, f"{path}[{i}]")
        return items
    return [(path, value)]


def changed_inputs(names, given, fed) -> List[str]:
    """The names of the inputs whose fed copy (``fed``, numpy arrays read back after a forward) no
    longer holds the values ``given``, bit for bit: those the forward changed in place."""
    return [
        name
        for name, before, after in zip(names, given, fed)
        if before.shape != after.shape or np.asarray(before).tobytes() != np.asarray(after).tobytes()
    ]


def last_logits(logits, side: str) -> np.ndarray:
    """The logits of the last position, (batch, vocab), from a causal language model's
    (batch, length, vocab) or (batch, vocab) numpy logits."""
    array = np.asarray(logits)
    if array.ndim == 3:
        return np.ascontiguousarray(array[:, -1, :])
    if array.ndim == 2:
        return array
    raise ParityUsageError(
        f"{side}'s logits have shape {tuple(array.shape)}; a causal language model returns "
        "(batch, length, vocab) or (batch, vocab)"
    )
