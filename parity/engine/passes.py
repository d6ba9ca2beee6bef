"""The passes of one check: PyTorch once, MindSpore once per mode, layer capture riding along,
and PyTorch again for the judges (:mod:`parity.judge`) as they ask.

The compared tensors come out as :class:`parity.judge.metrics.ArrayPair` in execution order:
outputs, input gradients, parameter gradients (backward order), running statistics.
"""

from __future__ import annotations

import contextlib
import dataclasses
from typing import Dict, List, Optional

import numpy as np
import torch

from ..backends import is_float
from ..backends import mindspore as msb
from ..backends import torch as tb
from ..judge.dtypes import cast, dtype_name, eps
from ..judge.metrics import ArrayPair
from ..judge.tolerance import resolve
from .compared import buffer_pairs, buffers_of, grad_pairs, layer_alignment, match_outputs, note_once
from .diagnosis import messages
from .diagnosis.recording import Localizer, Recording
from .diagnosis.verdicts import LayerTable, settle
from .inputs import Inputs, normal_floats, seeded_stream, unit_floats
from .side_errors import backward, run_side

__all__ = ["Passes", "perturbed_inputs", "draw_seed", "seeded_cotangents"]


def perturbed_inputs(data: Inputs, seed: int, draw: int, ulps: float) -> Inputs:
    """The inputs with every floating element moved by ``ulps`` units in the last place, up or down."""

    def move(name, array):
        if not is_float(array) or array.dtype.kind == "c" or array.size == 0:
            return array
        u = unit_floats(seeded_stream(seed, f"envelope:{draw}:{name}"), array.size).reshape(array.shape)
        step = eps(array.dtype) * ulps * np.where(u < 0.5, -1.0, 1.0)
        moved = array * (1.0 + step)
        if dtype_name(array.dtype) != "bfloat16":  # finfo.min moved down stays finite (a mask's value)
            limit = float(np.finfo(array.dtype).max)
            np.clip(moved, -limit, limit, out=moved, where=np.isfinite(moved) | np.isfinite(array))
        return moved.astype(array.dtype)

    args = tuple(move(f"input[{i}]", a) for i, a in enumerate(data.args))
    return Inputs(args, {k: move(k, a) for k, a in data.kwargs.items()}, data.descriptions)


class Passes:
    """The passes of one check: PyTorch once, MindSpore once per mode, layer capture riding along."""

    def __init__(
        self,
        ms_cell,
        torch_module,
        data,
        wmap,
        chain,
        *,
        grads,
        train,
        seed,
        device,
        capture,
        ms_data=None,
        amp=None,
        keep_layers=False,
    ):
        self.ms_cell, self.torch_module, self.data, self.wmap = ms_cell, torch_module, data, wmap
        self.ms_data = ms_data if ms_data is not None else data  # each side's inputs in its own dtype
        self.grads, self.train, self.seed, self.device = grads, train, seed, device
        self.amp = amp  # parity.engine.amp.Amp of a mixed-precision pair
        self.trainable = wmap.trainable_pairs()
        self.pairs: List[ArrayPair] = []
        self.structure: Optional[str] = None  # set when the two sides return different output structures
        self.ms_recording: Optional[Recording] = None  # the hooked MindSpore pass, when layers are captured
        self.notes: List[str] = []
        self.changed: Dict[str, List[str]] = {}  # side -> the inputs its forward changed in place
        self.torch_grads = None
        self.torch_layers = None  # the PyTorch capture, while layers are captured
        self.ms_start = {p.ms: msb.read(ms_cell, p.ms) for p in wmap.pairs if not p.trainable}
        self.torch_start = tb.buffers(torch_module)  # every buffer, counters too: the envelope's runs start here
        self.torch_recording = Recording() if capture else None
        self.backward_layers = capture and grads
        self.localizer = None
        if capture:
            align = layer_alignment(msb.layer_kinds(ms_cell), tb.layer_kinds(torch_module), wmap)
            self.localizer = Localizer(
                self.torch_recording, align, lambda names, dtype: resolve(chain, names, dtype)[0], keep=keep_layers
            )

    def __enter__(self):
        self._stack = contextlib.ExitStack()
        return self

    def __exit__(self, *exc_info):
        return self._stack.__exit__(*exc_info)

    def _torch_pass(self):
        if self.torch_recording is not None:
            self.torch_layers = self._stack.enter_context(
                tb.capture(self.torch_module, self.torch_recording, backward=self.backward_layers)
            )
        return tb.Pass(self.torch_module, self.data, grads=self.grads, device=self.device)

    def torch_forward(self) -> None:
        self.torch_side = run_side(self._torch_pass, "PyTorch")
        self._changed(self.torch_side, "PyTorch")
        self.torch_buffers = buffers_of(tb, self.torch_module, self.wmap, "torch") if self.train else {}
        self.cotangents = seeded_cotangents(self.torch_side, self.seed)

    def _torch_backward(self):
        if self.torch_grads is None:
            self.torch_grads = backward(self.torch_side, self.cotangents, [p.torch for p in self.trainable], "PyTorch")
            if self.torch_layers is not None:
                self.torch_layers.flush()  # the layers' gradients, into the recording
        return self.torch_grads

    def ms_pass(self, mode: str, *, compare: bool = True) -> None:
        for name, value in self.ms_start.items():
            msb.write(self.ms_cell, name, value)
        hooks = self.localizer is not None and mode == "pynative"
        recording = Recording(self.localizer.on_forward, self.localizer.on_backward) if hooks else None
        capture = (
            msb.capture(self.ms_cell, recording, backward=self.backward_layers) if hooks else contextlib.nullcontext()
        )
        self.ms_recording = recording or self.ms_recording
        with capture as layers:
            ms_side = run_side(lambda: msb.Pass(self.ms_cell, self.ms_data, grads=self.grads, mode=mode), "MindSpore")
            self._changed(ms_side, "MindSpore")
            if layers is not None:
                layers.flush()  # the forward's layers, compared before the backward starts
            self.structure, outputs = match_outputs(ms_side, self.torch_side, mode, self.notes)
            if self.structure is not None:
                return
            # Read statistics before the backward: in GRAPH mode the VJP re-runs the forward.
            ms_buffers = buffers_of(msb, self.ms_cell, self.wmap, "ms") if self.train else {}
            shapes_agree = all(p.ms.shape == p.torch.shape for p in outputs)
            if self.grads and shapes_agree:
                torch_grads = self._torch_backward()
                ms_grads = backward(ms_side, self.cotangents, [p.ms for p in self.trainable], "MindSpore")
        if not compare:
            return
        self.pairs += outputs
        if self.grads and shapes_agree:
            grads = grad_pairs(ms_grads, torch_grads, self.trainable, mode)
            self.pairs += [self._in_given_dtype(pair) if pair.kind == "input grad" else pair for pair in grads]
        if self.train:
            self.pairs += buffer_pairs(ms_buffers, self.torch_buffers, self.wmap, mode)

    def _in_given_dtype(self, pair: ArrayPair) -> ArrayPair:
        """An input's gradient, where parity gave that input to the two sides in different dtypes (each
        the half dtype its side computes in: see :func:`parity.engine.inputs.per_side_inputs`),
        compared in the narrower of the two: the dtypes differ by parity's doing, not the nets'."""
        ms_given, torch_given = (dict(d.named()).get(pair.name) for d in (self.ms_data, self.data))
        if ms_given is None or torch_given is None or ms_given.dtype == torch_given.dtype:
            return pair
        widths = (ms_given.dtype.itemsize, torch_given.dtype.itemsize)
        if widths[0] == widths[1]:
            return pair  # float16 against bfloat16: neither holds the other
        narrow = (ms_given if widths[0] < widths[1] else torch_given).dtype
        note_once(
            self.notes,
            messages.narrowed_gradient_note(pair.name, narrow.name, ms_given.dtype.name, torch_given.dtype.name),
        )
        return dataclasses.replace(pair, ms=cast(pair.ms, narrow.name), torch=cast(pair.torch, narrow.name))

    def _changed(self, side, label: str) -> None:
        for name in getattr(side, "changed", ()):
            if name not in self.changed.setdefault(label, []):
                self.changed[label].append(name)

    def changed_notes(self) -> List[str]:
        """What each side's forward changed in place among its inputs (see :func:`parity.engine.diagnosis.messages.changed_note`)."""
        return [messages.changed_note(label, names) for label, names in self.changed.items() if names]

    def localize_in_pynative(self) -> None:
        """GRAPH mode runs no hooks: compare the layers in one extra PYNATIVE pass."""
        self.notes.append(messages.GRAPH_HOOKS_NOTE)
        self.ms_pass("pynative", compare=False)

    def layer_verdicts(self):
        unmatched = self.ms_recording.unmatched if self.ms_recording is not None else []
        if unmatched:
            self.notes.append(messages.unmatched_hooks_note(unmatched))
        settle(self.localizer.forward)
        settle(self.localizer.backward)
        return LayerTable(self.localizer.forward, self.localizer.backward)

    def rerun_for(self, decide, candidates, references) -> None:
        """Have ``decide`` (:func:`parity.judge.envelope.judge_envelope` or
        :func:`parity.judge.golden.judge_golden`) give ``candidates`` their verdicts, PyTorch's
        reruns made here: the float64 pass from the same start (``references`` where it ran
        already; kept there for the next judge), and the passes with every input, weight, layer
        output and gradient moved as each rerun asks, with the same dropout masks as the first run."""
        after = tb.buffers(self.torch_module)

        def rerun(spec):
            if spec.cast is not None:
                if not references:
                    module64 = tb.float64_copy(self.torch_module)
                    tb.set_buffers(module64, self.torch_start)
                    references.update(
                        _reference_values(
                            module64,
                            self.data,
                            self.grads,
                            self.device,
                            self.cotangents,
                            self.wmap,
                            self.train,
                            cast=spec.cast,
                        )
                    )
                return references.items()
            # No backward where no gradient is still open (the forward's values alone decide).
            grads = self.grads and (spec.keys is None or any(kind in _GRADIENTS for kind, *_ in spec.keys))
            tb.set_buffers(self.torch_module, self.torch_start)
            tb.prepare(seed=self.seed, device=self.device)  # the same dropout masks as the first run
            with tb.perturbed(self.torch_module, seed=draw_seed(self.seed, spec.draw), ulps=spec.ulps):
                return _reference_values(
                    self.torch_module,
                    perturbed_inputs(self.data, self.seed, spec.draw, spec.ulps),
                    grads,
                    self.device,
                    self.cotangents,
                    self.wmap,
                    self.train,
                ).items()

        spreads = decide(candidates, rerun)
        tb.set_buffers(self.torch_module, after)
        note = messages.unused_note(candidates, spreads)
        if note:
            note_once(self.notes, note)

    def float64_reference(self, module64):
        """The float64 PyTorch pass; its layers too, as the localiser's noise floor."""
        capture = contextlib.nullcontext()
        if self.localizer is not None:
            if self.grads:
                self._torch_backward()  # first, so that each float64 layer call is measured as it comes
            capture = tb.capture(module64, self.localizer.float64_recording(), backward=self.backward_layers)
        with capture:
            return _reference_values(
                module64, self.data, self.grads, self.device, self.cotangents, self.wmap, self.train, cast="float64"
            )


_GRADIENTS = ("input grad", "param grad")


def seeded_cotangents(torch_side, seed: int) -> Dict[str, np.ndarray]:
    """A seeded N(0, 1) cotangent for every floating output: the VJP direction, never ``.sum()``."""
    cots = {}
    for path, value in torch_side.values:
        if is_float(value):
            count = int(value.size)
            cots[path] = (
                normal_floats(seeded_stream(seed, f"cotangent:{path}"), count).reshape(value.shape).astype(value.dtype)
            )
    return cots


def draw_seed(seed: int, draw: int) -> int:
    return int(seeded_stream(seed, f"envelope:{draw}").random_raw()) >> 1


def _reference_values(module, data, grads, device, cotangents, wmap, train, cast=None):
    """The same forward and VJP on the PyTorch side again (in float64 with ``cast``), keyed like
    ``ArrayPair.key``."""
    dtype = getattr(torch, cast) if cast else None
    label = f"PyTorch {cast}" if cast else "PyTorch (rounding envelope)"
    side = run_side(lambda: tb.Pass(module, data, grads=grads, device=device, cast=dtype), label)
    found = {("output", path): value for path, value in side.values}
    if grads:
        trainable = [p.torch for p in wmap.trainable_pairs()]
        result = backward(side, cotangents, trainable, label)
        found.update({("input grad", k): v for k, v in result.inputs.items()})
        found.update({("param grad", k): v for k, v in result.params.items()})
    if train:
        found.update({("buffer", k): v for k, v in buffers_of(tb, module, wmap, "torch").items()})
    return found
