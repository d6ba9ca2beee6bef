"""Runs as stored: ``--parity-report`` files merged across shards, baselines on disk, and the
environment fields in which two runs differ.

A run is one environment record and its check records. Several report files of one run (one per
shard) merge into one; report files started more than :data:`NIGHT_GAP` apart are different runs
(nights). A baseline is a folder holding ``baseline.jsonl`` (:data:`BASELINE_FILE`), a report
file of the whole run with its checks sorted by node id, so that two baselines diff line by line;
a folder of such folders is a history of nights. Standard library only.
"""

from __future__ import annotations

import datetime
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterable, List, Sequence, Tuple

from .. import files
from ..errors import ParityUsageError
from .records import jsonable, read_records

__all__ = [
    "Run",
    "BASELINE_FILE",
    "NIGHT_GAP",
    "ENVIRONMENT_FIELDS",
    "check_key",
    "check_label",
    "load_runs",
    "merge",
    "load_baselines",
    "save_baseline",
    "environment_differences",
    "shard_differences",
]

BASELINE_FILE = "baseline.jsonl"
NIGHT_GAP = datetime.timedelta(hours=12)
# What makes two runs' numbers comparable: versions, the device, the CPU's kernels, how the run was
# asked to run. The commit is left out: it changes every night, and is shown on its own.
ENVIRONMENT_FIELDS = (
    "versions.",
    "device",
    "device_name",
    "torch_reference",
    "host.cpu_model",
    "host.arch",
    "host.cpu_flags",
    "run.seed",
    "run.mode",
    "run.device",
)
# What may differ between the shards of one run: the runner each ran on, and when it started.
_SHARD_FREE = ("created", "rootdir", "host.", "run.xdist_workers", "git.dirty")


@dataclass
class Run:
    """One run: its environment (the earliest shard's), its checks, and the files it came from.
    ``notes`` say what merging found (shards that differ, checks found twice)."""

    environment: Dict[str, Any]
    checks: List[Dict[str, Any]]
    sources: Tuple[str, ...] = ()
    notes: List[str] = field(default_factory=list)

    @property
    def created(self) -> datetime.datetime:
        return _created(self.environment)

    @property
    def label(self) -> str:
        """The run's date and short commit, as a column heading: ``2026-05-01 1a2b3c4``."""
        commit = (self.environment.get("git") or {}).get("commit")
        return f"{self.created.date().isoformat()}{' ' + commit[:7] if commit else ''}"


def check_key(record: Dict[str, Any]) -> Tuple[str, int]:
    """What identifies a check across runs: its test's node id and its place among the test's checks."""
    return record["nodeid"], int(record.get("index") or 0)


def check_label(key: Tuple[str, int]) -> str:
    nodeid, index = key
    return nodeid if index == 0 else f"{nodeid} (check {index + 1})"


def _created(environment: Dict[str, Any]) -> datetime.datetime:
    text = environment.get("created") or ""
    try:
        moment = datetime.datetime.fromisoformat(text)
    except ValueError:
        return datetime.datetime.min.replace(tzinfo=datetime.timezone.utc)
    return moment if moment.tzinfo else moment.replace(tzinfo=datetime.timezone.utc)


def _flat(value: Any, prefix: str = "") -> Dict[str, Any]:
    if isinstance(value, dict):
        flat: Dict[str, Any] = {}
        for key, inner in value.items():
            flat.update(_flat(inner, f"{prefix}{key}."))
        return flat
    return {prefix[:-1]: value}


def _matches(key: str, prefixes: Iterable[str]) -> bool:
    return any(key.startswith(p) if p.endswith(".") else key == p for p in prefixes)


def _show(value: Any) -> str:
    if isinstance(value, list):
        return ",".join(str(v) for v in value) or "(none)"
    return "(none)" if value is None else str(value)


def environment_differences(before: Dict[str, Any], after: Dict[str, Any]) -> List[str]:
    """``field before -> after`` for each of :data:`ENVIRONMENT_FIELDS` in which two runs differ."""
    old, new = _flat(before), _flat(after)
    keys = sorted(k for k in set(old) | set(new) if _matches(k, ENVIRONMENT_FIELDS) and k not in ("type", "schema"))
    return [f"{k} {_show(old.get(k))} -> {_show(new.get(k))}" for k in keys if old.get(k) != new.get(k)]


def shard_differences(environments: Sequence[Tuple[str, Dict[str, Any]]]) -> List[str]:
    """For each field in which the (name, environment) pairs of one run's shards differ, other
    than the runner's own (host, start time, workers): ``field: a.jsonl X, b.jsonl Y``. On CPU the
    device's name is the host's CPU, so it may differ too."""
    flats = [(name, _flat(env)) for name, env in environments]
    keys = sorted({k for _, flat in flats for k in flat} - {"type", "schema"})
    lines = []
    for key in keys:
        if _matches(key, _SHARD_FREE) or (key == "device_name" and all(f.get("device") == "CPU" for _, f in flats)):
            continue
        values = [(name, flat.get(key)) for name, flat in flats]
        if len({json.dumps(v, sort_keys=True) for _, v in values}) > 1:
            lines.append(f"{key}: " + ", ".join(f"{name} {_show(v)}" for name, v in values))
    return lines


def merge(files: Sequence[Tuple[str, Dict[str, Any], List[Dict[str, Any]]]]) -> Run:
    """One run from the (name, environment, checks) of its shards' files. A check found in more
    than one file is kept from the latest-started file, and said."""
    ordered = sorted(files, key=lambda f: _created(f[1]))
    notes = [f"the shards' environments differ: {line}" for line in shard_differences([(n, e) for n, e, _ in ordered])]
    kept: Dict[Tuple[str, int], Dict[str, Any]] = {}
    twice: List[str] = []
    for _, _, checks in ordered:
        for record in checks:
            key = check_key(record)
            if key in kept:
                twice.append(check_label(key))
            kept[key] = record
    if twice:
        shown = ", ".join(twice[:5]) + (f" and {len(twice) - 5} more" if len(twice) > 5 else "")
        notes.append(f"{len(twice)} checks were in more than one file; kept the latest-started file's: {shown}")
    checks = sorted(kept.values(), key=check_key)
    return Run(ordered[0][1], checks, tuple(n for n, _, _ in ordered), notes)


def _read(path: Path) -> Tuple[str, Dict[str, Any], List[Dict[str, Any]]]:
    if not path.exists():
        raise ParityUsageError(f"{path}: no such report file")
    environment, checks = read_records(path)
    return str(path), environment, checks


def load_runs(paths: Sequence[Path]) -> List[Run]:
    """The runs in these report files, oldest first: files started within :data:`NIGHT_GAP` of
    the previous one are shards of one run and are merged."""
    files = sorted((_read(Path(p)) for p in paths), key=lambda f: _created(f[1]))
    groups: List[List[Tuple[str, Dict[str, Any], List[Dict[str, Any]]]]] = []
    for found in files:
        if groups and _created(found[1]) - _created(groups[-1][-1][1]) <= NIGHT_GAP:
            groups[-1].append(found)
        else:
            groups.append([found])
    return [merge(group) for group in groups]


def load_baselines(path: Path, where: str) -> List[Run]:
    """The stored runs at ``path``, oldest first: a baseline folder (``baseline.jsonl`` inside), a
    folder of baseline folders (a history of nights), or a report file itself."""
    path = Path(path)
    if path.is_file():
        return [merge([_read(path)])]
    if not path.is_dir():
        raise ParityUsageError(f"{where}: {path} does not exist (give a folder written by --parity-save-baseline)")
    if (path / BASELINE_FILE).is_file():
        return [merge([_read(path / BASELINE_FILE)])]
    stored = sorted(path.glob(f"*/{BASELINE_FILE}"))
    if not stored:
        raise ParityUsageError(
            f"{where}: {path} holds no {BASELINE_FILE}, nor folders holding one (write one with --parity-save-baseline)"
        )
    return sorted((merge([_read(p)]) for p in stored), key=lambda r: r.created)


def save_baseline(folder: Path, environment: Dict[str, Any], checks: Iterable[Dict[str, Any]]) -> Path:
    """Write ``folder/baseline.jsonl``: the environment, then the checks sorted by node id and index,
    one JSON record a line. Written in a private folder and then moved into place
    (:func:`parity.files.write_text`): a reader never sees half."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ParityUsageError(f"baseline folder {folder}: cannot create it: {exc.strerror or exc}") from None
    lines = [jsonable(environment)] + [jsonable(c) for c in sorted(checks, key=check_key)]
    text = "".join(json.dumps(record, allow_nan=False, separators=(",", ":")) + "\n" for record in lines)
    return files.write_text(folder / BASELINE_FILE, text, "baseline")
