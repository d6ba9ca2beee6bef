"""Per-layer capture shared by both adapters: which hooks run when, and how one layer call's
gradients are put together. The adapters say how to view, hook and convert their tensors."""

from __future__ import annotations

from collections import Counter
from typing import Dict, List, Tuple

from . import flatten_outputs


class LayerHooks:
    """What one side's layer hooks see, handed to a ``Recording`` in ``flush``.

    Forward: a forward hook per layer call records its inputs and outputs. Backward, through
    tensor hooks: a pre-hook gives each differentiable tensor input of a call an alias of its own
    (``view``), whose gradient is that call's contribution (its ``grad_inputs``, as in torch's full
    backward hooks); the gradients of its outputs are its ``grad_outputs``. A call's backward ends when the
    last of its gradients arrives, which gives the backward order. Tensor hooks are used rather
    than whole-layer backward hooks because they survive in-place updates of a layer's output
    (``out += identity``) and cost MindSpore far less.

    Adapters define ``is_tensor``, ``differentiable``, ``view``, ``on_grad`` (register a hook),
    ``hold`` (what to keep of a tensor now: a copy where it may change later) and ``arrays``
    (numpy for what was held)."""

    defer_forward = True  # False: forward calls go to the recording from the hook (held as arrays)

    def __init__(self, recording, *, backward: bool):
        self.recording = recording
        self.backward = backward
        # What a forward does: record its calls, give its tensors gradient hooks. Both, unless an
        # adapter's backward runs the forward again (MindSpore before 2.9: see its adapter).
        self.record = True
        self.grad_hooks = backward
        self.calls: Counter = Counter()  # forward calls seen so far, per path
        self.forward_calls: List[tuple] = []  # (path, type, held inputs, held outputs), not yet recorded
        self.grads: Dict[Tuple[str, int], list] = {}  # (path, call) -> [grad_inputs, grad_outputs]
        self.finished: Dict[Tuple[str, int], int] = {}  # (path, call) -> order of its last gradient
        self._events = 0

    # -- what an adapter provides ------------------------------------------------------------------

    def is_tensor(self, value) -> bool:
        raise NotImplementedError

    def differentiable(self, tensor) -> bool:
        raise NotImplementedError

    def view(self, tensor):
        raise NotImplementedError

    def on_grad(self, tensor, hook) -> None:
        raise NotImplementedError

    def hold(self, tensor):
        return tensor

    def arrays(self, held: list) -> list:
        raise NotImplementedError

    # -- the hooks ---------------------------------------------------------------------------------

    def tensors(self, value) -> list:
        """The tensors of a (nested) value, in order; None kept, other leaves skipped."""
        return [leaf for _, leaf in flatten_outputs(value) if leaf is None or self.is_tensor(leaf)]

    def pre_hook(self, path: str, layer, args):
        if not self.grad_hooks:
            return None
        call = self.calls[path]
        self.grads[(path, call)] = [[None] * len(args), []]
        wrapped = list(args)
        for i, arg in enumerate(args):
            if self.differentiable(arg):
                wrapped[i] = self.view(arg)
                self.on_grad(wrapped[i], self._grad_hook(path, call, 0, i))
        return tuple(wrapped)

    def forward_hook(self, path: str, layer, args, outputs) -> None:
        call = self.calls[path]
        self.calls[path] += 1
        outs = self.tensors(outputs)
        if self.record:
            held = ([None if t is None else self.hold(t) for t in self.tensors(args)],
                    [None if t is None else self.hold(t) for t in outs])
            if self.defer_forward:
                self.forward_calls.append((path, type(layer).__name__) + held)
            else:
                self.recording.forward(path, type(layer).__name__, *held)
        if self.grad_hooks:
            grads = self.grads.setdefault((path, call), [[None] * len(args), []])
            grads[1] = [None] * len(outs)
            for i, out in enumerate(outs):
                if self.differentiable(out):
                    self.on_grad(out, self._grad_hook(path, call, 1, i))

    def _grad_hook(self, path: str, call: int, side: int, slot: int):
        def hook(grad):
            self.grads[(path, call)][side][slot] = None if grad is None else self.hold(grad)
            self.finished[(path, call)] = self._events
            self._events += 1

        return hook

    def flush(self) -> None:
        """Hand what was seen so far to the recording, as numpy: forward calls in execution order,
        then the finished backward calls in backward order."""
        calls, self.forward_calls = self.forward_calls, []
        for path, type_name, inputs, outputs in calls:
            self.recording.forward(path, type_name, self.arrays(inputs), self.arrays(outputs))
        done = sorted(self.finished, key=self.finished.get)
        self.finished = {}
        for key in done:
            grad_inputs, grad_outputs = self.grads.pop(key)
            self.recording.backward(key[0], self.arrays(grad_inputs), self.arrays(grad_outputs), call=key[1])
