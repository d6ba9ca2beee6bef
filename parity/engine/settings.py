"""How a check runs, as the command line or the caller decide it: :class:`Settings`, the
``weights=parity.constant(...)`` value (:class:`Constant`), and the choices a check's arguments
take. The plugin imports this module when it loads: it imports no framework."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Tuple

from ..errors import ParityUsageError
from ..judge.tolerance import ToleranceSpec

__all__ = ["Settings", "Constant", "check_choice", "DEFAULT_SEED", "MODES", "DEVICES"]

DEFAULT_SEED = 1234
MODES = ("pynative", "graph", "both")
DEVICES = ("CPU", "GPU", "Ascend")
WEIGHTS = ("copy", "copy_to_torch", "as_is")
REFERENCES = (None, "float64")
LOCALIZE = ("auto", True, False)


@dataclass(frozen=True)
class Constant:
    """``weights=parity.constant(0.1)``: every floating weight and buffer on both sides set to value."""

    value: float

    def __str__(self):
        return f"constant({self.value:g})"


@dataclass(frozen=True)
class Settings:
    """How a run behaves (decided by the command line or the caller), and where it comes from."""

    seed: Optional[int] = None
    mode: Optional[str] = None
    device: str = "CPU"
    tolerances: Tuple[ToleranceSpec, ...] = ()  # most specific first, after the call's own
    case: str = ""
    location: str = ""
    reproduce: str = ""  # command prefix; the seed is appended
    verbose: int = 0  # pytest -v count: 2 and more show every layer
    repro_dir: Optional[str] = None  # where a failure writes its standalone repro (--parity-repro)

    @property
    def resolved_seed(self) -> int:
        return self.seed if self.seed is not None else DEFAULT_SEED


def check_choice(label: str, value, choices, where: str):
    if value not in choices:
        shown = ", ".join(repr(c) for c in choices)
        raise ParityUsageError(f"{where}: unknown {label} {value!r}; expected one of {shown}")
