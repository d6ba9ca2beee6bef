"""The record of one check: every compared tensor, the weight transfer and the inputs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, List, Optional, Sequence, Tuple

from ..judge.metrics import Comparison
from ..weights.transfer import WeightReport
from .diagnosis.messages import result_line

__all__ = ["Result", "Steps", "Verdicts"]


class Verdicts:
    """What any record of compared tensors (``comparisons``) offers: its failures, the tensors
    that passed on the rounding envelope, and the worst one."""

    if TYPE_CHECKING:  # a field of some records, a property of others

        @property
        def comparisons(self) -> List[Comparison]: ...

    @property
    def failures(self) -> List[Comparison]:
        return [c for c in self.comparisons if not c.passed]

    @property
    def noise_judged(self) -> List[Comparison]:
        """Tensors beyond the tolerance that passed only inside PyTorch's own rounding envelope."""
        return [c for c in self.comparisons if c.noise_judged]

    @property
    def worst(self) -> Optional[Comparison]:
        """The comparison with the greatest margin (difference / allowed)."""
        return max(self.comparisons, key=lambda c: c.margin, default=None)

    @property
    def worst_margin(self) -> float:
        worst = self.worst
        return worst.margin if worst is not None else 0.0


class Steps:
    """A record of N steps (``steps``, each with its ``step`` number): ``record[k]`` is step k."""

    steps: Sequence[Any]

    def __getitem__(self, step: int):
        """Step ``step`` (counted from 1, as messages count them)."""
        for s in self.steps:
            if s.step == step:
                return s
        raise KeyError(f"no step {step}; steps are 1..{len(self.steps)}")


@dataclass
class Result(Verdicts):
    """Everything a check compared, in execution order (forward, then backward order)."""

    ms_type: str
    torch_type: str
    comparisons: List[Comparison]
    weights: WeightReport
    inputs: str
    seed: int
    modes: Tuple[str, ...]
    train: bool
    reference: Optional[str] = None
    reproduce: str = ""
    case: str = ""
    location: str = ""
    notes: List[str] = field(default_factory=list)
    layers: Optional[object] = None  # parity.engine.diagnosis.verdicts.LayerTable, when layers were captured
    problem: str = ""  # a structural failure found before any value was compared
    device_setup: Optional[object] = None  # parity.judge.devices.DeviceSetup: where both sides ran
    # parity.engine.amp.PrecisionRow per layer of a mixed-precision check (amp=...) whose layers were captured
    precisions: Optional[list] = None
    repro: Optional[str] = None  # the standalone repro's test file, once written (write_repro)
    # parity.engine.diagnosis.repro.capture.Source: the pair as checked, kept by a failed check for write_repro
    repro_source: Optional[object] = field(default=None, repr=False, compare=False)
    # parity.engine.diagnosis.verdicts.NonFiniteOrigin: the first layer where NaN/Inf appeared on one side only
    first_nonfinite: Optional[object] = None

    @property
    def passed(self) -> bool:
        return not self.problem and all(c.passed for c in self.comparisons)

    def write_repro(self, directory, *, timeout: float = 180.0):
        """Write a standalone repro of this failed check into a new folder under ``directory``: a
        test file and one data file reproducing the divergence of its smallest failing part with
        MindSpore, PyTorch, numpy and pytest alone. Returns the test file's path (also kept in
        ``repro``); raises :class:`parity.ParityNoRepro` saying why where none can be written."""
        # Here, not at the top: nightly reads Result without a framework, and the repro runs both.
        from .diagnosis.repro.cut import write_repro

        return write_repro(self, directory, timeout=timeout)

    def __getitem__(self, name: str) -> Comparison:
        """The comparison named ``name`` (e.g. ``"output"``, ``"input[0]"``, ``"conv.weight"``)."""
        for comparison in self.comparisons:
            if name in (comparison.name, comparison.ms_name, comparison.torch_name):
                return comparison
        raise KeyError(f"no compared tensor named {name!r}; known: {[c.name for c in self.comparisons]}")

    def __len__(self) -> int:
        return len(self.comparisons)

    def __str__(self) -> str:
        """One line: the verdict, the worst tensor and its margin, and the first divergence; the
        full record is ``repr`` and the fields."""
        return result_line(self)
