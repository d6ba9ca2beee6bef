"""What a pass of a check compares, whichever way PyTorch's side came (run here, or read from a
recorded reference): the outputs matched by path (or by position), the input and parameter
gradients, the buffers, and which MindSpore layer stands for which PyTorch layer. Imports no
framework: the backend that reads a model's buffers is passed in."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from ..judge.metrics import ArrayPair
from ..weights.layouts import by_torch_name, ms_label, torch_layout
from .diagnosis import messages
from .diagnosis.alignment import Alignment, align_layers, known_pairs, stateless
from .outputs import pair_by_position

__all__ = ["note_once", "match_outputs", "grad_pairs", "buffers_of", "buffer_pairs", "layer_alignment"]


def note_once(notes: List[str], text: str) -> None:
    if text not in notes:
        notes.append(text)


def match_outputs(ms_side, torch_side, mode: str, notes: List[str]) -> Tuple[Optional[str], List[ArrayPair]]:
    """(the structure problem, or None; one pair per output path, in PyTorch's order). A dict's
    keys in another order are the same structure (outputs are matched by path, with a note); a
    tuple against a dict of as many tensors is matched by position (:func:`pair_by_position`)."""
    ms_paths, torch_paths = [p for p, _ in ms_side.values], [p for p, _ in torch_side.values]
    if sorted(ms_paths) != sorted(torch_paths) or len(set(ms_paths)) != len(ms_paths):
        if not pair_by_position(ms_side, torch_side):
            return messages.structure_message(ms_paths, torch_paths), []
        note_once(notes, messages.by_position_note(ms_paths, torch_paths))
    elif ms_paths != torch_paths:
        note_once(notes, "the outputs' dict keys come in another order on each side; they were matched by key")
    ms_values = dict(ms_side.values)
    return None, [
        ArrayPair("output", path, path, path, mode, ms_values[path], torch_value)
        for path, torch_value in torch_side.values
    ]


def grad_pairs(ms_grads, torch_grads, trainable, mode: str) -> List[ArrayPair]:
    found = [
        ArrayPair("input grad", name, name, name, mode, ms_grads.inputs[name], value)
        for name, value in torch_grads.inputs.items()
    ]
    # Backward order: the last layer's grads are computed first. One comparison per PyTorch
    # tensor, the MindSpore gradient moved through the weight map's layout (part of a fused one,
    # parts joined, transposed).
    for name, pairs in reversed(list(by_torch_name(trainable).items())):
        found.append(
            ArrayPair(
                "param grad",
                name,
                ms_label(pairs),
                name,
                mode,
                torch_layout(pairs, ms_grads.params),
                torch_grads.params[name],
                name.rpartition(".")[0],
            )
        )
    return found


def buffers_of(backend, model, wmap, side: str) -> Dict[str, np.ndarray]:
    """Non-trainable tensors by PyTorch name, in the PyTorch layout (``backend``: the side's
    ``parity.backends`` module)."""
    groups = by_torch_name(p for p in wmap.pairs if not p.trainable)
    if side != "ms":
        return {name: backend.read(model, name) for name in groups}
    arrays = {p.ms: backend.read(model, p.ms) for pairs in groups.values() for p in pairs}
    return {name: torch_layout(pairs, arrays) for name, pairs in groups.items()}


def buffer_pairs(ms_buffers, torch_buffers, wmap, mode: str) -> List[ArrayPair]:
    groups = by_torch_name(p for p in wmap.pairs if not p.trainable)
    return [
        ArrayPair(
            "buffer", name, ms_label(pairs), name, mode, ms_buffers[name], torch_buffers[name], name.rpartition(".")[0]
        )
        for name, pairs in groups.items()
    ]


def layer_alignment(ms_kinds: Dict[str, Any], torch_kinds: Dict[str, Any], wmap) -> Alignment:
    """MindSpore layer path -> PyTorch layer path: the same path where the layers are of one kind,
    else as the weight map paired their weights, else the same path, else by structure (see
    :func:`parity.engine.diagnosis.alignment.known_pairs` and ``align_layers``); the layers that
    hold no tensor of the map are paired by their place among the calls as they come
    (:class:`parity.engine.diagnosis.alignment.Alignment`)."""
    owners = [
        (pair.ms.rpartition(".")[0], pair.torch.rpartition(".")[0])
        for pair in wmap.pairs
        if pair.ms_part is None and pair.torch_part is None  # a fused layer has no one counterpart
    ]
    mapping = align_layers(ms_kinds, torch_kinds, known_pairs(ms_kinds, torch_kinds, owners))
    unpaired = wmap.constants + wmap.left_out
    ms_tensors = [p.ms for p in wmap.pairs] + [name for side, name in unpaired if side == "MindSpore"]
    torch_tensors = [p.torch for p in wmap.pairs] + [name for side, name in unpaired if side == "PyTorch"]
    torch_tensors += [name for name, _ in wmap.ignored]
    return Alignment(
        mapping, ms_kinds, torch_kinds, stateless(ms_kinds, ms_tensors), stateless(torch_kinds, torch_tensors)
    )
