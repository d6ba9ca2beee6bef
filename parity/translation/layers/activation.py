"""Activations: the element-wise ones, the ``Softmax`` family and ``GLU``.

MindSpore facts (mindspore 2.10, ``mindspore/nn/layer/activation.py``):

* ``nn.GELU(approximate=True)`` is the tanh form by default; PyTorch's default is exact
  (``approximate="none"`` -> ``approximate=False``).
* ``nn.LeakyReLU(alpha=0.2)``: PyTorch's ``negative_slope`` (default 0.01) is ``alpha``.
* ``nn.PReLU`` names its parameter ``w``; ``nn.PReLUExt(num_parameters, init)`` names it ``weight``
  like PyTorch and runs on CPU, so it is used.
* ``nn.ELU``'s kernel accepts only ``alpha=1.0``: other alphas use :class:`ELU`; ``nn.CELU`` takes any.
* ``Softmax``/``LogSoftmax``/``Softmin`` take ``axis`` (default -1); PyTorch's ``dim=None`` picks a
  dim from the input rank and is refused.
* No ``nn.Softplus``: a small Cell over ``ops.softplus(x, beta, threshold)`` stands in.
  ``Hardswish``/``Hardsigmoid`` are ``HSwish``/``HSigmoid``, ``Hardshrink``/``Softshrink`` are
  ``HShrink``/``SoftShrink``, ``SELU`` is :class:`SELU` (``nn.SeLU``'s gradient is wrong for
  negative inputs).

:class:`ELU`, :class:`SELU` and :class:`Softplus` are also the known-mismatch registry's fixes
(its data names them as ``parity.translation.activation:SELU``..., a path that re-exports them).
* ``nn.RReLU`` draws random slopes in eval mode too (PyTorch uses the mean slope): not translated.
* The CPU ``tanh`` kernel (``nn.Tanh``, ``ops.tanh``, and ``nn.Tanhshrink``) is a fast approximation,
  off by up to 1e-4 (its gradient 2e-4) where PyTorch's is within 3e-8; ``nn.Mish``'s gradient is off
  by up to 9e-4. :func:`tanh` computes tanh as sinh/cosh of the input clamped to [-9, 9] (within
  1.3e-7, its gradient 3e-7), and :class:`Tanh`, :class:`Tanhshrink` and :class:`Mish` are built on it
  (known mismatches ``tanh-cpu-accuracy``, ``tanhshrink-cpu-accuracy``, ``mish-cpu-gradient``).
"""

from __future__ import annotations

from typing import Union

import torch
from mindspore import Tensor, nn, ops

from .table import Context, translates

__all__ = ["ELU", "SELU", "Softplus", "Tanh", "Tanhshrink", "Mish", "tanh", "elu_with_alpha"]

_SELU_ALPHA = 1.6732632423543772
_SELU_SCALE = 1.0507009873554805


_TANH_CLAMP = 9.0  # tanh(9) rounds to 1.0 in float32


def tanh(x: Tensor) -> Tensor:
    """tanh(x) as sinh/cosh of x clamped to [-9, 9]: within 1.3e-7 of the exact value (its gradient
    within 3e-7), where MindSpore's CPU ``ops.tanh`` is off by up to 1e-4."""
    clamped = ops.clamp(x, -_TANH_CLAMP, _TANH_CLAMP)
    return ops.sinh(clamped) / ops.cosh(clamped)


def elu_with_alpha(x: Tensor, alpha: float = 1.0) -> Tensor:
    """ELU for any alpha from primitives (the ``Elu`` kernel accepts only alpha=1.0)."""
    return ops.where(x > 0, x, alpha * (ops.exp(ops.minimum(x, 0.0)) - 1.0))


class ELU(nn.Cell):
    """``torch.nn.ELU(alpha)`` for any alpha (``nn.ELU``'s kernel accepts only alpha=1.0)."""

    def __init__(self, alpha: float = 1.0):
        super().__init__()
        self.alpha = float(alpha)

    def construct(self, x: Tensor) -> Tensor:
        return elu_with_alpha(x, self.alpha)


class Tanh(nn.Cell):
    """``torch.nn.Tanh`` as accurate as PyTorch's on CPU: :func:`tanh` (``nn.Tanh`` is off by 1e-4)."""

    def construct(self, x: Tensor) -> Tensor:
        return tanh(x)


class Tanhshrink(nn.Cell):
    """``torch.nn.Tanhshrink``, x - tanh(x), on the accurate :func:`tanh`."""

    def construct(self, x: Tensor) -> Tensor:
        return x - tanh(x)


class Mish(nn.Cell):
    """``torch.nn.Mish``, x * tanh(softplus(x)), on the accurate :func:`tanh` (``nn.Mish``'s CPU
    gradient is off by up to 9e-4)."""

    def construct(self, x: Tensor) -> Tensor:
        return x * tanh(ops.softplus(x))


class SELU(nn.Cell):
    """``torch.nn.SELU`` built from differentiable primitives: ``nn.SeLU``'s gradient is wrong for
    negative inputs."""

    def construct(self, x: Tensor) -> Tensor:
        return _SELU_SCALE * ops.where(x > 0, x, _SELU_ALPHA * (ops.exp(ops.minimum(x, 0.0)) - 1.0))


class Softplus(nn.Cell):
    """``torch.nn.Softplus(beta, threshold)``: MindSpore has only the function ``ops.softplus``."""

    def __init__(self, beta: float = 1.0, threshold: float = 20.0):
        super().__init__()
        self.beta, self.threshold = beta, threshold

    def construct(self, x: Tensor) -> Tensor:
        return ops.softplus(x, self.beta, self.threshold)


# PyTorch classes whose MindSpore Cell takes no arguments.
_PLAIN = {
    torch.nn.ReLU: nn.ReLU,
    torch.nn.ReLU6: nn.ReLU6,
    torch.nn.SELU: SELU,
    torch.nn.SiLU: nn.SiLU,
    torch.nn.Mish: Mish,
    torch.nn.Hardswish: nn.HSwish,
    torch.nn.Hardsigmoid: nn.HSigmoid,
    torch.nn.Tanh: Tanh,
    torch.nn.Sigmoid: nn.Sigmoid,
    torch.nn.Softsign: nn.Softsign,
    torch.nn.Tanhshrink: Tanhshrink,
    torch.nn.LogSigmoid: nn.LogSigmoid,
    torch.nn.Softmax2d: nn.Softmax2d,
}
_AXIS = {torch.nn.Softmax: nn.Softmax, torch.nn.LogSoftmax: nn.LogSoftmax, torch.nn.Softmin: nn.Softmin}


@translates(*_PLAIN)
def plain(module: torch.nn.Module, ctx: Context) -> nn.Cell:
    return _PLAIN[ctx.layer_class]()


@translates(*_AXIS)
def softmax(module: Union[torch.nn.Softmax, torch.nn.LogSoftmax, torch.nn.Softmin], ctx: Context) -> nn.Cell:
    ctx.require(
        module.dim is not None,
        "dim=None (picked from the input rank, deprecated in PyTorch) has no MindSpore counterpart; pass dim",
    )
    return _AXIS[ctx.layer_class](axis=module.dim)


@translates(torch.nn.GLU)
def glu(module: torch.nn.GLU, ctx: Context) -> nn.Cell:
    return nn.GLU(axis=module.dim)


@translates(torch.nn.LeakyReLU)
def leaky_relu(module: torch.nn.LeakyReLU, ctx: Context) -> nn.Cell:
    return nn.LeakyReLU(alpha=float(module.negative_slope))


@translates(torch.nn.PReLU)
def prelu(module: torch.nn.PReLU, ctx: Context) -> nn.Cell:
    return nn.PReLUExt(num_parameters=module.num_parameters, init=float(module.init))


@translates(torch.nn.ELU)
def elu(module: torch.nn.ELU, ctx: Context) -> nn.Cell:
    return nn.ELU(alpha=1.0) if module.alpha == 1.0 else ELU(float(module.alpha))


@translates(torch.nn.CELU)
def celu(module: torch.nn.CELU, ctx: Context) -> nn.Cell:
    return nn.CELU(alpha=float(module.alpha))


@translates(torch.nn.GELU)
def gelu(module: torch.nn.GELU, ctx: Context) -> nn.Cell:
    return nn.GELU(approximate=module.approximate == "tanh")


@translates(torch.nn.Softplus)
def softplus(module: torch.nn.Softplus, ctx: Context) -> nn.Cell:
    return Softplus(float(module.beta), float(module.threshold))


@translates(torch.nn.Hardtanh)
def hardtanh(module: torch.nn.Hardtanh, ctx: Context) -> nn.Cell:
    return nn.Hardtanh(min_val=float(module.min_val), max_val=float(module.max_val))


@translates(torch.nn.Hardshrink)
def hardshrink(module: torch.nn.Hardshrink, ctx: Context) -> nn.Cell:
    return nn.HShrink(lambd=float(module.lambd))


@translates(torch.nn.Softshrink)
def softshrink(module: torch.nn.Softshrink, ctx: Context) -> nn.Cell:
    return nn.SoftShrink(lambd=float(module.lambd))


@translates(torch.nn.Threshold)
def threshold(module: torch.nn.Threshold, ctx: Context) -> nn.Cell:
    return nn.Threshold(module.threshold, module.value)
