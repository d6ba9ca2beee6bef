"""The quarantine: tests allowed to fail for a while, as data reviewed in git.

``parity-quarantine.toml`` holds one ``[[quarantine]]`` table per entry::

    [[quarantine]]
    case = "cases/models/conv_block.py::ConvBlock[*]"   # a node id; * and ? are wildcards
    reason = "Conv2d backward drifts on CANN 8.1 nightly"
    issue = "https://example.org/issues/123"
    until = 2025-12-31                                  # quarantines up to and including this day

A quarantined test runs and reports as usual, but a failure becomes an expected failure (xfail,
not strict) whose reason names the entry, and does not fail the run. One that passes is stale.
An entry past its until-date no longer quarantines; the run summary says so.
"""

from __future__ import annotations

import datetime
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from .. import files
from ..errors import ParityUsageError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python < 3.11
    import tomli as tomllib

__all__ = ["Entry", "Quarantine", "load", "DEFAULT_FILE", "REASON_PREFIX"]

DEFAULT_FILE = "parity-quarantine.toml"
REASON_PREFIX = "quarantined: "
_KEYS = ("case", "reason", "issue", "until")
_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


@dataclass(frozen=True)
class Entry:
    case: str
    reason: str
    issue: str
    until: datetime.date

    def matches(self, nodeid: str) -> bool:
        return nodeid == self.case or _pattern(self.case).fullmatch(nodeid) is not None

    @property
    def xfail_reason(self) -> str:
        return f"{REASON_PREFIX}{self.reason} ({self.issue}, until {self.until.isoformat()})"


def _pattern(case: str) -> "re.Pattern[str]":
    """``*`` and ``?`` are wildcards; everything else, brackets of parametrised ids included, is literal."""
    return re.compile("".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in case))


@dataclass
class Quarantine:
    """The loaded file, and what the run saw of it (``record``, from every report, xdist's too)."""

    path: str
    active: Tuple[Entry, ...]
    expired: Tuple[Entry, ...]
    failed: Dict[str, Entry] = field(default_factory=dict)  # node id -> entry: failed, not counted
    passed: Dict[str, Entry] = field(default_factory=dict)  # node id -> entry: passed (stale)

    def find(self, nodeid: str) -> Optional[Entry]:
        """The active entry for ``nodeid``: its own node id first, else the first glob that matches."""
        exact = [e for e in self.active if e.case == nodeid]
        return exact[0] if exact else next((e for e in self.active if e.matches(nodeid)), None)

    def record(self, nodeid: str, *, outcome: str, wasxfail: Optional[str]) -> None:
        entry = self.find(nodeid)
        if entry is None or not (wasxfail or "").startswith(REASON_PREFIX):
            return
        if outcome == "skipped":  # pytest's spelling of an expected failure
            self.failed[nodeid] = entry
            self.passed.pop(nodeid, None)
        elif outcome == "passed" and nodeid not in self.failed:
            self.passed[nodeid] = entry

    def summary_lines(self) -> List[str]:
        lines = []
        if self.failed or self.passed:
            lines.append(
                f"quarantine ({self.path}): {len(self.failed) + len(self.passed)} quarantined tests ran, "
                f"{len(self.failed)} failed without failing the run, {len(self.passed)} passed (stale)"
            )
        for nodeid, entry in sorted(self.failed.items()):
            lines.append(f"quarantined failure {nodeid}: {entry.reason} ({entry.issue}, until {entry.until})")
        for nodeid, entry in sorted(self.passed.items()):
            lines.append(f"stale quarantine {nodeid}: passed; its entry {entry.case!r} may go ({entry.issue})")
        for entry in self.expired:
            lines.append(
                f"expired quarantine {entry.case!r} (until {entry.until}): no longer quarantines, "
                f"its failures fail the run; renew or remove it in {self.path} ({entry.issue})"
            )
        return lines


def load(path: Path, *, today: datetime.date, name: Optional[str] = None) -> Quarantine:
    """Read and validate ``path`` (called ``name`` in messages); a bad file or entry is a
    :class:`ParityUsageError` naming both."""
    path, name = Path(path), name or str(path)
    try:
        data: Dict[str, Any] = tomllib.loads(files.read_text(path, "cannot read the quarantine file"))
    except tomllib.TOMLDecodeError as exc:
        raise ParityUsageError(f"quarantine file {name}: not valid TOML: {exc}") from None
    extra = sorted(set(data) - {"quarantine"})
    if extra:
        raise ParityUsageError(
            f"quarantine file {name}: unknown top-level keys {extra}; entries are [[quarantine]] tables"
        )
    tables = data.get("quarantine", [])
    if not isinstance(tables, list):
        raise ParityUsageError(f"quarantine file {name}: 'quarantine' must be an array of tables ([[quarantine]])")
    entries = [_entry(table, f"quarantine file {name}: entry {n}") for n, table in enumerate(tables, 1)]
    _no_duplicates(entries, f"quarantine file {name}")
    return Quarantine(name, tuple(e for e in entries if e.until >= today), tuple(e for e in entries if e.until < today))


def _entry(table: object, where: str) -> Entry:
    if not isinstance(table, dict):
        raise ParityUsageError(f"{where}: must be a table with keys {', '.join(_KEYS)}")
    if isinstance(table.get("case"), str) and table["case"].strip():
        where += f" (case {table['case']!r})"
    unknown = sorted(set(table) - set(_KEYS))
    if unknown:
        raise ParityUsageError(f"{where}: unknown keys {unknown}; an entry has {', '.join(_KEYS)}")
    missing = [key for key in _KEYS if key not in table]
    if missing:
        raise ParityUsageError(f"{where}: missing {', '.join(missing)}; an entry has {', '.join(_KEYS)}")
    for key in ("case", "reason", "issue"):
        if not isinstance(table[key], str) or not table[key].strip():
            raise ParityUsageError(f"{where}: {key} must be a non-empty string, got {table[key]!r}")
    return Entry(table["case"].strip(), table["reason"].strip(), table["issue"].strip(), _date(table["until"], where))


def _date(value: object, where: str) -> datetime.date:
    if isinstance(value, datetime.date) and not isinstance(value, datetime.datetime):
        return value
    if isinstance(value, str) and _ISO_DATE.fullmatch(value.strip()):
        try:
            return datetime.date.fromisoformat(value.strip())
        except ValueError:
            pass
    raise ParityUsageError(f"{where}: until must be an ISO date such as 2025-12-31, got {value!r}")


def _no_duplicates(entries: List[Entry], where: str) -> None:
    seen: Dict[str, int] = {}
    for n, entry in enumerate(entries, 1):
        if entry.case in seen:
            raise ParityUsageError(f"{where}: entries {seen[entry.case]} and {n} both quarantine {entry.case!r}")
        seen[entry.case] = n
