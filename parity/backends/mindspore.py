"""MindSpore adapter: tensors in and out as numpy, forward through ``mindspore.vjp`` so that one
forward and one backward run per check, in PYNATIVE or GRAPH mode."""

from __future__ import annotations

import collections
import contextlib
import functools
import importlib
import weakref
from collections import Counter
from typing import Dict, List, Optional, Tuple, Union

import mindspore as ms
import numpy as np
from mindspore import nn

from ..errors import ParityUsageError
from ..judge.dtypes import cell_dtype, is_floating
from . import Grads, Slot, changed_inputs, flatten_outputs, last_logits
from ._hooks import LayerHooks

NAME = "mindspore"
LABEL = "MindSpore"
_MODES = {"pynative": ms.PYNATIVE_MODE, "graph": ms.GRAPH_MODE}
# Before 2.9, PYNATIVE ``mindspore.vjp`` runs the forward plainly when called and again, under
# autograd, when its VJP function is applied: gradients flow through the second run only, and
# train-mode running statistics move twice (measured on 2.7.2 and 2.8.0; 2.9.0 runs it once).
VJP_RERUNS_FORWARD = tuple(int(part) for part in ms.__version__.split(".")[:2]) < (2, 9)


def prepare(*, seed: int, device: str) -> None:
    """Seed MindSpore, select ``device`` and drop PYNATIVE's cached backward graphs, so that a run
    computes what it would in a fresh process whatever ran before it (see :func:`fresh_grads`)."""
    ms.set_seed(seed)
    use_device(device)
    fresh_grads()


def fresh_grads() -> None:
    """Drop what PYNATIVE cached from earlier gradients. The cache keys an operator's backward
    graph without the input shapes, and some backward graphs fold a shape in as a constant:
    ``BCEWithLogitsLoss(reduction='mean')`` divides by the element count of the first batch it
    was differentiated on, for every later batch of any size (mindspore 2.10; known mismatch
    ``bcewithlogitsloss-mean-grad-first-shape``)."""
    executor = _pynative_executor()
    if executor is not None:
        executor.clear_res()


def release_graphs() -> None:
    """Let go of the networks compiled functions close over. ``mindspore.graph.api`` keeps each
    compiled function's argument layout in a process-wide cache (up to 4096 entries) keyed by the
    function object itself, so every closure over a network (``value_and_grad``, a train step)
    stays alive with its Cell for the rest of the process (mindspore 2.10: a ResNet-50 trained in
    GRAPH mode kept its 231 Cells until interpreter shutdown, whose teardown then raised in each
    Cell's ``__del__``; earlier releases have no such cache)."""
    try:
        from mindspore.graph import api
    except ImportError:
        return
    clear = getattr(getattr(api, "_get_func_args_info_cached", None), "cache_clear", None)
    if callable(clear):
        clear()


def use_device(device: str) -> None:
    """Select ``device`` unless it is already selected: once the runtime has started, MindSpore
    refuses to set it again, even to the same value."""
    if ms.get_context("device_target") == device:
        return
    try:
        ms.set_device(device)
    except (RuntimeError, ValueError) as exc:
        raise ParityUsageError(f"MindSpore cannot use device {device!r} here: {exc}") from None


def _pynative_executor():
    """MindSpore's private PYNATIVE executor (it moved between releases), or None."""
    for where in ("mindspore.graph.api", "mindspore.common.api"):
        try:
            return importlib.import_module(where)._pynative_executor
        except (ImportError, AttributeError):
            continue
    return None


def recover() -> None:
    """After an error inside ``mindspore.vjp``, PYNATIVE keeps the half-built grad graph (a later
    backward then fails, e.g. "LayerNormGrad index out of range") and may raise the failed
    kernel's error again at the next op: drop its resources and run a trivial op until clean."""
    fresh_grads()
    for _ in range(3):
        try:
            (ms.ops.ones((1,), ms.float32) + 1).asnumpy()
            return
        except Exception:  # the stale error of the failed kernel
            continue


@contextlib.contextmanager
def execution_mode(mode: str):
    """Run the block in MindSpore's ``mode``, restoring the previous mode afterwards."""
    previous = ms.get_context("mode")
    ms.set_context(mode=_MODES[mode])
    try:
        yield
    finally:
        ms.set_context(mode=previous)


def layer_types(model) -> Dict[str, str]:
    return {name: type(cell).__name__ for name, cell in model.cells_and_names()}


def layer_kinds(model) -> Dict[str, tuple]:
    """Path -> (class name, whether it is a ``mindspore.nn`` class), in definition order."""
    return {
        name: (type(cell).__name__, getattr(nn, type(cell).__name__, None) is type(cell))
        for name, cell in model.cells_and_names()
    }


_TABLES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # Cell -> {path: Parameter}


def _parameters(model) -> Dict[str, object]:
    """Parameters by attribute path (``Parameter.name`` depends on nesting, so it is not used)."""
    table = dict(model.parameters_and_names())
    _TABLES[model] = table
    return table


def parameter(model, name: str):
    """One Parameter by path, from a table built once per Cell (rebuilt when the name is new)."""
    table = _TABLES.get(model)
    if table is None or name not in table:
        table = _parameters(model)
    return table[name]


def slots(model) -> List[Slot]:
    types = layer_types(model)
    result: List[Slot] = []
    seen: Dict[int, int] = {}
    for name, param in model.parameters_and_names(expand=True):
        if id(param) in seen:
            first = result[seen[id(param)]]
            result[seen[id(param)]] = Slot(**{**first.__dict__, "aliases": first.aliases + (name,)})
            continue
        layer = name.rpartition(".")[0]
        seen[id(param)] = len(result)
        dtype = _dtype_name(param.dtype)
        result.append(Slot(name, tuple(param.shape), dtype, bool(param.requires_grad), layer, types.get(layer, "")))
    return result


def to_numpy(tensor) -> np.ndarray:
    """``tensor.asnumpy()``, bfloat16 as ``ml_dtypes.bfloat16`` (MindSpore's own numpy bfloat16
    type is viewed bit for bit)."""
    array = tensor.asnumpy()
    if array.dtype.name == "bfloat16":
        from ..judge.dtypes import as_bfloat16

        return as_bfloat16(array)
    return array


def compute_dtype(model):
    """The half dtype (``"float16"``, ``"bfloat16"``) ``model`` computes in, else None (see
    :func:`parity.judge.dtypes.cell_dtype`)."""
    return cell_dtype(model)


def _dtype_name(dtype) -> str:
    name = str(dtype).lower()
    return {"float": "float32", "int": "int32"}.get(name, name)


def read(model, name: str, *, copy: bool = True) -> np.ndarray:  # copy=False: a view (see TrainStep.state)
    return to_numpy(parameter(model, name)).copy() if copy else to_numpy(parameter(model, name))


def write(model, name: str, array: np.ndarray, in_place: bool = False) -> None:
    param = parameter(model, name)
    array = np.asarray(array)
    array = array if array.flags.c_contiguous else array.copy()  # (ascontiguousarray makes 0-d 1-d)
    value = ms.Tensor(array, dtype=param.dtype)
    ms.ops.assign(param, value) if in_place else param.set_data(value)


def state_of(model) -> Dict[str, np.ndarray]:
    """Every parameter and buffer of ``model`` by attribute path, as numpy copies."""
    return {name: read(model, name) for name in _parameters(model)}


def restore_state(model, state: Dict[str, np.ndarray]) -> None:
    """Put back what :func:`state_of` saved, into the Parameters' own memory (as a graph compiled since reads it)."""
    with execution_mode("pynative"):
        for name, array in state.items():
            write(model, name, array, in_place=True)


def set_train(model, train: bool) -> None:
    model.set_train(train)


def train_flags(model):
    """Every sub-Cell's own ``training`` flag and phase, and a function that puts them back
    (``set_train`` sets the flag of the whole tree, the phase of the root only)."""
    saved = [(cell, cell.training, cell.phase) for _, cell in model.cells_and_names()]

    def restore() -> None:
        for cell, training, phase in saved:
            cell.add_flags(training=training)  # as set_train records it
            cell.phase = phase

    return restore


class _Keywords(nn.Cell):
    """Feeds keyword inputs positionally, so that ``mindspore.vjp`` can differentiate them."""

    def __init__(self, net, n_args: int, names):
        super().__init__()
        self.net = net
        self.n_args = n_args
        self.names = tuple(names)

    def construct(self, *values):
        kwargs = {}
        for i, name in enumerate(self.names):
            kwargs[name] = values[self.n_args + i]
        return self.net(*values[: self.n_args], **kwargs)


def _flat_dict(value) -> bool:
    return isinstance(value, dict) and bool(value) and all(isinstance(v, ms.Tensor) for v in value.values())


class _Values(nn.Cell):
    """``model``'s dict output as the tuple of its values under ``keys``, in that order."""

    def __init__(self, model, keys):
        super().__init__(auto_prefix=False)
        self.model, self.keys = model, keys

    def construct(self, *args):
        out = self.model(*args)
        return tuple(out[key] for key in self.keys)


class Pass:
    """One forward through ``mindspore.vjp``; ``backward`` applies the saved VJP function."""

    def __init__(self, model, inputs, *, grads: bool, mode: str):
        self.model = model
        self.mode = mode
        named = list(inputs.named())
        self._names = [name for name, _ in named]
        self._float = [is_floating(array.dtype) for _, array in named]
        values = [ms.Tensor(array) for _, array in named]
        fn = _Keywords(model, len(inputs.args), inputs.kwargs) if inputs.kwargs else model
        self._params = list(model.trainable_params()) if grads else []
        self._by_id = {id(p): n for n, p in _parameters(model).items()}
        self._as_tuple = False
        with execution_mode(mode):
            if grads and values:
                self.raw, self._vjp = ms.vjp(fn, *values, weights=self._params or None)
                if mode == "graph" and _flat_dict(self.raw):
                    # GRAPH mode's VJP takes no cotangent for a dict output (a tensor does not join the dict's
                    # type, a dict is refused): differentiate its values as a tuple, the forward run again
                    _, self._vjp = ms.vjp(_Values(fn, tuple(self.raw)), *values, weights=self._params or None)
                    self._as_tuple = True
            else:
                self.raw, self._vjp = fn(*values), None
        self.leaves = flatten_outputs(self.raw)
        self.changed = changed_inputs(self._names, [a for _, a in named], [to_numpy(v) for v in values])

    def outputs(self):
        return [(path, _numpy(leaf, path)) for path, leaf in self.leaves]

    def backward(self, cotangents: Dict[str, np.ndarray], params: List[str]) -> Grads:
        cots = []
        for path, leaf in self.leaves:
            if not isinstance(leaf, ms.Tensor):  # a Python number (an int beside a tensor): its own value
                cots.append(leaf)
                continue
            own = _np_dtype(leaf, path)  # each side's cotangent in its own output's dtype
            array = cotangents.get(path)
            array = np.zeros(tuple(leaf.shape), own) if array is None else array.astype(own, copy=False)
            cots.append(ms.Tensor(array))
        single = len(cots) == 1 and not self._as_tuple and not isinstance(self.raw, (tuple, list))
        with execution_mode(self.mode):
            result = self._vjp(cots[0] if single else tuple(cots))
        input_grads, param_grads = result if self._params else (result, ())
        if not isinstance(input_grads, (tuple, list)):
            input_grads = (input_grads,)
        inputs = {n: to_numpy(g) for n, g, f in zip(self._names, input_grads, self._float) if f}
        by_name = {self._by_id[id(p)]: to_numpy(g) for p, g in zip(self._params, param_grads)}
        return Grads(inputs, {p: by_name[p] for p in params})


def _np_dtype(leaf, path: str) -> np.dtype:
    if isinstance(leaf, ms.Tensor):
        name = _dtype_name(leaf.dtype)
        if name == "bfloat16":
            from ..judge.dtypes import bfloat16

            return bfloat16()
        return np.dtype(name)
    return _numpy(leaf, path).dtype


def _numpy(leaf, path: str) -> np.ndarray:
    if isinstance(leaf, ms.Tensor):
        return to_numpy(leaf)
    if isinstance(leaf, (int, float, bool)):
        return np.asarray(leaf)
    raise ParityUsageError(f"MindSpore {path} is a {type(leaf).__qualname__}, not a Tensor")


def _no_grad():
    no_grad = getattr(ms, "_no_grad", None)
    return no_grad() if no_grad is not None else contextlib.nullcontext()


class _Recent:
    """The numpy copies of the last few tensors converted: a tensor that flows out of a layer, out
    of its container and into the next layer is copied once, and memory stays bounded."""

    def __init__(self, size: int = 16):
        self._items: "collections.OrderedDict[int, tuple]" = collections.OrderedDict()
        self._size = size

    def arrays(self, tensors) -> List[Optional[np.ndarray]]:
        return [None if t is None else self._array(t) for t in tensors]

    def _array(self, tensor) -> np.ndarray:
        key = id(tensor)
        if key not in self._items:
            self._items[key] = (tensor, to_numpy(tensor))  # the tensor is kept so that its id stays its own
            if len(self._items) > self._size:
                self._items.popitem(last=False)
        return self._items[key][1]


class _Layers(LayerHooks):
    """MindSpore's side of the capture. Tensors are held as they are and converted in ``flush``:
    converting a Tensor to numpy waits for all the work MindSpore has queued, so doing it in
    every hook would serialise the pass; here each pass waits once.

    A Cell with a custom bprop runs no forward hook and no tensor hooks inside: its forward is
    recorded from a pre-hook that evaluates construct once more without gradient, and its
    gradients come from MindSpore's Cell backward hook.

    Where the backward runs the forward again (:data:`VJP_RERUNS_FORWARD`), the first forward is
    recorded and hooks no gradient (none will flow through it; MindSpore 2.7 even refuses a hook
    on some of its tensors), and the second, after ``flush``, hooks the gradients of the same
    calls, counted afresh, and records nothing."""

    def __init__(self, recording, *, backward: bool):
        super().__init__(recording, backward=backward)
        self.recent = _Recent()
        self.bprop_seen: Counter = Counter()  # backward calls seen per custom-bprop path
        self.rerun = backward and VJP_RERUNS_FORWARD  # the backward will run the forward again
        if self.rerun:
            self.grad_hooks = False

    def flush(self) -> None:
        super().flush()
        if self.rerun and self.record:  # the plain forward is recorded: hook the one the backward runs
            self.record, self.grad_hooks, self.calls = False, True, Counter()

    def is_tensor(self, value) -> bool:
        return isinstance(value, ms.Tensor)

    def differentiable(self, tensor) -> bool:
        # Not a tensor computed from constants alone (``cos`` of positions, a mask): it needs no
        # gradient, and MindSpore refuses a hook on it ("The tensor requires grad is false").
        return (
            isinstance(tensor, ms.Tensor)
            and tensor.dtype in ms.dtype.float_type
            and getattr(tensor, "_requires_grad", True)
        )

    def view(self, tensor):
        # A copy, not a view: MindSpore's view and reshape made ResNet-50's vjp 1.3-1.55x slower,
        # deepcopy 1.01x (MindSpore-only probe, tensor hooks on every sub-Cell's inputs).
        return ms.ops.deepcopy(tensor)

    def on_grad(self, tensor, hook) -> None:
        tensor.register_hook(hook)

    def arrays(self, held: list) -> list:
        return self.recent.arrays(held)

    def bprop_pre_hook(self, path: str, cell, inputs) -> None:
        self.calls[path] += 1
        if not self.record:
            return
        with _no_grad():
            outputs = cell.construct(*inputs)
        self.forward_calls.append((path, type(cell).__name__, self.tensors(inputs), self.tensors(outputs), None, False))

    def cell_backward_hook(self, path: str, cell, grad_input, grad_output) -> None:
        # Backward visits the calls of one path in reverse order.
        call = self.calls[path] - 1 - self.bprop_seen[path]
        self.bprop_seen[path] += 1
        self.grads[(path, call)] = [self.tensors(grad_input), self.tensors(grad_output), None, False]
        self.finished[(path, call)] = self._events
        self._events += 1


@contextlib.contextmanager
def capture(model, recording, *, backward: bool):
    """Feed every sub-Cell's calls (and, with ``backward``, their gradients) to ``recording``, at
    each ``flush()`` of the object yielded and at the end. Hooks run in PYNATIVE mode only."""
    layers = _Layers(recording, backward=backward)
    handles = []
    for path, cell in model.cells_and_names():
        if not path:
            continue
        if getattr(cell, "has_bprop", False):
            handles.append(cell.register_forward_pre_hook(functools.partial(layers.bprop_pre_hook, path)))
            if backward:
                handles.append(cell.register_backward_hook(functools.partial(layers.cell_backward_hook, path)))
            continue
        handles.append(cell.register_forward_pre_hook(functools.partial(layers.pre_hook, path), with_kwargs=True))
        handles.append(cell.register_forward_hook(functools.partial(layers.forward_hook, path), with_kwargs=True))
    try:
        yield layers
        layers.flush()
    finally:
        for handle in handles:
            handle.remove()


_EPS = {ms.float16: 2.0**-10, ms.bfloat16: 2.0**-7, ms.float32: 2.0**-23, ms.float64: 2.0**-52}


def _jitter(tensor, rng: np.random.Generator, ulps: float):
    """``tensor`` plus uniform noise of ``ulps`` units in the last place of each element and as
    much at the tensor's own scale (its RMS), computed by MindSpore ops (no wait for the queue).
    Elements that are exactly zero stay zero."""
    if not isinstance(tensor, ms.Tensor) or not ms.ops.is_floating_point(tensor) or tensor.size == 0:
        return tensor
    eps = _EPS.get(tensor.dtype, 2.0**-23) * ulps
    # bfloat16's noise is drawn in float32 (MindSpore's CPU has no bfloat16 isfinite), then rounded to it
    work = tensor.astype(ms.float32) if tensor.dtype == ms.bfloat16 else tensor
    element = ms.Tensor(rng.uniform(-eps, eps, tensor.shape), work.dtype)
    layer = ms.Tensor(rng.uniform(-eps, eps, tensor.shape), work.dtype)
    finite = ms.ops.isfinite(work)
    kept = ms.ops.where(finite, ms.ops.stop_gradient(work), ms.ops.zeros_like(work))
    scale = ms.ops.sqrt(ms.ops.mean(ms.ops.square(kept)))
    # Exact zeros (a ReLU's, a mask's) are exact on every CPU, and NaN/Inf stay: computed values move.
    noise = (element * ms.ops.abs(kept) + layer * scale) * ms.ops.not_equal(kept, 0).astype(work.dtype)
    return tensor + (noise if work is tensor else noise.astype(tensor.dtype))


@contextlib.contextmanager
def perturbed(model, *, seed: int, ulps: float):
    """Inside, every leaf sub-Cell's floating outputs, and the gradients flowing back into them,
    are moved by up to ``ulps`` units in the last place, relative to each element and to the
    output's own scale: what another CPU's kernels may do. PYNATIVE mode only (hooks)."""
    rng = np.random.default_rng(seed)

    def forward_hook(cell, args, output):
        def move(tensor):
            moved = _jitter(tensor, rng, ulps)
            if moved is not tensor:
                try:
                    moved.register_hook(lambda grad: _jitter(grad, rng, ulps))
                except RuntimeError as exc:  # a value no gradient flows into (made of constants, or under no_grad)
                    if "requires grad is false" not in str(exc):
                        raise
            return moved

        if isinstance(output, (tuple, list)):
            moved = [move(t) for t in output]
            return type(output)(*moved) if hasattr(output, "_fields") else type(output)(moved)  # a namedtuple
        return move(output)

    handles = [cell.register_forward_hook(forward_hook) for _, cell in model.cells_and_names() if not cell.name_cells()]
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()


# Every loss scaler a training step was built with, alive until the process ends. A scaler's
# scale() and unscale() pass its ``scale_value`` Parameter to functions MindSpore compiles once
# (``mindspore.amp._grad_unscale_map``), whose compile cache knows a Parameter argument by its
# ``id()`` and keeps the graph with the Parameter's data: a later scaler whose Parameter landed at a
# freed one's address ran the earlier graph, unscaling by the earlier scaler's last scale (2**15
# after its overflow step, for 2**16: gradients twice PyTorch's). A kept scaler's address is never
# taken again. A few bytes each.
_SCALERS_KEPT: List[object] = []

# Training: one step is value_and_grad over the optimizer's parameters, then the optimizer.
# State that classic optimizers keep, by attribute, under PyTorch's state names (per class:
# ``accum`` is SGD's momentum buffer but Adagrad's sum of squares).
_OPTIMIZER_STATE = {
    "Adam": {"moment1": "exp_avg", "moment2": "exp_avg_sq"},
    "AdamWeightDecay": {"moments1": "exp_avg", "moments2": "exp_avg_sq"},
    "Momentum": {"moments": "momentum_buffer"},
    "SGD": {"accum": "momentum_buffer"},
    "Adagrad": {"accum": "sum"},
    "RMSProp": {"mean_square": "square_avg", "moment": "momentum_buffer", "mean_grad": "grad_avg"},
}


class TrainStep:
    """Training steps of ``model`` under ``loss_fn`` and ``optimizer`` (a ``mindspore.nn.Optimizer``,
    or one of :mod:`parity.translation.optim`), as users write them: ``value_and_grad`` over the
    optimizer's parameters, the gradients summed over micro-batches, optionally clipped by their
    global norm, then ``optimizer(grads)``. Gradients are returned by attribute path.

    With ``scaler`` (a ``mindspore.amp.LossScaler``), as MindSpore's mixed-precision guide writes
    the step: the scaled loss differentiated, the gradients unscaled, ``amp.all_finite`` checked,
    the update skipped where they are not, the scale adjusted; ``scaling`` holds (the scale used,
    whether the update was skipped) of the last step, and the gradients returned are unscaled."""

    def __init__(
        self, model, loss_fn, optimizer, *, accumulate: int, clip_grad_norm: Optional[float], mode: str, scaler=None
    ):
        self.model, self.loss_fn, self.optimizer = model, loss_fn, optimizer
        self.scaler = scaler
        self.scaling: Optional[Tuple[float, bool]] = None  # (scale used, skipped) of the last step
        if scaler is not None:
            _SCALERS_KEPT.append(scaler)
        self.params = list(optimizer.parameters)
        by_id = {id(p): n for n, p in _parameters(model).items()}
        unknown = [p.name for p in self.params if id(p) not in by_id]
        if unknown:
            raise ParityUsageError(
                f"the MindSpore optimizer holds parameters that are not the Cell's: {unknown[:5]}; "
                "build it from the parameters it is given (ms_factory(params))"
            )
        self.names = [by_id[id(p)] for p in self.params]
        self.accumulate, self.clip, self.mode = accumulate, clip_grad_norm, mode
        scale = 1.0 / accumulate

        def forward(*values):
            loss = loss_fn(model(*values[:-1]), values[-1])
            return loss * scale if accumulate > 1 else loss

        def scaled(*values):  # the scaled loss is differentiated, the loss itself kept (it may overflow scaled)
            loss = forward(*values)
            return scaler.scale(loss), loss

        self._grad = (
            ms.value_and_grad(forward, None, ms.ParameterTuple(self.params))
            if scaler is None
            else ms.value_and_grad(scaled, None, ms.ParameterTuple(self.params), has_aux=True)
        )
        self._apply = optimizer
        if mode == "graph":  # as users compile a train step: the network's forward and backward, the update
            self._grad = ms.jit(self._grad)
            if callable(getattr(optimizer, "use_graph", None)):  # a translation (parity.translation.optim)
                optimizer.use_graph()
            else:

                def apply(grads):
                    return optimizer(grads)

                self._apply = ms.jit(apply)

    def step(self, micro_batches):
        """One optimizer step over ``micro_batches`` (``(Inputs, target)`` pairs): the loss summed
        over them and the gradients before clipping, as numpy by attribute path."""
        return self.collect(self.launch(micro_batches))

    def launch(self, micro_batches):
        """:meth:`step` up to the point where MindSpore has been given all of its work (it runs
        it asynchronously meanwhile); :meth:`collect` waits for it and reads the results. The
        gradients are read before the update unless the optimizer is one that cannot change them
        (MindSpore's own, whose update kernels write Parameters only, or a translation)."""
        total, grads = None, None
        with execution_mode(self.mode):
            for inputs, target in micro_batches:
                values = [ms.Tensor(a) for _, a in inputs.named()] + [ms.Tensor(target)]
                loss, part = self._grad(*values)
                loss = loss if self.scaler is None else loss[1]
                total = loss if total is None else total + loss
                grads = list(part) if grads is None else [g + p for g, p in zip(grads, part)]
            assert grads is not None, "a step takes at least one micro-batch"
            finite = True
            if self.scaler is not None:  # as MindSpore's mixed-precision guide writes the step
                scale_used = _scale_value(self.scaler)
                grads = list(self.scaler.unscale(tuple(grads)))
                finite = ms.amp.all_finite(tuple(grads))
                self.scaling = (scale_used, not bool(finite))
            seen = None if self._grads_kept else _arrays(self.names, grads)
            if self.scaling is None or not self.scaling[1]:
                self._update(grads)
            if self.scaler is not None:
                self.scaler.adjust(finite)
        return total, grads, seen

    def _update(self, grads) -> None:
        applied = grads
        if self.clip is not None:
            applied = (
                _clipped(tuple(grads), self.clip)
                if self.mode != "graph"
                else _clipped_graph(ms.mutable(tuple(grads)), self.clip)
            )
        self._apply(ms.mutable(tuple(applied)) if self.mode == "graph" else tuple(applied))

    def collect(self, launched):
        total, grads, seen = launched
        return float(total.asnumpy()), seen if seen is not None else _arrays(self.names, grads)

    @property
    def _grads_kept(self) -> bool:
        optimizer = type(self.optimizer)
        return optimizer.__module__.split(".")[0] == "mindspore" or hasattr(self.optimizer, "use_graph")

    def lrs(self) -> Dict[str, float]:
        """The learning rate the next step uses, per parameter."""
        lr_of = getattr(self.optimizer, "lr_of", None)
        if lr_of is not None:
            return {n: lr_of(p) for n, p in zip(self.names, self.params)}
        lr = self.optimizer.get_lr()
        if isinstance(lr, (tuple, list)):
            return {n: float(v.asnumpy()) for n, v in zip(self.names, lr)}
        return {n: float(np.asarray(lr.asnumpy()).reshape(-1)[0]) for n in self.names}

    def state(self, copy: bool = True) -> Dict[str, Dict[str, Union[np.ndarray, np.float32]]]:
        """The optimizer's state per parameter (attribute path), under PyTorch's names; ``copy=False``:
        views (``asnumpy`` shares the tensor's memory, and keeps it), valid until the next step."""
        state_arrays = getattr(self.optimizer, "state_arrays", None)
        if state_arrays is not None:
            return {n: state_arrays(p, copy=copy) for n, p in zip(self.names, self.params)}
        found: Dict[str, Dict[str, Union[np.ndarray, np.float32]]] = {n: {} for n in self.names}
        for attribute, torch_name in _OPTIMIZER_STATE.get(type(self.optimizer).__name__, {}).items():
            held = getattr(self.optimizer, attribute, None)
            if isinstance(held, (tuple, list)) and len(held) == len(self.params):
                for n, value in zip(self.names, held):
                    found[n][torch_name] = to_numpy(value).copy() if copy else to_numpy(value)  # updated in place
        step = getattr(self.optimizer, "global_step", None)
        if isinstance(step, ms.Tensor):
            count = np.float32(step.asnumpy().reshape(-1)[0])
            for n in self.names:
                found[n]["step"] = count
        return found


def _scale_value(scaler) -> float:
    value = scaler.scale_value
    return float(np.asarray(value.asnumpy() if hasattr(value, "asnumpy") else value).reshape(-1)[0])


def _arrays(names, tensors) -> Dict[str, np.ndarray]:
    return {n: to_numpy(t).copy() for n, t in zip(names, tensors)}  # bfloat16 as ml_dtypes'


def _clipped(grads, max_norm: float):
    """``torch.nn.utils.clip_grad_norm_``'s arithmetic: each gradient's 2-norm, the 2-norm of
    those, ``coef = min(max_norm / (total + 1e-6), 1)``, every gradient times ``coef``."""
    norms = ms.ops.stack([ms.ops.norm(g.astype(ms.float32)) for g in grads])
    coef = ms.ops.clamp(max_norm / (ms.ops.norm(norms) + 1e-6), max=1.0)
    return tuple(g * coef.astype(g.dtype) for g in grads)


_clipped_graph = ms.jit(_clipped)


def refuse_dropout(model) -> List[str]:
    """Paths of sub-Cells that drop elements at random in train mode."""
    found = []
    for path, cell in model.cells_and_names():
        name = type(cell).__name__
        if "Dropout" in name:
            p = getattr(cell, "p", None)
            keep = getattr(cell, "keep_prob", None)  # nn.Dropout(p=0.0) keeps a stale keep_prob=0.5: p decides
            if (p > 0) if p is not None else (keep is None or keep < 1):
                found.append(path or "(root)")
    return found


def decode(model, ids: np.ndarray, *, cache=None, step=None, mode: str = "pynative"):
    """One forward of a causal language model on the token ids ``ids`` (batch, length):
    ``(logits of the last position as numpy (batch, vocab), the cache)``. Without ``step``,
    ``model(ids)``; with ``step``, the caller's own convention: ``step(model, ids, cache)`` returns
    ``(output, cache)`` (``cache`` None at the first step). The output is the logits, a tuple whose
    first element they are, a dict or an object holding ``logits``."""
    tensor = ms.Tensor(ids)
    with execution_mode(mode):
        if step is None:
            raw = model(tensor)
        else:
            found = step(model, tensor, cache)
            if not isinstance(found, (tuple, list)) or len(found) != 2:
                raise ParityUsageError("ms_step must return (logits, cache), got " + type(found).__qualname__)
            raw, cache = found
    if isinstance(raw, dict):
        logits = raw.get("logits")
    else:
        logits = getattr(raw, "logits", None)
        if logits is None:
            logits = raw[0] if isinstance(raw, (tuple, list)) else raw
    return last_logits(to_numpy(logits) if isinstance(logits, ms.Tensor) else logits, "MindSpore"), cache


def pynative_only(model) -> List[tuple]:
    """``(path, cell)`` of every sub-Cell (the root's path ``""``) whose class says it runs in
    PYNATIVE mode only, by a ``parity_pynative_only`` reason: ``parity.translate``'s
    ``GraphForward`` and ``TorchForward``."""
    return [(path, cell) for path, cell in model.cells_and_names() if getattr(type(cell), "parity_pynative_only", "")]


@contextlib.contextmanager
def dynamic_inputs(model, signature):
    """Inside, ``model`` compiles in GRAPH mode for the dynamic signature ``signature``: per
    positional input ``(shape with None where a dimension varies, dtype name)``
    (``Cell.set_inputs``); the Cell's own setting comes back on exit."""
    before = model.get_inputs()
    model.set_inputs(*[ms.Tensor(shape=list(shape), dtype=getattr(ms, dtype)) for shape, dtype in signature])
    try:
        yield
    finally:
        object.__setattr__(model, "_dynamic_shape_inputs", before)


def graphs_compiled(model) -> int:
    """How many GRAPH-mode forward graphs ``model`` holds (one per input signature it was compiled for)."""
    return len(model.compile_cache)
