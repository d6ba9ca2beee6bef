"""A recorded reference on disk: a folder holding ``reference.json`` (the manifest: what was run,
how, on what, and the names of the arrays) and the arrays in ``part-N.safetensors`` files (one
per stage of the recording: the main passes, each of PyTorch's reruns, the layers), and the
content key that says whether a reference still stands for a module.

Framework-free: numpy, ``safetensors.numpy`` and the standard library. bfloat16 arrays are stored
as their raw 16 bits (safetensors' numpy reader has no bfloat16) and viewed back from the dtype the
manifest keeps for every array.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from ...errors import ParityUsageError
from ...files import private_folder, publish, read_bytes, regular_size
from ...judge.dtypes import bfloat16
from ..diagnosis.recording import LayerCall, Recording

__all__ = [
    "FORMAT",
    "MANIFEST",
    "PART_PREFIX",
    "Arrays",
    "Reference",
    "digest",
    "key_of",
    "write_reference",
    "read_reference",
    "calls_to_json",
    "recording_from",
]

FORMAT = 1
MANIFEST = "reference.json"
PART_PREFIX, PART_SUFFIX = "part-", ".safetensors"
_WHAT = "reference"
_MANIFEST_LIMIT = 256 << 20


class Arrays:
    """The arrays of a reference being written, each under a short key; one array object held in
    several places (a layer's output that is the next layer's input) is stored once. With a
    ``folder``, :meth:`flush` writes the arrays put so far into a part file of their own and lets
    them go, so that a recording holds one of PyTorch's runs at a time."""

    def __init__(self, folder: Optional[Path] = None, recording: str = "") -> None:
        self.folder, self.recording = folder, recording
        self.arrays: Dict[str, np.ndarray] = {}  # put since the last flush
        self.dtypes: Dict[str, str] = {}  # every key's dtype
        self.files: Dict[str, List[str]] = {}  # part file -> its keys
        self._count = 0
        self._seen: Dict[int, str] = {}
        self._kept: List[Any] = []  # the arrays seen since the last flush, kept alive so that their ids stay theirs

    def put(self, array: Optional[np.ndarray]) -> Optional[str]:
        """The key of ``array`` (None for None)."""
        if array is None:
            return None
        known = self._seen.get(id(array))
        if known is not None:
            return known
        key = f"a{self._count}"
        self._count += 1
        self._seen[id(array)] = key
        self._kept.append(array)
        value = np.asarray(array)
        self.dtypes[key] = value.dtype.name
        if value.dtype.name == "bfloat16":
            value = value.view(np.uint16)
        self.arrays[key] = value if value.flags.c_contiguous else value.copy()
        return key

    def put_all(self, arrays: Optional[Sequence[Optional[np.ndarray]]]) -> Optional[List[Optional[str]]]:
        return None if arrays is None else [self.put(a) for a in arrays]

    def put_named(self, named: Iterable[Tuple[str, np.ndarray]]) -> List[Tuple[str, Optional[str]]]:
        return [(name, self.put(a)) for name, a in named]

    def flush(self) -> None:
        """Write the arrays put since the last flush into the next part file, and let them go."""
        if not self.arrays or self.folder is None:
            return
        name = f"{PART_PREFIX}{len(self.files)}{PART_SUFFIX}"
        metadata = {"format": str(FORMAT), "recording": self.recording}
        _safetensors().numpy.save_file(self.arrays, str(self.folder / name), metadata=metadata)
        self.files[name] = list(self.arrays)
        self.arrays, self._seen, self._kept = {}, {}, []


@dataclass
class Reference:
    """A reference read back: its manifest and its arrays by key."""

    path: Path
    manifest: Dict[str, Any]
    arrays: Mapping[str, np.ndarray] = field(repr=False)

    def array(self, key: Optional[str]) -> Optional[np.ndarray]:
        if key is None:
            return None
        return self.arrays[key]

    def named(self, section: str) -> List[Tuple[str, np.ndarray]]:
        """(name, array) of a manifest section written by :meth:`Arrays.put_named`."""
        return [(name, self.arrays[key]) for name, key in self.manifest[section]]

    def __getitem__(self, name: str) -> Any:
        return self.manifest[name]


def _safetensors() -> Any:
    """The safetensors package, or a usage error saying how to install it."""
    try:
        import safetensors
        import safetensors.numpy
    except ImportError:
        raise ParityUsageError(
            "recorded references are stored with safetensors, which is not installed: "
            "pip install 'pytest-parity[reference]' (or safetensors)"
        ) from None
    return safetensors


def digest(chunks: Iterable[bytes]) -> str:
    """The SHA-256 of ``chunks``, each length-prefixed (so that no two sequences hash alike)."""
    h = hashlib.sha256()
    for chunk in chunks:
        h.update(len(chunk).to_bytes(8, "little"))
        h.update(chunk)
    return h.hexdigest()


def array_chunks(named: Iterable[Tuple[str, np.ndarray]]) -> Iterable[bytes]:
    """Each array's name, dtype, shape and bytes, for :func:`digest`."""
    for name, array in named:
        value = np.ascontiguousarray(array)
        yield f"{name}|{value.dtype.name}|{list(value.shape)}".encode()
        yield value.view(np.uint8).tobytes() if value.size else b""


def key_of(parts: Mapping[str, str]) -> str:
    """The reference's key: the digest of its parts' digests (weights, code, inputs, torch version)."""
    return digest(f"{name}={parts[name]}".encode() for name in sorted(parts))


def write_reference(path, make: Callable[[Arrays], Dict[str, Any]], *, force: bool = False) -> Path:
    """Write the folder ``path`` (made if missing; its parent must exist): ``make(arrays)`` puts the
    arrays (flushing part files as it goes) and returns the manifest. Everything is written into a
    private folder first; the part files, then the manifest, are moved into place at the end, and
    part files of an earlier recording that this one does not have are removed."""
    folder = Path(path)
    if folder.exists() and not folder.is_dir():
        raise ParityUsageError(f"{_WHAT} {folder}: not a folder; give the path of a folder to write the reference into")
    if not folder.parent.is_dir():
        raise ParityUsageError(f"{_WHAT} {folder}: folder {folder.parent} does not exist")
    folder.mkdir(exist_ok=True)
    with private_folder(folder / MANIFEST, _WHAT, force=force) as private:
        arrays = Arrays(private, uuid.uuid4().hex)
        manifest = make(arrays)
        arrays.flush()
        manifest = dict(manifest, format=FORMAT, recording=arrays.recording, dtypes=arrays.dtypes, files=arrays.files)
        (private / MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        for old in folder.glob(f"{PART_PREFIX}*{PART_SUFFIX}"):
            if old.name not in arrays.files and old.is_file() and not old.is_symlink():
                old.unlink()
        for name in arrays.files:
            publish(private / name, folder / name, _WHAT)
        publish(private / MANIFEST, folder / MANIFEST, _WHAT)
    return folder


def read_reference(path) -> Reference:
    """Read the reference folder ``path``: its manifest now, each array when first asked for (a
    check reads the envelope's runs only for the tensors it sends there). A missing, partial or
    foreign reference is a usage error saying which file and why."""
    folder = Path(path)
    if not folder.is_dir():
        raise ParityUsageError(
            f"{_WHAT} {folder}: no such folder; record one with parity.record(torch_module, inputs, {str(folder)!r}) "
            "or pytest --parity --parity-record=DIR"
        )
    try:
        manifest = json.loads(read_bytes(folder / MANIFEST, _WHAT, limit=_MANIFEST_LIMIT).decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise ParityUsageError(f"{_WHAT} {folder / MANIFEST}: not a reference manifest: {exc}") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        found = manifest.get("format") if isinstance(manifest, dict) else None
        raise ParityUsageError(
            f"{_WHAT} {folder / MANIFEST}: format {found!r}, this parity reads format {FORMAT}; record it again"
        )
    return Reference(folder, manifest, _Lazy(folder, manifest))


class _Lazy(Mapping[str, np.ndarray]):
    """The arrays of a reference's part files by key, each read (and kept) when first asked for;
    a part file is opened when one of its arrays is first asked for."""

    def __init__(self, folder: Path, manifest: Mapping[str, Any]):
        self._folder, self._recording = folder, manifest.get("recording")
        self._dtypes: Dict[str, str] = dict(manifest.get("dtypes", {}))
        self._file_of = {key: name for name, keys in manifest.get("files", {}).items() for key in keys}
        missing = sorted(set(self._dtypes) - set(self._file_of))
        if missing:
            raise ParityUsageError(
                f"{_WHAT} {folder / MANIFEST}: names no file for {len(missing)} arrays; record it again"
            )
        self._open: Dict[str, Any] = {}
        self._read: Dict[str, np.ndarray] = {}

    def _file(self, name: str) -> Any:
        found = self._open.get(name)
        if found is None:
            path = self._folder / name
            regular_size(path, _WHAT)  # a regular file: nothing else is opened
            try:
                found = _safetensors().safe_open(str(path), framework="numpy")
                written_for = (found.metadata() or {}).get("recording")
            except Exception as exc:  # safetensors' own errors: a truncated or foreign file
                raise ParityUsageError(f"{_WHAT} {path}: cannot be read: {type(exc).__name__}: {exc}") from None
            if written_for != self._recording:
                raise ParityUsageError(
                    f"{_WHAT} {path}: written by another recording than {self._folder / MANIFEST}: the files come "
                    "from different recordings; record it again"
                )
            self._open[name] = found
        return found

    def __getitem__(self, key: str) -> np.ndarray:
        found = self._read.get(key)
        if found is None:
            if key not in self._dtypes:
                raise KeyError(key)
            try:
                found = self._file(self._file_of[key]).get_tensor(key)
            except ParityUsageError:
                raise
            except Exception as exc:  # an array the manifest names is not in its file
                raise ParityUsageError(
                    f"{_WHAT} {self._folder / self._file_of[key]}: cannot read array {key!r}: {exc}; record it again"
                ) from None
            found = found.view(bfloat16()) if self._dtypes[key] == "bfloat16" else found
            self._read[key] = found
        return found

    def __iter__(self) -> Iterator[str]:
        return iter(self._dtypes)

    def __len__(self) -> int:
        return len(self._dtypes)


def calls_to_json(recording: Recording, arrays: Arrays) -> List[Dict[str, Any]]:
    """Every layer call of ``recording`` (forward order), its arrays put in ``arrays``."""
    return [
        {
            "path": c.path,
            "type": c.type,
            "call": c.call,
            "inputs": arrays.put_all(c.inputs),
            "outputs": arrays.put_all(c.outputs),
            "grad_outputs": arrays.put_all(c.grad_outputs),
            "grad_inputs": arrays.put_all(c.grad_inputs),
            "input_names": list(c.input_names) if c.input_names is not None else None,
            "grad_input_names": list(c.grad_input_names) if c.grad_input_names is not None else None,
            "keywords": c.keywords,
        }
        for c in recording.calls
    ]


def recording_from(reference: Reference, section: str = "layers") -> Recording:
    """The recorded layer calls as a :class:`Recording` (arrays read from ``reference``)."""

    def arrays(keys: Optional[List[Optional[str]]]) -> Optional[List[Any]]:
        return None if keys is None else [reference.array(k) for k in keys]

    recording = Recording()
    for item in reference.manifest.get(section) or []:
        names = item["input_names"]
        grad_names = item["grad_input_names"]
        call = LayerCall(
            item["path"],
            item["type"],
            item["call"],
            arrays(item["inputs"]),
            arrays(item["outputs"]),
            arrays(item["grad_outputs"]),
            arrays(item["grad_inputs"]),
            tuple(names) if names is not None else None,
            tuple(grad_names) if grad_names is not None else None,
            item["keywords"],
        )
        recording.add(call)
    return recording
