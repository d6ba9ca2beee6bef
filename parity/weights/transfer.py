"""Map every parameter and buffer of a MindSpore Cell to its PyTorch counterpart, copy values
across in either direction, and verify the copy.

Mapping order: an explicit ``name_map`` always wins (PyTorch name -> MindSpore name, or a
:mod:`parity.weights.layouts` value such as ``parity.fuse([...])`` for a tensor made of several); then
the same attribute path; then the known renames (norm ``gamma/beta/moving_mean/moving_variance``
<-> ``weight/bias/running_mean/running_var``, Embedding ``embedding_table`` <-> ``weight``).
PyTorch buffers that are not part of the state (non-persistent buffers, BatchNorm's step
counter) are then set aside as ignored, with the reason. What is left is paired as fused q/k/v
where shapes make that unambiguous, then in definition order (all of it in lockstep, else
by kind and shape), and the report says so. Where that leaves tensors over, or names alike hold
tensors of other shapes, what is left is paired by structure (:mod:`parity.weights.structure`),
all of it or none. Anything still left over, or of the wrong shape, is a
:class:`ParityUsageError` listing the leftovers with the pairs the structure vouches for.
"""

from __future__ import annotations

import difflib
import fnmatch
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Set, Tuple

import numpy as np
import numpy.typing as npt

from ..backends import Slot
from ..errors import ParityUsageError
from .layouts import Fuse, Layout, Pair, Reshape, Transpose, by_torch_name, layout_pairs, torch_layout
from .pairing import (
    RENAMES,
    Claim,
    Index,
    Unmapped,
    align_by_order,
    compatible,
    fuse_automatically,
    row,
    some,
    table,
    unmapped_message,
)
from .structure import Step, align

__all__ = ["Pair", "WeightMap", "WeightReport", "map_weights", "copy_weights", "fill_weights"]

# Buffers that exist on one side only by design, with the reason shown in the report.
TORCH_ONLY = {"num_batches_tracked": "BatchNorm step counter; MindSpore keeps none"}
NOT_PERSISTENT = "non-persistent buffers, not in state_dict"
STRUCTURE = "structure"  # how a pair was found: definition order, layer kind and shape agree


@dataclass
class WeightMap:
    pairs: List[Pair]
    ignored: List[Tuple[str, str]] = field(default_factory=list)  # (PyTorch name, reason)
    # (side, name): constants of one side only, with no counterpart, left as built (a check's map)
    constants: List[Tuple[str, str]] = field(default_factory=list)
    # (side, name): what ``ignore=`` named, left as built and unpaired
    left_out: List[Tuple[str, str]] = field(default_factory=list)

    def torch_name(self, ms_name: str) -> str:
        return {p.ms: p.torch for p in self.pairs}[ms_name]

    def trainable_pairs(self) -> List[Pair]:
        return [p for p in self.pairs if p.trainable]

    def alignments(self) -> List[Pair]:
        """Pairs not matched by name: the report lists them so nothing is guessed silently."""
        return [p for p in self.pairs if p.how in ("definition order", STRUCTURE)]


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
        return text + "".join(f"; {e}" for e in self._extras())

    def _extras(self) -> List[str]:
        extra = []
        reasons: Dict[str, List[str]] = {}
        for name, reason in self.map.ignored:
            reasons.setdefault(reason, []).append(name)
        for reason, names in reasons.items():
            shown = f": {some(names)}" if reason == NOT_PERSISTENT else ""  # a step counter per BatchNorm is noise
            extra.append(f"{len(names)} PyTorch-only buffers ignored ({reason}{shown})")
        for side in ("MindSpore", "PyTorch"):
            names = [name for owner, name in self.map.constants if owner == side]
            if names:
                extra.append(
                    f"{len(names)} {side}-only constants left as built (not trainable, no counterpart): {some(names)}"
                )
        if self.map.left_out:
            shown = some([f"{side} {name}" for side, name in self.map.left_out])
            extra.append(f"{len(self.map.left_out)} left as built, as ignore= asks: {shown}")
        for label in ("fused automatically", "split automatically", "fused by structure", "split by structure"):
            pairs = [p for p in self.map.pairs if p.how == label]
            if pairs:
                wholes = {p.ms if label.startswith("fused") else p.torch for p in pairs}
                extra.append(f"{len(wholes)} {label}: {_fusions(pairs, label)}")
        aligned = [p for p in self.map.pairs if p.how == "definition order"]
        if aligned:
            extra.append(
                f"{len(aligned)} aligned by definition order: {some([f'{p.torch} -> {p.ms}' for p in aligned])}"
            )
        by_structure = [p for p in self.map.pairs if p.how == STRUCTURE]
        if by_structure:
            extra.append(
                f"{len(by_structure)} paired by structure (names differ; definition order, layer kind and "
                f"shape agree): {some([f'{p.torch} -> {p.ms}' for p in by_structure])}"
            )
        reshaped = [p for p in self.map.pairs if p.reshaped]
        if reshaped:
            extra.append(
                f"{len(reshaped)} reshaped across unit dims, e.g. {reshaped[0].torch} "
                f"{reshaped[0].torch_shape} -> {reshaped[0].ms} {reshaped[0].ms_shape}"
            )
        return extra


def _fusions(pairs: List[Pair], label: str) -> str:
    """``blocks.0.attn.qkv.weight = [q.weight, k.weight, v.weight]``, the first few."""
    joined: Dict[str, List[str]] = {}
    for p in pairs:
        whole, part = (p.ms, p.torch) if label.startswith("fused") else (p.torch, p.ms)
        joined.setdefault(whole, []).append(part)
    return some([f"{whole} = [{', '.join(parts)}]" for whole, parts in joined.items()], shown=2)


NameMap = Optional[object]  # dict, callable or list of (regex, replacement)

# How copy_weights reads and writes a tensor: (model, or a dict of numpy arrays by name; name[, value]).
# A model is a mindspore.nn.Cell or a torch.nn.Module; MindSpore has no type information.
_Read = Callable[[Any, str], npt.NDArray[Any]]
_Write = Callable[[Any, str, npt.NDArray[Any]], None]


def _explicit(name_map: NameMap, ms: Index, torch: Index) -> Tuple[Dict[str, str], List[Tuple[str, bool, Layout]]]:
    """Plain entries {PyTorch name: MindSpore name}, and layout entries (key, key is MindSpore's, value)."""
    if name_map is None:
        return {}, []
    torch_names = list(torch.by_name)
    if callable(name_map):
        found = {t: name_map(t) for t in torch_names}
        return {t: m for t, m in found.items() if m}, []
    if isinstance(name_map, dict):
        plain: Dict[str, str] = {}
        layouts: List[Tuple[str, bool, Layout]] = []
        unknown: List[str] = []
        for key, value in name_map.items():
            if isinstance(value, (Fuse, Transpose, Reshape)):
                layouts.append((key, _key_side(key, value, ms, torch), value))
            elif key in torch.by_name:
                plain[key] = value
            else:
                unknown.append(key)
        if unknown:
            hint = ""
            if all(k in ms.by_name for k in unknown):
                hint = " They look like MindSpore names: keys are PyTorch names, values MindSpore names."
            raise ParityUsageError(f"name_map names PyTorch tensors that do not exist: {unknown}.{hint}")
        return plain, layouts
    if isinstance(name_map, (list, tuple)):
        return _rules(name_map, torch_names), []
    raise ParityUsageError(
        "name_map must be a dict {pytorch_name: mindspore_name}, a callable or a list of "
        f"(regex, replacement) rules, got {type(name_map).__qualname__}"
    )


def _rules(name_map: Iterable[object], torch_names: List[str]) -> Dict[str, str]:
    """{PyTorch name: MindSpore name} from ``(regex, replacement)`` rules, the first rule that
    matches a name deciding. A rule that is malformed, or that decides no name (it matches none, or
    only names an earlier rule took), is an error naming it: a rule that does nothing is a typo."""
    rules: List[Tuple[re.Pattern[str], str]] = []
    for number, rule in enumerate(name_map, 1):
        if not (isinstance(rule, (list, tuple)) and len(rule) == 2 and all(isinstance(x, str) for x in rule)):
            raise ParityUsageError(f"name_map rule {number} {rule!r}: a rule is a (regex, replacement) pair of strings")
        try:
            rules.append((re.compile(rule[0]), rule[1]))
        except re.error as exc:
            raise ParityUsageError(f"name_map rule {number} {tuple(rule)!r}: not a regular expression: {exc}") from None
    result: Dict[str, str] = {}
    used: Set[int] = set()
    for t in torch_names:
        for number, (pattern, replacement) in enumerate(rules, 1):
            if pattern.search(t):
                try:
                    result[t] = pattern.sub(replacement, t)
                except re.error as exc:
                    raise ParityUsageError(
                        f"name_map rule {number} {(pattern.pattern, replacement)!r}: bad replacement: {exc}"
                    ) from None
                used.add(number)
                break
    for number, (pattern, replacement) in enumerate(rules, 1):
        if number not in used:
            matched = [t for t in torch_names if pattern.search(t)]
            why = (
                f"every name it matches ({some(matched)}) is taken by an earlier rule"
                if matched
                else f"it matches no PyTorch name (they are {some(torch_names)})"
            )
            raise ParityUsageError(f"name_map rule {number} {(pattern.pattern, replacement)!r} maps nothing: {why}")
    return result


def _key_side(key: str, value: Layout, ms: Index, torch: Index) -> bool:
    """Is a layout entry's key a MindSpore name (its parts PyTorch names)? The side that has the
    key; for a name both sides have, the side that does not have the parts."""
    in_ms, in_torch = key in ms.by_name, key in torch.by_name
    if in_ms and in_torch:
        parts = value.parts if isinstance(value, Fuse) else (value,)
        return all((p if isinstance(p, str) else p.name) in torch.by_name for p in parts)
    if in_ms or in_torch:
        return in_ms
    near = difflib.get_close_matches(key, list(ms.by_name) + list(torch.by_name), n=3, cutoff=0.6)
    raise ParityUsageError(
        f"name_map key {key!r} is no tensor of either framework" + (f"; nearest: {near}" if near else "")
    )


def _finder(key: str, own: Index, other: Index) -> Callable[[str], Slot]:
    """Find a layout entry's part among the other framework's tensors, or say what is wrong."""

    def find(name: str) -> Slot:
        if name not in other.by_name and name in own.by_name:
            raise ParityUsageError(
                f"name_map[{key!r}]: {name!r} is a {own.label} tensor, as the key is; the key "
                f"must be a tensor of one framework and every part a tensor of the other "
                f"(MindSpore key with PyTorch parts, or PyTorch key with MindSpore parts)"
            )
        return other.get(name, f"name_map[{key!r}]")

    return find


def map_weights(
    ms_slots: List[Slot],
    torch_slots: List[Slot],
    name_map: NameMap = None,
    *,
    leave_constants: bool = False,
    ignore: Sequence[str] = (),
) -> WeightMap:
    """Pair every MindSpore slot with PyTorch slots (or parts of them), or raise with a table.
    ``leave_constants`` (a check, not a conversion): constants of one side that nothing pairs are
    left as built rather than refused (see :func:`parity.weights.pairing.align_by_order`).
    ``ignore``: names or ``fnmatch`` patterns of tensors of either side, left as built, unpaired."""
    ms, torch = Index(ms_slots, "MindSpore"), Index(torch_slots, "PyTorch")
    left_out = _leave_out(ignore, ms, torch)
    plain, layouts = _explicit(name_map, ms, torch)
    both = sorted({name for _, name in left_out} & (set(plain) | set(plain.values())))
    if both:
        raise ParityUsageError(f"name_map pairs {both}, which ignore= leaves out: name each in one of them")
    pairs: List[Pair] = []
    conflicts: List[Tuple[Slot, Slot]] = []

    def claim(t: Slot, m: Slot, how: str) -> None:
        if not compatible(t, m):
            conflicts.append((m, t))
            return
        ms.take(m, t.name)
        torch.take(t, m.name)
        pairs.append(Pair(m.name, t.name, how, m.shape, t.shape, m.trainable and t.trainable))

    # Explicit entries first, so that an automatic match cannot take a name the map assigns.
    for key, key_is_ms, value in layouts:
        pairs += _layout_entry(key, key_is_ms, value, ms, torch)
    named = _plain_entries(plain, torch_slots, ms, claim)
    explicit_conflicts = bool(conflicts)
    for t in torch.rest():
        prefix = t.name[: len(t.name) - len(t.leaf)]
        candidates = [t.name] + [prefix + alt for alt in RENAMES.get(t.leaf, ())]
        m = next((ms.by_name[c] for c in candidates if c in ms.by_name and ms.by_name[c].name not in ms.taken), None)
        if m is not None and t.name not in named:
            claim(t, m, "same name" if m.name == t.name else "renamed")
    if explicit_conflicts:
        raise _shapes_differ(conflicts)
    ignored = _ignore(torch)
    if conflicts:  # names alike, shapes not: a layer placed otherwise (a stage's downsampling)
        refused = _shapes_differ(conflicts)
        constants = _by_structure(ms, torch, claim, pairs, lambda entries: refused, leave_constants)
    else:
        before = (dict(ms.taken), dict(torch.taken), len(pairs))
        try:
            pairs += fuse_automatically(ms, torch)
            constants = align_by_order(ms.rest(), torch.rest(), claim, ignored, leave_constants)
        except Unmapped as exc:  # what names and definition order leave, paired by structure or refused
            ms.taken, torch.taken = dict(before[0]), dict(before[1])
            del pairs[before[2] :]
            constants = _by_structure(ms, torch, claim, pairs, _refusal(exc, ignored), leave_constants)
    position = {t.name: i for i, t in enumerate(torch_slots)}
    pairs.sort(key=lambda p: position[p.torch])  # definition order, however each pair was found
    return WeightMap(pairs, ignored, constants, left_out)


def _leave_out(ignore: Sequence[str], ms: Index, torch: Index) -> List[Tuple[str, str]]:
    """Take the tensors ``ignore`` names (names or ``fnmatch`` patterns, either side) out of the
    pairing: (side, name) of each. A pattern that matches nothing is an error: it is a typo."""
    if isinstance(ignore, str) or not all(isinstance(p, str) for p in ignore):
        raise ParityUsageError(f"ignore must be a list of tensor names or patterns, got {ignore!r}")
    left: List[Tuple[str, str]] = []
    for pattern in ignore:
        found = [
            (index, slot)
            for index in (ms, torch)
            for slot in index.slots
            if any(fnmatch.fnmatchcase(n, pattern) for n in (slot.name,) + slot.aliases)
        ]
        if not found:
            raise ParityUsageError(
                f"ignore={list(ignore)!r}: {pattern!r} names no tensor of either framework "
                f"(MindSpore has {some([s.name for s in ms.slots])}; PyTorch has {some([s.name for s in torch.slots])})"
            )
        for index, slot in found:
            if slot.name not in index.taken:
                index.take(slot, "ignore")
                left.append((index.label, slot.name))
    return left


def _shapes_differ(conflicts: List[Tuple[Slot, Slot]]) -> Unmapped:
    rows = [r for m, t in conflicts for r in (row("MindSpore", m), row("PyTorch", t))]
    return Unmapped("Parameter shapes differ between paired names:\n" + table(rows), conflicts=conflicts)


def _refusal(refused: Unmapped, ignored: List[Tuple[str, str]]) -> Callable[[List[Step]], Unmapped]:
    """``refused`` again, suggesting the structure's pairs among its leftovers that are sure."""

    def refuse(steps: List[Step]) -> Unmapped:
        names = {s.name for s in refused.ms + refused.torch}
        entries = [s.entry() for s in steps if s.sure and {p.name for p in (s.whole,) + s.parts} <= names]
        message = unmapped_message(refused.ms, refused.torch, ignored, entries)
        return Unmapped(message, ms=refused.ms, torch=refused.torch)

    return refuse


def _by_structure(
    ms: Index,
    torch: Index,
    claim: Claim,
    pairs: List[Pair],
    refuse: Callable[[List[Step]], Unmapped],
    leave_constants: bool,
) -> List[Tuple[str, str]]:
    """Pair what is left by structure (:mod:`parity.weights.structure`), every tensor or none;
    with ``leave_constants``, constants of both sides that fit none of the other side's are left
    as built. Else raise ``refuse(steps)``: the error, given the pairs the structure found."""
    found = align(ms.rest(), torch.rest())
    left = found.left_ms + found.left_torch
    constants: List[Tuple[str, str]] = []
    if left:
        fits = any(compatible(m, t) for m in found.left_ms for t in found.left_torch)
        if not leave_constants or fits or any(s.trainable for s in left):
            raise refuse(found.steps) from None
        constants = [("MindSpore", m.name) for m in found.left_ms] + [("PyTorch", t.name) for t in found.left_torch]
    for step in found.steps:
        if len(step.parts) == 1:
            ms_slot, torch_slot = (step.whole, step.parts[0]) if step.whole_is_ms else (step.parts[0], step.whole)
            claim(torch_slot, ms_slot, STRUCTURE)
            continue
        whole_side, part_side = (ms, torch) if step.whole_is_ms else (torch, ms)
        how = "fused by structure" if step.whole_is_ms else "split by structure"
        value = Fuse(tuple(p.name for p in step.parts), 0)
        pairs += layout_pairs(step.whole.name, step.whole_is_ms, value, step.whole, part_side.by_name.__getitem__, how)
        whole_side.take(step.whole, how)
        for part in step.parts:
            part_side.take(part, step.whole.name)
    return constants


def _layout_entry(key: str, key_is_ms: bool, value: Layout, ms: Index, torch: Index) -> List[Pair]:
    """The pairs of one ``name_map`` entry whose value is a fuse/transpose/reshape; its tensors taken."""
    own, other = (ms, torch) if key_is_ms else (torch, ms)
    key_slot = own.get(key, "name_map")
    found = layout_pairs(key, key_is_ms, value, key_slot, _finder(key, own, other))
    own.take(key_slot, repr(value))
    for pair in found:
        other.take(other.by_name[pair.torch if key_is_ms else pair.ms], key)
    return found


def _plain_entries(plain: Dict[str, str], torch_slots: List[Slot], ms: Index, claim: Claim) -> Set[str]:
    """Claim the ``name_map`` entries {PyTorch name: MindSpore name}; the PyTorch names they cover."""
    named: Set[str] = set()
    for t in torch_slots:
        target = plain.get(t.name) or next((plain[a] for a in t.aliases if a in plain), None)
        if target is None:
            continue
        m = ms.by_name.get(target)
        if m is None:
            raise ParityUsageError(
                f"name_map maps PyTorch {t.name!r} to {target!r}, which is no "
                f"MindSpore parameter. MindSpore has: {sorted(ms.by_name)}"
            )
        if m.name in ms.taken:
            raise ParityUsageError(f"name_map maps both {ms.taken[m.name]!r} and {t.name!r} to {m.name!r}")
        named.add(t.name)
        claim(t, m, "name_map")
    return named


def _ignore(torch: Index) -> List[Tuple[str, str]]:
    """PyTorch tensors left over that are no part of the model's state, set aside with the reason."""
    ignored: List[Tuple[str, str]] = []
    for t in torch.rest():
        reason = TORCH_ONLY.get(t.leaf) or (NOT_PERSISTENT if not t.persistent else None)
        if reason:
            torch.take(t, "ignored")
            ignored.append((t.name, reason))
    return ignored


def copy_weights(wmap: WeightMap, src: object, dst: object, *, to_torch: bool) -> WeightReport:
    """Copy every mapped tensor from ``src`` to ``dst`` and verify each landed bit-identical.
    A destination tensor made of several parts is written once, all parts in place. ``src`` and
    ``dst`` are models, or dicts of numpy arrays by name (see :func:`_writer`)."""
    read = _reader(src, lambda: _backend("mindspore" if to_torch else "torch").read)
    write = _writer(dst, lambda: _backend("torch" if to_torch else "mindspore").write)
    read_back = _reader(dst, lambda: _backend("torch" if to_torch else "mindspore").read)
    sources: Dict[str, npt.NDArray[Any]] = {}
    targets: Dict[str, List[Pair]] = {}
    for pair in wmap.pairs:
        targets.setdefault(pair.torch if to_torch else pair.ms, []).append(pair)
    verified = 0
    for dst_name, pairs in targets.items():
        whole = pairs[0].torch_part is None if to_torch else pairs[0].ms_part is None
        value = None if whole else read_back(dst, dst_name)
        pieces: List[Tuple[Pair, npt.NDArray[Any]]] = []
        for pair in pairs:
            src_name = pair.ms if to_torch else pair.torch
            if src_name not in sources:
                sources[src_name] = read(src, src_name)
            piece = (
                pair.to_torch(pair.ms_region(sources[src_name]))
                if to_torch
                else pair.to_ms(pair.torch_region(sources[src_name]))
            )
            pieces.append((pair, piece))
            if whole:
                value = piece
            else:
                part = pair.torch_part if to_torch else pair.ms_part
                assert part is not None and value is not None  # a destination of parts, read back above
                part.put(value, piece.astype(value.dtype))
        assert value is not None  # every destination has a pair
        write(dst, dst_name, value)
        landed = read_back(dst, dst_name)
        for pair, piece in pieces:
            region = pair.torch_region(landed) if to_torch else pair.ms_region(landed)
            if not np.array_equal(region, piece.astype(landed.dtype), equal_nan=True):
                src_name = pair.ms if to_torch else pair.torch
                raise ParityUsageError(
                    f"copying {src_name} -> {dst_name} did not take: the values read back differ "
                    f"(destination dtype {landed.dtype}, source {piece.dtype})"
                )
            verified += 1
    direction = "MindSpore -> PyTorch" if to_torch else "PyTorch -> MindSpore"
    return WeightReport(wmap, direction, verified)


def _backend(name: str) -> Any:
    """The adapter of framework ``name``, imported only where a side is a model (a side given as
    arrays, such as a recorded reference's weights, imports no framework)."""
    if name == "torch":
        from ..backends import torch as torch_backend

        return torch_backend
    from ..backends import mindspore as ms_backend

    return ms_backend


def _reader(model: object, read: Callable[[], _Read]) -> _Read:
    """``read()`` for a model; for a dict of numpy arrays by name (a checkpoint's tensors), a copy."""
    return (lambda arrays, name: np.array(arrays[name])) if isinstance(model, dict) else read()


def _writer(model: object, write: Callable[[], _Write]) -> _Write:
    """``write()`` for a model; for a dict of arrays, the entry replaced in the entry's own dtype (a
    destination dict holds an array of the destination's dtype and shape under every name)."""
    if not isinstance(model, dict):
        return write()

    def put(arrays: Dict[str, npt.NDArray[Any]], name: str, value: npt.NDArray[Any]) -> None:
        arrays[name] = np.array(value, dtype=arrays[name].dtype)

    return put


def fill_weights(wmap: WeightMap, ms_model: object, torch_model: object, value: float) -> WeightReport:
    """Set every floating parameter and buffer on both sides to ``value``."""
    from ..backends import mindspore as ms_backend
    from ..backends import torch as torch_backend

    filled: Set[Tuple[str, str]] = set()
    for pair in wmap.pairs:
        for backend, model, name, shape in (
            (ms_backend, ms_model, pair.ms, pair.ms_shape),
            (torch_backend, torch_model, pair.torch, pair.torch_shape),
        ):
            if (backend.NAME, name) in filled:
                continue
            filled.add((backend.NAME, name))
            current = backend.read(model, name)
            if current.dtype.kind == "f":
                backend.write(model, name, np.full(shape, value, current.dtype))
    verified = 0
    for torch_name, pairs in by_torch_name(wmap.pairs).items():
        ms_arrays = {p.ms: ms_backend.read(ms_model, p.ms) for p in pairs}
        if np.array_equal(torch_layout(pairs, ms_arrays), torch_backend.read(torch_model, torch_name)):
            verified += len(pairs)
    return WeightReport(wmap, f"constant {value:g}", verified)
