"""The checkpoint a side's blocks are read from: one file, or a checkpoint sharded over several
safetensors files with an index (Hugging Face's ``model.safetensors.index.json``, whose
``weight_map`` names the file holding each key), given as the index's path or the folder holding it."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

import numpy as np

from ...backends import checkpoints
from ...errors import ParityUsageError
from ...files import read_table

__all__ = ["Checkpoint", "open_checkpoint", "INDEX"]

INDEX = "model.safetensors.index.json"  # Hugging Face's name for a sharded safetensors checkpoint
_INDEX_SUFFIX = ".safetensors.index.json"
_INDEX_LIMIT = 256 * 2**20  # an index names each tensor once: a few MB for the largest models


@dataclass(frozen=True)
class Checkpoint:
    """``path``: what messages name (the file, or the index). ``shards``: a sharded checkpoint's
    keys, each with the path of the file holding it (None for one file)."""

    path: str
    shards: Optional[Dict[str, str]] = field(default=None, compare=False)

    def keys(self) -> List[str]:
        """Every key, read without a tensor (see :func:`parity.backends.checkpoints.checkpoint_keys`)."""
        return list(self.shards) if self.shards is not None else checkpoints.checkpoint_keys(self.path)

    def read(self, prefix: str) -> Dict[str, np.ndarray]:
        """The tensors under ``prefix``, by their names after it."""
        if self.shards is None:
            return checkpoints.read_block(self.path, prefix)
        by_file: Dict[str, List[str]] = {}
        for key, shard in self.shards.items():
            if key.startswith(prefix):
                by_file.setdefault(shard, []).append(key)
        return checkpoints.read_shards(by_file, prefix, self.path)


def open_checkpoint(path: Any, label: str, where: str) -> Checkpoint:
    """``path`` (a file, an index or the folder holding one) as a :class:`Checkpoint`; a usage error
    starting with ``where`` and naming ``label`` where it is none of them, or where an index maps a
    key to a file that is not there."""
    if not isinstance(path, (str, os.PathLike)):
        raise ParityUsageError(f"{where}: {label} must be a checkpoint's path, got {type(path).__qualname__}")
    path = os.fspath(path)
    if os.path.isdir(path):
        path = _index_in(path, label, where)
    elif not os.path.isfile(path):
        raise ParityUsageError(f"{where}: {label}={path!r} is not a file")
    if not path.endswith(".index.json"):
        return Checkpoint(path)
    return Checkpoint(path, _weight_map(path, label, where))


def _index_in(folder: str, label: str, where: str) -> str:
    if os.path.isfile(os.path.join(folder, INDEX)):
        return os.path.join(folder, INDEX)
    found = sorted(name for name in os.listdir(folder) if name.endswith(_INDEX_SUFFIX))
    if len(found) == 1:
        return os.path.join(folder, found[0])
    held = f"it holds several: {', '.join(found)}; give one" if found else f"it holds no {INDEX}"
    raise ParityUsageError(
        f"{where}: {label}={folder!r} is a folder, read as a sharded checkpoint's, but {held} "
        "(or give the checkpoint's file)"
    )


def _weight_map(index: str, label: str, where: str) -> Dict[str, str]:
    """The index's keys, each with its file's path (beside the index); every file is there."""
    source = f"{where}: {label} {index}"
    if not index.endswith(_INDEX_SUFFIX):
        raise ParityUsageError(f"{source}: only a sharded safetensors checkpoint's index (*{_INDEX_SUFFIX}) is read")
    table = read_table(index, source, "a sharded checkpoint's index", limit=_INDEX_LIMIT)
    mapping = table.get("weight_map") if isinstance(table, dict) else None
    if not isinstance(mapping, dict) or not mapping:
        raise ParityUsageError(
            f"{source}: no 'weight_map' (each key -> the file holding it), as Hugging Face writes it"
        )
    folder = os.path.dirname(os.path.abspath(index))
    shards: Dict[str, str] = {}
    for key, name in mapping.items():
        if not isinstance(name, str) or not name.endswith(".safetensors"):
            raise ParityUsageError(f"{source}: 'weight_map' maps {key!r} to {name!r}, not a .safetensors file")
        shards[key] = os.path.join(folder, name)
    missing: Dict[str, str] = {}
    for key, shard in shards.items():
        if shard not in missing and not os.path.isfile(shard):
            missing[shard] = key
    if missing:
        shown = "; ".join(f"{shard} (holding {key!r} and others)" for shard, key in list(missing.items())[:3])
        raise ParityUsageError(f"{source} maps keys to {len(missing)} files that are not there: {shown}")
    return shards
