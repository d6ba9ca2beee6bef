"""Reductions and scans in the call table: ``mean``, ``sum``, ``max``/``min`` (of all elements,
elementwise of two tensors, or along ``dim`` as ``(values, indices)``), ``amax``/``amin``,
``linalg.vector_norm``, ``argmax``/``argmin``,
``all``/``any``, ``cumsum`` and ``diff``.

``dim``/``keepdim`` are ``axis``/``keep_dims`` in ``ops.mean``. ``cumsum`` of an integer or bool
tensor is int64, as in PyTorch, and so are ``argmin``'s indices.
"""

from __future__ import annotations

import collections
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
        return ops.sqrt(ops.sum(x * x, axes, keepdim))
    return ops.pow(ops.sum(ops.pow(size, ord), axes, keepdim), 1.0 / ord)


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
}
