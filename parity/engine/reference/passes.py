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
from ...weights.layouts import by_torch_name
from ..compared import buffer_pairs, buffers_of, grad_pairs, layer_alignment, match_outputs, note_once
from ..diagnosis import messages
from ..diagnosis.recording import Localizer, Recording
from ..diagnosis.verdicts import LayerTable, settle
from ..side_errors import backward, run_side
from .side import RecordedTorch

__all__ = ["RecordedPasses"]


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
            align = layer_alignment(msb.layer_kinds(ms_cell), side.layer_kinds(), wmap)
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
            self.structure, outputs = match_outputs(ms_side, self.torch_side, mode, self.notes)
            if self.structure is not None:
                return
            buffers = buffers_of(msb, self.ms_cell, self.wmap, "ms") if self.train else {}
            shapes_agree = all(p.ms.shape == p.torch.shape for p in outputs)
            if self.grads and shapes_agree:
                torch_grads = self.side.backward(p.torch for p in self.trainable)
                ms_grads = backward(ms_side, self.cotangents, [p.ms for p in self.trainable], "MindSpore")
        if not compare:
            return
        self.pairs += outputs
        if self.grads and shapes_agree:
            self.pairs += grad_pairs(ms_grads, torch_grads, self.trainable, mode)
        if self.train:
            self.pairs += buffer_pairs(buffers, self.torch_buffers, self.wmap, mode)

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
            note_once(self.notes, note)


def _recorded_buffers(side: RecordedTorch, wmap) -> Dict[str, np.ndarray]:
    recorded = side.statistics()
    return {name: recorded[name] for name in by_torch_name(p for p in wmap.pairs if not p.trainable)}
