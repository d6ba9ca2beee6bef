"""The backward pass chained through the blocks, end to end, one block per side alive at a time.

The forward walk keeps each block's input on each side (PyTorch's chain and MindSpore's own: one
array per block per side, the only activations held). The backward walk then goes from the last
block to the first: it builds the block pair again, runs each side's forward on that side's kept
input, and its VJP with the cotangent that side's block after handed back (the last block's: the
seeded cotangent :func:`parity.check` draws for an output, the same on both sides). Each block's
parameter gradients under that chained cotangent, and the gradient reaching its input, are
compared; the input gradient goes on to the block before."""

from __future__ import annotations

import gc
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from ...backends import mindspore as msb
from ...backends import torch as tb
from ...errors import ParityUnsupported, ParityUsageError
from ...judge.metrics import ArrayPair, Comparison, compare_pair
from ..compared import grad_pairs
from ..pairing import map_pair_weights, set_weights
from ..passes import seeded_cotangents
from ..side_errors import backward, run_side
from .load import WHERE, Sides, block_arrays, first_output
from .result import Seconds

__all__ = ["walk_backward"]

FIRST = "input[0]"  # the input each block takes from the block before

Pair = Tuple[np.ndarray, np.ndarray]  # (MindSpore's, PyTorch's)


def walk_backward(
    sides: Sides,
    kept: Sequence[Pair],
    extra: Tuple[np.ndarray, ...],
    *,
    options: Dict,
    mode: str,
    chain: tuple,
    device: str,
) -> Tuple[List[Tuple[List[Comparison], Seconds]], Optional[Pair]]:
    """Each block's chained gradients compared (its input's first, then its parameters', in
    backward order) and the time the walk spent on it, by block index; and both sides' gradient
    reaching block 0's input (None where that input is not floating). ``kept``: each block's input,
    (MindSpore's, PyTorch's)."""
    found: List[Tuple[List[Comparison], Seconds]] = [([], Seconds()) for _ in kept]
    cotangent: Optional[Pair] = None
    for index in reversed(range(len(kept))):
        started = Seconds.now()
        try:
            compared, cotangent = _one_block(
                sides, index, kept[index], extra, cotangent, options=options, mode=mode, chain=chain, device=device
            )
        except (ParityUsageError, ParityUnsupported) as exc:  # a side's error in the walk: say which block
            if str(exc).startswith(WHERE):
                raise
            raise type(exc)(f"{WHERE}: block {index}, in the chained backward: {exc}") from None
        gc.collect()  # the block pair is gone before the one before it is built
        found[index] = (compared, Seconds.since(started))
        if cotangent is None and index > 0:
            raise ParityUsageError(
                f"{WHERE}: block {index}'s input is not floating: no gradient to hand to block {index - 1}"
            )
    return found, cotangent


def _one_block(sides, index, fed, extra, cotangent, *, options, mode, chain, device):
    ms_grads, torch_grads, trainable = _gradients(sides, index, fed, extra, cotangent, options, mode, device)
    msb.release_graphs()  # the block pair went with the call above
    pairs = [p for p in grad_pairs(ms_grads, torch_grads, trainable, mode) if p.kind == "param grad"]
    reached: Optional[Pair] = None
    if FIRST in torch_grads.inputs and FIRST in ms_grads.inputs:
        reached = (ms_grads.inputs[FIRST], torch_grads.inputs[FIRST])
        name = f"block {index} input (chained backward)"
        pairs.insert(0, ArrayPair("input grad", name, FIRST, FIRST, mode, *reached))
    return [compare_pair(pair, chain, check_dtype=False) for pair in pairs], reached


def _gradients(sides, index, fed, extra, cotangent, options, mode, device):
    """Block ``index`` of both sides built, loaded, run on each side's kept input and differentiated
    with each side's cotangent (the seeded one, for the last block): both sides' gradients."""
    torch_module, ms_cell, _ = sides.pair(index)
    wmap = map_pair_weights(ms_cell, torch_module, options["name_map"], device, options["ignore"])
    if sides.ms_weights[0] is None:
        set_weights("copy", wmap, ms_cell, torch_module)
    msb.set_train(ms_cell, False)
    tb.set_train(torch_module, False)
    msb.prepare(seed=options["seed"], device=device)
    tb.prepare(seed=options["seed"], device=device)
    ms_in, torch_in = fed
    torch_run = run_side(
        lambda: tb.Pass(torch_module, block_arrays(torch_in, extra), grads=True, device=device), "PyTorch"
    )
    with msb.execution_mode(mode):
        ms_run = run_side(lambda: msb.Pass(ms_cell, block_arrays(ms_in, extra), grads=True, mode=mode), "MindSpore")
    torch_path, _ = first_output(torch_run, index)
    ms_path, _ = first_output(ms_run, index)
    if cotangent is None:  # the last block: the cotangent check draws for this output, on both sides
        seeded = seeded_cotangents(torch_run, options["seed"]).get(torch_path)
        if seeded is None:
            raise ParityUsageError(
                f"{WHERE}: block {index}'s output {torch_path} is not floating: nothing to differentiate"
            )
        cotangent = (seeded, seeded)
    trainable = wmap.trainable_pairs()
    torch_grads = backward(torch_run, {torch_path: cotangent[1]}, [p.torch for p in trainable], "PyTorch")
    ms_grads = backward(ms_run, {ms_path: cotangent[0]}, [p.ms for p in trainable], "MindSpore")
    return ms_grads, torch_grads, trainable
