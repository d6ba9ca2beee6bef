"""``parity scan``: which PyTorch APIs a codebase uses, and what parity knows about each.

:func:`scan` walks the Python files under a path, finds every ``torch`` API they use from their
syntax trees (:mod:`parity.tools.scan.source`: import aliases, attribute chains, base classes, inferred
Tensor methods, those of parity's translation table among them) and gives each distinct API a status from the translation tables and the
known-mismatch registry (:mod:`parity.tools.scan.status`). Neither framework is imported. Optionally,
:func:`parity.tools.scan.runtime.capture` runs one forward/backward of a module under a
``TorchFunctionMode`` and the calls it records are merged in as "seen at runtime".

Folders are walked in name order; hidden folders (``.git``, ``.venv``), ``__pycache__``, ``venv``,
``site-packages`` and ``node_modules`` below the given path are not entered. A file that does not
parse is listed in ``skipped`` with its error and the scan goes on, and so is one that is not a
regular file (a FIFO, a link to a device: never read, so nothing hangs) or is over
:data:`SIZE_LIMIT` bytes.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, FrozenSet, Iterable, List, Optional, Sequence, Tuple, Union, cast

from ... import files as safe_files
from ...errors import ParityUsageError
from .source import UNSEEN, Use, find_uses
from .status import CONVERTIBLE, DEVICES, STATUSES, Status, judge, status_text, translation_tables

__all__ = ["scan", "ScanReport", "ApiReport", "Use", "python_files"]

_SKIP_DIRS = frozenset({"__pycache__", "venv", "site-packages", "node_modules"})
SIZE_LIMIT = 8 * 1024 * 1024  # bytes of one source file; a larger .py is generated data, skipped and said


@dataclass(frozen=True)
class ApiReport:
    """One distinct PyTorch API: its status, where the code uses it and, with runtime capture,
    where it was called."""

    api: str
    status: Status
    uses: Tuple[Use, ...] = ()
    runtime: Tuple[Use, ...] = ()

    @property
    def inferred(self) -> bool:
        return bool(self.uses) and all(u.inferred for u in self.uses)

    @property
    def first(self) -> Optional[Use]:
        return self.uses[0] if self.uses else (self.runtime[0] if self.runtime else None)

    @property
    def family(self) -> str:
        for prefix, name in (
            ("torch.nn.functional.", "functional"),
            ("torch.Tensor.", "tensor"),
            ("torch.optim.", "optim"),
            ("torch.nn.", "nn"),
        ):
            if self.api.startswith(prefix):
                return name
        return "torch"


@dataclass(frozen=True)
class ScanReport:
    root: str
    device: str
    versions: Tuple[Optional[str], Optional[str]]  # (mindspore, torch), installed, never imported
    files: int
    apis: Tuple[ApiReport, ...]
    skipped: Tuple[Tuple[str, str], ...] = ()  # (file, why)
    notes: Tuple[str, ...] = ()
    runtime_module: Optional[str] = None
    counts: Dict[str, int] = field(default_factory=dict)
    # Calls x.name(...) of Tensor method names other types share (to, reshape, sum...), which the static
    # scan cannot attribute, by name with their counts; names the runtime capture saw called are left out
    unseen: Tuple[Tuple[str, int], ...] = ()
    untranslated: FrozenSet[str] = frozenset()  # which of those names parity's translation table lacks

    @property
    def uses(self) -> int:
        return sum(len(a.uses) for a in self.apis)

    @property
    def convertible(self) -> int:
        return sum(self.counts.get(code, 0) for code in CONVERTIBLE)

    @property
    def convertible_percent(self) -> float:
        return round(100.0 * self.convertible / len(self.apis), 1) if self.apis else 0.0

    def status_text(self, code: str) -> str:
        return status_text(code, self.device)


def python_files(root: Path) -> List[Path]:
    """The ``.py`` files under ``root`` (``root`` itself when it is not a folder), in name order."""
    if not root.is_dir():
        return [root]
    found: List[Path] = []
    for folder, subfolders, names in os.walk(root):
        subfolders[:] = sorted(d for d in subfolders if not d.startswith(".") and d not in _SKIP_DIRS)
        found.extend(Path(folder) / name for name in sorted(names) if name.endswith(".py"))
    return found


def scan(
    path: Union[str, Path],
    *,
    device: str = "CPU",
    runtime: Iterable[Use] = (),
    runtime_module: Optional[str] = None,
    registry=None,
    versions: Optional[Tuple[Optional[str], Optional[str]]] = None,
) -> ScanReport:
    """Scan the Python files under ``path`` (a file or a folder) and judge every PyTorch API they
    use for ``device``. ``runtime``: uses recorded by :func:`parity.tools.scan.runtime.capture`.
    ``registry`` and ``versions`` (MindSpore, torch) default to the installed ones."""
    from ...registry import installed_versions, load

    root = Path(path)
    if not root.exists():
        raise ParityUsageError(f"parity scan: no such file or folder: {path}")
    if not root.is_dir():
        safe_files.regular_size(root, "parity scan:")  # a FIFO or a device given by name is refused
    if device not in DEVICES:
        raise ParityUsageError(f"parity scan: unknown device {device!r}; expected one of {', '.join(DEVICES)}")
    files = python_files(root)
    if not files:
        raise ParityUsageError(f"parity scan: no Python files under {path}")
    tables = translation_tables()
    uses, skipped, notes = _read_all(files, tables.methods)
    registry = load() if registry is None else registry
    versions = installed_versions() if versions is None else versions
    runtime = list(runtime)
    ran = {use.api for use in runtime}
    unseen: Dict[str, int] = {}
    for use in uses:
        if use.how == UNSEEN and use.api not in ran:
            unseen[use.api] = unseen.get(use.api, 0) + 1
    apis = _judge_all(
        [u for u in uses if u.how != UNSEEN], runtime, registry=registry, device=device, versions=versions
    )
    counts = {code: sum(a.status.code == code for a in apis) for code in STATUSES}
    names = tuple(sorted(((api.rpartition(".")[2], n) for api, n in unseen.items()), key=lambda kv: (-kv[1], kv[0])))
    return ScanReport(
        str(path),
        device,
        cast(Tuple[Optional[str], Optional[str]], tuple(versions)),
        len(files),
        apis,
        tuple(skipped),
        tuple(notes),
        runtime_module,
        counts,
        names,
        frozenset(n for n, _ in names if not tables.translated(f"torch.Tensor.{n}")),
    )


def _read_all(files: Sequence[Path], methods=frozenset()) -> Tuple[List[Use], List[Tuple[str, str]], List[str]]:
    uses: List[Use] = []
    skipped: List[Tuple[str, str]] = []
    notes: List[str] = []
    for file in files:
        try:
            source = safe_files.read_bytes(file, "parity scan:", limit=SIZE_LIMIT)
        except ParityUsageError as exc:  # not a regular file, over the limit, or unreadable
            skipped.append((str(file), str(exc).replace(f"parity scan: {file}: ", "", 1)))
            continue
        try:
            found, file_notes = find_uses(source, str(file), methods)
        except SyntaxError as exc:
            skipped.append((str(file), f"SyntaxError: {exc.msg} (line {exc.lineno})"))
            continue
        except (OSError, ValueError) as exc:  # unreadable; null bytes or an undecodable encoding
            skipped.append((str(file), f"{type(exc).__name__}: {exc}"))
            continue
        uses.extend(found)
        notes.extend(file_notes)
    return uses, skipped, notes


def _judge_all(uses: List[Use], runtime: List[Use], *, registry, device: str, versions) -> Tuple[ApiReport, ...]:
    by_api: Dict[str, List[Use]] = {}
    seen: Dict[str, List[Use]] = {}
    for use in uses:
        by_api.setdefault(use.api, []).append(use)
    for use in runtime:
        seen.setdefault(use.api, []).append(use)
    tables = translation_tables()
    reports = []
    for api in sorted(set(by_api) | set(seen)):
        static, ran = by_api.get(api, []), seen.get(api, [])
        status = judge(api, [*static, *ran], registry=registry, tables=tables, device=device, versions=versions)
        reports.append(ApiReport(api, status, tuple(static), tuple(ran)))
    order = {code: i for i, code in enumerate(("unsupported", "no-fix", "fix", "as-is", "unknown"))}
    return tuple(sorted(reports, key=lambda a: (order[a.status.code], -len(a.uses) - len(a.runtime), a.api)))
