"""Sorting in the call table: ``sort``, ``argsort``, ``msort``, ``median`` and ``kthvalue``.

Indices are int64, as PyTorch's are. ``median`` is PyTorch's lower median (of an even count, the
smaller of the two middle elements), and ``median``/``kthvalue`` are read off a sort, so their
gradients flow to the element picked, as PyTorch's do.
"""

from __future__ import annotations

import collections
from typing import Dict, Optional

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


FUNCTIONS: Dict[str, Entry] = {
    "torch.sort": sort,
    "torch.argsort": argsort,
    "torch.msort": msort,
    "torch.median": median,
    "torch.kthvalue": kthvalue,
}
METHODS: Dict[str, Adapter] = {
    "sort": sort,
    "argsort": argsort,
    "msort": msort,
    "median": median,
    "kthvalue": kthvalue,
}
