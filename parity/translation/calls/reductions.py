"""Reductions and scans in the call table: ``mean``, ``sum``, ``max``/``min`` (of all elements,
elementwise of two tensors, or along ``dim`` as ``(values, indices)``), ``amax``/``amin``,
``linalg.vector_norm``, ``argmax``/``argmin``,
``all``/``any``, ``cumsum`` and ``diff``.

``dim``/``keepdim`` are ``axis``/``keep_dims`` in ``ops.mean``. ``cumsum`` of an integer or bool
tensor is int64, as in PyTorch, and so are ``argmin``'s indices.
"""

from __future__ import annotations

import collections
import math
from typing import Dict, Optional, Sequence, Union

import mindspore as ms
from mindspore import Tensor, ops

from .arguments import INTEGRAL, Adapter, DType, Entry, made_dtype, ms_dtype

__all__ = ["FUNCTIONS", "METHODS"]


def _axes(dim):
    return tuple(dim) if isinstance(dim, list) else dim


def mean(
    input: Tensor, dim: Union[int, Sequence[int], None] = None, keepdim: bool = False, *, dtype: Optional[DType] = None
) -> Tensor:
    if dtype is not None:
        input = input.astype(ms_dtype(dtype))
    return ops.mean(input, _axes(dim), keepdim)


def sum_(
    input: Tensor, dim: Union[int, Sequence[int], None] = None, keepdim: bool = False, *, dtype: Optional[DType] = None
) -> Tensor:
    if dtype is not None:
        input = input.astype(ms_dtype(dtype))
    return ops.sum(input, _axes(dim), keepdim)


_Reduced = collections.namedtuple("_Reduced", ["values", "indices"])


def _extreme(name):
    """``torch.max``/``min``: of all elements, elementwise of two tensors, or along ``dim`` as
    ``(values, indices)``."""
    whole, pairwise, along = {"max": (ops.amax, ops.maximum, ops.max), "min": (ops.amin, ops.minimum, ops.min)}[name]

    def compute(input, dim=None, keepdim=False):
        if isinstance(dim, ms.Tensor):
            return pairwise(input, dim)
        if dim is None:
            return whole(input)
        return _Reduced(*along(input, dim, keepdim))

    return compute


def amax(input: Tensor, dim: Union[int, Sequence[int]] = (), keepdim: bool = False) -> Tensor:
    """``torch.amax``: the greatest element along ``dim`` (every dimension where it is empty)."""
    return ops.amax(input, _axes(dim) if dim != () else None, keepdim)


def amin(input: Tensor, dim: Union[int, Sequence[int]] = (), keepdim: bool = False) -> Tensor:
    return ops.amin(input, _axes(dim) if dim != () else None, keepdim)


def vector_norm(
    x: Tensor,
    ord: float = 2,
    dim: Union[int, Sequence[int], None] = None,
    keepdim: bool = False,
    *,
    dtype: Optional[DType] = None,
) -> Tensor:
    """``torch.linalg.vector_norm``: the ``ord``-norm of the elements along ``dim`` (all of them
    where it is None), from sums of powers of ``|x|`` (inf: the greatest, -inf: the least)."""
    if dtype is not None:
        x = x.astype(ms_dtype(dtype))
    axes, size = _axes(dim), abs(x)
    if ord == float("inf"):
        return ops.amax(size, axes, keepdim)
    if ord == float("-inf"):
        return ops.amin(size, axes, keepdim)
    if ord == 0:
        return ops.sum((size != 0).astype(x.dtype), axes, keepdim)
    if ord == 1:
        return ops.sum(size, axes, keepdim)
    if ord == 2:
        return _root(ops.sum(x * x, axes, keepdim), 2)
    return _root(ops.sum(ops.pow(size, ord), axes, keepdim), ord)


def _root(summed: Tensor, ord: float) -> Tensor:
    """``summed ** (1 / ord)`` with PyTorch's zero gradient where ``summed`` is 0 (the root's is infinite)."""
    zero = summed == 0
    safe = ops.where(zero, ops.ones_like(summed), summed)
    root = ops.sqrt(safe) if ord == 2 else ops.pow(safe, 1.0 / ord)
    return ops.where(zero, ops.zeros_like(summed), root)


def argmax(input: Tensor, dim: Optional[int] = None, keepdim: bool = False) -> Tensor:
    return ops.argmax(input, dim, keepdim)


def _arg_reduce(reduce):
    def run(input, dim=None, keepdim=False):
        if dim is None:
            return reduce(input.reshape(-1), 0, False).astype(ms.int64)
        return reduce(input, dim, keepdim).astype(ms.int64)  # PyTorch's indices are int64

    return run


def any_(input: Tensor, dim: Union[int, Sequence[int], None] = None, keepdim: bool = False) -> Tensor:
    return ops.any(input, dim, keepdim)


def all_(input: Tensor, dim: Union[int, Sequence[int], None] = None, keepdim: bool = False) -> Tensor:
    return ops.all(input, dim, keepdim)


def cumsum(input: Tensor, dim: int, *, dtype: Optional[DType] = None) -> Tensor:
    if dtype is None and input.dtype in INTEGRAL:
        dtype = ms.int64
    dtype = made_dtype(dtype)
    return ops.cumsum(input if dtype is None else input.astype(dtype), dim)


def diff(
    input: Tensor, n: int = 1, dim: int = -1, prepend: Optional[Tensor] = None, append: Optional[Tensor] = None
) -> Tensor:
    if prepend is not None or append is not None:
        input = ops.cat([t for t in (prepend, input, append) if t is not None], dim)
    for _ in range(n):
        length = input.shape[dim]
        later, earlier = ops.split(input, [1, length - 1], dim)[1], ops.split(input, [length - 1, 1], dim)[0]
        input = ops.logical_xor(later, earlier) if input.dtype == ms.bool_ else later - earlier
    return input


def _reduced_count(input: Tensor, axes) -> int:
    if axes is None or axes == ():
        return int(input.size)
    dims = axes if isinstance(axes, tuple) else (axes,)
    return int(math.prod(input.shape[d] for d in dims))


def _moments(input, dim, unbiased, keepdim, correction):
    """``(var, mean)`` as ``torch.var_mean`` computes them: two passes, divided by ``N - correction``;
    ``dim`` may be PyTorch's old positional ``unbiased`` (``torch.var(x, False)``)."""
    if isinstance(dim, bool):
        dim, unbiased = None, dim
    if unbiased is not None and correction is not None:
        raise TypeError("var/std: pass unbiased or correction, not both")
    if correction is None:
        correction = 1 if unbiased is None or unbiased else 0
    axes = _axes(dim) if dim != () else None
    mean = ops.mean(input, axes, True)
    squares = ops.sum(ops.square(input - mean), axes, keepdim)
    divisor = max(_reduced_count(input, axes) - correction, 0)
    var = squares / ms.Tensor(divisor, input.dtype)
    return var, (mean if keepdim else ops.mean(input, axes, False))


def var(input: Tensor, dim=None, unbiased: Optional[bool] = None, keepdim: bool = False, *, correction=None):
    return _moments(input, dim, unbiased, keepdim, correction)[0]


def std(input: Tensor, dim=None, unbiased: Optional[bool] = None, keepdim: bool = False, *, correction=None):
    return ops.sqrt(_moments(input, dim, unbiased, keepdim, correction)[0])


def var_mean(input: Tensor, dim=None, unbiased: Optional[bool] = None, keepdim: bool = False, *, correction=None):
    return _moments(input, dim, unbiased, keepdim, correction)


def std_mean(input: Tensor, dim=None, unbiased: Optional[bool] = None, keepdim: bool = False, *, correction=None):
    variance, average = _moments(input, dim, unbiased, keepdim, correction)
    return ops.sqrt(variance), average


def logsumexp(input: Tensor, dim: Union[int, Sequence[int], None] = None, keepdim: bool = False) -> Tensor:
    """``torch.logsumexp``: the greatest element taken out first (held constant, as its gradient
    cancels), an infinite one left as it is."""
    if input.dtype in INTEGRAL:
        input = input.astype(ms.float32)
    axes = _axes(dim) if dim not in ((), []) else None
    top = ops.stop_gradient(ops.amax(input, axes, True))
    top = ops.where(ops.isinf(top), ops.zeros_like(top), top)
    summed = ops.log(ops.sum(ops.exp(input - top), axes, keepdim))
    return summed + (top if keepdim else ops.reshape(top, summed.shape))


def prod(input: Tensor, dim: Optional[int] = None, keepdim: bool = False, *, dtype: Optional[DType] = None) -> Tensor:
    if dtype is None and input.dtype in INTEGRAL:
        dtype = ms.int64
    if dtype is not None:
        input = input.astype(made_dtype(dtype))
    return ops.prod(input, dim, keepdim)


def cumprod(input: Tensor, dim: int, *, dtype: Optional[DType] = None) -> Tensor:
    if dtype is None and input.dtype in INTEGRAL:
        dtype = ms.int64
    if dtype is not None:
        input = input.astype(made_dtype(dtype))
    return ops.cumprod(input, dim)


def nansum(
    input: Tensor, dim: Union[int, Sequence[int], None] = None, keepdim: bool = False, *, dtype: Optional[DType] = None
) -> Tensor:
    if dtype is not None:
        input = input.astype(ms_dtype(dtype))
    kept = ops.where(ops.isnan(input), ops.zeros_like(input), input)
    return ops.sum(kept, _axes(dim), keepdim)


def nanmean(
    input: Tensor, dim: Union[int, Sequence[int], None] = None, keepdim: bool = False, *, dtype: Optional[DType] = None
) -> Tensor:
    if dtype is not None:
        input = input.astype(ms_dtype(dtype))
    present = ops.logical_not(ops.isnan(input))
    count = ops.sum(present.astype(input.dtype), _axes(dim), keepdim)
    return nansum(input, dim, keepdim) / count


def count_nonzero(input: Tensor, dim: Union[int, Sequence[int], None] = None) -> Tensor:
    return ops.sum((input != 0).astype(ms.int64), _axes(dim), False)


_MinMax = collections.namedtuple("_MinMax", ["min", "max"])


def aminmax(input: Tensor, *, dim: Optional[int] = None, keepdim: bool = False):
    return _MinMax(ops.amin(input, dim, keepdim), ops.amax(input, dim, keepdim))


def logcumsumexp(input: Tensor, dim: int) -> Tensor:
    """``torch.logcumsumexp``, shifted by the greatest element (held constant)."""
    top = ops.stop_gradient(ops.amax(input, dim, True))
    top = ops.where(ops.isinf(top), ops.zeros_like(top), top)
    return ops.log(ops.cumsum(ops.exp(input - top), dim)) + top


FUNCTIONS: Dict[str, Entry] = {
    "torch.mean": mean,
    "torch.sum": sum_,
    "torch.max": _extreme("max"),
    "torch.min": _extreme("min"),
    "torch.amax": amax,
    "torch.amin": amin,
    "torch.linalg.vector_norm": vector_norm,
    "torch.argmax": argmax,
    "torch.argmin": _arg_reduce(ops.argmin),
    "torch.all": all_,
    "torch.any": any_,
    "torch.cumsum": cumsum,
    "torch.diff": diff,
    "torch.var": var,
    "torch.std": std,
    "torch.var_mean": var_mean,
    "torch.std_mean": std_mean,
    "torch.logsumexp": logsumexp,
    "torch.special.logsumexp": logsumexp,
    "torch.prod": prod,
    "torch.cumprod": cumprod,
    "torch.nansum": nansum,
    "torch.nanmean": nanmean,
    "torch.count_nonzero": count_nonzero,
    "torch.aminmax": aminmax,
    "torch.logcumsumexp": logcumsumexp,
}
METHODS: Dict[str, Adapter] = {
    "mean": mean,
    "sum": sum_,
    "max": _extreme("max"),
    "min": _extreme("min"),
    "amax": amax,
    "amin": amin,
    "argmax": argmax,
    "argmin": _arg_reduce(ops.argmin),
    "all": all_,
    "any": any_,
    "cumsum": cumsum,
    "diff": diff,
    "var": var,
    "std": std,
    "logsumexp": logsumexp,
    "prod": prod,
    "cumprod": cumprod,
    "nansum": nansum,
    "nanmean": nanmean,
    "count_nonzero": count_nonzero,
    "aminmax": aminmax,
    "logcumsumexp": logcumsumexp,
}
