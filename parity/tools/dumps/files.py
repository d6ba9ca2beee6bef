"""Reading one side of ``parity compare-dumps``: a folder of saved tensors or a single file, as
numpy arrays by name in execution order.

Formats, by suffix: ``.npy`` (one tensor, named by the file's stem), ``.npz`` (its keys), MindSpore
checkpoints (``.ckpt``), PyTorch state dicts or single saved tensors (``.pth``, ``.pt``, ``.bin``)
and ``.safetensors``. Only ``.ckpt`` imports MindSpore and only ``.pth``/``.pt``/``.bin`` (or a
bfloat16 ``.safetensors``) import PyTorch: numpy files are read with numpy alone.

A folder's tensors are named by file stem (``.npy``), or ``stem/key`` for the keys of an archive or
checkpoint among several files (just ``key`` when it is the folder's only file). A folder that holds
no tensor file itself may hold exactly one folder that does, at any depth (TroubleShooter's
``DIR/rank0/torch_api_dump``, msprobe's ``DIR/step0/rank0/dump_tensor_data``).

Execution order, the first rule that applies:

1. the dump's own record: TroubleShooter's ``{framework}_api_dump_info.pkl`` (JSON lines whose first
   field names the file) beside its ``{framework}_api_dump`` folder, or msprobe's ``dump.json``
   (every ``data_name`` in the order written) beside its ``dump_tensor_data`` folder; tensors it
   does not list come after, by name;
2. a numeric prefix on every file (``{index}_{name}``, as ``troubleshooter.save`` and MindSpore's
   ``TensorDump`` number their files), by that number;
3. file names in natural order (``layer2`` before ``layer10``), and each checkpoint's or archive's
   tensors in the order stored (a state dict's is its definition order; safetensors stores its
   keys sorted).
"""

from __future__ import annotations

import json
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import numpy as np

from ... import files
from ...errors import ParityUsageError

__all__ = ["Side", "read_side", "TENSOR_SUFFIXES", "natural_key"]

TENSOR_SUFFIXES = (".npy", ".npz", ".ckpt", ".pth", ".pt", ".bin", ".safetensors")
_TROUBLESHOOTER = re.compile(r"^(mindspore|torch)_api_dump$")
_NUMBERED = re.compile(r"^(\d+)_")
_FRAMEWORK = {"mindspore": "mindspore", "ms": "mindspore", "torch": "torch", "pytorch": "torch", "pt": "torch"}
_LABEL = {"mindspore": "MindSpore", "torch": "PyTorch", "": ""}


@dataclass
class Side:
    """One side of a comparison: where its tensors came from, how they are ordered, and the arrays
    (by name, in that order). ``skipped``: (name, reason) for tensors that hold no numbers."""

    label: str  # "A" or "B"
    path: str
    layout: str
    framework: str  # "mindspore", "torch" or "" when the files do not say
    order: str
    arrays: Dict[str, np.ndarray]
    folder: str = ""  # the folder read, when below ``path``
    tied: List[Tuple[str, ...]] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)
    skipped: List[Tuple[str, str]] = field(default_factory=list)

    def describe(self) -> str:
        """``runs/ms (TroubleShooter api_dump, MindSpore; 12 tensors in rank0/..., in the order of ...)``"""
        what = self.layout + (f", {_LABEL[self.framework]}" if self.framework else "")
        where = f" in {self.folder}" if self.folder else ""
        count = f"{len(self.arrays)} tensor" + ("" if len(self.arrays) == 1 else "s")
        return f"{self.path} ({what}; {count}{where}, {self.order})"


def natural_key(name: str) -> list:
    """Sort key comparing runs of digits as numbers: ``layer2`` before ``layer10``."""
    return [int(part) if i % 2 else part for i, part in enumerate(re.split(r"(\d+)", name))]


def read_side(path, label: str) -> Side:
    """The tensors of ``path`` (a folder or a file), or a usage error saying what is wrong. Files are
    read whole, one at a time, and closed: no descriptor or memory map is held per file, so a dump of
    thousands of files reads under any ``ulimit -n``. Only regular files are read (a FIFO or a link to
    a device is refused, never waited on)."""
    where = Path(path)
    if not where.exists():
        if where.is_symlink():
            raise ParityUsageError(f"{label} {path}: a link to {os.readlink(where)}, which does not exist")
        raise ParityUsageError(f"{label} {path}: no such file or folder")
    if where.is_dir():
        return _folder_side(where, label)
    return _file_side(where, label)


# -- files -----------------------------------------------------------------------------------------


def _file_side(path: Path, label: str) -> Side:
    if path.suffix not in TENSOR_SUFFIXES:
        raise ParityUsageError(
            f"{label} {path}: not a tensor file; give a folder or a file ending with one of "
            f"{', '.join(TENSOR_SUFFIXES)}"
        )
    arrays, tied, notes, framework = _read_file(path, label)
    arrays = {path.stem if key == "" else key: value for key, value in arrays.items()}
    layout = {
        ".npy": "npy file",
        ".npz": "npz archive",
        ".ckpt": "MindSpore checkpoint",
        ".safetensors": "safetensors file",
    }.get(path.suffix, "PyTorch state dict")
    return _numbers(Side(label, str(path), layout, framework, "in the order stored", arrays, tied=tied, notes=notes))


def _read_file(path: Path, label: str):
    """(arrays by key, "" for a file of one tensor; tied key groups; notes; framework)."""
    suffix = path.suffix
    if suffix in (".npy", ".npz"):
        return _numpy(path, label)
    files.regular_size(path, label)  # a framework's loader opens it by name: a regular file, checked first
    if suffix == ".ckpt":
        from ...backends import checkpoints

        return checkpoints.load_checkpoint_file(str(path)), [], [], "mindspore"
    if suffix == ".safetensors":
        return _safetensors(path, label)
    from ...backends import checkpoints

    arrays, tied, notes = checkpoints.load_state_file(str(path), tensor_ok=True)
    return arrays, tied, notes, "torch"


def _numpy(path: Path, label: str):
    """A ``.npy`` or ``.npz`` file read whole into memory (one copy) and closed: no memory map or
    descriptor outlives the call."""
    kind = path.suffix
    try:
        with files.open_regular(path, label) as stream:
            if kind == ".npy":
                return {"": np.load(stream, allow_pickle=False)}, [], [], ""
            with np.load(stream, allow_pickle=False) as archive:
                return {key: archive[key] for key in archive.files}, [], [], ""
    except ParityUsageError:
        raise
    except Exception as exc:  # ValueError, OSError, EOFError, zipfile.BadZipFile: numpy's many ways to refuse
        raise ParityUsageError(f"{label} {path}: numpy cannot read it as {kind}: {_first_line(exc)}") from None


def _safetensors(path: Path, label: str):
    """Read with numpy alone; a file numpy cannot hold (bfloat16) through PyTorch, which widens it."""
    from safetensors import SafetensorError, safe_open

    try:
        with safe_open(str(path), "np") as opened:
            framework = _FRAMEWORK.get(((opened.metadata() or {}).get("format") or "").lower(), "")
            return {key: opened.get_tensor(key) for key in opened.keys()}, [], [], framework
    except TypeError:  # a dtype numpy does not know: bfloat16
        from ...backends import checkpoints

        arrays, tied, notes = checkpoints.load_state_file(str(path))
        return arrays, tied, notes, ""
    except (SafetensorError, OSError, ValueError) as exc:
        raise ParityUsageError(f"{label} {path}: safetensors cannot read it: {_first_line(exc)}") from None


def _first_line(exc: Exception) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0] if text else ''}"


def _numbers(side: Side) -> Side:
    """Set aside the tensors that hold no numbers (strings, records), each with the reason."""
    for name in [n for n, a in side.arrays.items() if a.dtype.kind not in "biufc"]:
        side.skipped.append((name, f"holds no numbers (dtype {side.arrays.pop(name).dtype})"))
    return side


# -- folders ---------------------------------------------------------------------------------------


def _regular(path: Path) -> bool:
    """A regular file (through a link); False for what cannot be looked at (noted by :func:`_not_readable`)."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def _tensor_files(folder: Path) -> List[Path]:
    return [p for p in folder.iterdir() if p.suffix in TENSOR_SUFFIXES and _regular(p)]


def _not_readable(folder: Path) -> List[str]:
    """Notes on the entries of ``folder`` named like tensor files that are not read: links that lead
    nowhere or cannot be followed, FIFOs, devices, sockets."""
    notes = []
    for path in sorted(folder.iterdir(), key=lambda p: natural_key(p.name)):
        if path.suffix not in TENSOR_SUFFIXES or (not path.is_symlink() and path.is_dir()):
            continue
        try:
            mode = os.stat(path).st_mode
        except OSError as exc:
            target = f"a link to {os.readlink(path)} that cannot be followed" if path.is_symlink() else "unreadable"
            notes.append(f"{path.name}: {target} ({exc.strerror}); not read")
            continue
        if not stat.S_ISREG(mode):
            link = f"a link to {os.readlink(path)}, " if path.is_symlink() else ""
            notes.append(f"{path.name}: {link}{files.kind_of(mode)}, not a regular file; not read")
    return notes


def _tensor_folder(root: Path, label: str) -> Path:
    """``root``, or the one folder below it that holds tensor files."""
    if _tensor_files(root):
        return root
    found = sorted({p.parent for p in root.rglob("*") if p.suffix in TENSOR_SUFFIXES and _regular(p)})
    if len(found) == 1:
        return found[0]
    if not found:
        raise ParityUsageError(f"{label} {root}: no tensor files ({', '.join(TENSOR_SUFFIXES)}) in it or below it")
    shown = ", ".join(str(p.relative_to(root)) for p in found[:5]) + (" ..." if len(found) > 5 else "")
    ranks = {part for p in found for part in p.relative_to(root).parts if re.fullmatch(r"rank\d+", part)}
    hint = (
        f"; they look like the ranks of a sharded run ({len(ranks)} rank folders): compare it whole with "
        f"--layout-{label.lower()} FILE (compare_dumps(layout_{label.lower()}=...)), which says how each "
        "tensor is split across the ranks (docs/how-to/compare-dumps.md), or give one rank's folder"
        if len(ranks) > 1
        else "; give one of them"
    )
    raise ParityUsageError(f"{label} {root}: {len(found)} folders below it hold tensor files ({shown}){hint}")


def _folder_side(root: Path, label: str) -> Side:
    folder = _tensor_folder(root, label)
    found = sorted(_tensor_files(folder), key=lambda p: natural_key(p.name))
    arrays: Dict[str, np.ndarray] = {}
    tied, notes, frameworks = [], _not_readable(folder), set()
    for path in found:
        content, file_tied, file_notes, framework = _read_file(path, label)
        frameworks.add(framework)
        rename = {key: _name(path, key, len(found)) for key in content}
        for key, value in content.items():
            if rename[key] in arrays:
                raise ParityUsageError(
                    f"{label} {folder}: two tensors are named {rename[key]!r}; rename one of the files"
                )
            arrays[rename[key]] = value
        tied += [tuple(rename[k] for k in group) for group in file_tied]
        notes += [f"{path.name}: {note}" for note in file_notes]
    layout, framework, listed, source = _dump_layout(folder)
    if framework == "" and len(frameworks) == 1:
        framework = frameworks.pop()
    arrays, order = _ordered(arrays, found, listed, source, notes)
    others = sorted(p.name for p in folder.iterdir() if p.suffix not in TENSOR_SUFFIXES and _regular(p))
    if others:
        notes.append(
            f"{len(others)} files in {folder.name} hold no tensors and were not read: "
            + ", ".join(others[:3])
            + (" ..." if len(others) > 3 else "")
        )
    below = str(folder.relative_to(root)) if folder != root else ""
    return _numbers(Side(label, str(root), layout, framework, order, arrays, folder=below, tied=tied, notes=notes))


def _name(path: Path, key: str, count: int) -> str:
    if key == "":
        return path.stem
    return key if count == 1 else f"{path.stem}/{key}"


def _dump_layout(folder: Path) -> Tuple[str, str, Optional[List[str]], str]:
    """(layout, framework, tensor names in execution order or None, where that order comes from)."""
    match = _TROUBLESHOOTER.match(folder.name)
    info = folder.parent / f"{folder.name}_info.pkl"
    if match and info.is_file():
        return "TroubleShooter api_dump", _FRAMEWORK[match.group(1)], _info_order(info), info.name
    record = folder.parent / "dump.json"
    if folder.name == "dump_tensor_data" and record.is_file():
        data = _json(record)
        framework = _FRAMEWORK.get(str(data.get("framework", "")).lower(), "") if isinstance(data, dict) else ""
        return (
            "msprobe dump",
            framework,
            [Path(n).stem if Path(n).suffix in TENSOR_SUFFIXES else n for n in _data_names(data)],
            record.name,
        )
    return "folder", "", None, ""


def _info_order(path: Path) -> List[str]:
    """The names in TroubleShooter's api_dump info file: one JSON list per line, the name first."""
    names = []
    for number, line in files.text_lines(path, "dump record"):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except ValueError:
            raise ParityUsageError(f"{path}:{number}: not a JSON line as TroubleShooter writes them") from None
        if isinstance(entry, list) and entry and isinstance(entry[0], str):
            names.append(entry[0])
    return names


def _json(path: Path):
    try:
        return json.loads(files.read_text(path, "dump record"))
    except ValueError as exc:
        raise ParityUsageError(f"{path}: cannot parse it as JSON: {exc}") from None


def _data_names(value) -> List[str]:
    """Every ``data_name`` string in msprobe's dump.json, in the order written."""
    found = []
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "data_name" and isinstance(item, str):
                found.append(item)
            else:
                found += _data_names(item)
    elif isinstance(value, list):
        for item in value:
            found += _data_names(item)
    return found


def _ordered(arrays: Dict[str, np.ndarray], found: List[Path], listed, source: str, notes: List[str]):
    """``arrays`` in execution order (see the module's docstring), and how it was decided."""
    if listed is not None:
        position: Dict[str, int] = {}
        for name in listed:
            position.setdefault(name, len(position))
        unlisted = [n for n in arrays if n not in position]
        if unlisted:
            notes.append(
                f"{len(unlisted)} tensors are not in {source} and come after those it lists, by name: "
                + ", ".join(unlisted[:3])
                + (" ..." if len(unlisted) > 3 else "")
            )
        ordered = sorted(arrays, key=lambda n: (n not in position, position.get(n, 0), natural_key(n)))
        return {n: arrays[n] for n in ordered}, f"in the order of {source}"
    if found and all(_NUMBERED.match(p.name) for p in found):
        # Files are already in natural order, which sorts a leading number as a number.
        return arrays, "in the order of the files' numeric prefixes"
    return arrays, "files in name order, each file's tensors as stored"
