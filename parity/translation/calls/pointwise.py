"""Element-wise math with arguments in the call table: ``round(decimals=)``, ``clamp_min``/``clamp_max``,
the rounding divisions (``div(rounding_mode=)``, ``floor_divide``, ``remainder``, ``fmod``), ``lerp``,
``addcmul``/``addcdiv``, ``logit(eps=)``, ``nan_to_num``, ``xlogy``, ``polygamma``, ``mvlgamma``,
``float_power``, ``ldexp``, ``rsub``, ``positive``, ``deg2rad``/``rad2deg``.

What each adapter closes, as read from mindspore 2.10 on CPU:

* ``round(decimals=d)`` is PyTorch's: the rounding (half to even) of ``x * 10**d`` divided back, and
  of ``x / 10**-d`` multiplied back for a negative ``d``.
* ``div(rounding_mode='trunc')`` is the truncation of the true quotient, ``'floor'`` MindSpore's
  ``floor_divide``; both have a zero gradient, as in PyTorch.
* ``float_power`` computes in float64, as PyTorch does.
"""

from __future__ import annotations

from typing import Dict, Optional, Union

import mindspore as ms
from mindspore import Tensor, ops

from .arguments import INTEGRAL, Adapter, Entry, is_tensor

__all__ = ["FUNCTIONS", "METHODS", "divide"]

Number = Union[Tensor, float]


def round_(input: Tensor, *, decimals: int = 0) -> Tensor:
    if decimals == 0:
        return ops.round(input)
    if decimals > 0:
        scale = 10.0**decimals
        return ops.round(input * scale) / scale
    scale = 10.0 ** (-decimals)
    return ops.round(input / scale) * scale


def clamp_min(input: Tensor, min: Number) -> Tensor:
    return ops.clamp(input, min, None)


def clamp_max(input: Tensor, max: Number) -> Tensor:
    return ops.clamp(input, None, max)


def _tensor(value: Number, like: Number) -> Tensor:
    if is_tensor(value):
        return value
    dtype = like.dtype if is_tensor(like) else ms.float32
    if isinstance(value, float) and dtype in INTEGRAL:
        dtype = ms.float32
    return ms.Tensor(value, dtype)


def divide(input: Number, other: Number, rounding_mode: Optional[str] = None) -> Tensor:
    """``torch.div``: the true quotient, or rounded toward zero (``'trunc'``) or down (``'floor'``)."""
    if rounding_mode is None:
        return input / other
    x, y = _tensor(input, other), _tensor(other, input)
    if rounding_mode == "trunc":
        if x.dtype in INTEGRAL and y.dtype in INTEGRAL:
            return ops.truncate_div(x, y)
        return ops.trunc(x / y)
    if rounding_mode == "floor":
        return ops.floor_divide(x, y)
    raise TypeError(f"div(rounding_mode={rounding_mode!r}): PyTorch knows only None, 'trunc' and 'floor'")


def floor_divide(input: Number, other: Number) -> Tensor:
    return divide(input, other, "floor")


def remainder(input: Number, other: Number) -> Tensor:
    return ops.remainder(_tensor(input, other), _tensor(other, input))


def fmod(input: Tensor, other: Number) -> Tensor:
    return ops.fmod(input, _tensor(other, input))


def lerp(input: Tensor, end: Tensor, weight: Number) -> Tensor:
    return ops.lerp(input, end, weight)


def addcmul(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value: float = 1) -> Tensor:
    product = tensor1 * tensor2
    return input + (product if value == 1 else value * product)


def addcdiv(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value: float = 1) -> Tensor:
    quotient = tensor1 / tensor2
    return input + (quotient if value == 1 else value * quotient)


def logit(input: Tensor, eps: Optional[float] = None) -> Tensor:
    if eps is not None:
        input = ops.clamp(input, eps, 1 - eps)
    return ops.log(input / (1 - input))


def nan_to_num(
    input: Tensor, nan: float = 0.0, posinf: Optional[float] = None, neginf: Optional[float] = None
) -> Tensor:
    return ops.nan_to_num(input, nan, posinf, neginf)


def xlogy(input: Number, other: Number) -> Tensor:
    x, y = _tensor(input, other), _tensor(other, input)
    return ops.xlogy(x, y)


def polygamma(n: int, input: Tensor) -> Tensor:
    return ops.polygamma(ms.Tensor(n, ms.int64), input)


def polygamma_method(input: Tensor, n: int) -> Tensor:
    return polygamma(n, input)


def mvlgamma(input: Tensor, p: int) -> Tensor:
    return ops.mvlgamma(input, p)


def float_power(input: Number, exponent: Number) -> Tensor:
    x, y = _tensor(input, exponent), _tensor(exponent, input)
    return ops.pow(x.astype(ms.float64), y.astype(ms.float64))


def ldexp(input: Tensor, other: Tensor) -> Tensor:
    return input * ops.pow(ms.Tensor(2.0, input.dtype), other.astype(input.dtype))


def rsub(input: Tensor, other: Number, *, alpha: float = 1) -> Tensor:
    return other - (input if alpha == 1 else alpha * input)


def positive(input: Tensor) -> Tensor:
    return input


def deg2rad(input: Tensor) -> Tensor:
    return ops.deg2rad(input)


def rad2deg(input: Tensor) -> Tensor:
    return ops.rad2deg(input)


FUNCTIONS: Dict[str, Entry] = {
    "torch.round": round_,
    "torch.clamp_min": clamp_min,
    "torch.clamp_max": clamp_max,
    "torch.floor_divide": floor_divide,
    "torch.remainder": remainder,
    "torch.fmod": fmod,
    "torch.lerp": lerp,
    "torch.addcmul": addcmul,
    "torch.addcdiv": addcdiv,
    "torch.logit": logit,
    "torch.special.logit": logit,
    "torch.nan_to_num": nan_to_num,
    "torch.xlogy": xlogy,
    "torch.special.xlogy": xlogy,
    "torch.polygamma": polygamma,
    "torch.special.polygamma": polygamma,
    "torch.mvlgamma": mvlgamma,
    "torch.special.multigammaln": mvlgamma,
    "torch.float_power": float_power,
    "torch.ldexp": ldexp,
    "torch.rsub": rsub,
    "torch.positive": positive,
    "torch.deg2rad": deg2rad,
    "torch.rad2deg": rad2deg,
}
METHODS: Dict[str, Adapter] = {
    "round": round_,
    "clamp_min": clamp_min,
    "clamp_max": clamp_max,
    "floor_divide": floor_divide,
    "remainder": remainder,
    "fmod": fmod,
    "lerp": lerp,
    "addcmul": addcmul,
    "addcdiv": addcdiv,
    "logit": logit,
    "nan_to_num": nan_to_num,
    "xlogy": xlogy,
    "polygamma": polygamma_method,
    "mvlgamma": mvlgamma,
    "float_power": float_power,
    "ldexp": ldexp,
    "positive": positive,
    "deg2rad": deg2rad,
    "rad2deg": rad2deg,
}
