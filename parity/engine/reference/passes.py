"""The passes of a check against a recorded reference: MindSpore once per mode, layer capture
riding along, and PyTorch's side read from the recording (:class:`.side.RecordedTorch`) wherever
:class:`parity.engine.passes.Passes` runs it. The compared pairs come out as the live check's do:
outputs, input gradients, parameter gradients (backward order), running statistics."""

from __future__ import annotations

import contextlib
from typing import Dict, List, Optional

import numpy as np

from ...backends import mindspore as msb
from ...judge.metrics import ArrayPair
from ...judge.tolerance import resolve
from ...weights.layouts import by_torch_name, ms_label, torch_layout
from ..diagnosis import messages
from ..diagnosis.alignment import align_layers
from ..diagnosis.recording import Localizer, Recording
from ..diagnosis.verdicts import LayerTable, settle
from ..outputs import pair_by_position
from ..side_errors import backward, run_side
from .side import RecordedTorch

__all__ = ["RecordedPasses", "ms_buffers"]


class RecordedPasses:
    """MindSpore's passes of one check, PyTorch's values from ``side``."""

    def __init__(
        self, ms_cell, side: RecordedTorch, ms_data, wmap, chain, *, grads, train, capture, keep_layers, noise
    ):
        self.ms_cell, self.side, self.ms_data, self.wmap = ms_cell, side, ms_data, wmap
        self.grads, self.train = grads, train
        self.trainable = wmap.trainable_pairs()
        self.pairs: List[ArrayPair] = []
        self.structure: Optional[str] = None
        self.ms_recording: Optional[Recording] = None
        self.notes: List[str] = []
        self.changed: Dict[str, List[str]] = {}
        self.torch_side = side.forward()
        self._changed(self.torch_side, "PyTorch")
        self.cotangents = side.cotangents()
        self.torch_buffers = _recorded_buffers(side, wmap) if train else {}
        self.ms_start = {p.ms: msb.read(ms_cell, p.ms) for p in wmap.pairs if not p.trainable}
        self.backward_layers = capture and grads
        self.localizer: Optional[Localizer] = None
        self.torch_recording: Optional[Recording] = None
        if capture:
            self.torch_recording = side.recording()
            align = _layer_alignment(ms_cell, side, wmap)
            self.localizer = Localizer(
                self.torch_recording, align, lambda names, dtype: resolve(chain, names, dtype)[0], keep=keep_layers
            )
            if noise:  # the float64 pass's floors, as reference="float64" measures them
                self.localizer.noise.update(side.noise())

    def ms_pass(self, mode: str, *, compare: bool = True) -> None:
        for name, value in self.ms_start.items():
            msb.write(self.ms_cell, name, value)
        hooks = self.localizer is not None and mode == "pynative"
        recording = (
            Recording(self.localizer.on_forward, self.localizer.on_backward) if self.localizer and hooks else None
        )
        capture = (
            msb.capture(self.ms_cell, recording, backward=self.backward_layers) if hooks else contextlib.nullcontext()
        )
        self.ms_recording = recording or self.ms_recording
        with capture as layers:
            ms_side = run_side(lambda: msb.Pass(self.ms_cell, self.ms_data, grads=self.grads, mode=mode), "MindSpore")
            self._changed(ms_side, "MindSpore")
            if layers is not None:
                layers.flush()
            self.structure = _structure_problem(ms_side, self.torch_side)
            if self.structure is not None:
                ms_paths = [p for p, _ in ms_side.values]
                if not pair_by_position(ms_side, self.torch_side):
                    return
                _note(self.notes, messages.by_position_note(ms_paths, [p for p, _ in self.torch_side.values]))
                self.structure = None
            if [p for p, _ in ms_side.values] != [p for p, _ in self.torch_side.values]:
                _note(self.notes, "the outputs' dict keys come in another order on each side; they were matched by key")
            ms_values = dict(ms_side.values)
            outputs = [
                ArrayPair("output", path, path, path, mode, ms_values[path], value)
                for path, value in self.torch_side.values
            ]
            buffers = ms_buffers(self.ms_cell, self.wmap) if self.train else {}
            shapes_agree = all(p.ms.shape == p.torch.shape for p in outputs)
            if self.grads and shapes_agree:
                torch_grads = self.side.backward(p.torch for p in self.trainable)
                ms_grads = backward(ms_side, self.cotangents, [p.ms for p in self.trainable], "MindSpore")
        if not compare:
            return
        self.pairs += outputs
        if self.grads and shapes_agree:
            self.pairs += _grad_pairs(ms_grads, torch_grads, self.trainable, mode)
        if self.train:
            groups = by_torch_name(p for p in self.wmap.pairs if not p.trainable)
            self.pairs += [
                ArrayPair(
                    "buffer",
                    name,
                    ms_label(pairs),
                    name,
                    mode,
                    buffers[name],
                    self.torch_buffers[name],
                    name.rpartition(".")[0],
                )
                for name, pairs in groups.items()
            ]

    def _changed(self, side, label: str) -> None:
        for name in getattr(side, "changed", ()):
            if name not in self.changed.setdefault(label, []):
                self.changed[label].append(name)

    def changed_notes(self) -> List[str]:
        return [messages.changed_note(label, names) for label, names in self.changed.items() if names]

    def localize_in_pynative(self) -> None:
        self.notes.append(messages.GRAPH_HOOKS_NOTE)
        self.ms_pass("pynative", compare=False)

    def layer_verdicts(self) -> LayerTable:
        assert self.localizer is not None
        unmatched = self.ms_recording.unmatched if self.ms_recording is not None else []
        if unmatched:
            self.notes.append(messages.unmatched_hooks_note(unmatched))
        settle(self.localizer.forward)
        settle(self.localizer.backward)
        return LayerTable(self.localizer.forward, self.localizer.backward)

    def rerun_for(self, decide, candidates) -> None:
        """Have ``decide`` (the envelope's or the golden's judge) give ``candidates`` their verdicts
        from PyTorch's recorded reruns."""
        spreads = decide(candidates, self.side.rerun)
        note = messages.unused_note(candidates, spreads)
        if note:
            _note(self.notes, note)


def _recorded_buffers(side: RecordedTorch, wmap) -> Dict[str, np.ndarray]:
    recorded = side.statistics()
    return {name: recorded[name] for name in by_torch_name(p for p in wmap.pairs if not p.trainable)}


def ms_buffers(ms_cell, wmap) -> Dict[str, np.ndarray]:
    """MindSpore's non-trainable tensors by PyTorch name, in the PyTorch layout."""
    groups = by_torch_name(p for p in wmap.pairs if not p.trainable)
    arrays = {p.ms: msb.read(ms_cell, p.ms) for pairs in groups.values() for p in pairs}
    return {name: torch_layout(pairs, arrays) for name, pairs in groups.items()}


def _layer_alignment(ms_cell, side: RecordedTorch, wmap):
    ms_kinds, torch_kinds = msb.layer_kinds(ms_cell), side.layer_kinds()
    known = {path: path for path in ms_kinds if path and path in torch_kinds}
    for pair in wmap.pairs:
        if pair.ms_part is None and pair.torch_part is None:
            known.setdefault(pair.ms.rpartition(".")[0], pair.torch.rpartition(".")[0])
    return align_layers(ms_kinds, torch_kinds, known).get


def _grad_pairs(ms_grads, torch_grads, trainable, mode) -> List[ArrayPair]:
    found = [
        ArrayPair("input grad", name, name, name, mode, ms_grads.inputs[name], value)
        for name, value in torch_grads.inputs.items()
    ]
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


def _structure_problem(ms_side, torch_side) -> Optional[str]:
    ms_paths, torch_paths = [p for p, _ in ms_side.values], [p for p, _ in torch_side.values]
    if sorted(ms_paths) != sorted(torch_paths) or len(set(ms_paths)) != len(ms_paths):
        return messages.structure_message(ms_paths, torch_paths)
    return None


def _note(notes: List[str], text: str) -> None:
    if text not in notes:
        notes.append(text)
