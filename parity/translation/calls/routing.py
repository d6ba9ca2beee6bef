"""Mixture-of-experts routing in the call table: ``topk``, ``F.one_hot``, ``nonzero`` (and
``torch.where(condition)``, in :mod:`.indexing`), ``index_add``, and the comparisons by their long names
(``torch.greater``...), as Mixtral, Qwen2-MoE, OLMoE and DeepSeek route tokens to experts.

Indices are int64, as PyTorch's are. ``nonzero`` and ``where(condition)`` have a size that depends
on the values: the trace runs in PYNATIVE mode, where such shapes are known as each call runs.
``index_add`` is computed out of place as a segment sum of ``source`` (whose gradient is a gather,
as PyTorch's is an ``index_select``): MindSpore's ``ops.index_add`` adds into a Parameter only.
"""

from __future__ import annotations

import collections
from typing import Dict, Optional, Tuple

import mindspore as ms
from mindspore import Tensor, ops

from .arguments import Adapter, Entry

__all__ = ["FUNCTIONS", "METHODS"]

_TopK = collections.namedtuple("_TopK", ["values", "indices"])


def topk(input: Tensor, k: int, dim: int = -1, largest: bool = True, sorted: bool = True) -> Tuple[Tensor, Tensor]:
    values, indices = ops.topk(input, k, dim, largest, sorted)
    return _TopK(values, indices.astype(ms.int64))


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    if num_classes < 0:
        num_classes = int(tensor.max()) + 1  # PyTorch's: one more than the greatest index
    on, off = Tensor(1, ms.int64), Tensor(0, ms.int64)
    return ops.one_hot(tensor.astype(ms.int64), num_classes, on, off, -1)


def nonzero(input: Tensor, *, as_tuple: bool = False):
    if input.ndim == 0:  # MindSpore's kernel takes a dimension: PyTorch's answer has no columns
        rows = int(bool(input != 0))
        return (ops.zeros((rows,), ms.int64),) if as_tuple else ops.zeros((rows, 0), ms.int64)
    found = ops.nonzero(input).astype(ms.int64)
    if as_tuple:
        return tuple(found[:, axis] for axis in range(found.shape[1]))
    return found


def index_add(input: Tensor, dim: int, index: Tensor, source: Tensor, *, alpha: float = 1) -> Tensor:
    dim = dim % input.ndim
    moved = ops.moveaxis(source, dim, 0) if dim else source
    summed = ops.unsorted_segment_sum(moved, index.astype(ms.int32), input.shape[dim])
    summed = ops.moveaxis(summed, 0, dim) if dim else summed
    return input + (summed * alpha if alpha != 1 else summed).astype(input.dtype)


def _compared(compare):
    def run(input: Tensor, other, *, out: Optional[Tensor] = None) -> Tensor:
        return compare(input, other)

    return run


FUNCTIONS: Dict[str, Entry] = {
    "torch.topk": topk,
    "torch.nn.functional.one_hot": one_hot,
    "torch.nonzero": nonzero,
    "torch.argwhere": nonzero,
    "torch.index_add": index_add,
    "torch.greater": _compared(ops.gt),
    "torch.greater_equal": _compared(ops.ge),
    "torch.less": _compared(ops.lt),
    "torch.less_equal": _compared(ops.le),
    "torch.not_equal": _compared(ops.ne),
}
METHODS: Dict[str, Adapter] = {
    "topk": topk,
    "nonzero": nonzero,
    "argwhere": nonzero,
    "index_add": index_add,
}
