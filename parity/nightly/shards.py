"""Split one run into N disjoint shards whose union is the whole run, one shard per CI runner.

The split is a pure function of the collected node ids and the durations file, so every runner
that collects the same tests computes the same split and each test runs on exactly one of them.
With durations from an earlier ``--parity-report`` the split is balanced on time: tests are taken
longest first (ties by node id) and each goes to the shard with the least time so far (ties to the
lower shard). A test the report does not know counts at the mean recorded duration. Without
durations every test counts the same, which deals the sorted node ids round robin: shard sizes
then differ by at most one.
"""

from __future__ import annotations

import heapq
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Dict, List, Mapping, Optional, Sequence, Tuple

from .. import files
from ..errors import ParityUsageError

if TYPE_CHECKING:  # typing has it from Python 3.10; annotations are never evaluated here
    from typing import TypeGuard

__all__ = ["Shard", "Durations", "parse_shard", "read_durations", "partition", "select"]

_SPEC = re.compile(r"\s*(\d+)\s*/\s*(\d+)\s*")


@dataclass(frozen=True)
class Shard:
    """The ``index``-th (1-based) of ``count`` shards."""

    index: int
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def parse_shard(value: str, where: str) -> Shard:
    """``"I/N"`` with ``1 <= I <= N``; ``where`` names the option in the error."""
    match = _SPEC.fullmatch(value or "")
    if match is None:
        raise ParityUsageError(f"{where}: expected I/N, the I-th of N shards (for example 2/4), got {value!r}")
    index, count = int(match[1]), int(match[2])
    if count < 1 or not 1 <= index <= count:
        raise ParityUsageError(
            f"{where}: shard numbers count from 1 and I must be between 1 and N "
            f"(for example 1/{max(count, 1)} to {max(count, 1)}/{max(count, 1)}), got {value!r}"
        )
    return Shard(index, count)


@dataclass(frozen=True)
class Durations:
    """Seconds per node id, read from JSON-lines reports (``sources``)."""

    seconds: Mapping[str, float]
    sources: Tuple[str, ...] = ()
    unreadable: int = 0  # lines that were not JSON objects

    @property
    def mean(self) -> float:
        return sum(self.seconds.values()) / len(self.seconds) if self.seconds else 1.0

    def of(self, nodeid: str) -> float:
        return self.seconds.get(nodeid, self.mean)


def read_durations(paths: Sequence[Path]) -> Durations:
    """Per node id, the sum of its records' ``duration`` (a test may hold several checks); a later
    file replaces what an earlier one said about a node id. Lines without both keys (the run's
    environment record, say) are not durations; lines that are not JSON are counted."""
    seconds: Dict[str, float] = {}
    unreadable = 0
    for path in paths:
        text = files.read_text(path, "cannot read durations from")
        found, bad = _durations_in(text)
        seconds.update(found)
        unreadable += bad
    return Durations(seconds, tuple(str(p) for p in paths), unreadable)


def _durations_in(text: str) -> Tuple[Dict[str, float], int]:
    found: Dict[str, float] = {}
    unreadable = 0
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            unreadable += 1
            continue
        if not isinstance(record, dict):
            unreadable += 1
            continue
        nodeid, duration = record.get("nodeid"), record.get("duration")
        if isinstance(nodeid, str) and _is_seconds(duration):
            found[nodeid] = found.get(nodeid, 0.0) + float(duration)
    return found, unreadable


def _is_seconds(value: object) -> TypeGuard[float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value >= 0


def partition(nodeids: Sequence[str], count: int, durations: Optional[Durations] = None) -> List[int]:
    """The shard (0-based) of each node id, in the order given."""
    cost = [durations.of(n) if durations is not None else 1.0 for n in nodeids]
    order = sorted(range(len(nodeids)), key=lambda i: (-cost[i], nodeids[i], i))
    loads = [(0.0, shard) for shard in range(count)]  # a heap: least time, then lowest shard
    assigned = [0] * len(nodeids)
    for i in order:
        load, shard = heapq.heappop(loads)
        assigned[i] = shard
        heapq.heappush(loads, (load + cost[i], shard))
    return assigned


def select(nodeids: Sequence[str], shard: Shard, durations: Optional[Durations] = None) -> Tuple[List[int], str]:
    """The positions of the node ids in ``shard``, in their order, and one line that says so."""
    assigned = partition(nodeids, shard.count, durations)
    keep = [i for i, s in enumerate(assigned) if s == shard.index - 1]
    line = f"parity shard {shard}: {len(keep)} of {len(nodeids)} tests"
    if durations is None:
        return keep, line + ", split evenly by node id (no durations given)"
    total = sum(durations.of(n) for n in nodeids)
    mine = sum(durations.of(nodeids[i]) for i in keep)
    unknown = sum(1 for n in nodeids if n not in durations.seconds)
    line += f", about {mine:.1f} s of {total:.1f} s by the durations in {', '.join(durations.sources)}"
    if unknown:
        line += f"; {unknown} without a recorded duration counted at the mean, {durations.mean:.2f} s"
    if durations.unreadable:
        line += f"; {durations.unreadable} lines there were not JSON and were passed over"
    return keep, line
