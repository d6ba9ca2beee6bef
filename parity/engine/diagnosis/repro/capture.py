"""The part of the pair a repro holds, caught in the act: PyTorch's inputs and output gradient of one
layer call, both sides' weights, the layers built again and proven to compute what the originals
did, and the inputs shrunk while the failure persists."""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

import mindspore
import numpy as np
import torch

from ....backends import mindspore as msb
from ....backends import torch as tb
from ...passes import seeded_cotangents
from ...side_errors import run_side
from ..recording import Recording
from . import standalone
from .constructors import CannotRebuild, Recipe, recipe_of

__all__ = ["Source", "Part", "as_found", "capture", "failure_of", "kind_of", "shrink"]


@dataclass
class Source:
    """What a failed check keeps for its repro: the pair as checked and how it was checked."""

    ms_cell: Any
    torch_module: Any
    data: Any  # parity.engine.inputs.Inputs, PyTorch's
    chain: tuple  # the tolerance chain
    seed: int
    train: bool
    grads: bool
    device: str
    wmap: Any  # parity.weights.transfer.WeightMap
    restore: Any  # puts back the running statistics the check started from
    case: str = ""


@dataclass
class Part:
    """One layer call of both sides, ready to be written down."""

    torch_path: str
    ms_path: str
    torch_recipe: Recipe
    ms_recipe: Recipe
    inputs: List[np.ndarray]
    cotangents: Optional[List[np.ndarray]]  # PyTorch's gradient of each output, where gradients were compared
    params: List[Tuple[str, str]]  # (MindSpore, PyTorch) names of the trainable weights paired as they are
    ms_weights: Dict[str, np.ndarray]
    torch_weights: Dict[str, np.ndarray]
    train: bool
    backward: bool = False  # the repro needs the gradients (the outputs agree)
    shrunk_from: List[Tuple[int, ...]] = field(default_factory=list)

    def build(self):
        """Both layers built again from their recipes, with the weights and train flag of the check."""
        ms_layer, torch_layer = self.ms_recipe.build(), self.torch_recipe.build()
        load_weights(ms_layer, torch_layer, self.ms_weights, self.torch_weights, self.train)
        return ms_layer, torch_layer


@contextlib.contextmanager
def as_found(source: Source):
    """Leave both models as they were: train flags, PyTorch's buffers, MindSpore's parameters
    that are not trained (the cut runs PyTorch again and the rebuilt layers' checks reload weights)."""
    flags = msb.train_flags(source.ms_cell), tb.train_flags(source.torch_module)
    torch_buffers = tb.buffers(source.torch_module)
    ms_state = [
        (param, param.asnumpy().copy()) for _, param in source.ms_cell.parameters_and_names() if not param.requires_grad
    ]
    try:
        yield
    finally:
        tb.set_buffers(source.torch_module, torch_buffers)
        for param, value in ms_state:
            param.set_data(mindspore.Tensor(value, dtype=param.dtype))
        for restore in flags:
            restore()


def load_weights(ms_layer, torch_layer, ms_weights, torch_weights, train) -> None:
    for name, param in ms_layer.parameters_and_names():
        param.set_data(mindspore.Tensor(ms_weights[name]))
    torch_layer.load_state_dict({k: torch.from_numpy(v.copy()) for k, v in torch_weights.items()})
    ms_layer.set_train(train)
    torch_layer.train(train)


def _sub(root, path: str, framework: str):
    if not path:
        return root
    if framework == "torch":
        return root.get_submodule(path)
    return dict(root.cells_and_names())[path]


def _weights(layer, framework: str) -> Dict[str, np.ndarray]:
    if framework == "torch":
        return {k: v.detach().cpu().numpy().copy() for k, v in layer.state_dict().items()}
    return {name: param.asnumpy().copy() for name, param in layer.parameters_and_names()}


def _params(wmap, ms_path: str, torch_path: str) -> List[Tuple[str, str]]:
    """The trainable weights under both layers that the weight map paired one to one, as they are."""
    ms_prefix, torch_prefix = (ms_path + "." if ms_path else ""), (torch_path + "." if torch_path else "")
    return [
        (p.ms[len(ms_prefix) :], p.torch[len(torch_prefix) :])
        for p in wmap.pairs
        if p.trainable
        and not p.laid_out
        and p.ms_shape == p.torch_shape
        and p.ms.startswith(ms_prefix)
        and p.torch.startswith(torch_prefix)
    ]


def _caught(source: Source, torch_path: str, call: int):
    """PyTorch's inputs of call ``call`` of ``torch_path`` and the gradients of its outputs (None
    where gradients are not compared), from one more pass of the whole PyTorch side."""
    source.restore()
    tb.prepare(seed=source.seed, device=source.device)
    tb.set_train(source.torch_module, source.train)
    if not torch_path:
        if source.data.kwargs:
            raise CannotRebuild("the model is called with keyword inputs; a repro feeds positional inputs only")
        side = run_side(
            lambda: tb.Pass(source.torch_module, source.data, grads=source.grads, device=source.device), "PyTorch"
        )
        cots = seeded_cotangents(side, source.seed) if source.grads else None
        return list(source.data.args), (list(cots.values()) if cots else None)
    kept: Dict[str, Any] = {}

    def forward(c):  # the recording drops the arrays once this returns
        if c.key == (torch_path, call):
            kept.update(inputs=[a.copy() for a in c.inputs], keywords=c.keywords)

    def backward(c):
        if c.key == (torch_path, call):
            kept["cots"] = [None if g is None else g.copy() for g in c.grad_outputs or ()]

    with tb.capture(source.torch_module, Recording(forward, backward), backward=source.grads) as layers:
        side = run_side(
            lambda: tb.Pass(source.torch_module, source.data, grads=source.grads, device=source.device), "PyTorch"
        )
        layers.flush()
        if "inputs" not in kept:
            raise CannotRebuild(f"PyTorch's '{torch_path}' made no call {call + 1} in one more pass")
        if kept["keywords"]:
            raise CannotRebuild(
                f"'{torch_path}' is called with keyword arguments; a repro feeds positional inputs only"
            )
        if source.grads:
            side.backward(seeded_cotangents(side, source.seed), [])
    cots = kept.get("cots")
    return kept["inputs"], (cots if cots and all(c is not None for c in cots) else None)


def capture(source: Source, torch_path: str, ms_path: str, call: int) -> Part:
    """The part at ``torch_path`` / ``ms_path``, proven rebuildable, or :class:`CannotRebuild`."""
    torch_layer, ms_layer = _sub(source.torch_module, torch_path, "torch"), _sub(source.ms_cell, ms_path, "mindspore")
    recipes = recipe_of(ms_layer, "mindspore"), recipe_of(torch_layer, "torch")
    inputs, cots = _caught(source, torch_path, call)
    part = Part(
        torch_path,
        ms_path,
        recipes[1],
        recipes[0],
        inputs,
        cots,
        _params(source.wmap, ms_path, torch_path),
        _weights(ms_layer, "mindspore"),
        _weights(torch_layer, "torch"),
        source.train,
    )
    try:
        _prove(part, ms_layer, torch_layer)
    except CannotRebuild:
        raise
    except Exception as exc:  # noqa: BLE001 - the recipe's layer rejects its arguments or the inputs
        raise CannotRebuild(
            f"built again, it raised {type(exc).__name__}: {str(exc).strip().splitlines()[0][:200]}"
        ) from None
    return part


def _prove(part: Part, ms_layer, torch_layer) -> None:
    """The layers built again must compute exactly what the check's own instances compute."""
    built = part.build()
    originals = _fresh_state(part, ms_layer, torch_layer)
    for side, again, original in (("MindSpore", built[0], originals[0]), ("PyTorch", built[1], originals[1])):
        ours, theirs = _run(side, again, part), _run(side, original, part)
        for name in theirs:
            if not np.array_equal(ours[name], theirs[name], equal_nan=True):
                recipe = part.ms_recipe if side == "MindSpore" else part.torch_recipe
                raise CannotRebuild(
                    f"{recipe.call} computes another {name} than the instance: its constructor's "
                    "arguments were not all recovered from its attributes"
                )


def _fresh_state(part: Part, ms_layer, torch_layer):
    """The check's instances with the captured weights put back (a training pass moved their statistics)."""
    load_weights(ms_layer, torch_layer, part.ms_weights, part.torch_weights, part.train)
    return ms_layer, torch_layer


def _run(side: str, layer, part: Part) -> Dict[str, np.ndarray]:
    cots = part.cotangents
    if side == "MindSpore":
        found = (
            standalone.ms_pass(layer, part.inputs, cots, part.params)
            if cots
            else standalone.ms_forward(layer, part.inputs)
        )
        _restore(layer, part.ms_weights, "mindspore")
    else:
        found = (
            standalone.torch_pass(layer, part.inputs, cots, part.params)
            if cots
            else standalone.torch_forward(layer, part.inputs)
        )
        _restore(layer, part.torch_weights, "torch")
    return found


def _restore(layer, weights, framework: str) -> None:
    """Put the statistics a training pass moved back where they were."""
    if framework == "torch":
        layer.load_state_dict({k: torch.from_numpy(v.copy()) for k, v in weights.items()})
        return
    for name, param in layer.parameters_and_names():
        param.set_data(mindspore.Tensor(weights[name]))


def failure_of(part: Part, tol, noise_factor: float, *, backward: bool) -> str:
    """What the repro's judgement says of ``part``: the first failing tensor's message, or ""."""
    ms_layer, torch_layer = part.build()
    cots = part.cotangents if backward else None
    try:
        if backward:
            ms = standalone.ms_pass(ms_layer, part.inputs, cots, part.params)
            pt = standalone.torch_pass(torch_layer, part.inputs, cots, part.params)
            pt64 = standalone.torch_pass(part.build()[1], part.inputs, cots, part.params, float64=True)
        else:
            ms = standalone.ms_forward(ms_layer, part.inputs)
            pt = standalone.torch_forward(torch_layer, part.inputs)
            pt64 = standalone.torch_forward(part.build()[1], part.inputs, float64=True)
        for name in pt:
            standalone.judge(name, ms[name], pt[name], pt64[name], tol.rtol, tol.atol, noise_factor)
    except AssertionError as exc:
        return str(exc)
    except Exception as exc:  # noqa: BLE001 - a layer that rejects its inputs fails otherwise
        return f"raised {type(exc).__name__}: {exc}"
    return ""


def kind_of(failure: str) -> str:
    """What a failure message says failed, without the figures: "output[0]: values differ"."""
    found = re.match(r"(.*?: (?:values|shapes) differ)", failure)
    return found.group(1) if found else failure


def shrink(part: Part, tol, noise_factor: float, failure: str, budget: int = 40) -> Part:
    """``part`` with its inputs cut down (batch to 1, then every other dimension halved, as far
    as each goes) while it fails the same way; at most ``budget`` tries."""
    original = [a.shape for a in part.inputs]
    if len(part.inputs) != 1 or part.inputs[0].ndim == 0:
        return part
    dims = range(part.inputs[0].ndim)
    for dim in dims:
        while budget > 0 and part.inputs[0].shape[dim] > 1:
            budget -= 1
            smaller = _cut(part, dim, 1 if dim == 0 else part.inputs[0].shape[dim] // 2, tol, noise_factor)
            found = failure_of(smaller, tol, noise_factor, backward=part.backward) if smaller is not None else ""
            if kind_of(found) != kind_of(failure) or not found:
                break
            part = smaller
    if [a.shape for a in part.inputs] != original:
        part.shrunk_from = original
    return part


def _cut(part: Part, dim: int, size: int, tol, noise_factor):
    """``part`` with its input cut to ``size`` along ``dim`` (and its cotangents to the new output
    shapes), or None where the layer rejects it."""
    index = (slice(None),) * dim + (slice(0, size),)
    inputs = [np.ascontiguousarray(part.inputs[0][index])]
    smaller = Part(**{**part.__dict__, "inputs": inputs})
    if part.cotangents is None:
        return _runs(smaller)
    try:
        shapes = [o.shape for o in standalone.torch_forward(smaller.build()[1], inputs).values()]
    except Exception:  # noqa: BLE001 - the layer rejects this size
        return None
    if len(shapes) != len(part.cotangents) or any(
        len(s) != c.ndim or any(n > m for n, m in zip(s, c.shape)) for s, c in zip(shapes, part.cotangents)
    ):
        return None
    smaller.cotangents = [
        np.ascontiguousarray(c[tuple(slice(0, n) for n in s)]) for s, c in zip(shapes, part.cotangents)
    ]
    return smaller


def _runs(part: Part):
    try:
        ms_layer, torch_layer = part.build()
        standalone.ms_forward(ms_layer, part.inputs)
        standalone.torch_forward(torch_layer, part.inputs)
    except Exception:  # noqa: BLE001 - the layer rejects this size
        return None
    return part
