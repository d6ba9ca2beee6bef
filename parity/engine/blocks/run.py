"""Block by block: :func:`parity.check_blocks`. For each block index, both sides' block is built,
PyTorch's loaded from its checkpoint's keys under the block's prefix (and MindSpore's from its own
checkpoint, or copied from PyTorch's through the weight map), checked by :func:`parity.engine.check.run_check`
on PyTorch's output of the block before, run once more on MindSpore's own chained output, and freed
before the next block is built: at most one block per side is alive at a time."""

from __future__ import annotations

import contextlib
import dataclasses
import gc
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ...backends import mindspore as msb
from ...backends import torch as tb
from ...errors import ParityMismatch, ParityUnsupported, ParityUsageError
from ...judge.metrics import ArrayPair, Comparison, compare_pair
from ...judge.tolerance import ToleranceSpec
from ...options import parse_seed
from ..check import run_check
from ..inputs import materialize
from ..settings import MODES, CheckOptions, Settings, check_choice
from .backward import walk_backward
from .checkpoint import Checkpoint, open_checkpoint
from .load import WHERE, Sides, block_arrays, first_output
from .result import BlockCheck, BlocksResult, Seconds

__all__ = ["run_blocks"]


def run_blocks(
    ms_block: Callable[[int], Any],
    torch_block: Callable[[int], Any],
    count: int,
    inputs: Any,
    *,
    torch_weights: str,
    ms_weights: Optional[str] = None,
    prefix: str = "model.layers.{i}.",
    ms_prefix: Optional[str] = None,
    shared: Sequence[Any] = (),
    grads: bool = CheckOptions.grads,
    ms_mode: str = CheckOptions.ms_mode,
    tolerance: Any = CheckOptions.tolerance,
    name_map: Any = CheckOptions.name_map,
    ignore: Sequence[str] = CheckOptions.ignore,
    seed: Optional[int] = CheckOptions.seed,
    settings: Settings = Settings(),
) -> BlocksResult:
    """See :func:`parity.check_blocks`. ``settings``: the session's (the ``parity`` fixture's seed,
    mode, device and the marker's tolerance), as :func:`parity.engine.check.run_check` takes them."""
    __tracebackhide__ = True
    _check_call(ms_block, torch_block, count, prefix, ms_prefix)
    check_choice("ms_mode", ms_mode, MODES, WHERE)
    ms_mode = settings.mode or ms_mode  # the command line decides how the run behaves
    given = parse_seed(seed, f"{WHERE} seed")
    seed = given if given is not None else settings.resolved_seed
    torch_path = open_checkpoint(torch_weights, "torch_weights", WHERE)
    ms_path = open_checkpoint(ms_weights, "ms_weights", WHERE) if ms_weights is not None else None
    ms_prefix = prefix if ms_prefix is None else ms_prefix
    _check_count(torch_path, prefix, count)
    if ms_path is not None:
        _check_count(ms_path, ms_prefix, count)
    first, extra = _block_inputs(inputs, shared, seed)
    chain = (ToleranceSpec.parse(tolerance, source=f"{WHERE} tolerance"),) + settings.tolerances
    options: Dict[str, Any] = dict(
        grads=grads,
        ms_mode=ms_mode,
        tolerance=tolerance,
        name_map=name_map,
        ignore=ignore,
        seed=seed,
        settings=settings,
    )
    mode = "graph" if ms_mode == "graph" else "pynative"
    sides = Sides(ms_block, torch_block, (torch_path, prefix), (ms_path, ms_prefix))
    with _collecting_new_objects_only():
        result = _walk(sides, count, (first, extra), grads, mode=mode, chain=chain, options=options)
    if not result.passed:
        raise ParityMismatch(_message(result), result)
    return result


@contextlib.contextmanager
def _collecting_new_objects_only():
    """While the blocks run, the collections that free each block pair leave out what the process
    held before the call (``gc.freeze``): they scan what the check made, not both frameworks' half a
    million objects (0.3 s a collection on a 2-CPU machine, about half the time of a small block
    with gradients). Where the caller froze objects of its own, freezing is left to it."""
    if gc.get_freeze_count():
        yield
        return
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def _walk(sides, count, fed, grads, *, mode, chain, options) -> BlocksResult:
    """Every block forward (each one's check and both chains), then with gradients backward."""
    first, extra = fed
    reference, own = first, first
    checks: List[BlockCheck] = []
    kept: List[Tuple[np.ndarray, np.ndarray]] = []  # with grads, each block's input on each side
    types = ("", "")
    for index in range(count):
        if grads:
            kept.append((own, reference))
        started = Seconds.now()
        check, reference, own, types = _one_block(
            sides, index, (reference, own), extra, mode=mode, chain=chain, options=options
        )
        gc.collect()  # the block pair is gone before the next is built
        check.forward_time = Seconds.since(started)
        checks.append(check)
    input_grad = None
    if grads:
        device = options["settings"].device
        found, input_grad = walk_backward(sides, kept, extra, options=options, mode=mode, chain=chain, device=device)
        for check, (compared, spent) in zip(checks, found):
            check.chained_grads, check.backward_time = compared, spent
    notes = [n for c in checks for n in c.notes]
    return BlocksResult(types[0], types[1], checks, sides.torch_weights[1], notes, chained_input_grad=input_grad)


def _one_block(sides, index, fed, extra, *, mode, chain, options):
    """Block ``index`` built, loaded, checked and run on both chains; only arrays come back."""
    torch_module, ms_cell, notes = sides.pair(index)
    types = (type(ms_cell).__qualname__, type(torch_module).__qualname__)
    reference, own = fed
    weights = "copy" if sides.ms_weights[0] is None else "as_is"
    message = ""
    try:
        result = run_check(ms_cell, torch_module, (reference,) + extra, weights=weights, **options)
    except ParityMismatch as exc:
        if exc.result is None:
            raise
        # the failed check keeps the pair for a repro: let go of it, the block is freed below
        result, message = dataclasses.replace(exc.result, repro_source=None), str(exc)
    except (ParityUsageError, ParityUnsupported) as exc:  # the block's own pair or call: say which block
        raise type(exc)(f"{WHERE}: block {index}: {exc}") from None
    run = tb.Pass(torch_module, block_arrays(reference, extra), grads=False, device=options["settings"].device)
    torch_out = first_output(run, index)[1]
    with msb.execution_mode(mode):
        ms_out = first_output(msb.Pass(ms_cell, block_arrays(own, extra), grads=False, mode=mode), index)[1]
    del torch_module, ms_cell, run
    msb.release_graphs()
    pair = ArrayPair("output", f"block {index} output (chained)", "output", "output", mode, ms_out, torch_out)
    chained: Comparison = compare_pair(pair, chain, check_dtype=False)
    return BlockCheck(index, result, chained, message, notes), torch_out, ms_out, types


def _check_call(ms_block, torch_block, count, prefix, ms_prefix) -> None:
    for label, factory in (("ms_block", ms_block), ("torch_block", torch_block)):
        if not callable(factory):
            raise ParityUsageError(
                f"{WHERE}: {label} must be a callable building block i (``{label}(i)``), "
                f"got {type(factory).__qualname__}"
            )
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ParityUsageError(f"{WHERE}: count must be a positive number of blocks, got {count!r}")
    for label, value in (("prefix", prefix), ("ms_prefix", ms_prefix)):
        if value is not None and (not isinstance(value, str) or "{i}" not in value):
            raise ParityUsageError(
                f"{WHERE}: {label} must be a string holding '{{i}}' where the block index goes "
                f"(as 'model.layers.{{i}}.'), got {value!r}"
            )
        if value is not None and value.endswith("{i}"):
            raise ParityUsageError(
                f"{WHERE}: {label}={value!r} ends with the index: end it with the separator "
                f"({value + '.'!r}), or block 1 would take block 10's keys"
            )


def _check_count(checkpoint: Checkpoint, prefix: str, count: int) -> None:
    """A checkpoint with an index must hold every block asked for (a ``.ckpt`` is checked per block)."""
    path = checkpoint.path
    keys = checkpoint.keys()
    if not keys:
        return
    held = [i for i in range(count) if any(k.startswith(prefix.format(i=i)) for k in keys)]
    missing = sorted(set(range(count)) - set(held))
    if missing:
        shown = ", ".join(str(i) for i in missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
        raise ParityUsageError(
            f"{WHERE}: count={count} blocks, but {path} holds no key under {prefix.format(i=missing[0])!r} "
            f"(blocks missing: {shown}; it holds {len(held)} of the blocks 0..{count - 1})"
        )


def _block_inputs(inputs: Any, shared: Sequence[Any], seed: int) -> Tuple[np.ndarray, Tuple[np.ndarray, ...]]:
    first = materialize(inputs, seed)
    if len(first.args) != 1 or first.kwargs:
        raise ParityUsageError(
            f"{WHERE}: inputs is the first block's one input (an array or spec such as parity.randn(...)); "
            f"give what every block takes besides it in shared=(...), got {len(first.args) + len(first.kwargs)} inputs"
        )
    if not isinstance(shared, (tuple, list)):
        raise ParityUsageError(
            f"{WHERE}: shared must be a tuple of the arrays every block takes after its input "
            f"(an attention mask, cos, sin), got {type(shared).__qualname__}"
        )
    drawn = materialize((inputs,) + tuple(shared), seed).args  # one stream per position, as check draws them
    return drawn[0], tuple(drawn[1:])


def _message(result: BlocksResult) -> str:
    failing = result.failing_blocks
    first = failing[0]
    shown = ", ".join(str(i) for i in failing[:10]) + (" ..." if len(failing) > 10 else "")
    lines = [
        f"block {first} of {len(result)} differs (failing blocks: {shown}), each block fed PyTorch's "
        "output of the block before",
        str(result),
    ]
    lines += [b.line() for b in result.blocks]
    lines += ["", f"block {first}'s check:", result.blocks[first].message]
    return "\n".join(lines)
