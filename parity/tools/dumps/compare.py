"""``parity compare-dumps A B``: two sets of saved tensors paired by name as ``check`` pairs
weights, and compared with ``check``'s metrics and tolerances.

:func:`~parity.compare_dumps` reads each side (``parity.tools.dumps.files``: folders of ``.npy``/``.npz``,
TroubleShooter and msprobe dump folders, MindSpore checkpoints, PyTorch state dicts, safetensors),
pairs the tensors with ``parity.weights.transfer.map_weights`` (same name, the known renames such as
``gamma``/``weight``, a name map, fused or split tensors, then definition order by kind and shape,
the order being each side's execution order), and compares every pair with
``parity.judge.metrics.compare_pair``. There is no model to run, so no rounding envelope: each tensor is
judged by its tolerance alone.

One side is the reference, as PyTorch is in ``check``: relative differences are taken against
its values and its dtype picks the default tolerance. It is the PyTorch side when one side is
PyTorch and the other MindSpore; else the side whose names are not MindSpore's (``gamma``,
``beta``, ``moving_mean``, ``moving_variance``, ``embedding_table``) when only one side has such
names; else a side that is known to be PyTorch, or the other of one known to be MindSpore; else B.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, List, Optional, Tuple, Union

import numpy as np

from ...errors import ParityUsageError
from ...judge.metrics import ArrayPair, Comparison, compare_pair
from ...judge.tolerance import ToleranceSpec, check_globs_used
from ...weights.layouts import by_torch_name, torch_layout
from ..convert.checkpoint import map_with_leftovers, state_slots
from ..convert.report import Key, keys
from .files import Side, read_side
from .names import LAYOUTS, entries_of, load_pairs
from .summaries import is_summary_dump

if TYPE_CHECKING:
    from .statistics import SummaryComparison

__all__ = ["compare_dumps", "DumpComparison", "DumpSide", "TensorRow", "load_pairs"]

_MS_LEAVES = {"gamma", "beta", "moving_mean", "moving_variance", "embedding_table"}
_LABEL = {"torch": "PyTorch", "mindspore": "MindSpore"}


@dataclass(frozen=True)
class DumpSide:
    """What one side was: its path, layout, framework, how its tensors are ordered, and its notes."""

    label: str
    path: str
    layout: str
    framework: str
    order: str
    tensors: int
    description: str
    notes: Tuple[str, ...] = ()


@dataclass(frozen=True)
class TensorRow:
    """One compared pair: A's name, B's name, how they were paired, and the comparison."""

    a: str
    b: str
    how: str
    comparison: Comparison  # its "torch" fields are the reference's, its "ms" fields the other side's
    reference: str = "B"

    @property
    def passed(self) -> bool:
        return self.comparison.passed

    def shape(self, side: str) -> Tuple[int, ...]:
        c = self.comparison
        return tuple(c.torch_shape if side == self.reference else c.ms_shape)

    def dtype(self, side: str) -> str:
        c = self.comparison
        return c.torch_dtype if side == self.reference else c.ms_dtype


@dataclass
class DumpComparison:
    """The result of :func:`compare_dumps`: the compared pairs in the reference's execution order,
    what did not pair (with the nearest name on the other side), and what was left out on purpose."""

    a: DumpSide
    b: DumpSide
    reference: str  # "A" or "B"
    reference_reason: str
    rows: List[TensorRow]
    unpaired_a: List[Key] = field(default_factory=list)
    unpaired_b: List[Key] = field(default_factory=list)
    not_compared: List[Tuple[str, str, str]] = field(default_factory=list)  # (side, name, reason)
    suggestions: List[str] = field(default_factory=list)  # name map entries, TOML
    notes: List[str] = field(default_factory=list)
    allow_unpaired: bool = False  # a tensor that did not pair is accepted (compare_dumps(allow_unpaired=True))

    @property
    def unpaired(self) -> int:
        """How many tensors of either side did not pair."""
        return len(self.unpaired_a) + len(self.unpaired_b)

    @property
    def passed(self) -> bool:
        """Every paired tensor within its tolerance, and every tensor paired (unless
        ``allow_unpaired``): a comparison of part of a dump proves nothing of the rest."""
        return all(row.passed for row in self.rows) and (self.allow_unpaired or not self.unpaired)

    @property
    def failures(self) -> List[TensorRow]:
        return [row for row in self.rows if not row.passed]

    @property
    def first_mismatch(self) -> Optional[TensorRow]:
        """The first pair out of tolerance in execution order, or None."""
        return next((row for row in self.rows if not row.passed), None)

    @property
    def exit_code(self) -> int:
        return 0 if self.passed else 1

    def __str__(self) -> str:
        from .report import text

        return text(self)

    def as_json(self) -> dict:
        from .report import as_json

        return as_json(self)


def compare_dumps(
    a, b, *, name_map=None, tolerance=None, allow_unpaired: bool = False, layout_a=None, layout_b=None
) -> Union[DumpComparison, SummaryComparison]:
    """Compare the tensors saved under ``a`` with those under ``b`` (see :mod:`parity.tools.dumps.compare`).

    * ``a``, ``b``: a folder or a file (``.npy``, ``.npz``, ``.ckpt``, ``.pth``/``.pt``/``.bin``,
      ``.safetensors``).
    * ``name_map``: pairs the automatic rules miss: a dict naming a tensor of one side and its
      counterpart on the other, either way round (a value may be ``parity.fuse([...])``,
      ``parity.transpose(name)`` or ``parity.reshape(name)``); a list of ``(A name, B name)``
      pairs (TroubleShooter's ``name_map_list``); or the path of such a file (see
      :func:`load_pairs`). A name that prefixes tensor names (``NN_Dense_0`` for
      ``NN_Dense_0_forward_output``) maps each of them to the same suffix on the other side.
    * ``tolerance``: as for :func:`parity.check`: ``Tolerance(rtol, atol)``, an (rtol, atol) pair,
      or name-glob overrides ``{"*": ..., "NN_Dense_*": ...}`` over either side's names.
    * ``allow_unpaired``: a tensor (a node, for statistics dumps) of either side that did not pair
      fails the comparison unless this is true: a partial dump, or one whose names the rules
      cannot pair, is not a pass.
    * ``layout_a``, ``layout_b``: that side is a sharded dump (a folder of ``rank{N}`` folders, or
      msprobe's ``step{S}/rank{N}``), reassembled into whole tensors by this layout: a path to a
      layout file or a ``parity.tools.dumps.shards.Layout`` (see that module).

    Returns a :class:`DumpComparison`; for msprobe's statistics or md5 dumps (no tensors saved), a
    :class:`parity.tools.dumps.statistics.SummaryComparison` of their statistics. Raises
    :class:`ParityUsageError` when a side cannot be read or nothing pairs.
    """
    if isinstance(tolerance, ToleranceSpec):
        spec = tolerance
    else:
        spec = ToleranceSpec.parse(tolerance, source="compare_dumps(tolerance=...)")
    if is_summary_dump(a) or is_summary_dump(b):
        if name_map is not None:
            raise ParityUsageError(
                "a name map pairs saved tensors; msprobe's statistics and md5 dumps pair their "
                "nodes by module path, direction and call"
            )
        from .statistics import compare_summaries

        return compare_summaries(a, b, tolerance=spec, allow_unpaired=allow_unpaired)
    side_a, side_b = _read(a, "A", layout_a), _read(b, "B", layout_b)
    for side in (side_a, side_b):
        if not side.arrays:
            raise ParityUsageError(f"{side.label} {side.path}: no tensors that hold numbers")
    ref_is_a, reason = _reference(side_a, side_b)
    ref, other = (side_a, side_b) if ref_is_a else (side_b, side_a)
    if isinstance(name_map, (str, os.PathLike)):
        name_map = load_pairs(name_map)
    entries, notes = entries_of(name_map, side_a, side_b)
    mapping = {(x if ref_is_a else y): (y if ref_is_a else x) for x, y in entries}
    if isinstance(name_map, dict):
        mapping.update({k: v for k, v in name_map.items() if isinstance(v, LAYOUTS)})
    wmap, conflicts, left_other, left_ref = map_with_leftovers(
        state_slots(other.arrays, "mindspore", other.tied), state_slots(ref.arrays, "torch", ref.tied), mapping or None
    )
    rows = _rows(wmap, conflicts, ref, other, ref_is_a, spec)
    left_a, left_b = (left_ref, left_other) if ref_is_a else (left_other, left_ref)
    result = DumpComparison(
        _summary(side_a),
        _summary(side_b),
        "A" if ref_is_a else "B",
        reason,
        rows,
        unpaired_a=keys(left_a, left_b),
        unpaired_b=keys(left_b, left_a),
        not_compared=[(s.label, n, r) for s in (side_a, side_b) for n, r in s.skipped]
        + [(ref.label, n, r) for n, r in wmap.ignored],
        notes=notes
        + [
            "Judged by tolerance only: two sets of saved tensors hold no model to run, so there is "
            "no rounding envelope (parity.check's noise judge)"
        ],
        allow_unpaired=allow_unpaired,
    )
    result.suggestions = _suggestions(result.unpaired_a, result.unpaired_b)
    if not rows:
        from .report import unpaired_lines

        raise ParityUsageError(
            "\n".join(
                [
                    f"Nothing paired: A has {len(side_a.arrays)} tensors and B "
                    f"{len(side_b.arrays)}, and none pair by name, known rename, name map "
                    "or order by kind and shape."
                ]
                + unpaired_lines(result)
            )
        )
    check_globs_used(spec, [n for row in rows for n in (row.a, row.b)])
    return result


def _read(path, label: str, layout) -> Side:
    if layout is None:
        return read_side(path, label)
    from .shards import Layout, load_layout, read_sharded

    if not isinstance(layout, Layout):
        layout = load_layout(layout, f"--layout-{label.lower()}")
    return read_sharded(path, label, layout)


def _summary(side: Side) -> DumpSide:
    return DumpSide(
        side.label,
        side.path,
        side.layout,
        side.framework,
        side.order,
        len(side.arrays),
        side.describe(),
        tuple(side.notes),
    )


def _ms_names(side: Side) -> List[str]:
    """The names of ``side`` that end as only MindSpore names a parameter (``bn.gamma``,
    ``bn.moving_mean``): a parameter's path, not a bare file name such as ``beta``."""
    return sorted(n for n in side.arrays if "." in n and n.rpartition(".")[2] in _MS_LEAVES)


def _reference(a: Side, b: Side) -> Tuple[bool, str]:
    """(is A the reference, why): see the module's docstring. The reason names what decided."""
    if {a.framework, b.framework} == {"torch", "mindspore"}:
        return a.framework == "torch", "the PyTorch side"
    found_a, found_b = (_ms_names(s) for s in (a, b))
    if bool(found_a) != bool(found_b):
        named, other = ("A", "B") if found_a else ("B", "A")
        shown = ", ".join(repr(n) for n in (found_a or found_b)[:3])
        return bool(found_b), f"{named} holds names only MindSpore gives its parameters ({shown}), {other} none"
    if a.framework == b.framework:
        both = f"both sides are {_LABEL[a.framework]}'s" if a.framework else "neither side says its framework"
        return False, f"B by default: {both}"
    known = a if a.framework else b  # exactly one side says its framework
    is_a = (known is a) == (known.framework == "torch")
    if known.framework == "torch":
        return is_a, f"the PyTorch side; {'B' if is_a else 'A'} does not say its framework"
    return is_a, f"the side that is not MindSpore's; {'B' if is_a else 'A'} is MindSpore's"


def _rows(wmap, conflicts, ref: Side, other: Side, ref_is_a: bool, spec: ToleranceSpec) -> List[TensorRow]:
    """Every pair compared, and every pair of names whose shapes differ, in the reference's order."""
    found = []
    for name, pairs in by_torch_name(wmap.pairs).items():
        others = list(dict.fromkeys(p.ms for p in pairs))
        label = ", ".join(others)
        value = torch_layout(pairs, other.arrays)
        found.append((name, label, _how(pairs), value))
    for m, t in conflicts:
        found.append((t.name, m.name, "by name, shapes differ", other.arrays[m.name]))
    position = {name: i for i, name in enumerate(ref.arrays)}
    found.sort(key=lambda item: position[item[0]])
    rows = []
    for ref_name, other_name, how, value in found:
        a, b = (ref_name, other_name) if ref_is_a else (other_name, ref_name)
        pair = ArrayPair("tensor", a, other_name, ref_name, "", np.asarray(value), np.asarray(ref.arrays[ref_name]))
        rows.append(TensorRow(a, b, how, compare_pair(pair, [spec], check_dtype=False), "A" if ref_is_a else "B"))
    return rows


def _how(pairs) -> str:
    """How a reference tensor was paired; for a part of a fused tensor, which part."""
    first = pairs[0]
    if first.how in ("definition order", "structure"):
        return "execution order"  # each side's slots are in its own execution order
    part = first.ms_part
    return first.how + (f", part {part.index + 1} of {part.count} along axis {part.axis}" if part else "")


def _suggestions(unpaired_a: List[Key], unpaired_b: List[Key]) -> List[str]:
    """``"A name" = "B name"`` for leftovers that are each other's nearest name, of shapes that fit."""
    by_name = {k.name: k for k in unpaired_b}
    lines = []
    for key in unpaired_a:
        other = by_name.get(key.near[0][0]) if key.near else None
        if (
            other
            and other.near
            and other.near[0][0] == key.name
            and int(np.prod(other.shape)) == int(np.prod(key.shape))
        ):
            lines.append(f"{json.dumps(key.name)} = {json.dumps(other.name)}")
    return lines
