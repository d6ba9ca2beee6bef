"""Dynamic shapes: :func:`parity.check_shapes`, one pair checked over several input shapes (the
migration guides' "function compliance" step), each shape judged as :func:`parity.check` judges.

In GRAPH mode the Cell is compiled for a dynamic signature (``Cell.set_inputs``: a dimension that
varies among the shapes given is ``None``) and run on every shape; a shape for which MindSpore
compiles again, fails, or computes differently is named.
"""

from __future__ import annotations

import contextlib
from typing import List, Optional, Sequence, Tuple

from ...backends import mindspore as msb
from ...errors import ParityMismatch, ParityUnsupported, ParityUsageError
from ...options import parse_seed
from ..check import check_pair, run_check
from ..inputs import materialize
from ..settings import DEFAULT_SEED, MODES, CheckOptions, Settings, check_choice
from .result import ShapeCheck, ShapesResult

__all__ = ["run_shapes", "signature_of"]


def signature_of(datas) -> List[Tuple[Tuple[Optional[int], ...], str]]:
    """The dynamic signature of positional inputs: per input, its shape with ``None`` where the
    dimension differs among ``datas``, and its dtype. The ranks and dtypes must agree."""
    if any(data.kwargs for data in datas):
        raise ParityUnsupported(
            "check_shapes(): keyword inputs cannot be given a dynamic signature in GRAPH mode "
            "(Cell.set_inputs takes them by position here); pass them positionally"
        )
    counts = {len(data.args) for data in datas}
    if len(counts) != 1:
        raise ParityUsageError(f"check_shapes(): every entry must give the same number of inputs, got {sorted(counts)}")
    signature = []
    for position in range(counts.pop()):
        arrays = [data.args[position] for data in datas]
        ranks, dtypes = sorted({a.ndim for a in arrays}), sorted({a.dtype.name for a in arrays})
        if len(ranks) != 1:
            raise ParityUsageError(
                f"check_shapes(): input[{position}] has ranks {ranks} among the shapes; a dynamic "
                "signature keeps the rank (only dimensions vary)"
            )
        if len(dtypes) != 1:
            raise ParityUsageError(
                f"check_shapes(): input[{position}] has dtypes {dtypes} among the shapes; give "
                "every shape the same dtype"
            )
        shapes = [a.shape for a in arrays]
        dims = tuple(shapes[0][d] if len({s[d] for s in shapes}) == 1 else None for d in range(ranks[0]))
        signature.append((dims, dtypes[0]))
    return signature


def run_shapes(ms_cell, torch_module, inputs: Sequence, *, settings: Settings = Settings(), **options) -> ShapesResult:
    """See :func:`parity.check_shapes`."""
    __tracebackhide__ = True
    check_pair(ms_cell, torch_module)
    if isinstance(inputs, (str, bytes, dict)) or not isinstance(inputs, (list, tuple)) or not inputs:
        raise ParityUsageError(
            "check_shapes(): inputs is a list of inputs, one entry per shape, each as check() "
            f"takes them (an array or spec, a tuple, or a dict); got {type(inputs).__qualname__}"
            + (" (empty)" if isinstance(inputs, (list, tuple)) else "")
        )
    if "inputs" in options:
        raise ParityUsageError("check_shapes(): give the shapes as the third argument, a list of inputs")
    mode = settings.mode or options.get("ms_mode") or CheckOptions.ms_mode
    check_choice("ms_mode", mode, MODES, "check_shapes()")
    seed = parse_seed(options.get("seed"), "check_shapes(seed=...)")
    seed = seed if seed is not None else settings.seed if settings.seed is not None else DEFAULT_SEED
    datas = [materialize(entry, seed) for entry in inputs]
    modes = ("pynative", "graph") if mode == "both" else (mode,)
    signature = signature_of(datas) if "graph" in modes else None
    result = ShapesResult(type(ms_cell).__name__, type(torch_module).__name__, [], modes, signature)
    region = msb.dynamic_inputs(ms_cell, signature) if signature is not None else contextlib.nullcontext()
    with region:
        for index, (entry, data) in enumerate(zip(inputs, datas)):
            described = "; ".join(f"{name} {array.dtype}{list(array.shape)}" for name, array in data.named())
            before = msb.graphs_compiled(ms_cell) if signature is not None else None
            shape = ShapeCheck(index, described)
            try:
                shape.result = run_check(ms_cell, torch_module, entry, settings=settings, **options)
            except ParityMismatch as exc:
                shape.result, shape.error = exc.result, "" if exc.result is not None else str(exc)
                shape.message = str(exc)
            except ParityUsageError as exc:  # the frameworks refused this shape (ParityUnsupported too)
                shape.error = str(exc)
            if before is not None:
                shape.compiled = msb.graphs_compiled(ms_cell) - before
            result.shapes.append(shape)
    if signature is not None:
        shown = ", ".join(f"input[{i}] {tuple(dims)} {dtype}" for i, (dims, dtype) in enumerate(signature))
        result.notes.append(f"GRAPH mode: compiled with the dynamic signature {shown} (Cell.set_inputs)")
        if result.recompiled:
            result.notes.append(
                "MindSpore compiled a graph again for shape(s) "
                + ", ".join(f"[{s.index}] {s.inputs}" for s in result.recompiled)
                + " instead of running the dynamic one: a "
                "dimension the signature fixes, code that specialises on a shape (a Python branch on x.shape), or "
                "MindSpore's own compile cache (a Cell of the same class compiled earlier in the process was measured "
                "to make the second shape compile again) makes a graph per shape"
            )
    if not result.passed:
        raise ParityMismatch(failure_message(result), result)
    return result


def failure_message(result: ShapesResult) -> str:
    failing = result.failing_shapes
    lines = [
        f"MindSpore and PyTorch differ on {len(failing)} of {len(result.shapes)} input shapes!",
        "",
        f"Pair:   mindspore {result.ms_type} <-> torch {result.torch_type} ({', '.join(result.modes)})",
        "Shapes:",
    ] + [s.line() for s in result.shapes]
    lines += [f"Note: {note}" for note in result.notes]
    first = failing[0]
    if first.error:
        lines += ["", f"Shape [{first.index}] raised:", *("  " + line for line in first.error.splitlines())]
    else:
        own = getattr(first, "message", "")
        lines += ["", f"Shape [{first.index}], its check:", *("  " + line for line in own.splitlines())]
    return "\n".join(lines)
