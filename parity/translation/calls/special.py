"""Less common math in the call table, composed where MindSpore has no one-to-one operator: the
real parts of complex-number functions on real tensors (``conj``, ``real``, ``angle``...), the
special functions ``ndtr``, ``log_ndtr``, ``xlog1py`` and ``zeta``, the
comparisons ``isclose``/``allclose``/``equal``/``isin``, ``bucketize`` and ``histc``, ``trapezoid``
and ``cumulative_trapezoid``, ``cov``/``corrcoef``, ``vander``, ``renorm``, ``pdist``, ``fill``,
``zero_`` and ``fft.fftshift``/``ifftshift``.

A real tensor is its own conjugate and real part; its ``angle`` is pi where negative, 0 elsewhere,
NaN where NaN, with a zero gradient, as PyTorch has them. ``vander`` is a cumulative product, as
PyTorch computes it, so the powers round alike.
"""

from __future__ import annotations

import itertools
import math
from typing import Dict, Optional, Sequence, Union

import mindspore as ms
from mindspore import Tensor, ops

from .arguments import INTEGRAL, Adapter, Entry, is_tensor
from .shapes import roll

__all__ = ["FUNCTIONS", "METHODS"]

_COMPLEX = (ms.complex64, ms.complex128)


def conj(input: Tensor) -> Tensor:
    return ops.conj(input) if input.dtype in _COMPLEX else input


def real(input: Tensor) -> Tensor:
    return ops.real(input) if input.dtype in _COMPLEX else input


def angle(input: Tensor) -> Tensor:
    if input.dtype in _COMPLEX:
        return ops.angle(input)
    zero = ops.zeros_like(input)
    turned = ops.where(input < 0, zero + math.pi, zero)
    return ops.where(ops.isnan(input), input, ops.stop_gradient(turned))


def ndtr(input: Tensor) -> Tensor:
    return 0.5 * ops.erfc(-input / math.sqrt(2))


def log_ndtr(input: Tensor) -> Tensor:
    return ops.log(ndtr(input))


def xlog1py(input: Union[Tensor, float], other: Union[Tensor, float]) -> Tensor:
    x = input if is_tensor(input) else ms.Tensor(input, ms.float32)
    y = other if is_tensor(other) else ms.Tensor(other, ms.float32)
    product = x * ops.log1p(y)
    return ops.where(x == 0, ops.zeros_like(product), product)


def zeta(input: Union[Tensor, float], other: Union[Tensor, float]) -> Tensor:
    x = input if is_tensor(input) else ms.Tensor(input, ms.float32)
    q = other if is_tensor(other) else ms.Tensor(other, x.dtype)
    return ops.zeta(x, q)


def isclose(input: Tensor, other: Tensor, rtol: float = 1e-5, atol: float = 1e-8, equal_nan: bool = False) -> Tensor:
    close = ops.abs(input - other) <= atol + rtol * ops.abs(other)
    close = ops.logical_or(close, input == other)
    if equal_nan:
        close = ops.logical_or(close, ops.logical_and(ops.isnan(input), ops.isnan(other)))
    return close


def allclose(input: Tensor, other: Tensor, rtol: float = 1e-5, atol: float = 1e-8, equal_nan: bool = False) -> bool:
    return bool(ops.all(isclose(input, other, rtol, atol, equal_nan)))


def equal(input: Tensor, other: Tensor) -> bool:
    return tuple(input.shape) == tuple(other.shape) and bool(ops.all(input == other))


def isin(
    elements: Union[Tensor, float],
    test_elements: Union[Tensor, float],
    *,
    assume_unique: bool = False,
    invert: bool = False,
) -> Tensor:
    x = elements if is_tensor(elements) else ms.Tensor(elements)
    tests = test_elements if is_tensor(test_elements) else ms.Tensor(test_elements)
    found = ops.any(ops.expand_dims(x, -1) == ops.reshape(tests, (-1,)), -1)
    return ops.logical_not(found) if invert else found


def isreal(input: Tensor) -> Tensor:
    if input.dtype in _COMPLEX:
        return ops.imag(input) == 0
    return ops.ones(tuple(input.shape), ms.bool_)


def bucketize(input: Tensor, boundaries: Tensor, *, out_int32: bool = False, right: bool = False) -> Tensor:
    """The index of the bucket of each element: how many boundaries lie below it (``right``: at or below)."""
    edges = ops.reshape(boundaries, (-1,))
    below = ops.expand_dims(input, -1) >= edges if right else ops.expand_dims(input, -1) > edges
    return ops.sum(below.astype(ms.int32 if out_int32 else ms.int64), -1)


def histc(input: Tensor, bins: int = 100, min: float = 0, max: float = 0) -> Tensor:
    if min == 0 and max == 0:
        min, max = float(ops.amin(input)), float(ops.amax(input))
    return ops.histc(input, bins, min, max)


def _trapezoids(y: Tensor, x: Optional[Tensor], dx: Optional[float], dim: int) -> Tensor:
    length = y.shape[dim]
    later, earlier = ops.split(y, [1, length - 1], dim)[1], ops.split(y, [length - 1, 1], dim)[0]
    if x is not None:
        if x.ndim == 1:
            steps = x[1:] - x[:-1]
            view = [1] * y.ndim
            view[dim] = length - 1
            steps = ops.reshape(steps, tuple(view))
        else:
            steps = ops.split(x, [1, length - 1], dim)[1] - ops.split(x, [length - 1, 1], dim)[0]
        return (later + earlier) * steps / 2
    return (later + earlier) * (1.0 if dx is None else dx) / 2


def trapezoid(y: Tensor, x: Union[Tensor, float, None] = None, *, dx: Optional[float] = None, dim: int = -1) -> Tensor:
    if y.shape[dim] == 0:
        return ops.sum(y, dim)
    return ops.sum(_spacing(y, x, dx, dim), dim)


def _spacing(y: Tensor, x: Union[Tensor, float, None], dx: Optional[float], dim: int) -> Tensor:
    """The trapezoids, with ``x`` given as the sample points or (a number) as the spacing."""
    if is_tensor(x):
        return _trapezoids(y, x, dx, dim)
    return _trapezoids(y, None, dx if x is None else float(x), dim)


def cumulative_trapezoid(
    y: Tensor, x: Union[Tensor, float, None] = None, *, dx: Optional[float] = None, dim: int = -1
) -> Tensor:
    return ops.cumsum(_spacing(y, x, dx, dim), dim)


def trapz(y: Tensor, x: Union[Tensor, float, None] = None, *, dx: Optional[float] = None, dim: int = -1) -> Tensor:
    return trapezoid(y, x, dx=dx, dim=dim)


def cov(
    input: Tensor, *, correction: int = 1, fweights: Optional[Tensor] = None, aweights: Optional[Tensor] = None
) -> Tensor:
    """Rows are variables, columns observations (``fweights``/``aweights`` are refused)."""
    if fweights is not None or aweights is not None:
        raise TypeError("cov(fweights=..., aweights=...) is not translated")
    observations = input if input.ndim == 2 else ops.reshape(input, (1, -1))
    count = observations.shape[1]
    centred = observations - ops.mean(observations, 1, True)
    product = ops.matmul(centred, centred.T) / max(count - correction, 0)
    return ops.squeeze(product) if input.ndim < 2 else product


def corrcoef(input: Tensor) -> Tensor:
    c = cov(input)
    if c.ndim == 0:
        return c / c
    deviations = ops.sqrt(ops.diagonal(c))
    c = c / ops.expand_dims(deviations, 1) / ops.expand_dims(deviations, 0)
    return ops.clamp(c, -1, 1)


def vander(x: Tensor, N: Optional[int] = None, increasing: bool = False) -> Tensor:
    columns = x.shape[0] if N is None else N
    if columns == 0:
        return ops.zeros((x.shape[0], 0), x.dtype)
    ones = ops.ones((x.shape[0], 1), x.dtype if x.dtype not in INTEGRAL else ms.int64)
    if columns == 1:
        powers = ones
    else:
        repeated = ops.broadcast_to(ops.expand_dims(x.astype(ones.dtype), -1), (x.shape[0], columns - 1))
        powers = ops.cumprod(ops.cat((ones, repeated), -1), -1)
    return powers if increasing else ops.flip(powers, (-1,))


def linalg_vander(x: Tensor, *, N: Optional[int] = None) -> Tensor:
    if x.ndim == 0:
        x = ops.reshape(x, (1,))
    columns = x.shape[-1] if N is None else N
    ones = ops.ones(tuple(x.shape) + (1,), x.dtype)
    if columns == 1:
        return ones
    repeated = ops.broadcast_to(ops.expand_dims(x, -1), tuple(x.shape) + (columns - 1,))
    return ops.cumprod(ops.cat((ones, repeated), -1), -1)


def renorm(input: Tensor, p: float, dim: int, maxnorm: float) -> Tensor:
    return ops.renorm(input, int(p) if float(p).is_integer() else p, dim, float(maxnorm))


def pdist(input: Tensor, p: float = 2) -> Tensor:
    return ops.pdist(input, float(p))


def fill(input: Tensor, value: Union[Tensor, float]) -> Tensor:
    return ops.zeros_like(input) + (value.astype(input.dtype) if is_tensor(value) else value)


def zero(input: Tensor) -> Tensor:
    return ops.zeros_like(input)


def _shift(sign: int):
    def shift(input: Tensor, dim: Union[int, Sequence[int], None] = None) -> Tensor:
        dims = tuple(range(input.ndim)) if dim is None else (dim,) if isinstance(dim, int) else tuple(dim)
        return roll(input, tuple(sign * (input.shape[d] // 2) for d in dims), dims)

    return shift


def fmin(input: Tensor, other: Tensor) -> Tensor:
    """The lesser of the two, a NaN taking the other (MindSpore's ``ops.fmin`` fails on CPU)."""
    least = ops.minimum(input, other)
    least = ops.where(ops.isnan(input), other, least)
    return ops.where(ops.isnan(other), input, least)


def combinations(input: Tensor, r: int = 2, with_replacement: bool = False) -> Tensor:
    """The ``r``-element combinations of a 1-d ``input``, picked with ``gather`` in itertools' order."""
    pick = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    rows = list(pick(range(input.shape[0]), r))
    if not rows:
        return ops.zeros((0, r) if r else (0,), input.dtype)
    index = ms.Tensor([i for row in rows for i in row], ms.int64)
    return ops.reshape(ops.gather(input, index, 0), (len(rows), r))


FUNCTIONS: Dict[str, Entry] = {
    "torch.conj": conj,
    "torch.fmin": fmin,
    "torch.combinations": combinations,
    "torch.conj_physical": conj,
    "torch.resolve_conj": conj,
    "torch.resolve_neg": real,
    "torch.real": real,
    "torch.angle": angle,
    "torch.special.ndtr": ndtr,
    "torch.special.log_ndtr": log_ndtr,
    "torch.special.xlog1py": xlog1py,
    "torch.special.zeta": zeta,
    "torch.isclose": isclose,
    "torch.allclose": allclose,
    "torch.equal": equal,
    "torch.isin": isin,
    "torch.isreal": isreal,
    "torch.bucketize": bucketize,
    "torch.histc": histc,
    "torch.trapezoid": trapezoid,
    "torch.trapz": trapz,
    "torch.cumulative_trapezoid": cumulative_trapezoid,
    "torch.cov": cov,
    "torch.corrcoef": corrcoef,
    "torch.vander": vander,
    "torch.linalg.vander": linalg_vander,
    "torch.renorm": renorm,
    "torch.pdist": pdist,
    "torch.nn.functional.pdist": pdist,
    "torch.fill": fill,
    "torch.zero_": zero,
    "torch.fft.fftshift": _shift(1),
    "torch.fft.ifftshift": _shift(-1),
}
METHODS: Dict[str, Adapter] = {
    "conj": conj,
    "fmin": fmin,
    "conj_physical": conj,
    "resolve_conj": conj,
    "resolve_neg": real,
    "angle": angle,
    "isclose": isclose,
    "allclose": allclose,
    "equal": equal,
    "isreal": isreal,
    "histc": histc,
    "renorm": renorm,
}
