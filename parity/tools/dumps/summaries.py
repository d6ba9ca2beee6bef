"""Reading msprobe's summary dumps: the ``dump.json`` that msprobe's ``statistics`` task writes
(``summary_mode`` ``statistics``: each tensor's max, min, mean and norm; ``md5``: the same plus a
checksum of its bytes), with ``construct.json`` beside it for the module hierarchy, from PyTorch
(``Module.*`` nodes) or MindSpore (``Cell.*`` nodes). Numbers only: the standard library and no
framework.

A node is one call that msprobe recorded: ``Module.blocks.0.fc.Linear.forward.0`` (a module's
path, its class, the direction, the call count), ``...parameters_grad.0`` (its parameters'
gradients) or, at levels L1 and mix, an API call such as ``Functional.linear.0.forward``. Nodes
are kept in the order ``dump.json`` lists them, which is the order the calls finished: a module's
forward comes after its children's, its backward after theirs.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from ...errors import ParityUsageError

__all__ = ["Summary", "SummaryDump", "Node", "find_records", "is_summary_dump", "read_summary", "normal_dtype"]

_FRAMEWORK = {"pytorch": "torch", "torch": "torch", "mindspore": "mindspore", "mindtorch": "torch"}
_MODULE_KINDS = ("Module", "Cell")
_DIRECTIONS = ("forward", "backward", "parameters_grad")
_STATS = ("Max", "Min", "Mean", "Norm")


@dataclass(frozen=True)
class Summary:
    """One tensor of a node: where it sits in the node (``output.0``, ``parameters.weight``), its
    dtype (numpy's name), shape, statistics (None where absent, floats that may be nan or inf) and
    checksum (msprobe's ``md5`` field, or None in statistics mode)."""

    slot: str
    dtype: str
    shape: Tuple[int, ...]
    max: Optional[float]
    min: Optional[float]
    mean: Optional[float]
    norm: Optional[float]
    checksum: Optional[str] = None

    @property
    def size(self) -> int:
        return math.prod(self.shape)


@dataclass(frozen=True)
class Node:
    """One recorded call. ``key`` pairs it with the other side's node: for a module, its path,
    direction and call count (the class may differ, ``Linear`` against ``Dense``); for an API call,
    its whole name."""

    name: str
    key: Tuple[str, ...]
    path: str  # the module's dotted path, or the API's name
    cls: str  # the module's class; "" for an API call
    direction: str
    tensors: Tuple[Summary, ...]
    parent: Optional[str] = None  # the enclosing node's name, from construct.json

    @property
    def label(self) -> str:
        """``blocks.0.norm forward`` (a second call: ``blocks.0.norm forward (call 2)``)."""
        call = self.key[-1] if self.cls else "0"
        return f"{self.path} {self.direction}" + (f" (call {int(call) + 1})" if call not in ("0", "") else "")


@dataclass
class SummaryDump:
    """One side: the dump's path, framework, level, summary mode, and its nodes in execution order."""

    label: str
    path: str
    record: str  # dump.json's path relative to ``path``
    framework: str  # "torch", "mindspore" or ""
    level: str
    mode: str  # "statistics" or "md5"
    nodes: List[Node]
    notes: List[str] = field(default_factory=list)

    @property
    def tensors(self) -> int:
        return sum(len(node.tensors) for node in self.nodes)

    def describe(self) -> str:
        name = {"torch": "PyTorch", "mindspore": "MindSpore"}.get(self.framework, "framework not named")
        return (
            f"{self.path} (msprobe {self.mode} dump, {name}, level {self.level or '?'}; {len(self.nodes)} nodes, "
            f"{self.tensors} tensors in {self.record})"
        )


def find_records(root) -> List[Path]:
    """``root`` itself when it is a ``dump.json``, the one beside it, else every one below it."""
    root = Path(root)
    if root.is_file():
        return [root] if root.name == "dump.json" else []
    if (root / "dump.json").is_file():
        return [root / "dump.json"]
    return sorted(root.rglob("dump.json")) if root.is_dir() else []


def is_summary_dump(root) -> bool:
    """Whether ``root`` is (or holds) an msprobe dump whose tensors were not saved: a statistics
    task's ``dump.json``, or one that names no tensor file."""
    records = find_records(root)
    if not records:
        return False
    try:
        text = records[0].read_text(encoding="utf-8")
        data = json.loads(text)
    except (ValueError, UnicodeDecodeError, OSError):
        return False
    return (
        isinstance(data, dict)
        and isinstance(data.get("data"), dict)
        and (data.get("task") == "statistics" or '"data_name"' not in text)
    )


def read_summary(root, label: str) -> SummaryDump:
    """The nodes of the msprobe dump at ``root``, or a usage error saying what is wrong."""
    root = Path(root)
    if not root.exists():
        raise ParityUsageError(f"{label} {root}: no such file or folder")
    records = find_records(root)
    if len(records) != 1:
        shown = ", ".join(str(r.relative_to(root)) for r in records[:4]) + (" ..." if len(records) > 4 else "")
        raise ParityUsageError(
            f"{label} {root}: "
            + (
                f"{len(records)} msprobe dump.json files below it ({shown}); give the folder of one"
                if records
                else "no msprobe dump.json in it or below it"
            )
        )
    record = records[0]
    data = _json(record, label)
    entries = data.get("data") if isinstance(data, dict) else None
    if not isinstance(entries, dict):
        raise ParityUsageError(f'{label} {record}: not an msprobe dump.json (no "data" table of nodes)')
    parents = _parents(record.parent / "construct.json", label)
    nodes = [_node(name, entry, parents.get(name)) for name, entry in entries.items() if isinstance(entry, dict)]
    nodes = [node for node in nodes if node.tensors]
    if not nodes:
        raise ParityUsageError(f"{label} {record}: no tensor statistics in it")
    modes = {"md5" if any(t.checksum for n in nodes for t in n.tensors) else "statistics"}
    where = str(record.relative_to(root)) if root.is_dir() else record.name
    dump = SummaryDump(
        label,
        str(root),
        where,
        _FRAMEWORK.get(str(data.get("framework", "")).lower(), ""),
        str(data.get("level", "")),
        modes.pop(),
        nodes,
    )
    if not parents:
        dump.notes.append("no construct.json beside dump.json: nodes are shown without the modules that enclose them")
    return dump


def _json(path: Path, label: str):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise ParityUsageError(f"{label} {path}: cannot parse it as JSON: {exc}") from None


def _parents(path: Path, label: str) -> Dict[str, Optional[str]]:
    if not path.is_file():
        return {}
    data = _json(path, label)
    return {str(k): (str(v) if v else None) for k, v in data.items()} if isinstance(data, dict) else {}


def _node(name: str, entry: dict, parent: Optional[str]) -> Node:
    parts = name.split(".")
    tensors = tuple(_summaries(entry))
    if parts[0] in _MODULE_KINDS and len(parts) >= 5 and parts[-2] in _DIRECTIONS:
        path = ".".join(parts[1:-3])
        return Node(name, ("module", path, parts[-2], parts[-1]), path, parts[-3], parts[-2], tensors, parent)
    direction = parts[-1] if parts[-1] in _DIRECTIONS else ""
    api = ".".join(parts[:-2]) if direction else name
    return Node(name, ("api", name), api, "", direction, tensors, parent)


def _summaries(value, slot: str = ""):
    """Every tensor's statistics in a node's entry, depth first, each with its slot."""
    if isinstance(value, dict):
        if "Max" in value or "md5" in value:
            if "shape" in value and "dtype" in value:
                yield _summary(slot, value)
            return
        for key, item in value.items():
            yield from _summaries(item, f"{slot}.{key}" if slot else str(key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _summaries(item, f"{slot}.{index}" if slot else str(index))


def _summary(slot: str, value: dict) -> Summary:
    shape = tuple(int(n) for n in value.get("shape") or ())
    maximum, minimum, mean, norm = (_float(value.get(key)) for key in _STATS)
    checksum = value.get("md5")
    # A parameter gradient is listed as a one-element list under the parameter's name: weight.0.
    slot = slot[:-2] if slot.endswith(".0") and not slot.startswith(("input", "output")) else slot
    return Summary(
        slot,
        normal_dtype(str(value.get("dtype", ""))),
        shape,
        maximum,
        minimum,
        mean,
        norm,
        checksum=str(checksum) if checksum else None,
    )


def _float(value) -> Optional[float]:
    if value is None or isinstance(value, bool):
        return None if value is None else float(value)
    try:
        return float(value)  # json reads NaN and Infinity; msprobe may also write "nan" or "inf"
    except (TypeError, ValueError):
        return None


def normal_dtype(dtype: str) -> str:
    """numpy's name for a dtype as either framework writes it: ``torch.float32``, ``Float32``."""
    name = dtype.rpartition(".")[2].lower()
    return {"bool_": "bool", "half": "float16", "float": "float32", "double": "float64"}.get(name, name)
