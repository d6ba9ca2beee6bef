"""One block of each side, as the forward and the backward walk both need it: built by its factory,
loaded from its checkpoint under the block's prefix, fed arrays, its first output read."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, List, Optional, Tuple

import numpy as np

from ...backends import mindspore as msb
from ...backends import torch as tb
from ...errors import ParityUsageError
from ..inputs import Inputs
from .checkpoint import Checkpoint

__all__ = ["WHERE", "Sides", "build", "load", "block_arrays", "first_output"]

WHERE = "check_blocks()"


@dataclass(frozen=True)
class Sides:
    """Where each side's block ``i`` comes from: its factory, and its checkpoint with the prefix its
    keys are under (MindSpore's path None: its weights are copied from PyTorch's)."""

    ms_block: Callable[[int], Any]
    torch_block: Callable[[int], Any]
    torch_weights: Tuple[Checkpoint, str]
    ms_weights: Tuple[Optional[Checkpoint], str]

    def pair(self, index: int) -> Tuple[Any, Any, List[str]]:
        """Block ``index`` of both sides, built and loaded: PyTorch's module, MindSpore's Cell, and
        the notes on checkpoint tensors left unused."""
        torch_module = build(self.torch_block, index, "torch_block")
        ms_cell = build(self.ms_block, index, "ms_block")
        notes = load(tb, torch_module, index, *self.torch_weights, "torch_weights")
        if self.ms_weights[0] is not None:
            notes += load(msb, ms_cell, index, self.ms_weights[0], self.ms_weights[1], "ms_weights")
        return torch_module, ms_cell, notes


def build(factory, index: int, label: str):
    block = factory(index)
    if block is None:
        raise ParityUsageError(f"{WHERE}: {label}({index}) returned None, not a block")
    return block


def load(backend, model, index: int, checkpoint: Checkpoint, prefix: str, label: str) -> List[str]:
    """Block ``index``'s tensors from ``path`` into ``model``, each of its weights and buffers named;
    a note naming the checkpoint's tensors under the block's prefix that the block has no place for
    (a buffer older versions saved, such as ``rotary_emb.inv_freq``)."""
    where = prefix.format(i=index)
    arrays = checkpoint.read(where)
    path = checkpoint.path
    slots = {slot.name: slot for slot in backend.slots(model) if slot.persistent}
    names = list(slots)
    missing = [n for n in names if n not in arrays]
    if not arrays:
        raise ParityUsageError(f"{WHERE}: block {index}: {label} {path} holds no key under {where!r}")
    if missing:
        raise ParityUsageError(
            f"{WHERE}: block {index}: {label} {path} lacks {len(missing)} of the block's tensors: "
            + ", ".join(repr(where + n) for n in missing[:5])
            + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
        )
    unused = sorted(set(arrays) - set(names))
    notes = (
        [
            f"block {index}: {label} holds {len(unused)} tensors under {where!r} that the block has no "
            "place for, left unused: " + ", ".join(repr(where + n) for n in unused[:5])
        ]
        if unused
        else []
    )
    for name, slot in slots.items():
        array = arrays.pop(name)
        if tuple(array.shape) != slot.shape:
            raise ParityUsageError(
                f"{WHERE}: block {index}: {label} {path}: {where + name!r} has shape {tuple(array.shape)}, "
                f"the block's {name!r} {slot.shape}"
            )
        backend.write(model, name, array)
    return notes


def block_arrays(first: np.ndarray, extra: Tuple[np.ndarray, ...]) -> Inputs:
    """A block's inputs: its own first, then the arrays every block shares."""
    args = (first,) + extra
    return Inputs(args, {}, {f"input[{i}]": "" for i in range(len(args))})


def first_output(run, index: int) -> Tuple[str, np.ndarray]:
    """A block's first output, the one that feeds the next block: its path and its values."""
    outputs = run.outputs()
    if not outputs:
        raise ParityUsageError(f"{WHERE}: block {index} returned no tensor to feed the next block")
    return outputs[0]
