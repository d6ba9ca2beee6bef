"""Name maps of ``parity compare-dumps``: the pairs the automatic rules miss, as (A name, B name).

A name map is a dict (or a ``.toml``/``.json`` table) whose entries name a tensor of one side and
its counterpart on the other, either way round, a value possibly a :mod:`parity.weights.layouts` value
(``parity.fuse([...])``, read from ``{fuse = [...], axis = 0}`` in a file); or a list of
``(A name, B name)`` pairs (TroubleShooter's ``name_map_list``, a ``.json`` list, a ``.csv`` such
as the ``ts_api_mapping.csv`` TroubleShooter's ``api_dump_compare`` writes). A name that prefixes
tensor names up to ``_``, ``.`` or ``/`` (``NN_Dense_0``) maps each of them to the same rest under
the other name; a trailing ``.npy``/``.pt`` is dropped.
"""

from __future__ import annotations

import csv
import difflib
import io
import json
from pathlib import Path
from typing import List, Tuple

from ... import files
from ...errors import ParityUsageError
from ...weights.layouts import Fuse, Reshape, Transpose
from ..convert.checkpoint import load_name_map
from .files import Side

__all__ = ["LAYOUTS", "load_pairs", "entries_of"]

LAYOUTS = (Fuse, Transpose, Reshape)
_SIZE_LIMIT = 64 * 1024 * 1024  # bytes of a name map file: far beyond any model's names


def load_pairs(path) -> object:
    """A name map file: ``.csv`` (two columns, A's name then B's, a header row allowed: the API
    mapping TroubleShooter's ``api_dump_compare`` writes, ``ts_api_mapping.csv``, reads as is),
    ``.json`` (a list of ``[A name, B name]`` pairs, or a table as below) or ``.toml``/``.json``
    tables of ``name = name`` entries, either side's name first (layout tables as in
    :func:`parity.tools.convert.checkpoint.load_name_map`)."""
    path = Path(path)
    if not path.exists():
        raise ParityUsageError(f"name map {path}: no such file")
    if path.suffix == ".csv":
        text = files.read_text(path, "name map", limit=_SIZE_LIMIT)
        try:
            rows = [row for row in csv.reader(io.StringIO(text, newline="")) if any(cell.strip() for cell in row)]
        except csv.Error as exc:
            raise ParityUsageError(f"name map {path}: cannot read it as CSV: {exc}") from None
        if any(len(row) != 2 for row in rows):
            raise ParityUsageError(f"name map {path}: every row must have two cells, A's name and B's")
        return _Pairs([tuple(row) for row in rows], str(path))
    if path.suffix == ".json":
        text = files.read_text(path, "name map", limit=_SIZE_LIMIT)
        try:
            data = json.loads(text)
        except (ValueError, RecursionError) as exc:
            raise ParityUsageError(f"name map {path}: cannot parse it: {exc}") from None
        if isinstance(data, list):
            if not all(isinstance(p, list) and len(p) == 2 and all(isinstance(n, str) for n in p) for p in data):
                raise ParityUsageError(f"name map {path}: a list must hold [A name, B name] pairs")
            return _Pairs([tuple(p) for p in data], str(path))
    if path.suffix not in (".toml", ".json"):
        raise ParityUsageError(f"name map {path}: give a .csv, .json or .toml file")
    return load_name_map(path)


class _Pairs(list):
    """(A name, B name) pairs read from a file, which may start with a header row."""

    def __init__(self, pairs, source: str):
        super().__init__(pairs)
        self.source = source


def entries_of(name_map, a: Side, b: Side) -> Tuple[List[Tuple[str, str]], List[str]]:
    """The plain entries of ``name_map`` as (A name, B name) pairs, prefixes expanded, and notes."""
    if name_map is None:
        return [], []
    if isinstance(name_map, dict):
        pairs, where, tables = [], "name_map", True
        for key, value in name_map.items():
            if not isinstance(value, LAYOUTS):
                pairs.append(_orient(str(key), str(value), a, b))
    elif isinstance(name_map, (list, tuple)):
        where, tables = getattr(name_map, "source", "name_map"), False
        pairs = []
        for entry in name_map:
            if not (isinstance(entry, (list, tuple)) and len(entry) == 2):
                raise ParityUsageError(f"{where}: a list holds (A name, B name) pairs, got {entry!r}")
            pairs += _cells(str(entry[0]), str(entry[1]))
    else:
        raise ParityUsageError(
            "name_map must be a dict, a list of (A name, B name) pairs or a file path, "
            f"got {type(name_map).__qualname__}"
        )
    return _expand(pairs, a, b, where, strict=tables)


def _cells(x: str, y: str) -> List[Tuple[str, str]]:
    """A CSV row's cells: TroubleShooter writes a group of APIs as lines of one cell."""
    xs, ys = x.strip().splitlines(), y.strip().splitlines()
    if len(xs) == len(ys):
        return [(p.strip(), q.strip()) for p, q in zip(xs, ys)]
    return [(x.strip(), y.strip())]


def _orient(key: str, value: str, a: Side, b: Side) -> Tuple[str, str]:
    """A table entry as (A name, B name): its key may name a tensor of either side."""
    if (_matches(key, b) and _matches(value, a)) and not (_matches(key, a) and _matches(value, b)):
        return value, key
    return key, value


def _bare(name: str) -> str:
    """A tensor's name as a file names it, its ``.npy`` or ``.pt`` dropped."""
    return name[: -len(Path(name).suffix)] if Path(name).suffix in (".npy", ".pt") else name


def _matches(name: str, side: Side) -> List[str]:
    """The tensors of ``side`` that ``name`` names: itself, or those it prefixes up to a ``_``,
    ``.`` or ``/`` (an API, a layer, a file)."""
    if name in side.arrays:
        return [name]
    return [n for n in side.arrays if len(n) > len(name) and n.startswith(name) and n[len(name)] in "_./"]


def _expand(pairs, a: Side, b: Side, where: str, *, strict: bool) -> Tuple[List[Tuple[str, str]], List[str]]:
    """(A name, B name) for every tensor the entries name. An entry naming a tensor on one side only
    is a usage error; so is any entry of a table (``strict``) that names none. A list's entries
    that name no tensor on either side (TroubleShooter's API map lists APIs whose tensors were not
    saved) are noted, and its first row is a header when it names none."""
    found, unmatched = [], []
    for index, (x, y) in enumerate(pairs):
        if not x or not y:
            continue  # TroubleShooter leaves a cell empty for an API without a counterpart
        x, y = _bare(x), _bare(y)
        in_a, in_b = _matches(x, a), _matches(y, b)
        pairs_found = _aligned(x, y, in_a, b) if in_a and in_b else []
        if pairs_found:
            found += pairs_found
        elif strict or in_a or in_b:
            side, name = (a, x) if not in_a else (b, y)
            raise ParityUsageError(
                f"{where}: {name!r} names no tensor of {side.label} ({side.path})" + _near(name, side)
            )
        elif index > 0:
            unmatched.append(f"{x} = {y}")
    notes = []
    if unmatched:
        notes.append(
            f"{where}: {len(unmatched)} entries name no tensor on either side: "
            + ", ".join(unmatched[:3])
            + (" ..." if len(unmatched) > 3 else "")
        )
    return found, notes


def _aligned(x: str, y: str, in_a: List[str], b: Side) -> List[Tuple[str, str]]:
    """One entry's tensor pairs: itself, or each of A's names under the prefix ``x`` with the same
    rest under ``y``, where B has it."""
    if in_a == [x]:
        return [(x, y)] if y in b.arrays else []
    return [(n, y + n[len(x) :]) for n in in_a if y + n[len(x) :] in b.arrays]


def _near(name: str, side: Side) -> str:
    near = difflib.get_close_matches(name, list(side.arrays), n=3, cutoff=0.6)
    return f"; nearest: {near}" if near else ""
