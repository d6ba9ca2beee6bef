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
(its data names them as ``parity.translation.activation:SELU``...).
* ``nn.RReLU`` draws random slopes in eval mode too (PyTorch uses the mean slope): not translated.
"""

from __future__ import annotations

import torch
from mindspore import nn, ops

from ._registry import Context, translates

__all__ = ["ELU", "SELU", "Softplus"]

_SELU_ALPHA = 1.6732632423543772
_SELU_SCALE = 1.0507009873554805


class ELU(nn.Cell):
    """``torch.nn.ELU(alpha)`` for any alpha (``nn.ELU``'s kernel accepts only alpha=1.0)."""

    def __init__(self, alpha: float = 1.0):
        super().__init__()
        self.alpha = float(alpha)

    def construct(self, x):
        return ops.where(x > 0, x, self.alpha * (ops.exp(ops.minimum(x, 0.0)) - 1.0))


class SELU(nn.Cell):
    """``torch.nn.SELU`` built from differentiable primitives: ``nn.SeLU``'s gradient is wrong for
    negative inputs."""

    def construct(self, x):
        return _SELU_SCALE * ops.where(x > 0, x, _SELU_ALPHA * (ops.exp(ops.minimum(x, 0.0)) - 1.0))


class Softplus(nn.Cell):
    """``torch.nn.Softplus(beta, threshold)``: MindSpore has only the function ``ops.softplus``."""

    def __init__(self, beta: float = 1.0, threshold: float = 20.0):
        super().__init__()
        self.beta, self.threshold = beta, threshold

    def construct(self, x):
        return ops.softplus(x, self.beta, self.threshold)


# PyTorch classes whose MindSpore Cell takes no arguments.
_PLAIN = {
    torch.nn.ReLU: nn.ReLU, torch.nn.ReLU6: nn.ReLU6, torch.nn.SELU: SELU, torch.nn.SiLU: nn.SiLU,
    torch.nn.Mish: nn.Mish, torch.nn.Hardswish: nn.HSwish, torch.nn.Hardsigmoid: nn.HSigmoid,
    torch.nn.Tanh: nn.Tanh, torch.nn.Sigmoid: nn.Sigmoid, torch.nn.Softsign: nn.Softsign,
    torch.nn.Tanhshrink: nn.Tanhshrink, torch.nn.LogSigmoid: nn.LogSigmoid, torch.nn.Softmax2d: nn.Softmax2d,
}
_AXIS = {torch.nn.Softmax: nn.Softmax, torch.nn.LogSoftmax: nn.LogSoftmax, torch.nn.Softmin: nn.Softmin}


@translates(*_PLAIN)
def plain(module, ctx: Context):
    return _PLAIN[ctx.kind]()


@translates(*_AXIS)
def softmax(module, ctx: Context):
    ctx.require(module.dim is not None, "dim=None (picked from the input rank, deprecated in PyTorch) has no "
                                        "MindSpore counterpart; pass dim")
    return _AXIS[ctx.kind](axis=module.dim)


@translates(torch.nn.GLU)
def glu(module, ctx: Context):
    return nn.GLU(axis=module.dim)


@translates(torch.nn.LeakyReLU)
def leaky_relu(module, ctx: Context):
    return nn.LeakyReLU(alpha=float(module.negative_slope))


@translates(torch.nn.PReLU)
def prelu(module, ctx: Context):
    return nn.PReLUExt(num_parameters=module.num_parameters, init=float(module.init))


@translates(torch.nn.ELU)
def elu(module, ctx: Context):
    return nn.ELU(alpha=1.0) if module.alpha == 1.0 else ELU(float(module.alpha))


@translates(torch.nn.CELU)
def celu(module, ctx: Context):
    return nn.CELU(alpha=float(module.alpha))


@translates(torch.nn.GELU)
def gelu(module, ctx: Context):
    return nn.GELU(approximate=module.approximate == "tanh")


@translates(torch.nn.Softplus)
def softplus(module, ctx: Context):
    return Softplus(float(module.beta), float(module.threshold))


@translates(torch.nn.Hardtanh)
def hardtanh(module, ctx: Context):
    return nn.Hardtanh(min_val=float(module.min_val), max_val=float(module.max_val))


@translates(torch.nn.Hardshrink)
def hardshrink(module, ctx: Context):
    return nn.HShrink(lambd=float(module.lambd))


@translates(torch.nn.Softshrink)
def softshrink(module, ctx: Context):
    return nn.SoftShrink(lambd=float(module.lambd))


@translates(torch.nn.Threshold)
def threshold(module, ctx: Context):
    return nn.Threshold(module.threshold, module.value)

