"""Layers fed the other side's inputs: every sub-layer call gets given tensors in place of the
ones its caller passed, and what it returns is kept.

Used to measure each layer's own error: with PyTorch's captured inputs fed to every layer of
MindSpore's model (and of PyTorch's own, for the rounding envelope's reruns), a layer's output
differs from PyTorch's only by what the layer itself computes differently, never by what flowed
into it. A container's figure holds its own code and its sub-layers' own errors.

Backward too, where gradient feeds are given: a fed input keeps its place in the graph (its value
is the fed one, exactly: ``fed + (x - x)`` with the second term's gradient 1 and the first term's
none), the gradient arriving at each fed call's outputs is replaced by the one given (a tensor
hook), and what flows back out of the call is read from a hook on an alias of each input, as
the layer capture reads it.

The feeds are numpy arrays keyed by (layer path, call number), in the order the layer capture
records a call's input tensors (see :class:`parity.backends._hooks.LayerHooks`), with the names it
records them under. A framework is imported inside the functions, as each pass needs it.
"""

from __future__ import annotations

import contextlib
import functools
from collections import Counter
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Dict, List, Optional, Set, Tuple

import numpy as np

from ..judge.layouts import one_layout
from . import flatten_outputs
from ._hooks import slot_names

__all__ = ["Feed", "Fed", "fed"]


@dataclass(frozen=True)
class Feed:
    """What one layer call is fed: its input arrays, and their names where the call is paired
    by name (a call given keyword arguments on either side), else None (paired by position);
    ``outputs``: what it returns in its place, once what it computed is kept (so that the code
    between layers computes from the reference's values too)."""

    arrays: Tuple[Optional[np.ndarray], ...]
    names: Optional[Tuple[str, ...]] = None
    outputs: Optional[Tuple[Optional[np.ndarray], ...]] = None


@dataclass
class Fed:
    """What a fed pass saw: each call's outputs (numpy, on the host) and the calls that were fed
    every input they have a counterpart for."""

    outputs: Dict[Tuple[str, int], List[Optional[np.ndarray]]] = field(default_factory=dict)
    fed: Set[Tuple[str, int]] = field(default_factory=set)
    # what the code around each fed call computed as its inputs, before they were replaced: (its own, the fed one)
    inputs: Dict[Tuple[str, int], List[Tuple[object, np.ndarray]]] = field(default_factory=dict)
    # backward: the gradient the code around each fed call computed for its outputs, before it was replaced
    grad_outputs: Dict[Tuple[str, int], List[Tuple[object, np.ndarray]]] = field(default_factory=dict)
    # backward, where gradient feeds were given: what flowed back out of each fed call, per input
    grad_inputs: Dict[Tuple[str, int], List[Optional[object]]] = field(default_factory=dict)


class _Adapter:
    """How one framework's tensors are told, made and read, and its layers hooked."""

    def __init__(self, framework: str):
        self.framework = framework
        self.backend: ModuleType
        if framework == "mindspore":
            import mindspore as ms

            from . import mindspore as ms_backend

            self.tensor_type, self._ms, self.backend = ms.Tensor, ms, ms_backend
        else:
            import torch

            from . import torch as torch_backend

            self.tensor_type, self._torch, self.backend = torch.Tensor, torch, torch_backend

    def make(self, array: np.ndarray, like):
        if self.framework == "mindspore":
            return self._ms.Tensor(np.ascontiguousarray(array), dtype=like.dtype)
        made = self._torch.from_numpy(np.array(array, copy=True)).to(device=like.device, dtype=like.dtype)
        return made.requires_grad_(like.requires_grad) if made.is_floating_point() else made

    def held(self, tensor):
        """What to keep of an output now: a copy in PyTorch (a later in-place op may change it),
        the tensor itself in MindSpore (converting waits for MindSpore's queue: done once, at the end)."""
        return tensor if self.framework == "mindspore" else self.backend.to_numpy(tensor.detach()).copy()

    def array(self, held) -> np.ndarray:
        return self.backend.to_numpy(held) if self.framework == "mindspore" else held

    def differentiable(self, tensor) -> bool:
        if self.framework == "mindspore":
            return (
                isinstance(tensor, self._ms.Tensor)
                and tensor.dtype in self._ms.dtype.float_type
                and getattr(tensor, "_requires_grad", True)
            )
        return isinstance(tensor, self._torch.Tensor) and tensor.requires_grad

    def in_place_of(self, x, value):
        """``value`` where ``x`` was, in the graph: exactly ``value``, and a gradient to ``x`` of 1."""
        if self.framework == "mindspore":
            stop = self._ms.ops.stop_gradient
            return stop(value) + (x - stop(x))
        return value.detach() + (x - x.detach())

    def alias(self, tensor):
        return self._ms.ops.deepcopy(tensor) if self.framework == "mindspore" else tensor.view_as(tensor)

    def layers(self, model):
        if self.framework == "mindspore":
            return [(p, c) for p, c in model.cells_and_names() if p and not getattr(c, "has_bprop", False)]
        return [(p, m) for p, m in model.named_modules() if p]


def _leaves(value, adapter, name: str):
    """(name, leaf) of every tensor or None in a (nested) value, as the layer capture names them."""
    return [
        (path, leaf)
        for path, leaf in flatten_outputs(value, name)
        if leaf is None or isinstance(leaf, adapter.tensor_type)
    ]


def _rebuild(value, swap, name: str):
    """``value`` with every tensor leaf replaced by ``swap(its name, leaf)``; nested tuples, lists
    and dicts rebuilt (named tuples kept whole), as :func:`flatten_outputs` names the leaves."""
    if isinstance(value, dict):
        return type(value)((k, _rebuild(v, swap, f"{name}[{k!r}]")) for k, v in value.items())
    if isinstance(value, (tuple, list)) and not hasattr(value, "_fields"):
        return type(value)(_rebuild(v, swap, f"{name}[{i}]") for i, v in enumerate(value))
    return swap(name, value)


class _Feeder:
    def __init__(
        self,
        adapter: _Adapter,
        feeds: Dict[Tuple[str, int], Feed],
        found: Fed,
        grads: Optional[Dict[Tuple[str, int], Feed]],
        keep,
    ):
        self.adapter, self.feeds, self.found, self.grads = adapter, feeds, found, grads
        self.keep = keep  # the calls whose values are kept (None: all)
        self.calls: Counter = Counter()
        self.pending: Dict[Tuple[str, int], list] = {}  # a fed call's input aliases, hooked once it returns

    def pre_hook(self, path: str, layer, args, kwargs):
        feed = self.feeds.get((path, self.calls[path]))
        if feed is None:
            return None
        names = slot_names(layer, args, kwargs)
        leaves = [
            leaf for n, v in zip(names, list(args) + list(kwargs.values())) for leaf in _leaves(v, self.adapter, n)
        ]
        if feed.names is not None:
            given = {n: a for n, a in zip(feed.names, feed.arrays)}
        elif len(feed.arrays) == len(leaves):
            given = {n: a for (n, _), a in zip(leaves, feed.arrays)}
        else:
            return None  # the two sides' calls differ in what they take: not fed
        used, key = [], (path, self.calls[path])
        backward = self.grads is not None and key in self.grads
        kept = self.keep is None or key in self.keep

        def swap(name, leaf):
            array = given.get(name)
            if array is None or not isinstance(leaf, self.adapter.tensor_type) or not _fits(array.shape, leaf.shape):
                new = leaf
            else:
                array = array.reshape(tuple(leaf.shape))  # one layout of the same values, or the same shape
                used.append((self.adapter.held(leaf) if kept else None, array))
                new = self.adapter.make(array, leaf)
                if backward and self.adapter.differentiable(leaf):
                    new = self.adapter.in_place_of(leaf, new)
            return new

        new_args = [_rebuild(a, swap, n) for n, a in zip(names, args)]
        new_kwargs = {k: _rebuild(v, swap, k) for k, v in kwargs.items()}
        if not used:
            return None
        self.found.fed.add(key)
        if kept:
            self.found.inputs[key] = used
        if backward:  # one slot per argument, as the layer capture keeps a call's grad_inputs
            self.found.grad_inputs[key] = [None] * (len(args) + len(kwargs))
            aliases = self.pending[key] = []
            new_args = [self._alias(aliases, i, v) for i, v in enumerate(new_args)]
            new_kwargs = {k: self._alias(aliases, i, v) for i, (k, v) in enumerate(new_kwargs.items(), len(args))}
        return tuple(new_args), new_kwargs

    def _alias(self, aliases: list, slot: int, tensor):
        """An alias of an argument, whose gradient (what flows back out of the call) is read."""
        if not self.adapter.differentiable(tensor):
            return tensor
        alias = self.adapter.alias(tensor)
        aliases.append((slot, alias))
        return alias

    def _read_grads(self, key) -> None:
        """Hook the aliases of call ``key``'s arguments, after its outputs' gradients are replaced:
        a layer that returns its input (an identity) reads the gradient given, as PyTorch's did.
        What flows back out is kept, and PyTorch's flows on in its place, where given."""
        assert self.grads is not None  # only a call fed backward has aliases pending
        slots, given = self.found.grad_inputs[key], self.grads[key].outputs
        kept = self.keep is None or key in self.keep
        for slot, alias in self.pending.pop(key, ()):
            replace = given[slot] if given is not None and slot < len(given) else None
            alias.register_hook(functools.partial(self._keep, slots if kept else None, slot, replace))

    def _keep(self, slots: Optional[list], slot: int, replace, grad):
        if slots is not None:
            slots[slot] = self.adapter.held(grad)
        if replace is None or tuple(replace.shape) != tuple(grad.shape):
            return None
        return self.adapter.make(replace, grad)

    def _feed_grads(self, key, outputs) -> None:
        """Replace the gradient arriving at each output of call ``key`` by the one given."""
        feed = self.grads.get(key) if self.grads is not None else None
        if feed is None or len(feed.arrays) != len(outputs):
            return
        kept = self.keep is None or key in self.keep
        arriving = self.found.grad_outputs.setdefault(key, []) if kept else None
        for out, array in zip(outputs, feed.arrays):
            if array is not None and self.adapter.differentiable(out) and tuple(array.shape) == tuple(out.shape):
                out.register_hook(functools.partial(self._given, arriving, array))

    def _given(self, arriving: Optional[list], array, grad):
        if arriving is not None:
            arriving.append((self.adapter.held(grad), array))
        return self.adapter.make(array, grad)

    def forward_hook(self, path: str, layer, args, kwargs, outputs):
        key = (path, self.calls[path])
        self.calls[path] += 1
        leaves = [leaf for _, leaf in _leaves(outputs, self.adapter, "output")]
        if self.keep is None or key in self.keep:
            self.found.outputs[key] = [None if t is None else self.adapter.held(t) for t in leaves]
        if key not in self.found.fed:
            return None
        given = self.feeds[key].outputs
        replaced = None
        if given is not None and len(given) == len(leaves):
            replaced = self._replace(outputs, given, self.grads is not None and key in self.grads)
            leaves = [leaf for _, leaf in _leaves(replaced, self.adapter, "output")]
        self._feed_grads(key, leaves)
        if key in self.pending:
            self._read_grads(key)
        return replaced

    def _replace(self, outputs, given, backward: bool):
        """``outputs`` with each tensor replaced by the one given (in the graph, where gradients flow)."""
        position = [0]

        def swap(name, leaf):
            if leaf is not None and not isinstance(leaf, self.adapter.tensor_type):
                return leaf
            array, position[0] = given[position[0]], position[0] + 1
            if leaf is None or array is None or not _fits(array.shape, leaf.shape):
                return leaf
            new = self.adapter.make(array.reshape(tuple(leaf.shape)), leaf)
            return self.adapter.in_place_of(leaf, new) if backward and self.adapter.differentiable(leaf) else new

        return _rebuild(outputs, swap, "output")


def _fits(given, own) -> bool:
    """Whether an array of shape ``given`` may stand for a tensor of shape ``own``: the same shape,
    or one layout of the same values (see :mod:`parity.judge.layouts`)."""
    return tuple(given) == tuple(own) or one_layout(tuple(given), tuple(own))


@contextlib.contextmanager
def fed(
    model,
    feeds: Dict[Tuple[str, int], Feed],
    *,
    framework: str,
    grads: Optional[Dict[Tuple[str, int], Feed]] = None,
    keep: Optional[Set[Tuple[str, int]]] = None,
):
    """Inside, each sub-layer call of ``model`` (a MindSpore Cell or a PyTorch Module, as
    ``framework`` says) that ``feeds`` names runs on the arrays given (in each tensor's own dtype;
    a tensor whose shape differs, unless it holds one layout of the same values, keeps its value), and every call's outputs are kept. With
    ``grads`` (the gradients arriving at each call's outputs, by the same keys; their ``outputs``: what
    flows back out of the call in PyTorch), the backward of a fed call starts from them, and what
    flows back out of it is kept, PyTorch's flowing on in its place. ``keep``: the only calls whose
    values are kept (every call is fed all the same). Yields a :class:`Fed`,
    complete on exit (gradients: once the backward ran inside). A MindSpore Cell with a custom
    bprop is left as it is."""
    adapter = _Adapter(framework)
    found = Fed()
    feeder = _Feeder(adapter, feeds, found, grads, keep)
    handles = []
    for path, layer in adapter.layers(model):
        if framework == "torch" and getattr(layer, "inplace", False) is True:
            layer.inplace = False
            handles.append(_Restore(layer))
        handles.append(layer.register_forward_pre_hook(functools.partial(feeder.pre_hook, path), with_kwargs=True))
        handles.append(layer.register_forward_hook(functools.partial(feeder.forward_hook, path), with_kwargs=True))
    try:
        yield found
        # the pass held each framework's tensors; what it returns holds numpy arrays in their place
        held_stores: Tuple[Dict[Tuple[str, int], List[Any]], ...] = (found.outputs, found.grad_inputs)
        for store in held_stores:
            for key, held in store.items():
                store[key] = [None if h is None else adapter.array(h) for h in held]
        pair_stores: Tuple[Dict[Tuple[str, int], List[Any]], ...] = (found.inputs, found.grad_outputs)
        for store in pair_stores:
            for key, pairs in store.items():
                store[key] = [(adapter.array(h), a) for h, a in pairs]
    finally:
        for handle in handles:
            handle.remove()


class _Restore:
    """Switches a PyTorch layer's in-place flag back on when removed (a fed pass copies what it keeps)."""

    def __init__(self, layer):
        self.layer = layer

    def remove(self) -> None:
        self.layer.inplace = True
