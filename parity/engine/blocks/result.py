"""What :func:`parity.check_blocks` returns: each block's check, in order, and how MindSpore's own
chain of blocks drifted from PyTorch's, forward and (with gradients) backward. Framework-free."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, List, Optional, Tuple

from ...judge.metrics import Comparison
from ..diagnosis import messages
from ..result import Verdicts

__all__ = ["BlockCheck", "BlocksResult", "Seconds"]


@dataclass(frozen=True)
class Seconds:
    """What one walk spent on one block (building both sides, reading the weights, the check or
    the gradients, freeing the pair): the process's CPU time, every thread's (``time.process_time``),
    and the wall time. CPU time is the figure to compare across blocks on a loaded machine."""

    cpu: float = 0.0
    wall: float = 0.0

    @classmethod
    def since(cls, started: Tuple[float, float]) -> "Seconds":
        """From ``started``: ``(time.process_time(), time.perf_counter())`` taken before the block."""
        return cls(time.process_time() - started[0], time.perf_counter() - started[1])

    @staticmethod
    def now() -> Tuple[float, float]:
        return time.process_time(), time.perf_counter()


@dataclass
class BlockCheck:
    """One block: its check on PyTorch's input to it (a normal :class:`parity.Result`, a failed
    one's too, with its message), and ``chained``: MindSpore's output after running every block so
    far on its own outputs, against PyTorch's (the error accumulated up to this block)."""

    index: int
    result: Any  # the block's Result
    chained: Comparison
    message: str = ""  # a failed check's message
    notes: List[str] = field(default_factory=list)  # checkpoint tensors under its prefix left unused
    # with gradients: the backward chained from the last block, each side on its own chain: the
    # gradient reaching this block's input (first, where the input is floating), then its parameters'
    chained_grads: List[Comparison] = field(default_factory=list)
    forward_time: Seconds = Seconds()  # the forward walk's time on this block
    backward_time: Seconds = Seconds()  # the backward walk's (zero without gradients)

    @property
    def passed(self) -> bool:
        return self.result.passed

    @property
    def chained_input_grad(self) -> Optional[Comparison]:
        """The chained backward's gradient reaching this block's input (None without gradients)."""
        found = [c for c in self.chained_grads if c.kind == "input grad"]
        return found[0] if found else None

    def line(self) -> str:
        status = "ok  " if self.passed else "FAIL"
        text = (
            f"  {status} block {self.index}: worst margin {messages.fmt(self.result.worst_margin)}x allowed; "
            f"chained: max |diff| {messages.fmt(self.chained.max_abs)}, "
            f"{messages.fmt(self.chained.margin)}x allowed"
        )
        if self.chained_grads:
            worst = max(c.margin for c in self.chained_grads)
            text += f"; chained backward: worst gradient {messages.fmt(worst)}x allowed"
        return text


@dataclass
class BlocksResult(Verdicts):
    """Every block's check, in order; ``comparisons`` are every block's, in that order.
    ``end_to_end``: MindSpore's chained output after the last block against PyTorch's; with
    gradients, ``end_to_end_grad``: the gradient reaching block 0's input through the backward
    chained from the last block (``chained_input_grad`` holds both sides' arrays of it, MindSpore's
    first). Both are reported, and fail nothing by themselves (error grows over many blocks within
    each one's tolerance)."""

    ms_type: str
    torch_type: str
    blocks: List[BlockCheck]
    prefix: str
    notes: List[str] = field(default_factory=list)
    chained_input_grad: Optional[Tuple[Any, Any]] = None  # (MindSpore's, PyTorch's) numpy arrays

    @property
    def passed(self) -> bool:
        return all(b.passed for b in self.blocks)

    @property
    def results(self) -> list:
        return [b.result for b in self.blocks]

    @property
    def comparisons(self) -> list:
        return [c for b in self.blocks for c in b.result.comparisons]

    @property
    def failing_blocks(self) -> List[int]:
        return [b.index for b in self.blocks if not b.passed]

    @property
    def first_failing(self) -> Optional[int]:
        failing = self.failing_blocks
        return failing[0] if failing else None

    @property
    def end_to_end(self) -> Comparison:
        return self.blocks[-1].chained

    @property
    def end_to_end_grad(self) -> Optional[Comparison]:
        return self.blocks[0].chained_input_grad

    @property
    def chained_grads(self) -> List[Comparison]:
        """Every block's chained backward comparisons, block 0's first."""
        return [c for b in self.blocks for c in b.chained_grads]

    @property
    def cpu_seconds(self) -> List[float]:
        """Each block's CPU time over both walks, in block order."""
        return [b.forward_time.cpu + b.backward_time.cpu for b in self.blocks]

    @property
    def problem(self) -> str:
        return ""

    def __getitem__(self, index: int) -> BlockCheck:
        return self.blocks[index]

    def __len__(self) -> int:
        return len(self.blocks)

    def __str__(self) -> str:
        failing = self.failing_blocks
        end = self.end_to_end
        text = (
            f"{'ok' if not failing else 'FAIL'}: mindspore {self.ms_type} <-> torch {self.torch_type} over "
            f"{len(self.blocks)} blocks ({self.prefix}); worst margin {messages.fmt(self.worst_margin)}x allowed"
        )
        text += f"; failing: {', '.join(str(i) for i in failing)}" if failing else ""
        text += (
            f"; end to end (MindSpore's blocks chained): max |diff| {messages.fmt(end.max_abs)}, "
            f"max rel {messages.fmt(end.max_rel)}, {messages.fmt(end.margin)}x allowed"
        )
        grad = self.end_to_end_grad
        if grad is not None:
            worst = max(c.margin for c in self.chained_grads)
            text += (
                f"; backward end to end (chained from the last block): input gradient max |diff| "
                f"{messages.fmt(grad.max_abs)}, {messages.fmt(grad.margin)}x allowed; worst chained gradient "
                f"{messages.fmt(worst)}x allowed"
            )
        return "\n".join([text] + [f"  note: {n}" for n in self.notes])
