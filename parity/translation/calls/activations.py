"""Activations in the call table, as functions and methods (``torch.relu``, ``F.gelu``,
``x.softmax(-1)``...), with ``softmax``, ``log_softmax`` and ``dropout``.

``tanh`` and ``elu`` go through the accurate compositions of
:mod:`parity.translation.layers.activation` (known mismatches ``tanh-cpu-accuracy``,
``elu-alpha-unsupported``). ``dim`` is ``axis`` in ``ops.softmax``; ``dim=None`` (picked from the
input rank) is refused. ``inplace=True`` is computed out of place, as every in-place call is.
"""

from __future__ import annotations

from typing import Dict, Optional

import mindspore as ms
from mindspore import Tensor, ops

from ..layers import activation
from .arguments import Adapter, DType, Entry, ms_dtype

__all__ = ["FUNCTIONS", "METHODS"]


def relu(input: Tensor, inplace: bool = False) -> Tensor:
    return ops.relu(input)


def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    return ops.relu6(input)


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    return ops.leaky_relu(input, float(negative_slope))


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    return activation.elu_with_alpha(input, float(alpha))


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    return ops.gelu(input, approximate=approximate)


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    return ops.silu(input)


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:
    return ops.hardswish(input)


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:
    return ops.hardsigmoid(input)


def sigmoid(input: Tensor) -> Tensor:
    return ops.sigmoid(input)


def tanh(input: Tensor) -> Tensor:
    return activation.tanh(input)


def softmax(input: Tensor, dim: Optional[int] = None, _stacklevel: int = 3, dtype: Optional[DType] = None) -> Tensor:
    if dim is None:
        raise TypeError("softmax with dim=None (picked from the input rank) is not translated; pass dim")
    if dtype is not None:
        input = input.astype(ms_dtype(dtype))
    return ops.softmax(input, dim)


def log_softmax(
    input: Tensor, dim: Optional[int] = None, _stacklevel: int = 3, dtype: Optional[DType] = None
) -> Tensor:
    if dim is None:
        raise TypeError("log_softmax with dim=None (picked from the input rank) is not translated; pass dim")
    if dtype is not None:
        input = input.astype(ms_dtype(dtype))
    return ops.log_softmax(input, dim)


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """``F.softplus``: log(1 + exp(beta x)) / beta, and x itself where beta x > threshold."""
    return ops.softplus(input, beta, threshold)


def softmin(input: Tensor, dim: Optional[int] = None, _stacklevel: int = 3, dtype: Optional[DType] = None) -> Tensor:
    """``F.softmin``: the softmax of ``-input``."""
    if dim is None:
        raise TypeError("softmin with dim=None (picked from the input rank) is not translated; pass dim")
    if dtype is not None:
        input = input.astype(ms_dtype(dtype))
    return ops.softmax(-input, dim)


def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False) -> Tensor:
    return ops.hardtanh(input, float(min_val), float(max_val))


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def selu(input: Tensor, inplace: bool = False) -> Tensor:
    """``F.selu`` as a scaled ELU: the gradient of MindSpore's ``ops.selu`` is off on CPU."""
    return _SELU_SCALE * activation.elu_with_alpha(input, _SELU_ALPHA)


def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    return ops.celu(input, float(alpha))


def mish(input: Tensor, inplace: bool = False) -> Tensor:
    """``x * tanh(softplus(x))`` with the accurate ``tanh``: MindSpore's ``ops.mish`` is off on CPU."""
    return input * activation.tanh(ops.softplus(input))


def softsign(input: Tensor) -> Tensor:
    return input / (1 + ops.abs(input))


def tanhshrink(input: Tensor) -> Tensor:
    return input - activation.tanh(input)


def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    return ops.softshrink(input, float(lambd))


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    return ops.hardshrink(input, float(lambd))


def logsigmoid(input: Tensor) -> Tensor:
    return ops.logsigmoid(input)


def glu(input: Tensor, dim: int = -1) -> Tensor:
    first, second = ops.chunk(input, 2, dim)
    return first * ops.sigmoid(second)


def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:
    """``F.threshold``: ``input`` where it is greater than ``threshold``, ``value`` elsewhere."""
    return ops.where(input > threshold, input, ms.Tensor(value, input.dtype))


def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """``F.prelu``: one slope, or one per channel (dimension 1)."""
    if weight.size != 1 and input.ndim > 1:
        weight = weight.reshape((-1,) + (1,) * (input.ndim - 2))
    return ops.where(input >= 0, input, weight * input)


def rrelu(
    input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False, inplace: bool = False
) -> Tensor:
    return ops.leaky_relu(input, (lower + upper) / 2)  # the validator lets only eval mode through


def _rrelu_check(args, kwargs) -> Optional[str]:
    bound = dict(zip(("input", "lower", "upper", "training", "inplace"), args), **kwargs)
    if bound.get("training", False):
        return "in train mode it draws random slopes, and MindSpore's random numbers are not PyTorch's"
    return None


def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    if not training or p == 0:
        return input
    return ops.dropout(input, p=p, training=True)


FUNCTIONS: Dict[str, Entry] = {
    "torch.relu": relu,
    "torch.sigmoid": sigmoid,
    "torch.tanh": tanh,
    "torch.softmax": softmax,
    "torch.nn.functional.relu": relu,
    "torch.nn.functional.relu6": relu6,
    "torch.nn.functional.leaky_relu": leaky_relu,
    "torch.nn.functional.elu": elu,
    "torch.nn.functional.gelu": gelu,
    "torch.nn.functional.silu": silu,
    "torch.nn.functional.hardswish": hardswish,
    "torch.nn.functional.hardsigmoid": hardsigmoid,
    "torch.nn.functional.sigmoid": sigmoid,
    "torch.nn.functional.tanh": tanh,
    "torch.nn.functional.softmax": softmax,
    "torch.nn.functional.log_softmax": log_softmax,
    "torch.nn.functional.softplus": softplus,
    "torch.nn.functional.dropout": dropout,
    "torch.log_softmax": log_softmax,
    "torch.nn.functional.softmin": softmin,
    "torch.nn.functional.hardtanh": hardtanh,
    "torch.selu": selu,
    "torch.nn.functional.selu": selu,
    "torch.celu": celu,
    "torch.nn.functional.celu": celu,
    "torch.nn.functional.mish": mish,
    "torch.nn.functional.softsign": softsign,
    "torch.nn.functional.tanhshrink": tanhshrink,
    "torch.nn.functional.softshrink": softshrink,
    "torch.nn.functional.hardshrink": hardshrink,
    "torch.hardshrink": hardshrink,
    "torch.nn.functional.logsigmoid": logsigmoid,
    "torch.nn.functional.glu": glu,
    "torch.nn.functional.threshold": threshold,
    "torch.threshold": threshold,
    "torch.prelu": prelu,
    "torch.nn.functional.prelu": prelu,
    "torch.nn.functional.rrelu": (rrelu, _rrelu_check),
    "torch.special.log_softmax": log_softmax,
    "torch.special.softmax": softmax,
}
METHODS: Dict[str, Adapter] = {
    "relu": relu,
    "sigmoid": sigmoid,
    "tanh": tanh,
    "softmax": softmax,
    "log_softmax": log_softmax,
    "hardshrink": hardshrink,
    "prelu": prelu,
}
