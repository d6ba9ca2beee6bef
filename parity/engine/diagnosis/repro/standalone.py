"""The functions a standalone repro file carries: copied into it verbatim, and called here too while
the repro is made (so that the file judges as its maker did).

They need ``copy``, numpy and the frameworks, which the file imports at its top as this module
does; never parity. The file's constants (``RTOL``, ``ATOL``, ``NOISE_FACTOR``) are passed in as
arguments here.
"""

from __future__ import annotations

import copy

import mindspore
import numpy as np
import torch

__all__ = ["ms_forward", "torch_forward", "ms_pass", "torch_pass", "judge", "FORWARD", "BACKWARD"]


def ms_forward(cell, inputs):
    """MindSpore's outputs."""
    out = cell(*[mindspore.Tensor(a) for a in inputs])
    return {f"output[{i}]": o.asnumpy() for i, o in enumerate(out if isinstance(out, (tuple, list)) else [out])}


def torch_forward(module, inputs, float64=False):
    """PyTorch's outputs; module and floating inputs in float64 with ``float64``."""
    module = copy.deepcopy(module).double() if float64 else module
    out = module(*[torch.tensor(a, dtype=torch.float64 if float64 and a.dtype.kind == "f" else None) for a in inputs])
    return {f"output[{i}]": o.detach().numpy() for i, o in enumerate(out if isinstance(out, (tuple, list)) else [out])}


def ms_pass(cell, inputs, cotangents, params):
    """MindSpore's outputs, and with cotangents the gradients of the inputs and of params ((ms, torch) names)."""
    named = dict(cell.parameters_and_names())
    weights = [named[m] for m, _ in params] or None
    out, vjp = mindspore.vjp(cell, *[mindspore.Tensor(a) for a in inputs], weights=weights)
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    found = {f"output[{i}]": o.asnumpy() for i, o in enumerate(outs)}
    if cotangents:
        sens = [mindspore.Tensor(c) for c in cotangents]
        grads = vjp(tuple(sens) if isinstance(out, (tuple, list)) else sens[0])
        by_input, by_param = grads if params else (grads, ())
        by_input = by_input if isinstance(by_input, (tuple, list)) else (by_input,)
        found.update({f"grad input[{i}]": g.asnumpy() for i, g in enumerate(by_input) if inputs[i].dtype.kind == "f"})
        found.update({f"grad {t}": g.asnumpy() for (_, t), g in zip(params, by_param)})
    return found


def torch_pass(module, inputs, cotangents, params, float64=False):
    """PyTorch's outputs, and with cotangents the same gradients; all in float64 with ``float64``."""
    module = copy.deepcopy(module).double() if float64 else module
    cast = lambda a: torch.tensor(a, dtype=torch.float64 if float64 and a.dtype.kind == "f" else None)  # noqa: E731
    xs = [cast(a).requires_grad_(bool(cotangents) and a.dtype.kind == "f") for a in inputs]
    out = module(*xs)
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    found = {f"output[{i}]": o.detach().numpy() for i, o in enumerate(outs)}
    if cotangents:
        named, wrt = dict(module.named_parameters()), [x for x in xs if x.requires_grad]
        grads = torch.autograd.grad(
            outs, wrt + [named[t] for _, t in params], [cast(c) for c in cotangents], allow_unused=True
        )
        slots = [f"grad input[{i}]" for i, x in enumerate(xs) if x.requires_grad] + [f"grad {t}" for _, t in params]
        found.update(
            {
                k: (torch.zeros_like(w) if g is None else g).detach().numpy()
                for k, g, w in zip(slots, grads, wrt + [named[t] for _, t in params])
            }
        )
    return found


def judge(name, ms, pt, pt64, rtol, atol, noise_factor):
    """Fail where MindSpore's ``ms`` lies beyond the tolerance plus noise_factor x PyTorch's distance from float64."""
    assert ms.shape == pt.shape, f"{name}: shapes differ: MindSpore {ms.shape} vs PyTorch {pt.shape}"
    ref = pt.astype(np.float64)
    diff = np.abs(ms.astype(np.float64) - ref)
    allowed = atol + rtol * np.abs(ref) + noise_factor * np.abs(pt64.astype(np.float64) - ref)
    bad = ~(diff <= allowed) & ~(np.isnan(ms) & np.isnan(pt))
    if bad.any():
        at = np.unravel_index(np.argmax(np.where(bad, np.nan_to_num(diff / allowed, nan=np.inf), -1.0)), bad.shape)
        raise AssertionError(
            f"{name}: values differ at {bad.sum()} of {bad.size} elements; at {tuple(map(int, at))}: "
            f"|diff| {diff[at]:.3g} (up to {allowed[at]:.3g} allowed)"
        )


FORWARD = (ms_forward, torch_forward, judge)  # what a file comparing outputs only carries
BACKWARD = (ms_pass, torch_pass, judge)  # with gradients
