"""Checkpoint conversion between PyTorch and MindSpore, through the weight map ``check`` uses.

``convert_checkpoint("model.pth", cell, "model.ckpt")`` reads a PyTorch state dict (``.pth``,
``.pt``, ``.bin`` or ``.safetensors``), pairs its tensors with ``cell``'s by
``parity.weights.transfer.map_weights`` (renames, fused/split q/k/v, definition order, ``name_map``),
lays every value out as MindSpore holds it, writes a MindSpore checkpoint (``.ckpt`` or
``.safetensors``) under the names ``load_param_into_net`` matches, reloads it into ``cell`` and
verifies every tensor bit for bit. With a PyTorch Module in place of the Cell it runs the other
way (``.ckpt``/``.safetensors`` in, ``.pth``/``.pt``/``.bin``/``.safetensors`` out).

Nothing is written when a tensor is unaccounted for (missing, unexpected or of another shape),
unless ``allow_missing``; the :class:`~parity.ConversionReport` lists them with the nearest names.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import numpy as np

from ... import files
from ...backends import Slot, framework_of
from ...errors import ParityInternalError, ParityUsageError
from ...weights.pairing import Unmapped
from ...weights.transfer import NOT_PERSISTENT, WeightMap, copy_weights, map_weights
from .report import ConversionError, ConversionReport, Key, keys

__all__ = [
    "convert_checkpoint",
    "ConversionReport",
    "ConversionError",
    "Key",
    "state_slots",
    "load_name_map",
    "map_with_leftovers",
]

TORCH_SUFFIXES = (".pth", ".pt", ".bin", ".safetensors")
MS_SUFFIXES = (".ckpt", ".safetensors")
_NOT_TRAINABLE = {"running_mean", "running_var", "num_batches_tracked", "moving_mean", "moving_variance"}
_LABEL = {"torch": "PyTorch", "mindspore": "MindSpore"}

# -- reading ---------------------------------------------------------------------------------------


def state_slots(arrays: Dict[str, np.ndarray], framework: str, tied=()) -> List[Slot]:
    """Slots for a checkpoint's tensors, which come without their model: name, shape and dtype as
    stored. What the model would have said is guessed from the names alone:

    * trainable: every tensor but BatchNorm's statistics and step counter (``running_mean``,
      ``running_var``, ``num_batches_tracked``; MindSpore's ``moving_mean``, ``moving_variance``);
    * the owning layer's class, which pairing by definition order compares: BatchNorm where the
      layer holds running statistics, a convolution of the weight's rank (3, 4, 5 dims) and
      ``Linear``/``Dense`` for a 2-d ``weight``; anything else is a custom layer. A guess that
      differs from the other side's class leaves tensors unpaired (reported as missing and
      unexpected); every pair made by definition order is listed in the report to be checked;
    * tied weights (keys holding one tensor) fold into the first key's slot as aliases.
    """
    by_layer: Dict[str, Dict[str, np.ndarray]] = {}
    for name, array in arrays.items():
        layer, _, leaf = name.rpartition(".")
        by_layer.setdefault(layer, {})[leaf] = array
    alias_of = {alias: names[0] for names in tied for alias in names[1:]}
    aliases = {names[0]: tuple(names[1:]) for names in tied}
    return [
        Slot(
            name,
            tuple(array.shape),
            str(array.dtype),
            name.rpartition(".")[2] not in _NOT_TRAINABLE,
            name.rpartition(".")[0],
            _layer_type(by_layer[name.rpartition(".")[0]], framework),
            aliases=aliases.get(name, ()),
        )
        for name, array in arrays.items()
        if name not in alias_of
    ]


def _layer_type(leaves: Dict[str, np.ndarray], framework: str) -> str:
    ms = framework == "mindspore"
    if "moving_mean" in leaves or "running_mean" in leaves:
        return "BatchNorm2d"
    if "embedding_table" in leaves:
        return "Embedding"
    weight = leaves.get("weight")
    if weight is not None and weight.ndim in (3, 4, 5):
        return f"Conv{weight.ndim - 2}d"
    if weight is not None and weight.ndim == 2:
        return "Dense" if ms else "Linear"
    return ""


def _read(path: Path, framework: str):
    """(arrays, tied key groups, notes) of a checkpoint file of ``framework``."""
    from ...backends import checkpoints

    if framework == "torch":
        return checkpoints.load_state_file(str(path))
    return checkpoints.load_checkpoint_file(str(path)), [], []


def load_name_map(path) -> Dict[str, object]:
    """A name map file: ``.toml`` or ``.json``, PyTorch names to MindSpore names. A value may be a
    table for a layout: ``{fuse = ["q.weight", "k.weight", "v.weight"], axis = 0}``,
    ``{transpose = "w", axes = [1, 0]}`` or ``{reshape = "w"}`` (see :mod:`parity.weights.layouts`)."""
    path = Path(path)
    data = files.read_table(path, f"name map {path}", "name map", limit=64 * 1024 * 1024)
    if not isinstance(data, dict):
        raise ParityUsageError(f"name map {path}: expected a table of PyTorch name = MindSpore name")
    return {key: _layout(value, f"name map {path}, {key!r}") for key, value in data.items()}


def _layout(value, where: str):
    from ...weights import layouts

    if isinstance(value, str):
        return value
    if isinstance(value, dict) and len(set(value) & {"fuse", "transpose", "reshape"}) == 1:
        try:
            if "fuse" in value:
                return layouts.fuse(value["fuse"], axis=value.get("axis", 0))
            if "transpose" in value:
                return layouts.transpose(value["transpose"], value.get("axes"))
            return layouts.reshape(value["reshape"])
        except (TypeError, ValueError) as exc:
            raise ParityUsageError(f"{where}: {exc}") from None
    raise ParityUsageError(
        f"{where}: a value is a MindSpore name, or a table with one of fuse, transpose, reshape; got {value!r}"
    )


# -- mapping ---------------------------------------------------------------------------------------


def map_with_leftovers(ms_slots: List[Slot], torch_slots: List[Slot], name_map):
    """The weight map of what pairs, and what does not: (map, conflicts, MindSpore leftovers,
    PyTorch leftovers). Leftovers and conflicts come out of the map and it is made again."""
    conflicts: List[Tuple[Slot, Slot]] = []
    left_ms: List[Slot] = []
    left_torch: List[Slot] = []
    for _ in range(len(ms_slots) + len(torch_slots) + 1):
        try:
            return map_weights(ms_slots, torch_slots, name_map), conflicts, left_ms, left_torch
        except Unmapped as exc:
            drop_ms = {s.name for s in exc.ms} | {m.name for m, _ in exc.conflicts}
            drop_torch = {s.name for s in exc.torch} | {t.name for _, t in exc.conflicts}
            conflicts += exc.conflicts
            left_ms += exc.ms
            left_torch += exc.torch
            ms_slots = [s for s in ms_slots if s.name not in drop_ms]
            torch_slots = [s for s in torch_slots if s.name not in drop_torch]
            if isinstance(name_map, dict):
                name_map = {k: v for k, v in name_map.items() if k not in drop_torch and v not in drop_ms}
            elif isinstance(name_map, (list, tuple)):  # a rule whose names all left has nothing to do now
                name_map = [rule for rule in name_map if any(re.search(rule[0], s.name) for s in torch_slots)] or None
    raise ParityInternalError("the weight map kept failing on fewer and fewer tensors")


# -- the conversion --------------------------------------------------------------------------------


def _check_paths(src, dst, target: str) -> Tuple[Path, Optional[Path]]:
    src_framework = "torch" if target == "mindspore" else "mindspore"
    src = Path(src)
    wanted = TORCH_SUFFIXES if src_framework == "torch" else MS_SUFFIXES
    if src.suffix not in wanted:
        other = "a PyTorch Module (--module)" if target == "mindspore" else "a MindSpore Cell (--cell)"
        known = src.suffix in TORCH_SUFFIXES + MS_SUFFIXES
        hint = f"; to convert a {_LABEL[target]} checkpoint, give {other}" if known else ""
        raise ParityUsageError(
            f"{src}: a {_LABEL[src_framework]} checkpoint for a {_LABEL[target]} model must end "
            f"with one of {', '.join(wanted)}; the suffix picks the format{hint}"
        )
    if not src.exists():
        raise ParityUsageError(f"{src}: no such file")
    if files.regular_size(src, "convert: source") == 0:
        raise ParityUsageError(f"convert: source {src}: an empty file, not a checkpoint")
    if dst is None:
        return src, None
    dst = Path(dst)
    wanted = MS_SUFFIXES if target == "mindspore" else TORCH_SUFFIXES
    if dst.suffix not in wanted:
        raise ParityUsageError(
            f"{dst}: a {_LABEL[target]} checkpoint must end with one of {', '.join(wanted)}; "
            "the suffix picks the format"
        )
    if dst.resolve() == src.resolve():
        raise ParityUsageError(f"{dst}: the destination is the source; give another file")
    return src, dst


def convert_checkpoint(
    src, model, dst=None, *, name_map=None, allow_missing: bool = False, allow_cast: bool = False, force: bool = False
) -> ConversionReport:
    """Convert the checkpoint ``src`` for ``model`` and write it to ``dst``; see :mod:`parity.tools.convert.checkpoint`.

    ``model`` is a MindSpore Cell (``src`` a PyTorch state dict: ``.pth``, ``.pt``, ``.bin``,
    ``.safetensors``; ``dst`` a ``.ckpt`` or ``.safetensors``) or a PyTorch Module (the other way
    round). ``dst=None`` loads the converted values into ``model`` and writes no file. ``name_map``
    is as for :func:`parity.check` (PyTorch names to MindSpore names, in both directions), or the
    path of a ``.toml``/``.json`` file of such entries. Raises :class:`ConversionError` (a usage
    error) when tensors are unaccounted for, unless ``allow_missing``, or when a cast to the model's
    dtype would lose values (:func:`cast_loss`), unless ``allow_cast``; ``model`` is left as it was.
    An existing read-only ``dst`` is replaced only with ``force``; ``dst`` is written as
    :func:`parity.files.private_folder` says (a private temporary, moved into place).
    """
    target = framework_of(model)
    if not target:
        raise ParityUsageError(
            f"convert_checkpoint needs a mindspore.nn.Cell or a torch.nn.Module, got {type(model).__qualname__}"
        )
    src, dst = _check_paths(src, dst, target)
    if dst is not None:
        files.check_destination(dst, "convert: destination", force=force)
    if isinstance(name_map, (str, os.PathLike)):
        name_map = load_name_map(name_map)
    from ...backends import mindspore as msb
    from ...backends import torch as tb

    backend = msb if target == "mindspore" else tb
    arrays, tied, notes = _read(src, "torch" if target == "mindspore" else "mindspore")
    source_slots = state_slots(arrays, "torch" if target == "mindspore" else "mindspore", tied)
    target_slots = backend.slots(model)
    to_ms = target == "mindspore"
    ms_slots, torch_slots = (target_slots, source_slots) if to_ms else (source_slots, target_slots)
    wmap, conflicts, left_ms, left_torch = map_with_leftovers(ms_slots, torch_slots, name_map)
    left_model, left_source = (left_ms, left_torch) if to_ms else (left_torch, left_ms)
    direction = "PyTorch -> MindSpore" if to_ms else "MindSpore -> PyTorch"
    report = ConversionReport(
        str(src),
        str(dst) if dst else type(model).__name__,
        direction,
        type(model).__name__,
        wmap,
        missing=keys(left_model, left_source),
        unexpected=keys(left_source, left_model),
        mismatched=[
            (Key(t.name, t.shape, t.dtype), Key(m.name, m.shape, m.dtype))
            if to_ms
            else (Key(m.name, m.shape, m.dtype), Key(t.name, t.shape, t.dtype))
            for m, t in conflicts
        ],
        dropped=[(name, _dropped(reason, to_ms)) for name, reason in wmap.ignored],
        notes=notes,
    )
    if not report.complete and not allow_missing:
        raise ConversionError(str(report), report)
    expected = _convert(wmap, arrays, target_slots, to_ms, report, allow_cast)
    if dst is None:
        for name, value in expected.items():
            backend.write(model, name, value)
    else:
        _write(expected, model, dst, target, report, force)
    _verify(model, backend, expected, report)
    return report


def _dropped(reason: str, to_ms: bool) -> str:
    """Why a PyTorch-only tensor is left out, as the direction makes it."""
    if reason == NOT_PERSISTENT:
        return f"PyTorch {reason}"
    if to_ms:
        return f"dropped ({reason})"
    return f"written as the Module holds them ({reason})"


def _convert(
    wmap: WeightMap, arrays, target_slots: List[Slot], to_ms: bool, report, allow_cast: bool = False
) -> Dict[str, np.ndarray]:
    """The model's tensors as the map lays the source's out, in the model's dtypes. A cast that
    loses values (see :func:`cast_loss`) is refused unless ``allow_cast``, before anything is written."""
    names = {p.ms if to_ms else p.torch for p in wmap.pairs}
    expected = {}
    for slot in target_slots:
        if slot.name in names:
            try:
                expected[slot.name] = np.zeros(slot.shape, np.dtype(slot.dtype))
            except TypeError:
                raise ParityUsageError(
                    f"{slot.name}: the model holds it as {slot.dtype}, which numpy cannot hold; "
                    "convert the model to float32 first"
                ) from None
    seen = set()
    for pair in wmap.pairs:
        name = pair.torch if to_ms else pair.ms
        source = arrays[name]
        dtype = expected[pair.ms if to_ms else pair.torch].dtype
        if source.dtype != dtype and name not in seen:
            seen.add(name)
            key = (str(source.dtype), str(dtype))
            report.casts[key] = report.casts.get(key, 0) + 1
            kind, what = cast_loss(source, dtype)
            if kind != "exact":
                report.cast_notes.append((name, kind, f"{source.dtype} -> {dtype}: {what}"))
    lossy = [(name, what) for name, kind, what in report.cast_notes if kind == "lossy"]
    if lossy and not allow_cast:
        raise ConversionError(
            "\n".join(
                [
                    f"Nothing was written: {len(lossy)} tensor{'' if len(lossy) == 1 else 's'} of {report.source} would lose "
                    f"values in the cast to {report.model}'s dtypes:"
                ]
                + [f"  {name} {what}" for name, what in lossy]
                + [
                    "Convert the model to the checkpoint's dtypes, or pass --allow-cast (allow_cast=True) to write "
                    "them anyway; the report then lists what was lost."
                ]
            ),
            report,
        )
    with np.errstate(all="ignore"):  # what a cast loses was measured above, and refused or allowed
        copy_weights(wmap, arrays, expected, to_torch=not to_ms)
    return expected


def cast_loss(source: np.ndarray, dtype: np.dtype) -> Tuple[str, str]:
    """(kind, what) of casting ``source`` to ``dtype``: ``"exact"`` (every value kept), ``"rounded"``
    (floats rounded to a narrower float's precision, within its range) or ``"lossy"``: finite values
    that become Inf, non-zero values that become 0, integers that do not fit, or a cast between
    integers and floats, which holds no weights' meaning (an integer buffer is a counter or an index)."""
    src, dtype = source.dtype, np.dtype(dtype)
    numeric = lambda d: "integer" if d.kind in "biu" else "complex" if d.kind == "c" else "floating-point"  # noqa: E731
    if numeric(src) != numeric(dtype):
        return "lossy", (
            f"a cast of {numeric(src)} values into a {numeric(dtype)} tensor; the values are not "
            f"the model's {numeric(dtype)} weights"
        )
    total = source.size
    with np.errstate(all="ignore"):
        cast = source.astype(dtype)
        back = cast.astype(src)
    if src.kind in "biu":
        wrapped = int(np.count_nonzero(back != source))
        if wrapped:
            return "lossy", f"{wrapped} of {total} values do not fit {dtype} and wrap around"
        return "exact", ""
    finite = np.isfinite(source)
    overflow = int(np.count_nonzero(finite & ~np.isfinite(cast)))
    flushed = int(np.count_nonzero(finite & (source != 0) & (cast == 0)))
    if overflow or flushed:
        parts = []
        if overflow:
            largest, limit = float(np.max(np.abs(source[finite]))), float(np.finfo(dtype).max)
            parts.append(
                f"{overflow} of {total} finite values become Inf (largest magnitude {largest:.3g}, "
                f"{dtype}'s largest {limit:.3g})"
            )
        if flushed:
            parts.append(f"{flushed} of {total} non-zero values become 0")
        return "lossy", "; ".join(parts)
    changed = ~((back == source) | (np.isnan(source) & np.isnan(back)))
    count = int(np.count_nonzero(changed))
    if not count:
        return "exact", ""
    with np.errstate(all="ignore"):
        relative = np.abs((back[changed] - source[changed]) / source[changed]).astype(np.float64)
    return "rounded", (
        f"{count} of {total} values rounded to {dtype}'s precision (largest relative change "
        f"{float(np.max(relative)):.2g})"
    )


def _write(
    expected: Dict[str, np.ndarray], model, dst: Path, target: str, report: ConversionReport, force: bool = False
) -> None:
    """Write ``expected`` in a private folder beside ``dst`` (:func:`parity.files.private_folder`),
    reload it into ``model``, check what loaded, then move it into place: a file that reaches ``dst``
    is complete and has loaded once. A crash leaves ``dst`` as it was; the folder goes with the
    process (SIGINT, SIGTERM) or with the next write into that folder (``kill -9``)."""
    from ...backends import checkpoints

    with files.private_folder(dst, "convert: destination", force=force) as folder:
        temporary = folder / f"converted{dst.suffix}"  # MindSpore appends a missing suffix
        if target == "mindspore":
            names = checkpoints.parameter_names(model)
            checkpoints.save_checkpoint_file({names[path]: value for path, value in expected.items()}, str(temporary))
            not_loaded, unused = checkpoints.load_checkpoint_into(model, str(temporary))
            missing = {name for path, name in names.items() if path not in expected}
        else:
            state = _torch_state(expected, model, report)
            checkpoints.save_state_file(state, str(temporary))
            not_loaded, unused = checkpoints.load_state_into(model, str(temporary))
            missing = set(checkpoints.state_keys(model)) - set(state)
        if set(not_loaded) != missing or unused:
            raise ParityInternalError(
                f"reloading {temporary} into {type(model).__name__}: not loaded "
                f"{sorted(set(not_loaded) ^ missing)}, unused {unused}"
            )
        files.publish(temporary, dst, "convert: destination")
        report.written = True


def _torch_state(expected: Dict[str, np.ndarray], module, report: ConversionReport) -> Dict[str, np.ndarray]:
    """The state dict to write: every key of ``module.state_dict()`` converted (tied weights under
    each name), and the PyTorch-only counters as the Module holds them, so that
    ``load_state_dict(strict=True)`` takes it."""
    from ...backends import checkpoints
    from ...backends import torch as tb

    primary = {}
    for slot in tb.slots(module):
        for name in (slot.name,) + slot.aliases:
            primary[name] = slot.name
    kept = {name for name, _ in report.map.ignored}
    state = {}
    for key in checkpoints.state_keys(module):
        name = primary.get(key, key)
        if name in expected:
            state[key] = expected[name]
        elif name in kept:
            state[key] = tb.read(module, name)
    return state


def _verify(model, backend, expected: Dict[str, np.ndarray], report: ConversionReport) -> None:
    """Every converted tensor, read back from ``model``, bit for bit what the conversion made."""
    for name, value in expected.items():
        landed = backend.read(model, name)
        if landed.dtype != value.dtype or landed.shape != value.shape or landed.tobytes() != value.tobytes():
            raise ParityInternalError(
                f"{name}: the value {type(model).__name__} holds after loading differs from "
                f"the converted one ({landed.dtype}{landed.shape} vs {value.dtype}{value.shape})"
            )
        report.verified += 1


# -- the command line ------------------------------------------------------------------------------


def build_model(spec: str, option: str, framework: str):
    """Call the factory ``package.module:factory`` named on the command line (the working folder
    importable), and check that it made a model of ``framework``."""
    from ...engine.factories import resolve

    if ":" not in spec:
        raise ParityUsageError(f"{option} {spec}: give package.module:factory")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    factory = resolve(spec, option)
    try:
        model = factory()
    except ParityUsageError:
        raise
    except Exception as exc:  # the user's factory failed: say which, without a deep traceback
        raise ParityUsageError(f"{option} {spec}: building failed: {type(exc).__name__}: {exc}") from None
    if framework_of(model) != framework:
        wanted = "a mindspore.nn.Cell" if framework == "mindspore" else "a torch.nn.Module"
        raise ParityUsageError(f"{option} {spec}: the factory made a {type(model).__qualname__}, not {wanted}")
    return model


def run_command(args) -> int:
    """``parity convert SRC DST (--cell F | --module F) [--name-map FILE] [--allow-missing] [--allow-cast]
    [--force]``."""
    files.check_destination(Path(args.dst), "convert: destination", force=args.force)  # before any model is built
    if args.cell:
        model = build_model(args.cell, "--cell", "mindspore")
    else:
        model = build_model(args.module, "--module", "torch")
    name_map = load_name_map(args.name_map) if args.name_map else None
    report = convert_checkpoint(
        args.src,
        model,
        args.dst,
        name_map=name_map,
        allow_missing=args.allow_missing,
        allow_cast=args.allow_cast,
        force=args.force,
    )
    print(report, flush=True)
    return 0
