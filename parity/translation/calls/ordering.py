"""Sorting in the call table: ``sort``, ``argsort``, ``msort``, ``median``, ``nanmedian``, ``kthvalue``, ``quantile``
and ``cummax``/``cummin``.

Indices are int64, as PyTorch's are. ``median`` is PyTorch's lower median (of an even count, the
smaller of the two middle elements), and ``median``/``kthvalue`` are read off a sort, so their
gradients flow to the element picked, as PyTorch's do.
"""

from __future__ import annotations

import collections
from typing import Dict, Optional, Union

import mindspore as ms
from mindspore import Tensor, ops

from .arguments import Adapter, Entry

__all__ = ["FUNCTIONS", "METHODS"]

_Sorted = collections.namedtuple("_Sorted", ["values", "indices"])


def sort(input: Tensor, dim: int = -1, descending: bool = False, *, stable: Optional[bool] = None) -> _Sorted:
    if input.ndim == 0:
        return _Sorted(input, ops.zeros((), ms.int64))
    values, indices = ops.sort(input, dim, descending)
    return _Sorted(values, indices.astype(ms.int64))


def argsort(input: Tensor, dim: int = -1, descending: bool = False, *, stable: bool = False) -> Tensor:
    return sort(input, dim, descending).indices


def msort(input: Tensor) -> Tensor:
    return sort(input, 0).values


def _pick(input: Tensor, position: int, dim: Optional[int], keepdim: bool) -> _Sorted:
    """The element at ``position`` of ``input`` sorted along ``dim`` (of all elements where None)."""
    if dim is None:
        values, indices = sort(input.reshape(-1), 0)
        return _Sorted(values[position], indices[position])
    if input.ndim == 0:
        return _Sorted(input, ops.zeros((), ms.int64))
    values, indices = sort(input, dim)
    at = ms.Tensor([position], ms.int64)
    values, indices = ops.gather(values, at, dim), ops.gather(indices, at, dim)
    if not keepdim:
        values, indices = ops.squeeze(values, dim), ops.squeeze(indices, dim)
    return _Sorted(values, indices)


def median(input: Tensor, dim: Optional[int] = None, keepdim: bool = False):
    length = input.size if dim is None else (input.shape[dim] if input.ndim else 1)
    found = _pick(input, (length - 1) // 2, dim, keepdim)
    return found.values if dim is None else found


def kthvalue(input: Tensor, k: int, dim: int = -1, keepdim: bool = False) -> _Sorted:
    return _pick(input, k - 1, dim, keepdim)


def nanmedian(input: Tensor, dim: Optional[int] = None, keepdim: bool = False):
    """The lower median of the elements that are not NaN (NaN where all are): a sort with NaN
    last, read at each row's own middle."""
    flat = dim is None
    values = ops.reshape(input, (-1,)) if flat or input.ndim == 0 else input
    axis = 0 if flat or input.ndim == 0 else dim % input.ndim
    missing = ops.isnan(values)
    key = ops.where(missing, ops.full_like(values, float("inf")), values)
    order = sort(key, axis).indices
    present = ops.sum(ops.logical_not(missing).astype(ms.int64), axis, True)
    middle = ops.clamp((present - 1) // 2, 0, None)
    at = ops.gather_elements(order, axis, middle)
    found = ops.gather_elements(values, axis, at)
    found = ops.where(present == 0, ops.full_like(found, float("nan")), found)
    if flat:
        return ops.reshape(found, ())
    if not keepdim or input.ndim == 0:
        found, at = ops.squeeze(found, axis), ops.squeeze(at, axis)
    return _Sorted(found, at)


def _cumulative(extreme):
    def run(input: Tensor, dim: int) -> _Sorted:
        values, indices = extreme(input, dim)
        return _Sorted(values, indices.astype(ms.int64))

    return run


def quantile(
    input: Tensor,
    q: Union[float, Tensor],
    dim: Optional[int] = None,
    keepdim: bool = False,
    *,
    interpolation: str = "linear",
) -> Tensor:
    """PyTorch's quantile read off a sort, between the two neighbouring ranks by ``interpolation``;
    the quantiles of a 1-d ``q`` in a first dimension, as PyTorch puts them."""
    rank = input.ndim
    values = ops.reshape(input, (-1,)) if dim is None or rank == 0 else input
    axis = 0 if dim is None or rank == 0 else dim % rank
    values = sort(values, axis).values
    qs = q if isinstance(q, Tensor) else ms.Tensor(q, input.dtype)
    ranks = ops.reshape(qs, (-1,)).astype(input.dtype) * (values.shape[axis] - 1)
    below, above = ops.floor(ranks), ops.ceil(ranks)
    if interpolation == "lower":
        above = below
    elif interpolation == "higher":
        below = above
    elif interpolation == "nearest":
        below = above = ops.round(ranks)
    elif interpolation not in ("linear", "midpoint"):
        raise TypeError(
            f"quantile(interpolation={interpolation!r}): PyTorch knows linear, lower, higher, midpoint, nearest"
        )
    low = ops.gather(values, below.astype(ms.int64), axis)
    high = ops.gather(values, above.astype(ms.int64), axis)
    if interpolation == "midpoint":
        low = low + (high - low) * 0.5
    elif interpolation == "linear":
        weight = ops.reshape(ranks - below, (-1,) + (1,) * (values.ndim - axis - 1))
        low = ops.lerp(low, high, weight)
    picked = ops.moveaxis(low, axis, 0)
    if keepdim:
        shape = (1,) * rank if dim is None else tuple(1 if d == axis else n for d, n in enumerate(input.shape))
        picked = ops.reshape(picked, (picked.shape[0],) + shape)
    return picked[0] if qs.ndim == 0 else picked


FUNCTIONS: Dict[str, Entry] = {
    "torch.sort": sort,
    "torch.argsort": argsort,
    "torch.msort": msort,
    "torch.median": median,
    "torch.kthvalue": kthvalue,
    "torch.cummax": _cumulative(ops.cummax),
    "torch.cummin": _cumulative(ops.cummin),
    "torch.quantile": quantile,
    "torch.nanmedian": nanmedian,
}
METHODS: Dict[str, Adapter] = {
    "sort": sort,
    "argsort": argsort,
    "msort": msort,
    "median": median,
    "kthvalue": kthvalue,
    "cummax": _cumulative(ops.cummax),
    "cummin": _cumulative(ops.cummin),
    "quantile": quantile,
    "nanmedian": nanmedian,
}
