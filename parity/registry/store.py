"""The loaded registry: lookup by id and by API, cached per set of files."""

from __future__ import annotations

import difflib
import functools
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

from .loader import default_paths, read_files
from .schema import Availability, Entry, RegistryError

__all__ = ["Registry", "load", "installed_versions", "resolve_api", "api_matches"]

Api = Union[str, type, None]


@dataclass(frozen=True)
class Registry:
    """Every known mismatch (``entries``, in file and line order) and every measured-available API."""

    entries: Tuple[Entry, ...]
    available: Tuple[Availability, ...] = ()
    files: Tuple[str, ...] = ()
    titles: Mapping[str, str] = field(default_factory=dict)  # data file -> its `title`

    def __iter__(self) -> Iterator[Entry]:
        return iter(self.entries)

    def __len__(self) -> int:
        return len(self.entries)

    def __contains__(self, entry_id: str) -> bool:
        return any(e.id == entry_id for e in self.entries)

    def get(self, entry_id: str) -> Entry:
        """The entry ``entry_id``; :class:`RegistryError` (with close matches) when there is none."""
        for entry in self.entries:
            if entry.id == entry_id:
                return entry
        close = difflib.get_close_matches(str(entry_id), [e.id for e in self.entries], n=3)
        hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        raise RegistryError(f"no known mismatch {entry_id!r}{hint}")

    def for_api(self, torch_api: Api = None, mindspore_api: Api = None) -> List[Entry]:
        """Entries about this PyTorch and/or MindSpore API: a dotted path (``"torch.nn.Conv2d"``) or a
        class. A MindSpore API also matches entries whose fix builds it (``replacement``) only when
        asked by class; dotted paths match exactly."""
        return [
            e
            for e in self.entries
            if (torch_api is None or api_matches(e.torch, torch_api))
            and (mindspore_api is None or api_matches(e.mindspore, mindspore_api))
        ]

    def applicable(
        self,
        *,
        mindspore_version: Optional[str] = None,
        torch_version: Optional[str] = None,
        device: Optional[str] = None,
        mode: Optional[str] = None,
    ) -> List[Entry]:
        """Entries that apply to these versions (default: the installed ones), device and mode."""
        if mindspore_version is None and torch_version is None:
            mindspore_version, torch_version = installed_versions()
        return [e for e in self.entries if e.applies(mindspore_version, torch_version, device, mode)]

    def by_file(self) -> Dict[str, List[Entry]]:
        grouped: Dict[str, List[Entry]] = {}
        for entry in self.entries:
            grouped.setdefault(entry.file, []).append(entry)
        return grouped


_CACHE: Dict[Tuple[Tuple[str, int], ...], Registry] = {}


def load(paths: Optional[Sequence[Union[str, Path]]] = None) -> Registry:
    """Load and validate the mismatch data files (default: ``parity/data/mismatches/*.toml``).
    Cached until a file changes. Raises :class:`RegistryError` listing every problem with file:line."""
    files = [Path(p) for p in (paths if paths is not None else default_paths())]
    key = tuple((str(p.resolve()), _mtime(p)) for p in files)
    if key not in _CACHE:
        entries, available, titles = read_files(files)
        _CACHE[key] = Registry(tuple(entries), tuple(available), tuple(titles), dict(titles))
    return _CACHE[key]


def _mtime(path: Path) -> int:
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return -1


@functools.lru_cache(maxsize=1)
def installed_versions() -> Tuple[Optional[str], Optional[str]]:
    """(MindSpore version, PyTorch version) of the installed distributions, without importing them
    (read once per process: each lookup scans the installed distributions' metadata)."""
    from importlib import metadata

    found: List[Optional[str]] = []
    for name in ("mindspore", "torch"):
        try:
            found.append(metadata.version(name))
        except metadata.PackageNotFoundError:
            found.append(None)
    return found[0], found[1]


_RESOLVED: Dict[str, object] = {}


def resolve_api(path: str) -> Optional[object]:
    """The object a dotted path names, if its framework is already imported (never imports one)."""
    if path in _RESOLVED:
        return _RESOLVED[path]
    if path.split(".", 1)[0] not in sys.modules:
        return None
    import importlib

    module_path: str = path
    target: object = None
    parts: List[str] = []
    while module_path:
        try:
            target = importlib.import_module(module_path)
            break
        except ImportError:
            module_path, _, last = module_path.rpartition(".")
            parts.insert(0, last)
        except Exception:  # there, but failing to import (transformers where torchvision cannot load)
            _RESOLVED[path] = None
            return None
    try:
        for part in parts:
            target = getattr(target, part)
    except AttributeError:
        target = None
    _RESOLVED[path] = target
    return target


def api_matches(entry_path: str, api: Api) -> bool:
    if api is None:
        return True
    if isinstance(api, str):
        api = api.replace(":", ".")  # "mindspore.nn:Conv2d", as ParityCase factories are written
        if api == entry_path:
            return True
        resolved, other = resolve_api(entry_path), resolve_api(api)
        return resolved is not None and resolved is other
    resolved = resolve_api(entry_path)
    return isinstance(resolved, type) and isinstance(api, type) and issubclass(api, resolved)
