"""Per-layer capture shared by both adapters: which hooks run when, and how one layer call's
gradients are put together. The adapters say how to view, hook and convert their tensors."""

from __future__ import annotations

import functools
import inspect
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
    (numpy for what was held).

    Both hooks see a call's keyword arguments too (``with_kwargs``): a keyword's tensors are
    recorded under its name, and a differentiable one has its own alias and gradient, as a
    positional one. A tensor that needs no gradient (a mask, ``cos``/``sin`` made from constants,
    integer ids) is recorded and never hooked: MindSpore refuses a hook on it, and no gradient flows
    into it on either side."""

    defer_forward = True  # False: forward calls go to the recording from the hook (held as arrays)

    def __init__(self, recording, *, backward: bool):
        self.recording = recording
        self.backward = backward
        # What a forward does: record its calls, give its tensors gradient hooks. Both, unless an
        # adapter's backward runs the forward again (MindSpore before 2.9: see its adapter).
        self.record = True
        self.grad_hooks = backward
        self.calls: Counter = Counter()  # forward calls seen so far, per path
        # (path, type, held inputs, held outputs, input names, whether keywords were given), not yet recorded
        self.forward_calls: List[tuple] = []
        # (path, call) -> [grad_inputs, grad_outputs, their names, whether keywords were given]
        self.grads: Dict[Tuple[str, int], list] = {}
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

    def named_tensors(self, layer, args, kwargs) -> Tuple[list, Tuple[str, ...]]:
        """A call's input tensors, in order, and their names: positional arguments by the
        parameters of the layer's signature they fill (``input[i]`` past them), then keyword
        arguments by name; a nested one's tensors as ``name[0]``..."""
        found = []
        for name, value in zip(slot_names(layer, args, kwargs), list(args) + list(kwargs.values())):
            found += [
                (path, leaf) for path, leaf in flatten_outputs(value, name) if leaf is None or self.is_tensor(leaf)
            ]
        return [leaf for _, leaf in found], tuple(path for path, _ in found)

    def pre_hook(self, path: str, layer, args, kwargs):
        if not self.grad_hooks:
            return None
        call = self.calls[path]
        self.grads[(path, call)] = [
            [None] * (len(args) + len(kwargs)),
            [],
            tuple(slot_names(layer, args, kwargs)),
            bool(kwargs),
        ]
        wrapped, new_kwargs = list(args), dict(kwargs)
        for i, arg in enumerate(args):
            if self.differentiable(arg):
                wrapped[i] = self.view(arg)
                self.on_grad(wrapped[i], self._grad_hook(path, call, 0, i))
        for i, (key, value) in enumerate(kwargs.items(), len(args)):
            if self.differentiable(value):
                new_kwargs[key] = self.view(value)
                self.on_grad(new_kwargs[key], self._grad_hook(path, call, 0, i))
        return tuple(wrapped), new_kwargs

    def forward_hook(self, path: str, layer, args, kwargs, outputs) -> None:
        call = self.calls[path]
        self.calls[path] += 1
        outs = self.tensors(outputs)
        if self.record:
            inputs, names = self.named_tensors(layer, args, kwargs)
            held = (
                [None if t is None else self.hold(t) for t in inputs],
                [None if t is None else self.hold(t) for t in outs],
            )
            if self.defer_forward:
                self.forward_calls.append((path, type(layer).__name__) + held + (names, bool(kwargs)))
            else:
                self.recording.forward(path, type(layer).__name__, *held, names=names, keywords=bool(kwargs))
        if self.grad_hooks:
            grads = self.grads.setdefault((path, call), [[None] * (len(args) + len(kwargs)), [], None, False])
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
        for path, type_name, inputs, outputs, names, keywords in calls:
            self.recording.forward(
                path, type_name, self.arrays(inputs), self.arrays(outputs), names=names, keywords=keywords
            )
        done = sorted(self.finished, key=self.finished.__getitem__)
        self.finished = {}
        for key in done:
            grad_inputs, grad_outputs, names, keywords = self.grads.pop(key)
            self.recording.backward(
                key[0], self.arrays(grad_inputs), self.arrays(grad_outputs), call=key[1], names=names, keywords=keywords
            )


def slot_names(layer, args, kwargs) -> List[str]:
    """A call's argument names: positional arguments by the parameters of the layer's
    ``construct`` (MindSpore) or ``forward`` (PyTorch) they fill, ``input[i]`` beyond them, then
    the keywords."""
    klass: type = type(layer)
    params = _positional_parameters(klass)
    return [params[i] if i < len(params) else f"input[{i}]" for i in range(len(args))] + list(kwargs)


@functools.lru_cache(maxsize=None)
def _positional_parameters(klass: type) -> Tuple[str, ...]:
    method = getattr(klass, "construct", None) or getattr(klass, "forward", None)
    try:
        # a class with neither method gives None, which signature() refuses with a TypeError
        params = list(inspect.signature(method).parameters.values())[1:]  # type: ignore[arg-type]  # past self
    except (TypeError, ValueError):
        return ()
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return tuple(p.name for p in params if p.kind in kinds)
