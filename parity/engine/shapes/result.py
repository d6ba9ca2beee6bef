"""What :func:`parity.check_shapes` returns: each shape's check, in the order given. Framework-free:
the nightly records read it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, List, Optional, Tuple

from ..diagnosis import messages
from ..result import Verdicts

__all__ = ["ShapeCheck", "ShapesResult"]


@dataclass
class ShapeCheck:
    """One shape's check: what it fed, its result (a failed one's too), or the error it raised; in
    GRAPH mode, how many forward graphs MindSpore compiled for it (0: the dynamic graph served)."""

    index: int
    inputs: str
    result: Optional[Any] = None  # the shape's Result
    error: str = ""
    compiled: Optional[int] = None
    message: str = ""  # a failed check's message

    @property
    def recompiled(self) -> bool:
        return self.index > 0 and bool(self.compiled)

    @property
    def passed(self) -> bool:
        return not self.error and self.result is not None and self.result.passed

    def line(self) -> str:
        status = "ok  " if self.passed else "FAIL"
        if self.error:
            figure = f"raised: {self.error.splitlines()[0]}"
        else:
            assert self.result is not None  # a shape that raised nothing has its result
            figure = f"worst margin {messages.fmt(self.result.worst_margin)}x allowed"
        graph = (
            ""
            if self.compiled is None
            else (
                "; compiled the dynamic graph"
                if self.index == 0
                else "; compiled again for this shape (see the note)"
                if self.compiled
                else "; ran on the dynamic graph"
            )
        )
        return f"  {status} [{self.index}] {self.inputs}: {figure}{graph}"


@dataclass
class ShapesResult(Verdicts):
    """Every shape's check, in the order given; ``comparisons`` are every shape's, in that order."""

    ms_type: str
    torch_type: str
    shapes: List[ShapeCheck]
    modes: Tuple[str, ...]
    signature: Optional[List[Tuple[Tuple[Optional[int], ...], str]]] = None  # GRAPH mode's dynamic inputs
    notes: List[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return all(s.passed for s in self.shapes)

    @property
    def results(self) -> list:
        return [s.result for s in self.shapes]

    @property
    def comparisons(self) -> list:
        return [c for s in self.shapes if s.result is not None for c in s.result.comparisons]

    @property
    def failing_shapes(self) -> List[ShapeCheck]:
        return [s for s in self.shapes if not s.passed]

    @property
    def recompiled(self) -> List[ShapeCheck]:
        """The shapes (after the first) for which GRAPH mode compiled a graph of its own."""
        return [s for s in self.shapes if s.recompiled]

    @property
    def problem(self) -> str:
        return ""

    def __str__(self) -> str:
        failing = self.failing_shapes
        text = (
            f"{'ok' if not failing else 'FAIL'}: mindspore {self.ms_type} <-> torch {self.torch_type} over "
            f"{len(self.shapes)} input shapes ({', '.join(self.modes)}); worst margin "
            f"{messages.fmt(self.worst_margin)}x allowed"
        )
        text += f"; failing: {', '.join(f'[{s.index}]' for s in failing)}" if failing else ""
        return text + (
            f"; compiled again: {', '.join(f'[{s.index}]' for s in self.recompiled)}" if self.recompiled else ""
        )
