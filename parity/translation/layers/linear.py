"""Dense layers and the shape-only or train-only layers around them: ``Linear``, ``Bilinear``,
``Identity``, ``Flatten``, ``Unflatten``, ``Embedding`` and the ``Dropout`` family.

MindSpore facts (mindspore 2.10): ``nn.Dense(in, out, has_bias=True)`` keeps PyTorch's
``(out, in)`` weight; ``nn.BiDense`` keeps ``(out, in1, in2)``. ``nn.Embedding`` names its table
``embedding_table`` (parity's renames pair it with ``weight``); its ``padding_idx`` only zeroes
that row when built, the row still gets gradient (PyTorch's does not), so
:class:`EmbeddingPaddingIdx` (also the known-mismatch registry's fix) stops the gradient of that
row. ``nn.Dropout`` takes
``p`` (``keep_prob`` is deprecated); dropout is random in train mode, so it is compared in eval
mode, where both sides are the identity.
"""

from __future__ import annotations

from typing import Optional, Union

import numpy as np
import torch
from mindspore import Tensor, nn, ops

from .table import Context, translates

__all__ = ["EmbeddingPaddingIdx"]


class EmbeddingPaddingIdx(nn.Embedding):
    """``nn.Embedding`` whose ``padding_idx`` row gets no gradient, as in PyTorch (without
    ``padding_idx`` every row trains, as in ``nn.Embedding``). The forward is bit-identical: the
    table is ``w * keep + stop_gradient(w) * (1 - keep)`` with a 0/1 row mask. Ids of any shape."""

    def __init__(self, vocab_size: int, embedding_size: int, padding_idx: Optional[int] = None):
        super().__init__(vocab_size, embedding_size, padding_idx=padding_idx)
        keep = np.ones((vocab_size, 1), np.float32)
        if padding_idx is not None:
            keep[padding_idx] = 0.0
        self.keep = Tensor(keep)

    def construct(self, ids: Tensor) -> Tensor:
        table = self.embedding_table * self.keep + ops.stop_gradient(self.embedding_table) * (1 - self.keep)
        return ops.gather(table, ids.reshape(-1), 0).reshape(ids.shape + (self.embedding_size,))


@translates(torch.nn.Linear)
def linear(module: torch.nn.Linear, ctx: Context) -> nn.Cell:
    return nn.Dense(module.in_features, module.out_features, has_bias=module.bias is not None)


@translates(torch.nn.Bilinear)
def bilinear(module: torch.nn.Bilinear, ctx: Context) -> nn.Cell:
    return nn.BiDense(module.in1_features, module.in2_features, module.out_features, has_bias=module.bias is not None)


@translates(torch.nn.Identity)
def identity(module: torch.nn.Identity, ctx: Context) -> nn.Cell:
    return nn.Identity()


@translates(torch.nn.Flatten)
def flatten(module: torch.nn.Flatten, ctx: Context) -> nn.Cell:
    return nn.Flatten(start_dim=module.start_dim, end_dim=module.end_dim)


@translates(torch.nn.Unflatten)
def unflatten(module: torch.nn.Unflatten, ctx: Context) -> nn.Cell:
    ctx.require(isinstance(module.dim, int), "named dimensions have no MindSpore counterpart")
    return nn.Unflatten(module.dim, tuple(module.unflattened_size))


@translates(torch.nn.Embedding)
def embedding(module: torch.nn.Embedding, ctx: Context) -> nn.Cell:
    ctx.require_default("max_norm", None, "MindSpore's nn.Embedding never renormalises rows")
    ctx.require_default("scale_grad_by_freq", False)
    if module.padding_idx is None:
        return nn.Embedding(module.num_embeddings, module.embedding_dim)
    return EmbeddingPaddingIdx(module.num_embeddings, module.embedding_dim, module.padding_idx)


@translates(torch.nn.Dropout)
def dropout(module: torch.nn.Dropout, ctx: Context) -> nn.Cell:
    return nn.Dropout(p=float(module.p))


@translates(torch.nn.Dropout1d, torch.nn.Dropout2d, torch.nn.Dropout3d)
def dropout_nd(module: Union[torch.nn.Dropout1d, torch.nn.Dropout2d, torch.nn.Dropout3d], ctx: Context) -> nn.Cell:
    cell_type = {torch.nn.Dropout1d: nn.Dropout1d, torch.nn.Dropout2d: nn.Dropout2d, torch.nn.Dropout3d: nn.Dropout3d}[
        ctx.layer_class
    ]
    return cell_type(p=float(module.p))
