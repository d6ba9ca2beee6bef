"""Layer capture: per-layer records from both sides, each MindSpore call compared as it comes.

The PyTorch side runs first and keeps its layer inputs and outputs (as numpy arrays, each
tensor once). The MindSpore side compares each layer call *as it happens* against the aligned
PyTorch record (:func:`.verdicts.compare_call`) and keeps only a summary, so memory stays bounded
by one side's activations.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, cast

import numpy as np

from .alignment import by_name
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
    float64 pass runs and kept as numbers only."""

    def __init__(
        self,
        torch_recording: Recording,
        align: Callable[[str], Optional[str]],
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
        self.resolve_tol = resolve_tol
        self.forward: List[LayerVerdict] = []
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

    def on_forward(self, call: LayerCall) -> None:
        self.forward.append(self._compare("forward", call))

    def on_backward(self, call: LayerCall) -> None:
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
