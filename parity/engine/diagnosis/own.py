"""Each layer's own error: on a failing check, every layer is fed PyTorch's captured inputs, and
its own output judged against PyTorch's as any tensor is (tolerance, then the rounding envelope).

Accumulated error hides a second cause behind the first: once one layer diverges, every later
layer's inputs differ and its error looks inherited. Fed the reference's inputs, a layer differs
only by what it computes itself. MindSpore's model runs once more (:func:`parity.backends.replay.fed`):
every aligned layer call is fed PyTorch's inputs and, its own output kept, returns PyTorch's
output, so that the code between layers computes from PyTorch's values too; what that code
computes as a layer's inputs is the own error of its caller's code (a container's, or the model's
own: ``layer`` ``""``). Backward, where gradients are compared and the first divergence is in the
backward pass (the forward agrees), the same pass's backward starts each call from PyTorch's
gradient at its outputs, and PyTorch's gradient flows on out of it. PyTorch's own values are those already captured; PyTorch runs again, fed the
same way, only where an own error is near its tolerance (the envelope's reruns). In training mode
the running statistics each layer updates from its fed inputs are compared too (``"buffer"``).

A layer's ``own_status``: ``"own"`` (its own error is out of bounds), ``"inherited"`` (out of
bounds in the check, but not when fed PyTorch's inputs), ``"ok"``, or ``""`` (not measured: not
aligned, or its call could not be fed).
"""

from __future__ import annotations

import contextlib

import torch

from ...backends import replay
from ...backends import torch as tb
from ..compared import buffers_of
from ..inputs import Inputs
from ..passes import draw_seed, perturbed_inputs
from ..side_errors import backward as side_backward
from ..side_errors import run_side
from .feeding import OwnError, measure

__all__ = ["OwnError", "measure_own_errors", "rerun_altered", "rerun_fed"]


def measure_own_errors(run, table, chain) -> None:
    """Feed every aligned layer call PyTorch's inputs (``run``: the check's captured
    :class:`parity.engine.passes.Passes`, its PyTorch recording still holding its arrays), judge
    each layer's own output (and gradient), and set ``own_*`` on ``table``'s verdicts and
    ``table.own_errors`` (see :func:`parity.engine.diagnosis.feeding.measure`); PyTorch's layers
    run again, fed the same way, for the envelope. Its buffers are as they were on return."""
    torch_after = tb.buffers(run.torch_module)
    measure(
        run,
        table,
        chain,
        lambda feeds, grad_feeds, spec, keep: rerun_fed(run, feeds, grad_feeds, spec, keep),
        lambda feeds, grad_feeds, keep, changes: rerun_altered(run, feeds, grad_feeds, keep, changes, torch_after),
    )
    tb.set_buffers(run.torch_module, torch_after)


def rerun_fed(run, feeds, grad_feeds, spec, keep):
    """PyTorch's model fed ``feeds`` (and ``grad_feeds``) again as ``spec`` asks: in float64, or
    with its weights, layer outputs and the fed tensors moved by ``spec.ulps``."""
    if spec.cast is not None:
        if getattr(run, "_own_module64", None) is None:
            run._own_module64 = tb.float64_copy(run.torch_module)
        module, perturb = run._own_module64, contextlib.nullcontext()
    else:
        module = run.torch_module
        perturb = tb.perturbed(module, seed=draw_seed(run.seed, spec.draw), ulps=spec.ulps)
        feeds, grad_feeds = _moved(feeds, run.seed, spec), _moved(grad_feeds, run.seed, spec)
    return _fed_values(run, module, feeds, grad_feeds, keep, torch.float64 if spec.cast else None, perturb)


def rerun_altered(run, feeds, grad_feeds, keep, changes, after):
    """PyTorch's model fed ``feeds`` (and ``grad_feeds``) again as it was, with ``changes`` applied
    to its layers (see :func:`parity.backends.torch.altered`): a known mismatch replayed. Its
    buffers are ``after`` again on return."""
    try:
        return _fed_values(run, run.torch_module, feeds, grad_feeds, keep, None, contextlib.nullcontext(), changes)
    finally:
        tb.set_buffers(run.torch_module, after)


def _fed_values(run, module, feeds, grad_feeds, keep, cast, perturb, changes=None):
    """PyTorch's ``module`` fed ``feeds`` (and ``grad_feeds``), from its starting buffers, inside
    ``perturb``, its values as ``(key, array)`` keyed as :func:`parity.engine.diagnosis.feeding.measure`
    keys them."""
    tb.set_buffers(module, run.torch_start)
    tb.prepare(seed=run.seed, device=run.device)
    grads = grad_feeds is not None
    with perturb, replay.fed(module, feeds, framework="torch", grads=grad_feeds, keep=keep) as got:
        with tb.altered(module, changes or {}):  # after the feeding hooks: the fed input is the one altered
            side = run_side(
                lambda: tb.Pass(module, run.data, grads=grads, device=run.device, cast=cast),
                "PyTorch (layers fed)",
            )
        statistics = buffers_of(tb, module, run.wmap, "torch") if run.train else {}
        if grads:
            side_backward(side, run.cotangents, [], "PyTorch (layers fed)")
    values = [(("forward", path, call, i), a) for (path, call), outs in got.outputs.items() for i, a in enumerate(outs)]
    values += [
        (("backward", path, call, i), a) for (path, call), outs in got.grad_inputs.items() for i, a in enumerate(outs)
    ]
    values += [
        (("code", path, call, i), a) for (path, call), found in got.inputs.items() for i, (a, _) in enumerate(found)
    ]
    values += [
        (("grad code", path, call, i), a)
        for (path, call), found in got.grad_outputs.items()
        for i, (a, _) in enumerate(found)
    ]
    return values + [(("buffer", name.rpartition(".")[0], name, 0), a) for name, a in statistics.items()]


def _moved(feeds, seed: int, spec):
    """``feeds`` with every floating array moved by ``spec.ulps`` (seeded by ``spec.draw``)."""
    if feeds is None:
        return None
    moved = {}
    for key, feed in feeds.items():
        arrays = tuple(
            None if a is None else perturbed_inputs(Inputs((a,), {}, {}), seed, spec.draw, spec.ulps).args[0]
            for a in feed.arrays
        )
        moved[key] = replay.Feed(arrays, feed.names)
    return moved
