"""One training step on each side, as a record of what it left, and the comparison of a step:
keyed (stage, name) on both sides, compared in stage order with :func:`parity.judge.metrics.compare_pair`."""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, Dict, List, Tuple

import numpy as np

from ...backends import mindspore as msb
from ...backends import torch as tb
from ...judge.dtypes import is_half
from ...judge.metrics import ArrayPair, compare_pair
from ...judge.tolerance import Tolerance, ToleranceSpec
from ...weights.layouts import by_torch_name, ms_label, torch_layout
from ..compared import buffers_of
from .result import STAGES

__all__ = [
    "stepped",
    "ms_record",
    "ms_launch",
    "ms_collect",
    "torch_record",
    "torch_arrays",
    "compare_modes",
    "step_scalings",
]


# A step skipped on one side and applied on the other is a difference whatever the tolerance.
_EXACT = (ToleranceSpec.parse(Tolerance(0.0, 0.0), source="exact: both sides skip the same steps"),)


def stepped(record, scheduler):
    """``record`` of a step, once the step's scheduler (if any) has moved the learning rate on."""
    if scheduler is not None:
        scheduler.step()
    return record


def _master(pair) -> bool:
    """MindSpore's float32 copy (to_float's master weight, its optimizer state) of a half PyTorch tensor."""
    return pair.ms.dtype.name == "float32" and is_half(pair.torch.dtype)


def ms_record(trainer, micro, ms_cell, wmap) -> Dict[Any, Any]:
    """What one MindSpore step left, keyed (stage, MindSpore name); state by (stage, name, key)."""
    return ms_collect(trainer, ms_launch(trainer, micro), ms_cell, wmap)


def ms_launch(trainer, micro):
    """The learning rates the step will use, and the step handed to MindSpore (see ms_collect)."""
    return trainer.lrs(), trainer.launch(micro)


def ms_collect(trainer, launched, ms_cell, wmap, views=False) -> Dict[Any, Any]:
    """:func:`ms_record` of a step :func:`ms_launch` handed to MindSpore, once it has run; ``views``:
    the parameters and optimizer state as views, for a caller done with them before the next step."""
    lrs, pending = launched
    loss, grads = trainer.collect(pending)
    return {
        ("loss", "loss"): np.float32(loss),
        "grads": grads,
        "lr": lrs,
        "state": trainer.state(copy=not views),
        "params": {p.ms: msb.read(ms_cell, p.ms, copy=not views) for p in wmap.trainable_pairs()},
        "buffers": buffers_of(msb, ms_cell, wmap, "ms"),
        "scaling": trainer.scaling,
    }


def torch_record(trainer, micro, torch_module, wmap, perturb=None, cast=None, wanted=None, views=False):
    """What one PyTorch step left, as :func:`ms_record`; with ``wanted`` (Comparison keys, see
    :func:`torch_arrays`) the loss, the learning rates and only the tensors it names. ``views``
    (with or without ``wanted``):
    the parameters, statistics and optimizer state as views of PyTorch's tensors rather than
    copies, for a caller done with them before the next step (the gradients, which the step
    moves or clips after reading them, are copies all the same)."""
    lrs = trainer.lrs()
    if wanted is None:
        loss, grads = trainer.step(micro, perturb)
        return {
            ("loss", "loss"): np.float32(loss) if cast is None else np.float64(loss),
            "grads": grads,
            "lr": lrs,
            "state": trainer.state(copy=not views),
            "params": {p.torch: tb.read(torch_module, p.torch, copy=not views) for p in wmap.trainable_pairs()},
            "buffers": buffers_of(tb, torch_module, wmap, "torch"),
            "scaling": trainer.scaling,
        }
    names = {kind: {name for k, name in wanted if k == kind} for kind in ("param grad", "parameter", "buffer")}
    loss, grads = trainer.step(micro, perturb, keep=names["param grad"])
    state = trainer.state(
        only={name.rpartition(":")[0] for k, name in wanted if k == "optimizer state"}, copy=not views
    )
    read = functools.partial(tb.read, torch_module, copy=not views)
    return {
        ("loss", "loss"): np.float32(loss) if cast is None else np.float64(loss),
        "grads": grads,
        "lr": lrs,
        "state": state,
        "params": {name: read(name) for name in names["parameter"]},
        "buffers": {name: read(name) for name in names["buffer"]},
        "scaling": trainer.scaling,
    }


def torch_arrays(record, wmap) -> Dict[Tuple[str, str], np.ndarray]:
    """A PyTorch record flattened to Comparison keys (kind, PyTorch name)."""
    found: Dict[Tuple[str, str], Any] = {("loss", "loss"): np.asarray(record[("loss", "loss")])}
    for name in by_torch_name(wmap.trainable_pairs()):
        if name in record["grads"]:
            found[("param grad", name)] = record["grads"][name]
        for key, value in record["state"].get(name, {}).items():
            found[("optimizer state", f"{name}:{key}")] = np.asarray(value)
        if name in record["lr"]:
            found[("optimizer state", f"{name}:lr")] = np.float32(record["lr"][name])
        if name in record["params"]:
            found[("parameter", name)] = record["params"][name]
    for name, value in record["buffers"].items():
        found[("buffer", name)] = value
    return found


def compare_modes(i, ms_runs, torch_r, wmap, chain):
    """Step ``i``'s pairs and comparisons for every MindSpore mode run, in stage order."""
    seen: Dict = {}  # pair key -> (MindSpore's array, its comparison) of the first mode
    found = [_compare_step(runs[i], torch_r, wmap, chain, mode, seen) for mode, runs in ms_runs.items()]
    order = list(STAGES.values())
    merged = sorted(
        ((p, c) for pairs, comparisons in found for p, c in zip(pairs, comparisons)),
        key=lambda pc: order.index(pc[1].kind),
    )
    return [p for p, _ in merged], [c for _, c in merged]


def _same_values(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether two arrays hold the same values bit for bit (dtype and shape too; NaN never)."""
    return a.dtype == b.dtype and a.shape == b.shape and bool(np.array_equal(a, b))


def _compare(pair, chain, seen):
    """(``pair``, its comparison). Where another MindSpore mode gave the very same values against the
    same PyTorch tensor, that mode's comparison again (tolerances do not depend on the mode), and
    the pair holds that mode's array: the envelope knows it by identity and judges it once."""
    before = seen.get(pair.key)
    if before is not None and before[0].torch is pair.torch and _same_values(before[0].ms, pair.ms):
        return dataclasses.replace(pair, ms=before[0].ms), dataclasses.replace(before[1], mode=pair.mode)
    found = compare_pair(
        pair, _EXACT if pair.kind == "loss scale" else chain, check_dtype=pair.kind != "buffer" and not _master(pair)
    )
    seen[pair.key] = (pair, found)
    return pair, found


def _compare_step(ms_r, torch_r, wmap, chain, mode, seen):
    """The pairs and comparisons of one step, in stage order."""
    pairs: List[ArrayPair] = [
        ArrayPair(
            "loss",
            "loss",
            "loss",
            "loss",
            mode,
            np.asarray(ms_r[("loss", "loss")]),
            np.asarray(torch_r[("loss", "loss")]),
        )
    ]
    skipped = step_scalings(ms_r, torch_r)[1]
    if skipped is not None:  # 1 where the update was skipped (a gradient overflowed at the step's loss scale)
        pairs.append(
            ArrayPair(
                "loss scale",
                "update skipped",
                "update skipped",
                "update skipped",
                mode,
                np.float32(skipped[0]),
                np.float32(skipped[1]),
            )
        )
    groups = by_torch_name(wmap.trainable_pairs())
    stages = {"param grad": [], "optimizer state": [], "parameter": []}
    for name, group in groups.items():
        held = [p.ms for p in group]
        layer = name.rpartition(".")[0]
        label = ms_label(group)
        if all(h in ms_r["grads"] for h in held) and skipped != (True, True):  # both threw overflowed ones away
            torch_grad = torch_r["grads"].get(name)
            ms_grad = torch_layout(group, ms_r["grads"])
            stages["param grad"].append(
                ArrayPair(
                    "param grad",
                    name,
                    label,
                    name,
                    mode,
                    ms_grad,
                    torch_grad if torch_grad is not None else np.zeros_like(ms_grad),
                    layer,
                )
            )
        ms_state = {h: ms_r["state"].get(h, {}) for h in held}
        for key, value in torch_r["state"].get(name, {}).items():
            if all(key in ms_state[h] for h in held):
                parts = {h: np.asarray(ms_state[h][key]) for h in held}
                ms_value = parts[held[0]] if np.ndim(value) == 0 else torch_layout(group, parts)
                stages["optimizer state"].append(
                    ArrayPair(
                        "optimizer state",
                        f"{name}:{key}",
                        f"{label}:{key}",
                        f"{name}:{key}",
                        mode,
                        np.asarray(ms_value, np.float32) if np.ndim(value) == 0 else ms_value,
                        np.asarray(value),
                        layer,
                    )
                )
        if name in torch_r["lr"] and held[0] in ms_r["lr"]:
            stages["optimizer state"].append(
                ArrayPair(
                    "optimizer state",
                    f"{name}:lr",
                    f"{label}:lr",
                    f"{name}:lr",
                    mode,
                    np.float32(ms_r["lr"][held[0]]),
                    np.float32(torch_r["lr"][name]),
                    layer,
                )
            )
        stages["parameter"].append(
            ArrayPair(
                "parameter",
                name,
                label,
                name,
                mode,
                torch_layout(group, ms_r["params"]),
                torch_r["params"][name],
                layer,
            )
        )
    for kind in ("param grad", "optimizer state", "parameter"):
        pairs += stages[kind]
    groups = by_torch_name(p for p in wmap.pairs if not p.trainable)
    pairs += [
        ArrayPair(
            "buffer",
            name,
            ms_label(g),
            name,
            mode,
            ms_r["buffers"][name],
            torch_r["buffers"][name],
            name.rpartition(".")[0],
        )
        for name, g in groups.items()
    ]
    compared = [_compare(p, chain, seen) for p in pairs]
    return [p for p, _ in compared], [c for _, c in compared]


def step_scalings(ms_r, torch_r):
    """((MindSpore scale, PyTorch scale), (MindSpore skipped, PyTorch skipped)) of a step under
    loss scaling, else (None, None)."""
    ms_s, torch_s = ms_r.get("scaling"), torch_r.get("scaling")
    if ms_s is None or torch_s is None:
        return None, None
    return (ms_s[0], torch_s[0]), (bool(ms_s[1]), bool(torch_s[1]))
