"""Reassembling a sharded (multi-rank) dump into whole tensors, by a declarative layout.

A sharded run's dump holds one folder per rank, ``DIR/rank{N}`` or msprobe's ``DIR/step{S}/rank{N}``
(one step), each read as :func:`parity.tools.dumps.files.read_side` reads a folder. A layout file
(``.toml`` or ``.json``) says how the ranks divide and how each tensor is sharded::

    groups = {tp = 2, pp = 2}   # rank = tp + 2 * pp: the first group varies fastest
    stage = "pp"                # pipeline stages: each tensor lives on the ranks of one stage

    [[tensor]]
    match = "fc1.*"             # a glob over tensor names; the first entry that matches applies
    split = {dim = 0, group = "tp"}   # concatenate the group's shards along dim, in rank order

    [[tensor]]
    match = "fc2.output"
    partial = "tp"              # partial sums: add the group's shards

A group a tensor's entry neither splits nor sums holds copies (the default for a name no entry
matches): they must be identical, and one is kept. Fails closed: a missing rank folder, an empty
rank, a shard missing from a rank that should hold one, a tensor on two pipeline stages, copies
that differ, or shards whose shapes do not stitch is a usage error naming the rank and the tensor.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import numpy as np

from ... import files
from ...errors import ParityUsageError
from .files import Side, natural_key, read_side

__all__ = ["Layout", "load_layout", "read_sharded"]

_RANK = re.compile(r"^rank(\d+)$")
_STEP = re.compile(r"^step(\d+)$")
_KEYS = {"match", "split", "partial", "experts"}


@dataclass(frozen=True)
class Rule:
    match: str
    split: Optional[Tuple[int, str]] = None  # (dim, group); experts are a split too
    partial: Optional[str] = None


@dataclass
class Layout:
    """How a sharded run's ranks divide into groups, and how each tensor is sharded."""

    source: str
    groups: Dict[str, int]  # in order: the first varies fastest with the rank
    stage: Optional[str] = None
    rules: List[Rule] = field(default_factory=list)

    @property
    def ranks(self) -> int:
        return int(np.prod(list(self.groups.values())))

    def coords(self, rank: int) -> Dict[str, int]:
        out = {}
        for name, size in self.groups.items():
            out[name], rank = rank % size, rank // size
        return out

    def rule(self, name: str) -> Rule:
        return next((r for r in self.rules if fnmatch.fnmatchcase(name, r.match)), Rule("*"))


def load_layout(path, option: str = "--layout") -> Layout:
    """A layout file, or a usage error naming the key that is wrong."""
    path = Path(path)
    source = f"{option} {path}"
    data = files.read_table(path, source, option, limit=1024 * 1024)
    return parse_layout(data, source)


def parse_layout(data, source: str) -> Layout:
    if not isinstance(data, dict):
        raise ParityUsageError(f"{source}: expected a table with groups and tensor entries")
    unknown = sorted(set(data) - {"groups", "stage", "ranks", "tensor"})
    if unknown:
        raise ParityUsageError(f"{source}: unknown key {unknown[0]!r} (groups, stage, ranks, tensor)")
    groups = data.get("groups")
    if not isinstance(groups, dict) or not groups:
        raise ParityUsageError(f"{source}: groups: give each group's size, e.g. groups = {{tp = 2, pp = 2}}")
    for name, size in groups.items():
        if not isinstance(size, int) or isinstance(size, bool) or size < 1:
            raise ParityUsageError(f"{source}: groups.{name}: a size is a whole number >= 1, not {size!r}")
    layout = Layout(source, dict(groups))
    if "ranks" in data and data["ranks"] != layout.ranks:
        raise ParityUsageError(f"{source}: ranks = {data['ranks']!r}, but the groups' sizes multiply to {layout.ranks}")
    stage = data.get("stage")
    if stage is not None and stage not in groups:
        raise ParityUsageError(f"{source}: stage = {stage!r} names no group ({', '.join(groups)})")
    layout.stage = stage
    entries = data.get("tensor", [])
    if not isinstance(entries, list):
        raise ParityUsageError(f"{source}: tensor: a list of entries ([[tensor]] tables)")
    for index, entry in enumerate(entries):
        layout.rules.append(_rule(entry, f"{source}: tensor[{index}]", layout))
    return layout


def _rule(entry, where: str, layout: Layout) -> Rule:
    if not isinstance(entry, dict) or not isinstance(entry.get("match"), str):
        raise ParityUsageError(f"{where}: give match = a glob over tensor names")
    unknown = sorted(set(entry) - _KEYS)
    if unknown:
        raise ParityUsageError(f"{where}: unknown key {unknown[0]!r} (match, split, partial, experts)")
    kinds = [k for k in ("split", "partial", "experts") if k in entry]
    if len(kinds) != 1:
        raise ParityUsageError(f"{where}: give exactly one of split, partial or experts")
    kind = kinds[0]
    value = entry[kind]
    if kind == "partial":
        group = value
    else:
        if not isinstance(value, dict) or set(value) != {"dim", "group"} or not isinstance(value["dim"], int):
            raise ParityUsageError(f"{where}: {kind} = {{dim = N, group = NAME}}")
        group = value["group"]
    if group not in layout.groups or group == layout.stage:
        raise ParityUsageError(
            f"{where}: {kind}: {group!r} is not a group shards divide over ({', '.join(layout.groups)}"
            + (f"; {layout.stage} is the pipeline stage)" if layout.stage else ")")
        )
    if kind == "partial":
        return Rule(entry["match"], partial=group)
    return Rule(entry["match"], split=(value["dim"], group))


def rank_folders(root: Path, label: str) -> Dict[int, Path]:
    """``rank{N}`` folders under ``root``, or under its one ``step{S}`` folder (msprobe's layout)."""
    base = root
    steps = [p for p in root.iterdir() if p.is_dir() and _STEP.match(p.name)] if root.is_dir() else []
    if steps:
        if len(steps) > 1:
            names = ", ".join(sorted((p.name for p in steps), key=natural_key))
            raise ParityUsageError(f"{label} {root}: {len(steps)} step folders ({names}); give one of them")
        base = steps[0]
    if not base.is_dir():
        raise ParityUsageError(f"{label} {root}: a sharded dump is a folder of rank folders")
    found = {int(m.group(1)): p for p in base.iterdir() if p.is_dir() and (m := _RANK.match(p.name))}
    if not found:
        raise ParityUsageError(f"{label} {root}: no rank folders (rank0, rank1, ...) in it")
    return found


def read_sharded(path, label: str, layout: Layout) -> Side:
    """The whole tensors of the sharded dump under ``path``, reassembled by ``layout``."""
    root = Path(path)
    if not root.exists():
        raise ParityUsageError(f"{label} {path}: no such file or folder")
    folders = rank_folders(root, label)
    missing = [r for r in range(layout.ranks) if r not in folders]
    extra = sorted(r for r in folders if r >= layout.ranks)
    if missing:
        raise ParityUsageError(
            f"{label} {path}: no folder for rank " + ", ".join(map(str, missing)) + f" of the {layout.ranks} "
            f"ranks {layout.source} describes"
        )
    if extra:
        raise ParityUsageError(
            f"{label} {path}: rank{extra[0]} is beyond the {layout.ranks} ranks {layout.source} describes"
        )
    sides: Dict[int, Side] = {}
    for rank in range(layout.ranks):
        try:
            sides[rank] = read_side(folders[rank], label)
        except ParityUsageError as exc:
            raise ParityUsageError(f"rank{rank}: {exc}") from None
        if not sides[rank].arrays:
            raise ParityUsageError(f"{label} {folders[rank]}: rank{rank} holds no tensors that hold numbers")
    names: List[str] = []
    for rank in range(layout.ranks):
        names += [n for n in sides[rank].arrays if n not in names]
    arrays = {name: _whole(name, sides, layout, label) for name in names}
    first = sides[0]
    notes = [
        f"rank{r}: {len(sides[r].arrays)} tensors read from {folders[r].relative_to(root)}"
        + (f"/{sides[r].folder}" if sides[r].folder else "")
        for r in range(layout.ranks)
    ]
    notes.append(f"{len(arrays)} whole tensors reassembled from {layout.ranks} ranks by {layout.source}")
    notes += [f"rank{r}: {note}" for r in range(layout.ranks) for note in sides[r].notes]
    groups = " x ".join(f"{k}={v}" for k, v in layout.groups.items())
    return Side(
        label,
        str(root),
        f"sharded {first.layout}, {layout.ranks} ranks ({groups})",
        first.framework,
        f"in rank order, each rank's {first.order}",
        arrays,
        notes=notes,
        skipped=[(n, f"rank{r}: {why}") for r in range(layout.ranks) for n, why in sides[r].skipped],
    )


def _whole(name: str, sides: Dict[int, Side], layout: Layout, label: str) -> np.ndarray:
    rule = layout.rule(name)
    holders = [r for r in range(layout.ranks) if name in sides[r].arrays]
    expected = list(range(layout.ranks))
    if layout.stage:
        stages = sorted({layout.coords(r)[layout.stage] for r in holders})
        if len(stages) > 1:
            raise ParityUsageError(
                f"{label}: {name!r} is on {layout.stage} stages " + ", ".join(map(str, stages)) + "; a tensor "
                "belongs to one pipeline stage (give the stages' tensors different names)"
            )
        expected = [r for r in expected if layout.coords(r)[layout.stage] == stages[0]]
    lacking = [r for r in expected if r not in holders]
    if lacking:
        raise ParityUsageError(
            f"{label}: {name!r} is missing from rank "
            + ", ".join(map(str, lacking))
            + " (held by rank "
            + ", ".join(map(str, holders))
            + "): a shard is missing"
        )
    parts = {tuple(layout.coords(r).items()): (sides[r].arrays[name], f"rank{r}") for r in expected}
    for group in layout.groups:
        if group == layout.stage:
            continue
        buckets: Dict[tuple, list] = {}
        for coords, part in sorted(parts.items(), key=lambda kv: dict(kv[0])[group]):
            rest = tuple(kv for kv in coords if kv[0] != group)
            buckets.setdefault(rest, []).append(part)
        parts = {rest: _combine(name, group, rule, shards, label) for rest, shards in buckets.items()}
    ((whole, _),) = parts.values()
    return whole


def _combine(name: str, group: str, rule: Rule, shards: list, label: str):
    arrays = [a for a, _ in shards]
    ranks = "+".join(where for _, where in shards)
    shapes = ", ".join(f"{where} {tuple(a.shape)}" for a, where in shards)
    if rule.split and rule.split[1] == group:
        dim = rule.split[0]
        try:
            return np.concatenate(arrays, axis=dim), ranks
        except (ValueError, IndexError) as exc:
            raise ParityUsageError(
                f"{label}: {name!r}: the {group} shards do not stitch along dim {dim} ({shapes}): {exc}"
            ) from None
    if len({(a.shape, a.dtype) for a in arrays}) > 1:
        raise ParityUsageError(f"{label}: {name!r}: the {group} shards differ in shape or dtype ({shapes})")
    if rule.partial == group:
        return np.sum(np.stack(arrays), axis=0, dtype=arrays[0].dtype), ranks
    for array, where in shards[1:]:
        if not np.array_equal(array, arrays[0], equal_nan=array.dtype.kind in "fc"):
            raise ParityUsageError(
                f"{label}: {name!r}: the copy on {where} differs from the one on {shards[0][1]}, yet the "
                f"layout has no split or partial over {group} for it (so its copies must agree)"
            )
    return arrays[0], ranks
