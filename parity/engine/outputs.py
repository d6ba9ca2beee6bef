"""What a check's outputs let it compare: elements that are finite on both sides.

A check whose outputs hold no element (a batch of zero) or only NaN and Inf on both sides has
compared no number: any two nets whose outputs have those shapes would pass it. Such a check is
refused (:func:`nothing_compared`, a usage error: the case is wrong, not the frameworks); a check
that compared some numbers but also met NaN or Inf says so in its notes (:func:`outputs_compared`).
"""

from __future__ import annotations

import warnings
from typing import List, Tuple

import numpy as np

from ..errors import ParityWarning
from ..judge.dtypes import is_floating

__all__ = ["little_power", "warn_little_power", "outputs_compared", "nothing_compared", "pair_by_position"]

# A tensor has little power where more than this share of its reference elements lie within its
# absolute tolerance of zero.
WEAK_SHARE = 0.5


def _keyed(paths: List[str]) -> bool:
    return any("['" in path for path in paths)


def pair_by_position(ms_side, torch_side) -> bool:
    """Where one side returns a tuple and the other a dict or ``ModelOutput`` (mindone's models
    against transformers') with as many tensors, give MindSpore's outputs PyTorch's paths, in
    order, so that they are compared by position; True when it did. The side's values and the
    leaves its backward reads the cotangents by are renamed alike."""
    ms_paths, torch_paths = [p for p, _ in ms_side.values], [p for p, _ in torch_side.values]
    if (
        len(ms_paths) != len(torch_paths)
        or len(set(ms_paths)) != len(ms_paths)
        or _keyed(ms_paths) == _keyed(torch_paths)
    ):
        return False
    renamed = dict(zip(ms_paths, torch_paths))
    ms_side.values = [(renamed[path], value) for path, value in ms_side.values]
    if hasattr(ms_side, "leaves"):
        ms_side.leaves = [(renamed[path], leaf) for path, leaf in ms_side.leaves]
    return True


def _as_float(array: np.ndarray) -> np.ndarray:
    """Floating arrays as numpy computes on them (bfloat16 widened); others as they are."""
    return array.astype(np.float32) if array.dtype.name == "bfloat16" else array


def _finite(array: np.ndarray) -> np.ndarray:
    array = _as_float(np.asarray(array))
    return np.isfinite(array) if is_floating(array.dtype) else np.ones(array.shape, bool)


def outputs_compared(pairs) -> Tuple[int, List[str]]:
    """How many output elements are finite on both sides (the numbers the check compared), and a
    note naming every compared tensor (output or gradient) that holds NaN or Inf."""
    compared, found = 0, []
    for pair in pairs:
        if pair.ms.shape != pair.torch.shape:
            continue  # a shape failure is reported instead
        ms_ok, torch_ok = _finite(pair.ms), _finite(pair.torch)
        if pair.kind == "output":
            compared += int(np.count_nonzero(ms_ok & torch_ok))
        bad = [
            (label, _count(array))
            for label, array, ok in (("MindSpore", pair.ms, ms_ok), ("PyTorch", pair.torch, torch_ok))
            if not ok.all()
        ]
        if bad:
            sides = "; ".join(f"{label} {text}" for label, text in bad)
            found.append(f"{pair.kind} '{pair.name}' ({pair.mode}) of {pair.torch.size} elements: {sides}")
    if not found:
        return compared, []
    shown = "; ".join(found[:5]) + (f"; and {len(found) - 5} more" if len(found) > 5 else "")
    return compared, [
        f"non-finite values: {shown}. NaN and Inf at the same positions on both sides count as "
        "agreeing; only the finite elements were compared as numbers"
    ]


def _count(array: np.ndarray) -> str:
    array = _as_float(np.asarray(array))
    nan, inf = int(np.count_nonzero(np.isnan(array))), int(np.count_nonzero(np.isinf(array)))
    return ", ".join(part for part in (f"{nan} NaN" if nan else "", f"{inf} Inf" if inf else "") if part)


def nothing_compared(pairs, data) -> str:
    """The usage error's message for a check whose outputs held no finite element on both sides."""
    outputs = [p for p in pairs if p.kind == "output"]
    shapes = ", ".join(f"'{p.name}' {p.torch.dtype}{list(p.torch.shape)}" for p in outputs[:5]) or "none"
    empty = [name for name, array in data.named() if array.size == 0]
    if not outputs:
        why = "the nets return no tensor"
    elif all(p.torch.size == 0 for p in outputs):
        why = f"every output holds no element ({shapes})"
        if empty:
            why += f"; input {', '.join(repr(n) for n in empty)} holds no element"
    else:
        why = f"every output element is NaN or Inf on both sides ({shapes})"
    return (
        f"check(): nothing was compared: {why}. Any two nets whose outputs have these shapes would pass, so "
        "the check is refused. Give inputs with elements (a batch of at least one) whose outputs are finite "
        "(parity.randn(shape, std=...) scales them)"
    )


def little_power(pairs, comparisons) -> List[str]:
    """A note where the check has little power: where more than half of the values it compared
    (or of one forward output's) lie within their absolute tolerance of zero, so that a MindSpore
    side returning zeros there would pass as well (random weights with small scales, heads
    initialised to zero, layer scales of 1e-6). Exact zeros of PyTorch's side count only in a tensor
    that is zero throughout: a max-pool's unselected inputs or an embedding's rows never looked up
    have a gradient of exactly zero by construction, and are not small values. The shares are
    PyTorch's values against the tolerance: rounding moves them only at the edge of ``atol``."""
    counted, weak, named = 0, 0, []
    for pair, c in zip(pairs, comparisons):
        if c.problem is not None or not c.total or c.tolerance.atol <= 0 or not is_floating(pair.torch.dtype):
            continue
        magnitude = np.abs(_as_float(np.asarray(pair.torch)))
        nonzero = int(np.count_nonzero(magnitude))
        if nonzero:
            within = int(np.count_nonzero(magnitude <= c.tolerance.atol)) - (magnitude.size - nonzero)
        else:
            nonzero = within = magnitude.size
        counted, weak = counted + nonzero, weak + within
        if within > WEAK_SHARE * nonzero:
            named.append((c.kind != "output", -within, f"{c.label} ({100 * within // nonzero}% of {nonzero})"))
    outputs = any(not later for later, _, _ in named)
    if not named or (not outputs and weak <= WEAK_SHARE * counted):
        return []
    named.sort()
    shown = ", ".join(text for _, _, text in named[:5]) + (f" and {len(named) - 5} more" if len(named) > 5 else "")
    return [
        f"little power: {100 * weak // counted}% of the values compared lie within their absolute tolerance "
        f"of zero, where a MindSpore side returning zeros would pass as well, and most of those of {shown}: "
        "there this pass proves little. Give the values scale (trained-like norm statistics, real "
        "weights) or set a smaller atol for these tensors"
    ]


def warn_little_power(notes: List[str]) -> None:
    """Each :func:`little_power` note as a :class:`parity.ParityWarning` too: a pass says nothing
    on its own, and pytest's warnings summary names the test."""
    for note in notes:
        warnings.warn(note, ParityWarning, stacklevel=3)
