"""Activations in the call table, as functions and methods (``torch.relu``, ``F.gelu``,
``x.softmax(-1)``...), with ``softmax``, ``log_softmax`` and ``dropout``.

``tanh`` and ``elu`` go through the accurate compositions of
:mod:`parity.translation.layers.activation` (known mismatches ``tanh-cpu-accuracy``,
``elu-alpha-unsupported``). ``dim`` is ``axis`` in ``ops.softmax``; ``dim=None`` (picked from the
input rank) is refused. ``inplace=True`` is computed out of place, as every in-place call is.
"""

from __future__ import annotations

from typing import Dict, Optional

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
}
METHODS: Dict[str, Adapter] = {
    "relu": relu,
    "sigmoid": sigmoid,
    "tanh": tanh,
    "softmax": softmax,
    "log_softmax": log_softmax,
}
