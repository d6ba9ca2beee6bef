"""Map every parameter and buffer of a MindSpore Cell to its PyTorch counterpart, copy values
across in either direction, and verify the copy.

Mapping order: an explicit ``name_map`` (PyTorch name -> MindSpore name) always wins; then the
same attribute path; then the known renames (norm ``gamma/beta/moving_mean/moving_variance`` <->
``weight/bias/running_mean/running_var``, Embedding ``embedding_table`` <-> ``weight``); last,
what is left is aligned in definition order by kind, leaf and shape, and the report says so.
Anything left over, ambiguous or of the wrong shape is a :class:`ParityUsageError` with a table.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from .backends import Slot
from .errors import ParityUsageError

__all__ = ["Pair", "WeightMap", "WeightReport", "map_weights", "copy_weights", "fill_weights"]

# PyTorch leaf name -> MindSpore leaf names it may be called instead.
RENAMES: Dict[str, Tuple[str, ...]] = {
    "weight": ("gamma", "embedding_table"),
    "bias": ("beta",),
    "running_mean": ("moving_mean",),
    "running_var": ("moving_variance",),
}
_CANONICAL = {alt: leaf for leaf, alts in RENAMES.items() for alt in alts}
# Buffers that exist on one side only by design, with the reason shown in the report.
TORCH_ONLY = {"num_batches_tracked": "BatchNorm step counter; MindSpore keeps none"}


@dataclass(frozen=True)
class Pair:
    ms: str
    torch: str
    how: str  # "same name", "renamed", "name_map", "definition order"
    ms_shape: Tuple[int, ...]
    torch_shape: Tuple[int, ...]
    trainable: bool

    @property
    def reshaped(self) -> bool:
        return self.ms_shape != self.torch_shape


@dataclass
class WeightMap:
    pairs: List[Pair]
    ignored: List[Tuple[str, str]] = field(default_factory=list)  # (PyTorch name, reason)

    def torch_name(self, ms_name: str) -> str:
        return {p.ms: p.torch for p in self.pairs}[ms_name]

    def trainable_pairs(self) -> List[Pair]:
        return [p for p in self.pairs if p.trainable]

    def alignments(self) -> List[Pair]:
        """Pairs not matched by name: the report lists them so nothing is guessed silently."""
        return [p for p in self.pairs if p.how == "definition order"]


@dataclass
class WeightReport:
    """What a transfer did: the map, the direction and how many tensors were verified."""

    map: WeightMap
    direction: str  # "PyTorch -> MindSpore", "MindSpore -> PyTorch", "constant 0.1", "as is"
    verified: int = 0

    @property
    def total(self) -> int:
        return len(self.map.pairs)

    def __str__(self) -> str:
        if self.direction == "as is":
            return f"{self.total}/{self.total} tensors mapped; values left as built (weights='as_is')"
        text = f"{self.verified}/{self.total} tensors mapped and verified identical ({self.direction})"
        extra = []
        if self.map.ignored:
            extra.append(f"{len(self.map.ignored)} PyTorch-only buffers ignored ({self.map.ignored[0][1]})")
        aligned = self.map.alignments()
        if aligned:
            shown = ", ".join(f"{p.torch} -> {p.ms}" for p in aligned[:3])
            more = f" and {len(aligned) - 3} more" if len(aligned) > 3 else ""
            extra.append(f"{len(aligned)} aligned by definition order: {shown}{more}")
        reshaped = [p for p in self.map.pairs if p.reshaped]
        if reshaped:
            extra.append(f"{len(reshaped)} reshaped across unit dims, e.g. {reshaped[0].torch} "
                         f"{reshaped[0].torch_shape} -> {reshaped[0].ms} {reshaped[0].ms_shape}")
        return text + "".join(f"; {e}" for e in extra)


def _squeezed(shape) -> Tuple[int, ...]:
    return tuple(d for d in shape if d != 1)


def _compatible(a: Slot, b: Slot) -> bool:
    return a.shape == b.shape or _squeezed(a.shape) == _squeezed(b.shape)


def _canonical_leaf(slot: Slot) -> str:
    return _CANONICAL.get(slot.leaf, slot.leaf)


NameMap = Optional[object]  # dict, callable or list of (regex, replacement)


def _explicit(name_map, torch_names: Sequence[str], ms_names: set) -> Dict[str, str]:
    if name_map is None:
        return {}
    if callable(name_map):
        found = {t: name_map(t) for t in torch_names}
        return {t: m for t, m in found.items() if m}
    if isinstance(name_map, dict):
        unknown = [k for k in name_map if k not in torch_names]
        if unknown:
            hint = ""
            if all(k in ms_names for k in unknown):
                hint = " They look like MindSpore names: keys are PyTorch names, values MindSpore names."
            raise ParityUsageError(f"name_map names PyTorch tensors that do not exist: {unknown}.{hint}")
        return dict(name_map)
    if isinstance(name_map, (list, tuple)):
        rules = [(re.compile(p), r) for p, r in name_map]
        result = {}
        for t in torch_names:
            for pattern, replacement in rules:
                if pattern.search(t):
                    result[t] = pattern.sub(replacement, t)
                    break
        return result
    raise ParityUsageError(
        "name_map must be a dict {pytorch_name: mindspore_name}, a callable or a list of "
        f"(regex, replacement) rules, got {type(name_map).__qualname__}"
    )


def _table(rows: List[Tuple[str, str, str, str]]) -> str:
    header = ("side", "name", "shape", "dtype")
    widths = [max(len(r[i]) for r in rows + [header]) for i in range(4)]
    line = lambda r: "  " + "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip()  # noqa: E731
    return "\n".join([line(header)] + [line(r) for r in rows])


def _row(side: str, slot: Slot):
    return (side, slot.name, str(slot.shape), slot.dtype)


def map_weights(ms_slots: List[Slot], torch_slots: List[Slot], name_map=None) -> WeightMap:
    """Pair every MindSpore slot with exactly one PyTorch slot, or raise with a table."""
    ms_by_name = {s.name: s for s in ms_slots}
    for slot in ms_slots:
        for alias in slot.aliases:
            ms_by_name.setdefault(alias, slot)
    explicit = _explicit(name_map, [s.name for s in torch_slots] +
                         [a for s in torch_slots for a in s.aliases], set(ms_by_name))
    claimed: Dict[str, Slot] = {}  # ms name -> torch slot
    pairs: List[Pair] = []
    conflicts: List[Tuple[Slot, Slot]] = []
    ignored: List[Tuple[str, str]] = []
    rest_torch: List[Slot] = []

    def claim(t: Slot, m: Slot, how: str):
        claimed[m.name] = t
        pairs.append(Pair(m.name, t.name, how, m.shape, t.shape, m.trainable and t.trainable))

    # Explicit entries first, so that an automatic match cannot take a name the map assigns.
    ordered = sorted(torch_slots, key=lambda t: not (t.name in explicit or any(a in explicit for a in t.aliases)))
    for t in ordered:
        target = explicit.get(t.name) or next((explicit[a] for a in t.aliases if a in explicit), None)
        if target is not None:
            m = ms_by_name.get(target)
            if m is None:
                raise ParityUsageError(f"name_map maps PyTorch {t.name!r} to {target!r}, which is no "
                                       f"MindSpore parameter. MindSpore has: {sorted(ms_by_name)}")
            if m.name in claimed:
                raise ParityUsageError(f"name_map maps both {claimed[m.name].name!r} and {t.name!r} to {m.name!r}")
            (claim(t, m, "name_map") if _compatible(t, m) else conflicts.append((m, t)))
            continue
        prefix = t.name[: len(t.name) - len(t.leaf)]
        candidates = [t.name] + [prefix + alt for alt in RENAMES.get(t.leaf, ())]
        m = next((ms_by_name[c] for c in candidates if c in ms_by_name and ms_by_name[c].name not in claimed), None)
        if m is not None:
            how = "same name" if m.name == t.name else "renamed"
            (claim(t, m, how) if _compatible(t, m) else conflicts.append((m, t)))
        elif t.leaf in TORCH_ONLY:
            ignored.append((t.name, TORCH_ONLY[t.leaf]))
        else:
            rest_torch.append(t)
    if conflicts:
        rows = [r for m, t in conflicts for r in (_row("MindSpore", m), _row("PyTorch", t))]
        raise ParityUsageError("Parameter shapes differ between paired names:\n" + _table(rows))
    position = {t.name: i for i, t in enumerate(torch_slots)}
    rest_torch.sort(key=lambda t: position[t.name])
    rest_ms = [m for m in ms_slots if m.name not in claimed]
    _align_by_order(rest_ms, rest_torch, claim)
    pairs.sort(key=lambda p: position[p.torch])  # definition order, however each pair was found
    return WeightMap(pairs, ignored)


def _align_by_order(rest_ms: List[Slot], rest_torch: List[Slot], claim: Callable) -> None:
    """Pair what names could not, in definition order by kind, leaf and shape; raise otherwise."""
    if not rest_ms and not rest_torch:
        return
    for trainable in (True, False):
        ms_group = [m for m in rest_ms if m.trainable == trainable]
        torch_group = [t for t in rest_torch if t.trainable == trainable]
        fits = len(ms_group) == len(torch_group) and all(
            _compatible(m, t) and _canonical_leaf(m) == _canonical_leaf(t) for m, t in zip(ms_group, torch_group))
        if not fits:
            rows = [_row("MindSpore", m) for m in rest_ms] + [_row("PyTorch", t) for t in rest_torch]
            raise ParityUsageError(
                f"Unmapped parameters: in MindSpore only {[m.name for m in rest_ms]}; "
                f"in PyTorch only {[t.name for t in rest_torch]}\n{_table(rows)}\n"
                "Names differ beyond the known renames and the leftovers do not line up in definition "
                "order by kind and shape. Pass name_map={pytorch_name: mindspore_name} for these.")
        for m, t in zip(ms_group, torch_group):
            claim(t, m, "definition order")


def copy_weights(wmap: WeightMap, src, dst, *, to_torch: bool) -> WeightReport:
    """Copy every mapped tensor from ``src`` to ``dst`` and verify each landed bit-identical."""
    from .backends import mindspore as ms_backend, torch as torch_backend

    read = ms_backend.read if to_torch else torch_backend.read
    write = torch_backend.write if to_torch else ms_backend.write
    read_back = torch_backend.read if to_torch else ms_backend.read
    verified = 0
    for pair in wmap.pairs:
        src_name, dst_name = (pair.ms, pair.torch) if to_torch else (pair.torch, pair.ms)
        dst_shape = pair.torch_shape if to_torch else pair.ms_shape
        value = read(src, src_name).reshape(dst_shape)
        write(dst, dst_name, value)
        landed = read_back(dst, dst_name)
        if not np.array_equal(landed, value.astype(landed.dtype), equal_nan=True):
            raise ParityUsageError(f"copying {src_name} -> {dst_name} did not take: the values read back differ "
                                   f"(destination dtype {landed.dtype}, source {value.dtype})")
        verified += 1
    direction = "MindSpore -> PyTorch" if to_torch else "PyTorch -> MindSpore"
    return WeightReport(wmap, direction, verified)


def fill_weights(wmap: WeightMap, ms_model, torch_model, value: float) -> WeightReport:
    """Set every floating parameter and buffer on both sides to ``value``."""
    from .backends import mindspore as ms_backend, torch as torch_backend

    verified = 0
    for pair in wmap.pairs:
        for backend, model, name, shape in ((ms_backend, ms_model, pair.ms, pair.ms_shape),
                                            (torch_backend, torch_model, pair.torch, pair.torch_shape)):
            current = backend.read(model, name)
            if current.dtype.kind == "f":
                backend.write(model, name, np.full(shape, value, current.dtype))
        if np.array_equal(ms_backend.read(ms_model, pair.ms).ravel(), torch_backend.read(torch_model, pair.torch).ravel()):
            verified += 1
    return WeightReport(wmap, f"constant {value:g}", verified)
