"""Session bookkeeping of known mismatches, for the run summary (syrupy's unused-snapshot report):
which entries tests acknowledged, which of them actually showed, and which did not (stale)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Set

__all__ = ["Ledger"]


@dataclass
class Ledger:
    """Kept by the plugin in ``config.stash``; ``merge`` combines xdist workers' ledgers."""

    applied: Dict[str, Set[str]] = field(default_factory=dict)  # entry id -> test ids that used it
    triggered: Dict[str, Set[str]] = field(default_factory=dict)  # entry id -> test ids where it showed

    def record(self, entry_id: str, test_id: str, *, triggered: bool) -> None:
        """A test acknowledged ``entry_id``; ``triggered`` says whether the mismatch showed there."""
        self.applied.setdefault(entry_id, set()).add(test_id)
        if triggered:
            self.triggered.setdefault(entry_id, set()).add(test_id)

    def merge(self, other: "Ledger") -> None:
        for mine, theirs in ((self.applied, other.applied), (self.triggered, other.triggered)):
            for entry_id, tests in theirs.items():
                mine.setdefault(entry_id, set()).update(tests)

    def stale(self) -> Dict[str, List[str]]:
        """Entry id -> the tests that acknowledged it where it did not show."""
        found = {}
        for entry_id, tests in sorted(self.applied.items()):
            quiet = sorted(tests - self.triggered.get(entry_id, set()))
            if quiet:
                found[entry_id] = quiet
        return found

    def summary_lines(self, *, strict: bool = False) -> List[str]:
        """The run summary: counts, then one line per stale entry (an error under ``strict``)."""
        if not self.applied:
            return []
        stale = self.stale()
        shown = sum(1 for e in self.applied if self.triggered.get(e))
        lines = [f"known mismatches: {len(self.applied)} acknowledged, {shown} showed, {len(stale)} stale"]
        label = "ERROR stale" if strict else "stale"
        for entry_id, tests in stale.items():
            more = f" and {len(tests) - 1} more" if len(tests) > 1 else ""
            lines.append(f"{label} {entry_id}: did not show in {tests[0]}{more}; the mismatch may be fixed upstream")
        return lines
