"""PyTorch adapter: tensors in and out as numpy, forward with autograd, vector-Jacobian product."""

from __future__ import annotations

import contextlib
import copy
import functools
import math
import weakref
from typing import Dict, List, Optional, Sequence, Tuple, Union

import numpy as np
import torch

from ..errors import ParityUsageError
from . import Grads, Slot, changed_inputs, flatten_outputs, last_logits
from ._hooks import LayerHooks

NAME = "torch"
LABEL = "PyTorch"


def prepare(*, seed: int, device: str) -> None:
    """Seed PyTorch and check that the reference device for ``device`` can be had (see
    :mod:`parity.backends.device`: torch_npu for Ascend when installed, else the CPU)."""
    torch.manual_seed(seed)
    torch_device(device)


def _contiguous(array) -> np.ndarray:
    """``array`` C-contiguous with its own shape (``np.ascontiguousarray`` makes a 0-d array 1-d)."""
    array = np.asarray(array)
    return array if array.flags.c_contiguous else array.copy()


def to_numpy(tensor) -> np.ndarray:
    """A tensor's values as numpy; bfloat16 as its raw bits viewed as ``ml_dtypes.bfloat16``
    (``Tensor.numpy()`` refuses bfloat16). Shares memory where ``Tensor.numpy()`` would."""
    tensor = tensor.detach().cpu()
    if tensor._is_zerotensor():  # a gradient PyTorch knows is zero (``sgn``'s): numpy() refuses it unmaterialised
        tensor = torch.zeros(tensor.shape, dtype=tensor.dtype)
    tensor = tensor.resolve_conj().resolve_neg()  # a lazily conjugated (or negated) view: numpy() refuses it
    if tensor.dtype == torch.bfloat16:
        from ..judge.dtypes import bfloat16

        return tensor.view(torch.int16).numpy().view(bfloat16())
    return tensor.numpy()


def from_numpy(array) -> "torch.Tensor":
    """``torch.from_numpy`` that takes ``ml_dtypes.bfloat16`` arrays too (bit for bit)."""
    array = _contiguous(array)
    if array.dtype.name == "bfloat16":
        return torch.from_numpy(array.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(array)


def compute_dtype(model):
    """The half dtype (``"float16"``, ``"bfloat16"``) ``model`` computes in: that of all its floating
    parameters, when they share one; else None."""
    found = {str(p.dtype).replace("torch.", "") for p in model.parameters() if p.is_floating_point()}
    return found.pop() if len(found) == 1 and found <= {"float16", "bfloat16"} else None


def torch_device(device: str) -> str:
    """The device string the reference's tensors go to for ``--parity-device=device``."""
    from .device import torch_placement

    return torch_placement(device)


def _owners(model) -> Dict[str, str]:
    return {name: type(module).__name__ for name, module in model.named_modules()}


def slots(model) -> List[Slot]:
    """Every parameter and buffer, tied aliases folded into the first name."""
    owners = _owners(model)
    seen: Dict[int, int] = {}
    result: List[Slot] = []
    named = [(n, t, True) for n, t in model.named_parameters(remove_duplicate=False)]
    named += [(n, t, False) for n, t in model.named_buffers(remove_duplicate=False)]
    for name, tensor, is_param in named:
        if tensor is None:
            continue
        key = id(tensor)
        if key in seen:
            first = result[seen[key]]
            result[seen[key]] = Slot(**{**first.__dict__, "aliases": first.aliases + (name,)})
            continue
        layer = name.rpartition(".")[0]
        seen[key] = len(result)
        dtype = str(tensor.dtype).replace("torch.", "")
        trainable = bool(is_param and tensor.requires_grad)
        persistent = is_param or name.rpartition(".")[2] not in model.get_submodule(layer)._non_persistent_buffers_set
        result.append(
            Slot(name, tuple(tensor.shape), dtype, trainable, layer, owners.get(layer, ""), persistent=persistent)
        )
    return result


def _tensor(model, name: str):
    module_path, _, leaf = name.rpartition(".")
    module = model.get_submodule(module_path) if module_path else model
    return getattr(module, leaf)


def read(model, name: str, *, copy: bool = True) -> np.ndarray:
    """A parameter's or buffer's values; ``copy=False``: a view, valid until the next step writes it."""
    values = to_numpy(_tensor(model, name))
    return values.copy() if copy else values


def write(model, name: str, array: np.ndarray, in_place: bool = False) -> None:
    """Set a parameter or buffer; always into its own memory (``in_place`` is MindSpore's choice)."""
    target = _tensor(model, name)
    with torch.no_grad():
        target.copy_(from_numpy(array).to(target.dtype))


def set_train(model, train: bool) -> None:
    model.train(train)


def buffers(model) -> Dict[str, np.ndarray]:
    """Every buffer (running statistics, counters such as ``num_batches_tracked``), by name."""
    return {name: to_numpy(t).copy() for name, t in model.named_buffers() if t is not None}


def set_buffers(model, values: Dict[str, np.ndarray]) -> None:
    for name, value in values.items():
        write(model, name, value)


def train_flags(model):
    """Every sub-Module's own ``training`` flag, and a function that puts them back."""
    saved = [(module, module.training) for module in model.modules()]

    def restore() -> None:
        for module, training in saved:
            module.training = training

    return restore


def layer_kinds(model) -> Dict[str, tuple]:
    """Path -> (class name, whether it is a ``torch.nn`` class), in definition order."""
    return {
        name: (type(module).__name__, getattr(torch.nn, type(module).__name__, None) is type(module))
        for name, module in model.named_modules()
    }


class _Jitter(torch.autograd.Function):
    """Adds rounding-level noise to a tensor going forward and to its gradient coming back."""

    @staticmethod
    def forward(ctx, tensor, forward_noise, backward_noise):
        ctx.backward_noise = backward_noise
        return tensor + forward_noise(tensor)

    @staticmethod
    def backward(ctx, grad):
        return grad + ctx.backward_noise(grad), None, None


class _Signs:
    """Seeded +1/-1 per element, cheaply: one random pattern per run, read at a different offset
    for every tensor (generating fresh random numbers for every activation would cost far more
    than the network). Two runs with the same seed read the same signs in the same order."""

    _STRIDE = 7919  # a prime: successive tensors start far apart in the pattern

    def __init__(self, seed: int):
        self.seed, self.calls = seed, 0
        self.pattern = torch.empty(0)
        self._cast: Dict[torch.dtype, torch.Tensor] = {}

    def like(self, tensor):
        count = tensor.numel()
        if count > self.pattern.numel():
            generator = torch.Generator().manual_seed(self.seed)
            size = max(count, 1 << 16)
            self.pattern = torch.randint(0, 2, (size,), generator=generator).to(torch.float32).mul_(2).sub_(1)
            self._cast = {}
        if tensor.dtype not in self._cast:
            self._cast[tensor.dtype] = self.pattern.to(tensor.dtype)
        start = (self.calls * self._STRIDE) % (self.pattern.numel() - count + 1)
        self.calls += 1
        return self._cast[tensor.dtype][start : start + count].view(tensor.shape)


def _noise(signs: _Signs, ulps: float):
    """A function of a tensor: ``ulps`` units in the last place of each element, plus as much at the
    tensor's own scale (its RMS) so that near-zero elements move too, each with a seeded sign: every
    element moves by the full amount, so a near-tie within reach flips in one of a mirrored pair of
    runs. Exact zeros stay zero, and so do NaN and Inf."""

    def make(tensor):
        if not tensor.is_floating_point() or tensor.numel() == 0:
            return torch.zeros_like(tensor)
        eps = torch.finfo(tensor.dtype).eps * ulps  # negative: the mirror image of the same draw
        kept = tensor.detach()
        scale = torch.linalg.vector_norm(kept) / math.sqrt(kept.numel())
        if not torch.isfinite(scale):
            kept = torch.nan_to_num(kept, nan=0.0, posinf=0.0, neginf=0.0)
            scale = torch.linalg.vector_norm(kept) / math.sqrt(kept.numel())
        # Exact zeros (a ReLU's, a mask's) are exact on every CPU: only computed values move.
        # In place on one fresh tensor: the same arithmetic as a where() and an addcmul().
        layer = torch.mul(signs.like(kept), scale * eps)
        layer.masked_fill_(kept == 0, 0.0)
        return layer.addcmul_(signs.like(kept), kept, value=eps)

    return make


@contextlib.contextmanager
def perturbed(model, *, seed: int, ulps: float):
    """Inside, ``model`` computes as another CPU might, and then some: every floating parameter and
    buffer is moved by ``ulps`` units in the last place (each element up or down, seeded), and every
    leaf sub-Module's floating outputs (and the gradients flowing back into them) by as much,
    relative to each element and to the output's own scale. Everything is restored on exit
    (running statistics updated meanwhile included). A negative ``ulps`` moves everything the other
    way (the same seed reads the same signs)."""
    signs = _Signs(seed)
    saved = state_of(model)
    forward_noise, backward_noise = _noise(signs, ulps), _noise(signs, ulps)
    with torch.no_grad():
        for tensor in list(model.parameters()) + list(model.buffers()):
            if tensor.is_floating_point() and tensor.numel():
                eps = torch.finfo(tensor.dtype).eps * ulps
                tensor.addcmul_(signs.like(tensor), tensor, value=eps)

    def jitter(module, args, output):
        leaves = flatten_outputs(output)
        if not any(isinstance(t, torch.Tensor) and t.is_floating_point() for _, t in leaves):
            return None
        return _rebuild(
            output,
            lambda t: (
                _Jitter.apply(t, forward_noise, backward_noise)
                if t.is_floating_point() and t.requires_grad
                else (t + forward_noise(t) if t.is_floating_point() else t)
            ),
        )

    handles = [m.register_forward_hook(jitter) for _, m in model.named_modules() if not any(True for _ in m.children())]
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()
        restore_state(model, saved)


def _rebuild(value, convert):
    """``value`` (a tensor or nested tuples/lists/dicts of them) with every tensor converted."""
    if isinstance(value, torch.Tensor):
        return convert(value)
    if isinstance(value, dict):
        return type(value)((k, _rebuild(v, convert)) for k, v in value.items())
    if isinstance(value, (tuple, list)) and not hasattr(value, "_fields"):
        return type(value)(_rebuild(v, convert) for v in value)
    return value


def float64_copy(model):
    """A deep copy in float64, for the noise-floor reference."""
    return copy.deepcopy(model).double()


_AUTOCAST: List[str] = []  # the dtype of the torch.autocast region forward passes run in, innermost last


@contextlib.contextmanager
def autocast(dtype: str):
    """Run every forward pass (:class:`Pass`) meanwhile under ``torch.autocast(device, dtype)``,
    except the float64 reference's; the backward runs outside it, in the dtypes the forward chose."""
    _AUTOCAST.append(dtype)
    try:
        yield
    finally:
        _AUTOCAST.pop()


def half_copy(model, dtype: str):
    """A deep copy of ``model`` converted to ``dtype`` (``Module.half()``/``.bfloat16()``)."""
    return copy.deepcopy(model).to(getattr(torch, dtype))


class Pass:
    """One forward pass kept alive for its backward."""

    def __init__(self, model, inputs, *, grads: bool, device: str, cast=None):
        self.model = model
        dev = torch_device(device)
        self._diff: Dict[str, torch.Tensor] = {}
        args = [self._convert(f"input[{i}]", a, grads, dev, cast) for i, a in enumerate(inputs.args)]
        kwargs = {k: self._convert(k, a, grads, dev, cast) for k, a in inputs.kwargs.items()}
        amp = _AUTOCAST[-1] if _AUTOCAST and cast is None else None  # never around the float64 reference
        region = torch.autocast(torch.device(dev).type, dtype=getattr(torch, amp)) if amp else contextlib.nullcontext()
        with torch.set_grad_enabled(grads), region, _default_dtype(cast):
            self.raw = model(*args, **kwargs)
        self.leaves = flatten_outputs(self.raw)
        named = list(inputs.named())
        fed = [to_numpy(t.detach()) if cast is None else a for t, (_, a) in zip(args + list(kwargs.values()), named)]
        self.changed = changed_inputs([n for n, _ in named], [a for _, a in named], fed)

    def _convert(self, name, array, grads, dev, cast):
        """The forward's own copy of ``array`` (the array itself is never changed); a floating one
        differentiated as a leaf of which the forward gets a copy, so that the forward may change
        its input in place (as it may outside a check) and the change can be seen."""
        tensor = from_numpy(array).to(dev, copy=True)
        if tensor.is_floating_point():
            if cast is not None:
                tensor = tensor.to(cast)
            if grads:
                tensor.requires_grad_(True)
                self._diff[name] = tensor
                return tensor.clone()
        return tensor

    def outputs(self):
        return [(path, _numpy(leaf, path)) for path, leaf in self.leaves]

    def backward(self, cotangents: Dict[str, np.ndarray], params: List[str]) -> Grads:
        outs, cots = [], []
        for path, leaf in self.leaves:
            if path in cotangents and isinstance(leaf, torch.Tensor) and leaf.requires_grad:
                outs.append(leaf)
                cots.append(from_numpy(cotangents[path]).to(leaf.device, leaf.dtype))
        targets = list(self._diff.values()) + [_tensor(self.model, name) for name in params]
        if not outs or not targets:
            grads: Sequence[Optional[torch.Tensor]] = [None] * len(targets)
        else:
            grads = torch.autograd.grad(outs, targets, cots, allow_unused=True)
        arrays = [None if g is None else to_numpy(g) for g in grads]
        n = len(self._diff)
        zero = lambda t: np.zeros_like(to_numpy(t))  # noqa: E731
        inputs = {k: a if a is not None else zero(t) for (k, t), a in zip(self._diff.items(), arrays[:n])}
        named = {p: a if a is not None else zero(_tensor(self.model, p)) for p, a in zip(params, arrays[n:])}
        return Grads(inputs, named)


@contextlib.contextmanager
def _default_dtype(cast):
    """Tensors the forward makes without a dtype (``torch.full(shape, torch.finfo(x.dtype).min)``,
    ``torch.tensor(0.5)``) take the cast's dtype, as they take float32 in the float32 run: a float64
    rerun computes in float64 throughout, and ``finfo(float64).min`` fits where it is put."""
    if cast is None or cast == torch.get_default_dtype():
        yield
        return
    saved = torch.get_default_dtype()
    torch.set_default_dtype(cast)
    try:
        yield
    finally:
        torch.set_default_dtype(saved)


def _numpy(leaf, path: str) -> np.ndarray:
    if isinstance(leaf, torch.Tensor):
        return to_numpy(leaf)
    if isinstance(leaf, (int, float, bool)):
        return np.asarray(leaf)
    raise ParityUsageError(f"PyTorch {path} is a {type(leaf).__qualname__}, not a tensor")


class _Copies:
    """numpy copies of the tensors the hooks see, one per piece of data.

    A copy is needed: the forward may later modify a captured output in place. But one tensor
    reaches several hooks (a layer's output is its container's output and the next layer's input),
    often as different tensor objects over the same storage (full backward hooks wrap them), so
    copies are found again by storage, offset, layout and version, and confirmed equal before they
    are shared. The copies are held weakly: once the recording lets one go, it is gone."""

    def __init__(self) -> None:
        self._items: Dict[tuple, "weakref.ref"] = {}

    def array(self, tensor) -> np.ndarray:
        tensor = tensor.detach()
        key = (
            tensor.untyped_storage().data_ptr(),
            tensor.storage_offset(),
            tuple(tensor.shape),
            tensor.stride(),
            tensor.dtype,
            tensor._version,
        )
        known = self._items.get(key)
        array = known() if known is not None else None
        view = to_numpy(tensor)
        if array is not None and _same(array, view):
            return array
        array = view.copy()
        self._items[key] = weakref.ref(array)
        return array


class _Layers(LayerHooks):
    """PyTorch's side of the capture: every tensor is copied to numpy as its hook sees it (the
    forward may modify it in place later); forward calls are recorded at once."""

    defer_forward = False

    def __init__(self, recording, *, backward: bool):
        super().__init__(recording, backward=backward)
        self.copies = _Copies()

    def is_tensor(self, value) -> bool:
        return isinstance(value, torch.Tensor)

    def differentiable(self, tensor) -> bool:
        return isinstance(tensor, torch.Tensor) and tensor.requires_grad

    def view(self, tensor):
        return tensor.view_as(tensor)

    def on_grad(self, tensor, hook) -> None:
        tensor.register_hook(hook)

    def hold(self, tensor):
        return self.copies.array(tensor)

    def arrays(self, held: list) -> list:
        return held


def _same(copy: np.ndarray, view: np.ndarray) -> bool:
    """Does ``view`` still hold what ``copy`` holds? Freed memory is soon reused by another tensor
    of the same shape, so a few spread-out elements are compared before all of them."""
    if copy.shape != view.shape or copy.dtype != view.dtype:
        return False
    nan = view.dtype.kind in "fc"
    if copy.size > 64:
        spots = np.linspace(0, copy.size - 1, 16).astype(np.intp)
        if not np.array_equal(copy.flat[spots], view.flat[spots], equal_nan=nan):
            return False
    return np.array_equal(copy, view, equal_nan=nan)


@contextlib.contextmanager
def capture(model, recording, *, backward: bool):
    """Feed every sub-Module's calls (and, with ``backward``, their gradients) to ``recording``:
    forward calls as they come, gradients at each ``flush()`` of the object yielded and at the end.

    In-place activations are switched off meanwhile (same numbers), so that a layer's input view
    is never modified in place."""
    layers = _Layers(recording, backward=backward)
    handles, inplace = [], []
    for path, module in model.named_modules():
        if not path:
            continue
        if getattr(module, "inplace", False) is True:
            module.inplace = False
            inplace.append(module)
        handles.append(module.register_forward_pre_hook(functools.partial(layers.pre_hook, path), with_kwargs=True))
        handles.append(module.register_forward_hook(functools.partial(layers.forward_hook, path), with_kwargs=True))
    try:
        yield layers
        layers.flush()
    finally:
        for handle in handles:
            handle.remove()
        for module in inplace:
            module.inplace = True


class TrainStep:
    """PyTorch's training steps, as users write them: ``loss / accumulate`` backward per
    micro-batch, optionally ``clip_grad_norm_``, then ``optimizer.step()`` and ``zero_grad``.

    With ``perturb=(seed, ulps)`` a step runs as another CPU might (see :func:`perturbed`): the
    forward and backward under the perturbation, the running statistics they updated kept, and
    every gradient moved by as much before the optimizer uses it. ``cast`` runs in that dtype
    (the module and loss converted in place, so that the optimizer factory's closures still
    reach the same Parameters).

    With ``scaler`` (a ``torch.amp.GradScaler``), as its documentation writes the step:
    ``scaler.scale(loss).backward()``, ``scaler.unscale_`` (before any clipping), then
    ``scaler.step`` and ``scaler.update``; ``scaling`` holds (the scale used, whether the update was
    skipped) of the last step, and the gradients returned are unscaled."""

    def __init__(
        self, model, loss_fn, optimizer, *, accumulate: int, clip_grad_norm, device: str, cast=None, scaler=None
    ):
        self.model, self.loss_fn, self.optimizer = model, loss_fn, optimizer
        self.scaler = scaler  # a torch.amp.GradScaler
        self.scaling: Optional[Tuple[float, bool]] = None  # (scale used, skipped) of the last step
        self.accumulate, self.clip, self.cast = accumulate, clip_grad_norm, cast
        self.device = torch_device(device)
        self.names = {id(p): n for n, p in model.named_parameters()}
        self.params = [p for p in model.parameters() if p.requires_grad]

    def _tensor(self, array, float_cast: bool):
        tensor = from_numpy(_contiguous(array)).to(self.device, copy=True)  # its own copy; bfloat16 bit for bit
        return tensor.to(self.cast) if float_cast and self.cast is not None and tensor.is_floating_point() else tensor

    def step(self, micro_batches, perturb=None, keep=None):
        """One optimizer step; the loss summed over the micro-batches and the gradients before
        clipping, as numpy by parameter name (only the names in ``keep``, when given). The
        parameters' ``.grad`` are None after it, as after ``zero_grad()``: their copies are returned."""
        self.optimizer.zero_grad(set_to_none=True)
        total = 0.0
        for index, (inputs, target) in enumerate(micro_batches):
            args = [self._tensor(a, True) for a in inputs.args]
            kwargs = {k: self._tensor(a, True) for k, a in inputs.kwargs.items()}
            target = self._tensor(target, True)
            context = (
                perturbed_keeping_buffers(self.model, seed=perturb[0] + index, ulps=perturb[1])
                if perturb
                else contextlib.nullcontext()
            )
            with context:
                loss = self.loss_fn(self.model(*args, **kwargs), target)
                if self.accumulate > 1:
                    loss = loss * (1.0 / self.accumulate)
                (loss if self.scaler is None else self.scaler.scale(loss)).backward()
            total += float(loss.detach())
        if self.scaler is not None:  # as GradScaler's documentation writes the step: unscale_ before clipping
            scale_used = self.scaler.get_scale()
            self.scaler.unscale_(self.optimizer)
        grads = {
            self.names[id(p)]: to_numpy(p.grad.detach().cpu()).copy()
            for p in self.params
            if p.grad is not None and (keep is None or self.names[id(p)] in keep)
        }
        if perturb:
            noise = _noise(_Signs(perturb[0] + len(micro_batches)), perturb[1])
            with torch.no_grad():
                for p in self.params:
                    if p.grad is not None:
                        p.grad.add_(noise(p.grad))
        if self.clip is not None:
            torch.nn.utils.clip_grad_norm_(self.params, self.clip)
        if self.scaler is None:
            self.optimizer.step()
        else:
            self.scaler.step(self.optimizer)
            self.scaler.update()  # it backs off (backoff_factor < 1) exactly when a gradient was not finite
            self.scaling = (scale_used, self.scaler.get_scale() < scale_used)
        self.optimizer.zero_grad(set_to_none=True)  # read above; the next step makes them anew
        return total, grads

    def lrs(self) -> Dict[str, float]:
        return {
            self.names[id(p)]: float(group["lr"])
            for group in self.optimizer.param_groups
            for p in group["params"]
            if id(p) in self.names
        }

    def state(self, only=None, *, copy: bool = True) -> Dict[str, Dict[str, Union[np.ndarray, np.float32]]]:
        """The optimizer's state per parameter name (only the names in ``only``, when given);
        ``copy=False``: views, valid until the next step writes them."""
        found = {}
        for p in self.params:
            if only is not None and self.names[id(p)] not in only:
                continue
            entries: Dict[str, Union[np.ndarray, np.float32]] = {}
            for key, value in self.optimizer.state.get(p, {}).items():
                if isinstance(value, torch.Tensor):
                    values = to_numpy(value.detach().cpu())
                    entries[key] = values.copy() if copy else values
                elif isinstance(value, (int, float)):
                    entries[key] = np.float32(value)
            found[self.names[id(p)]] = entries
        return found


@contextlib.contextmanager
def perturbed_keeping_buffers(model, *, seed: int, ulps: float):
    """:func:`perturbed`, except that what the block wrote into the buffers (running statistics)
    is kept: parameters come back as they were, buffers as the block left them."""
    with perturbed(model, seed=seed, ulps=ulps):
        yield
        kept = {name: b.detach().clone() for name, b in model.named_buffers()}
    with torch.no_grad():
        for name, b in model.named_buffers():
            b.copy_(kept[name])


_UNSET = object()


@contextlib.contextmanager
def altered(model, changes):
    """Inside, each layer ``changes`` names (path -> ``(attributes, pads, value)``: a known
    mismatch's replay, see :class:`parity.registry.diagnosis.Replay`) has those attributes, and its
    first tensor input padded as ``pads`` says for an input of its shape (``torch.nn.functional.pad``'s
    order, with ``value``); an input of another shape is left as it is. Enter it after any hooks that
    feed the layer, so that the fed input is the one padded. A name the layer lacks raises
    :class:`AttributeError`. Everything comes back as it was on exit."""
    saved, handles = [], []
    try:
        for path, (attributes, pads, value) in changes.items():
            layer = model.get_submodule(path)
            for name, new in attributes:
                if not hasattr(layer, name):
                    raise AttributeError(f"{type(layer).__name__} at {path!r} has no attribute {name!r}")
                saved.append((layer, name, layer.__dict__.get(name, _UNSET)))
                setattr(layer, name, new)
            if pads:
                hook = functools.partial(_pad_first, dict(pads), value)
                handles.append(layer.register_forward_pre_hook(hook))
        yield
    finally:
        for handle in handles:
            handle.remove()
        for layer, name, own in reversed(saved):
            if own is _UNSET:  # not the instance's own: the class's again
                layer.__dict__.pop(name, None)
            else:
                setattr(layer, name, own)


def _pad_first(pads, value: float, layer, args):
    if not args or not isinstance(args[0], torch.Tensor) or tuple(args[0].shape) not in pads:
        return None
    padded = torch.nn.functional.pad(args[0], pads[tuple(args[0].shape)], value=value)
    return (padded,) + tuple(args[1:])


def state_of(model) -> Dict[str, "torch.Tensor"]:
    """Every parameter and buffer, cloned (``restore_state`` puts them back, in any dtype)."""
    return {
        name: t.detach().clone() for name, t in model.state_dict(keep_vars=True).items() if isinstance(t, torch.Tensor)
    }


def restore_state(model, saved, dtype_name=None) -> None:
    """Convert ``model`` to ``torch.<dtype_name>`` (in place: Parameter objects stay the same) and
    copy ``saved`` in."""
    if dtype_name is not None:
        cast_module(model, dtype_name)
    state = model.state_dict(keep_vars=True)
    with torch.no_grad():
        for name, value in saved.items():
            state[name].copy_(value)


def cast_module(module, dtype_name: str) -> None:
    """``module.to(torch.<dtype_name>)`` in place (floating tensors only)."""
    module.to(getattr(torch, dtype_name))


def dropout_layers(model) -> List[str]:
    """Paths of sub-Modules that drop elements at random in train mode."""
    return [
        path or "(root)"
        for path, m in model.named_modules()
        if isinstance(m, torch.nn.modules.dropout._DropoutNd) and m.p > 0
    ]


def decode(model, ids: np.ndarray, *, cache=None, use_cache: bool = False, device: str = "CPU"):
    """One forward of a causal language model on the token ids ``ids`` (batch, length), without
    autograd: ``(logits of the last position as numpy (batch, vocab), the cache)``. With
    ``use_cache``, Hugging Face's convention: ``model(input_ids=ids, past_key_values=past,
    use_cache=True)`` with ``past`` the ``cache`` given, the cache read from the output's ``past_key_values``."""
    tensor = from_numpy(ids).to(torch_device(device))
    with torch.no_grad():
        raw = model(input_ids=tensor, past_key_values=cache, use_cache=True) if use_cache else model(tensor)
    cache = _field(raw, "past_key_values") if use_cache else None
    if use_cache and cache is None:
        raise ParityUsageError(f"PyTorch {type(model).__qualname__} returned no past_key_values with use_cache=True")
    logits = _field(raw, "logits")
    return last_logits(to_numpy(logits) if isinstance(logits, torch.Tensor) else logits, "PyTorch"), cache


def _field(raw, name: str):
    """``raw.logits`` / ``raw["logits"]`` of a model output (a ModelOutput, a dict), the first element
    of a tuple for ``logits``, the tensor itself for ``logits``."""
    if hasattr(raw, name):
        return getattr(raw, name)
    if isinstance(raw, dict):
        return raw.get(name)
    if name == "logits":
        return raw[0] if isinstance(raw, (tuple, list)) else raw
    return raw[1] if isinstance(raw, (tuple, list)) and len(raw) > 1 else None
