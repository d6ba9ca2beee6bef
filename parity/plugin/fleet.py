"""The hooks behind ``--parity-shard``, ``--parity-durations``, the quarantine file and
``--parity-rerun-quarantined`` (plugin.py defines the options and registers :class:`Fleet`).

Selection runs last among the collection hooks, after ``-k``/``-m``: first the quarantined tests
alone under ``--parity-rerun-quarantined``, then the shard; what is left out is reported through
``pytest_deselected``. Under xdist each worker selects the same shard, and the controller, which
sees every report, keeps the quarantine's bookkeeping and prints its summary.
"""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import List, Optional

import pytest

from ..errors import ParityUsageError
from ..nightly import shards

__all__ = ["Fleet", "SHARD", "DURATIONS", "QUARANTINE", "RERUN_QUARANTINED", "QUARANTINE_INI"]

SHARD = "--parity-shard"
DURATIONS = "--parity-durations"
QUARANTINE = "--parity-quarantine"
RERUN_QUARANTINED = "--parity-rerun-quarantined"
QUARANTINE_INI = "parity_quarantine"


class Fleet:
    def __init__(self, config, shard=None, durations=None, quarantine=None, today=None) -> None:
        self.config = config
        self.today = today or datetime.date.today()
        self.shard = shard
        self.durations = durations
        self.quarantine = quarantine
        self.lines: List[str] = []

    @classmethod
    def from_config(cls, config) -> "Fleet":
        """Options read and files loaded once, at configure time: bad input stops the run there."""
        sent = getattr(config, "workerinput", {}).get("parity_fleet")  # from xdist's controller
        try:
            shard = config.getoption("parity_shard")
            shard = shards.parse_shard(shard, SHARD) if shard is not None else None
            durations = _durations(config, sent)
            today = datetime.date.fromisoformat(sent["today"]) if sent else datetime.date.today()
            quarantine = _load_quarantine(config, today)
        except ParityUsageError as exc:
            raise pytest.UsageError(str(exc)) from None
        if config.getoption("parity_rerun_quarantined") and quarantine is None:
            raise pytest.UsageError(
                f"{RERUN_QUARANTINED}: there is no quarantine file (give {QUARANTINE}=PATH, "
                f"the ini key {QUARANTINE_INI}, or put {_default_name()} at the root)"
            )
        return cls(config, shard, durations, quarantine, today)

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node):
        """xdist: every worker splits on what the controller read (the durations file may be the
        ``--parity-report`` this run is rewriting) and dates the quarantine on the same day."""
        durations = self.durations and {
            "seconds": dict(self.durations.seconds),
            "sources": list(self.durations.sources),
            "unreadable": self.durations.unreadable,
        }
        node.workerinput["parity_fleet"] = {"durations": durations, "today": self.today.isoformat()}

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config, items):
        if config.getoption("parity_rerun_quarantined"):
            self._keep(items, [i for i, item in enumerate(items) if self.quarantine.find(item.nodeid)])
            self.lines.append(f"{RERUN_QUARANTINED}: {len(items)} quarantined tests selected")
        if self.shard is not None:
            keep, line = shards.select([item.nodeid for item in items], self.shard, self.durations)
            self._keep(items, keep)
            self.lines.append(line)
        if self.quarantine is not None:
            for item in items:
                entry = self.quarantine.find(item.nodeid)
                if entry is not None:  # before the item's own xfail marks: pytest honours the first
                    item.add_marker(pytest.mark.xfail(reason=entry.xfail_reason, strict=False), append=False)

    def _keep(self, items, keep) -> None:
        kept = set(keep)
        dropped = [item for i, item in enumerate(items) if i not in kept]
        items[:] = [items[i] for i in keep]
        if dropped:
            self.config.hook.pytest_deselected(items=dropped)

    def pytest_runtest_logreport(self, report):
        if self.quarantine is not None:
            self.quarantine.record(report.nodeid, outcome=report.outcome, wasxfail=getattr(report, "wasxfail", None))

    def summary_lines(self) -> List[str]:
        return self.lines + (self.quarantine.summary_lines() if self.quarantine is not None else [])


def _durations(config, sent) -> Optional[shards.Durations]:
    if sent is not None:
        kept = sent["durations"]
        return kept and shards.Durations(kept["seconds"], tuple(kept["sources"]), kept["unreadable"])
    paths = [Path(p) for p in config.getoption("parity_durations") or ()]
    return shards.read_durations(paths) if paths else None


def _default_name() -> str:
    from ..nightly.quarantine import DEFAULT_FILE

    return DEFAULT_FILE


def _load_quarantine(config, today: datetime.date):
    """``--parity-quarantine`` (from the invocation folder), else the ini key (from the ini file's
    folder), else ``parity-quarantine.toml`` at the root when there is one."""
    from ..nightly import quarantine

    given = config.getoption("parity_quarantine")
    path: Optional[Path] = config.invocation_params.dir / given if given else None
    if path is None and config.getini(QUARANTINE_INI):
        path = (config.inipath.parent if config.inipath else config.rootpath) / config.getini(QUARANTINE_INI)
    if path is None:
        default = config.rootpath / quarantine.DEFAULT_FILE
        if not default.is_file():
            return None
        path = default
    try:
        name = str(path.resolve().relative_to(config.rootpath))
    except ValueError:
        name = str(path)
    return quarantine.load(path, today=today, name=name)
