"""Layer capture: per-layer records from both sides, each MindSpore call compared as it comes.

The PyTorch side runs first and keeps its layer inputs and outputs (as numpy arrays, each
tensor once). The MindSpore side compares each layer call *as it happens* against the aligned
PyTorch record (:func:`.verdicts.compare_call`) and keeps only a summary, so memory stays bounded
by one side's activations.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union, cast

import numpy as np

from .alignment import Alignment, by_name
from .verdicts import LayerVerdict, Metrics, compare_call, worst_relative_error

__all__ = ["LayerCall", "Recording", "Localizer"]


@dataclass
class LayerCall:
    """One call of one sub-Cell/sub-Module: its forward tensors and, later, its gradients."""

    path: str
    type: str
    call: int
    inputs: Optional[List[np.ndarray]]
    outputs: Optional[List[np.ndarray]]
    grad_outputs: Optional[List[np.ndarray]] = None  # flowing in during backward
    grad_inputs: Optional[List[np.ndarray]] = None  # flowing out during backward
    # The name of each input and grad_input (a positional argument's is its parameter's), by
    # which the two sides are paired where either was given keyword arguments (``keywords``).
    input_names: Optional[Tuple[str, ...]] = None
    grad_input_names: Optional[Tuple[str, ...]] = None
    keywords: bool = False

    @property
    def key(self) -> Tuple[str, int]:
        return self.path, self.call


class Recording:
    """Collects LayerCalls from hooks; backward calls are matched to their forward call."""

    def __init__(
        self,
        on_forward: Optional[Callable[[LayerCall], None]] = None,
        on_backward: Optional[Callable[[LayerCall], None]] = None,
    ):
        self.calls: List[LayerCall] = []
        self.backward_order: List[LayerCall] = []
        self._counts: Counter = Counter()
        self._by_key: Dict[Tuple[str, int], LayerCall] = {}
        self.unmatched: List[str] = []  # backward calls with no forward record
        self._on_forward = on_forward
        self._on_backward = on_backward

    def forward(self, path: str, type_name: str, inputs, outputs, *, names=None, keywords: bool = False) -> None:
        """A forward call; ``names`` names its inputs, ``keywords`` says it was given keyword arguments."""
        call = LayerCall(path, type_name, self._counts[path], inputs, outputs, input_names=names, keywords=keywords)
        self._counts[path] += 1
        if self._on_forward is not None:
            self._on_forward(call)
            call.inputs, call.outputs = [], []  # compared already: keep no arrays
        self.calls.append(call)
        self._by_key[call.key] = call

    def backward(self, path: str, grad_inputs, grad_outputs, call: int, *, names=None, keywords: bool = False) -> None:
        """The gradients of call number ``call`` of ``path``; ``names`` names the grad_inputs."""
        record = self._by_key.get((path, call))
        if record is not None:
            record.grad_inputs, record.grad_outputs = grad_inputs, grad_outputs
            record.grad_input_names, record.keywords = names, record.keywords or keywords
            if self._on_backward is not None:
                self._on_backward(record)
                record.grad_inputs, record.grad_outputs = [], []
            self.backward_order.append(record)
        else:
            self.unmatched.append(path)

    def get(self, path: str, call: int) -> Optional[LayerCall]:
        return self._by_key.get((path, call))

    def add(self, call: LayerCall) -> None:
        """A call recorded elsewhere (a recorded reference read back), kept as it is."""
        self.calls.append(call)
        self._by_key[call.key] = call


class Localizer:
    """Compares MindSpore layer calls against the PyTorch recording as they happen.

    Each PyTorch array is released once the MindSpore call aligned with it has been compared, so
    the recording shrinks while the MindSpore side runs. Noise floors are measured while the
    float64 pass runs and kept as numbers only.

    Where ``align`` is an :class:`.alignment.Alignment`, a parameter-free layer it has not paired
    waits for the next paired call: the calls between two paired calls of MindSpore are paired
    by their place with PyTorch's between the same two (:meth:`.alignment.Alignment.pair_calls`),
    then compared in their order. Only the waiting calls keep their arrays meanwhile."""

    def __init__(
        self,
        torch_recording: Recording,
        align: Union[Alignment, Callable[[str], Optional[str]]],
        resolve_tol,
        noise_factor: float = 10.0,
        *,
        keep: bool = False,
    ):
        self.torch = torch_recording
        # ``keep``: PyTorch's arrays stay after comparing (each layer's own error feeds them again).
        self.keep = keep
        self._compared: set = set()
        self.noise: Dict[Tuple[str, str, int], Tuple[float, float]] = {}  # (direction, path, call) -> floors
        self.noise_factor = noise_factor
        self.align = align
        self._positions = align if isinstance(align, Alignment) else None
        # MindSpore's calls since the last paired one while one of them waits to be paired by its
        # place: the waiting calls themselves, the others' verdicts (made at once, in their order)
        self._waiting: List[Any] = []
        self._last = -1  # the place among PyTorch's calls of the last paired call's counterpart
        self._places: Optional[Dict[Tuple[str, int], int]] = None
        self.resolve_tol = resolve_tol
        self._forward: List[LayerVerdict] = []
        self.backward: List[LayerVerdict] = []
        self.metrics = Metrics()

    def _compare(self, direction: str, call: LayerCall) -> LayerVerdict:
        path = self.align(call.path)
        ref = self.torch.get(path, call.call) if path is not None else None
        if (direction, path, call.call) in self._compared:
            ref = None  # a second MindSpore call aligned with the same PyTorch call
        ref_in, ref_out = _sides(ref, direction) if ref is not None else (None, None)
        ms_in, ms_out = _sides(call, direction)
        if ref_out is None:
            return LayerVerdict(
                direction,
                path or call.path,
                call.path,
                call.type,
                "",
                call.call,
                0.0,
                0.0,
                0.0,
                0.0,
                0.0,
                status="unaligned",
            )
        assert ref is not None and path is not None  # ref_out came from ref, aligned at path
        outs = [a for a in ref_out if a is not None]
        tol = self.resolve_tol((path, call.path), str(outs[0].dtype) if outs else "float32")
        noise, in_noise = self.noise.get((direction, path, call.call), (0.0, 0.0))
        if call.keywords or ref.keywords:
            if direction == "forward":
                ms_in, ref_in = by_name(ms_in, call.input_names, cast(Sequence[Any], ref_in), ref.input_names)
            else:
                ms_out, ref_out = by_name(ms_out, call.grad_input_names, ref_out, ref.grad_input_names)
        verdict = compare_call(
            direction,
            path,
            call.path,
            call.type,
            ref.type,
            call.call,
            ms_in,
            ms_out,
            ref_in,
            ref_out,
            tol,
            noise,
            in_noise,
            self.metrics,
        )
        self._compared.add((direction, path, call.call))
        if not self.keep:
            _release(ref, direction)
        return verdict

    @property
    def forward(self) -> List[LayerVerdict]:
        """The forward verdicts in MindSpore's execution order (the waiting calls settled first)."""
        self._settle(None)
        return self._forward

    def on_forward(self, call: LayerCall) -> None:
        if self._positions is None:
            self._forward.append(self._compare("forward", call))
            return
        path = self.align(call.path)
        place = self._place(path, call.call) if path is not None else None
        if place is not None:  # a paired call: the calls before it pair by place, up to it
            self._settle(place)
            self._forward.append(self._compare("forward", call))
            self._last = place
        elif self._positions.waits(call.path):
            self._waiting.append(replace(call))  # its own record: the Recording drops its arrays
        elif self._waiting:
            self._waiting.append(self._compare("forward", call))
        else:
            self._forward.append(self._compare("forward", call))

    def _place(self, path: str, call: int) -> Optional[int]:
        if self._places is None:  # PyTorch's side ran first: its calls are all there
            self._places = {c.key: i for i, c in enumerate(self.torch.calls)}
        return self._places.get((path, call))

    def _settle(self, place: Optional[int]) -> None:
        """Pair the waiting calls by their place with PyTorch's between the last paired call's
        counterpart and ``place`` (None: the end), then compare them in their order."""
        if not self._waiting or self._positions is None:
            return
        waiting, self._waiting = self._waiting, []
        calls = [c for c in waiting if isinstance(c, LayerCall)]
        end = len(self.torch.calls) if place is None else place
        self._positions.pair_calls(calls, self.torch.calls[self._last + 1 : end])
        for item in waiting:
            self._forward.append(self._compare("forward", item) if isinstance(item, LayerCall) else item)

    def on_backward(self, call: LayerCall) -> None:
        self._settle(None)
        self.backward.append(self._compare("backward", call))

    def float64_recording(self) -> Recording:
        """A recording for the float64 PyTorch pass: each call's noise floors (``noise_factor`` x
        PyTorch float32's own relative error against float64, out and in) are measured as it
        comes, against the float32 recording, and its arrays are dropped."""
        return Recording(lambda call: self._floor("forward", call), lambda call: self._floor("backward", call))

    def _floor(self, direction: str, call64: LayerCall) -> None:
        ref = self.torch.get(call64.path, call64.call)
        if ref is None:
            return
        ref_in, ref_out = _sides(ref, direction)
        in64, out64 = _sides(call64, direction)
        if ref_out is None or out64 is None:
            return
        finite = lambda x: x if x != float("inf") else 0.0  # noqa: E731
        self.noise[(direction, call64.path, call64.call)] = (
            self.noise_factor * finite(worst_relative_error(ref_out, out64)),
            self.noise_factor * finite(worst_relative_error(ref_in or [], in64 or [])),
        )


def _sides(call: LayerCall, direction: str):
    """What flows in and what flows out of ``call`` in ``direction``."""
    if direction == "forward":
        return call.inputs, call.outputs
    return call.grad_outputs, call.grad_inputs


def _release(call: LayerCall, direction: str) -> None:
    """Drop a PyTorch call's arrays once compared (a second MindSpore call aligned with the same
    PyTorch call then reads as unaligned)."""
    if direction == "forward":
        call.inputs, call.outputs = None, None
    else:
        call.grad_outputs, call.grad_inputs = None, None
