"""Writing along a dimension in the call table: ``scatter`` (a tensor or a number as the source) and
``scatter_add``, as DeepSeek's group-limited routing marks the groups it keeps
(``group_mask.scatter_(1, group_idx, 1)``).

Both are MindSpore's ``tensor_scatter_elements``, computed out of place. Its gradients are
PyTorch's: the input's is the output's with the written places zeroed (``scatter``) or passed on
whole (``scatter_add``), the source's is the output's gathered at ``index``. Where an index repeats,
``scatter`` keeps one of the written values on either side, which one unspecified (PyTorch's
documentation says so of its own). ``reduce=`` (the deprecated reductions) is refused by name.
"""

from __future__ import annotations

from typing import Dict, Optional, Union

import mindspore as ms
from mindspore import Tensor, ops

from .arguments import Adapter, Entry, is_tensor

__all__ = ["FUNCTIONS", "METHODS"]


def _updates(input: Tensor, index: Tensor, src: Union[Tensor, float]) -> Tensor:
    """What is written: ``src`` cut to ``index``'s shape (PyTorch reads only that corner of a larger
    ``src``), or the number ``src`` in ``input``'s dtype wherever ``index`` points."""
    if not is_tensor(src):
        return ops.full(tuple(index.shape), src, dtype=input.dtype)
    if tuple(src.shape) != tuple(index.shape):
        src = src[tuple(slice(0, n) for n in index.shape)]
    return src.astype(input.dtype)


def scatter(
    input: Tensor,
    dim: int,
    index: Tensor,
    src: Union[Tensor, float, None] = None,
    *,
    value: Optional[float] = None,
    reduce: Optional[str] = None,
) -> Tensor:
    if reduce is not None:
        raise TypeError(_refused(reduce))
    written = _updates(input, index, value if src is None else src)
    return ops.tensor_scatter_elements(input, index.astype(ms.int64), written, axis=dim)


def scatter_add(input: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    written = _updates(input, index, src)
    return ops.tensor_scatter_elements(input, index.astype(ms.int64), written, axis=dim, reduction="add")


def _no_reduce(args: tuple, kwargs: dict) -> Optional[str]:
    reduce = kwargs.get("reduce", args[4] if len(args) > 4 else None)
    if reduce is not None:
        return _refused(reduce)
    return None


def _refused(reduce: object) -> str:
    return f"reduce={reduce!r} (scatter's deprecated reduction) is not translated"


FUNCTIONS: Dict[str, Entry] = {
    "torch.scatter": (scatter, _no_reduce),
    "torch.scatter_add": scatter_add,
}
METHODS: Dict[str, Adapter] = {
    "scatter": scatter,
    "scatter_add": scatter_add,
}
