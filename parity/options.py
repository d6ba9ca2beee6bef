"""Option definitions shared by the pytest plugin and the ``parity`` command line."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Tuple

from .errors import ParityUsageError

__all__ = ["Option", "OPTIONS", "PARITY", "SEED", "MODE", "DEVICE", "parse_seed"]


@dataclass(frozen=True)
class Option:
    flag: str
    dest: str
    help: str
    choices: Optional[Tuple[str, ...]] = None
    default: Optional[str] = None
    metavar: Optional[str] = None


PARITY = "--parity"
SEED = Option("--parity-seed", "parity_seed", "seed for inputs, cotangents and initialisers (default 1234)",
              metavar="N")
MODE = Option("--parity-mode", "parity_mode", "MindSpore execution mode: pynative, graph or both (default pynative)",
              choices=("pynative", "graph", "both"))
DEVICE = Option("--parity-device", "parity_device",
                "device for both sides: CPU, GPU (torch cuda) or Ascend (torch npu) (default CPU)",
                choices=("CPU", "GPU", "Ascend"), default="CPU")
OPTIONS = (SEED, MODE, DEVICE)


def parse_seed(value, where: str) -> Optional[int]:
    """A non-negative integer seed, or None when not given; ``where`` names the source of a bad one."""
    if value is None:
        return None
    try:
        seed = int(value)
    except (TypeError, ValueError):
        raise ParityUsageError(f"{where}: seed must be an integer, got {value!r}") from None
    if seed < 0 or seed >= 2**63:
        raise ParityUsageError(f"{where}: seed must be between 0 and 2**63 - 1, got {seed}")
    return seed
