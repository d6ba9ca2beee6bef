"""Option definitions shared by the pytest plugin and the ``parity`` command line."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Tuple

from .errors import ParityUsageError

__all__ = [
    "Option",
    "OPTIONS",
    "PARITY",
    "SEED",
    "MODE",
    "DEVICE",
    "REPRO",
    "RECORD",
    "REFERENCE",
    "parse_seed",
    "parse_repro_dir",
    "parse_reference_dirs",
]


@dataclass(frozen=True)
class Option:
    flag: str
    dest: str
    help: str
    choices: Optional[Tuple[str, ...]] = None
    default: Optional[str] = None
    metavar: Optional[str] = None


PARITY = "--parity"
SEED = Option(
    "--parity-seed", "parity_seed", "seed for inputs, cotangents and initialisers (default 1234)", metavar="N"
)
MODE = Option(
    "--parity-mode",
    "parity_mode",
    "MindSpore execution mode: pynative, graph or both (default pynative)",
    choices=("pynative", "graph", "both"),
)
DEVICE = Option(
    "--parity-device",
    "parity_device",
    "device for both sides: CPU, GPU (torch cuda) or Ascend (torch npu) (default CPU)",
    choices=("CPU", "GPU", "Ascend"),
    default="CPU",
)
REPRO = Option(
    "--parity-repro",
    "parity_repro",
    "write a standalone repro (a test file and a data file) of each failing check into its own folder under DIR",
    metavar="DIR",
)
OPTIONS = (SEED, MODE, DEVICE, REPRO)
RECORD = Option(
    "--parity-record",
    "parity_record",
    "record each catalogue case's PyTorch side into a folder of its own under DIR, instead of checking it",
    metavar="DIR",
)
REFERENCE = Option(
    "--parity-reference",
    "parity_reference",
    "check each catalogue case's MindSpore side against its PyTorch side recorded under DIR "
    "(--parity-record); PyTorch is not imported",
    metavar="DIR",
)


def parse_reference_dirs(record, reference, base: Path) -> Tuple[Optional[Path], Optional[Path]]:
    """The folders of ``--parity-record`` and ``--parity-reference`` (relative to ``base``); at most one."""
    if record is not None and reference is not None:
        raise ParityUsageError(f"{RECORD.flag} and {REFERENCE.flag} exclude each other: record first, then check")
    found = []
    for value, option in ((record, RECORD), (reference, REFERENCE)):
        if value is not None and not str(value).strip():
            raise ParityUsageError(f"{option.flag}: expected a folder, got an empty path")
        path = None if value is None else base / value
        if path is not None and path.exists() and not path.is_dir():
            raise ParityUsageError(f"{option.flag}: {value!r} is a file; references are folders under a folder")
        if option is REFERENCE and path is not None and not path.is_dir():
            raise ParityUsageError(f"{option.flag}: no folder {value!r}; record the references first ({RECORD.flag})")
        found.append(path)
    return found[0], found[1]


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


def parse_repro_dir(value, where: str, base: Path) -> Optional[str]:
    """The folder repros are written under (``value``, relative to ``base``), or None when not
    given; ``where`` names the source of a bad one. It need not exist yet."""
    if value is None:
        return None
    if not str(value).strip():
        raise ParityUsageError(f"{where}: expected a folder, got an empty path")
    path = base / value
    if path.exists() and not path.is_dir():
        raise ParityUsageError(f"{where}: {value!r} is a file; repros are written into a folder")
    return str(path)
