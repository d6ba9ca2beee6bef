"""MindSpore Cells with PyTorch's semantics, for registry entries that no MindSpore argument fixes.

Each is the ``replacement`` of an entry in ``parity/data/mismatches``; its self-test proves it agrees
with PyTorch forward and backward. Importing this module imports MindSpore.
"""

from __future__ import annotations

import numpy as np
import mindspore as ms
from mindspore import Parameter, Tensor, nn, ops
from mindspore.common.initializer import Normal, initializer

__all__ = ["ELU", "SELU", "Softplus", "Embedding", "CrossEntropyLoss"]

_SELU_ALPHA = 1.6732632423543772
_SELU_SCALE = 1.0507009873554805


class ELU(nn.Cell):
    """``torch.nn.ELU(alpha)`` for any alpha (``mindspore.nn.ELU`` accepts only alpha=1.0)."""

    def __init__(self, alpha: float = 1.0):
        super().__init__()
        self.alpha = float(alpha)

    def construct(self, x):
        return ops.where(x > 0, x, self.alpha * (ops.exp(ops.minimum(x, 0.0)) - 1.0))


class SELU(nn.Cell):
    """``torch.nn.SELU`` built from differentiable primitives: ``mindspore.nn.SeLU``'s gradient is
    wrong for negative inputs."""

    def construct(self, x):
        return _SELU_SCALE * ops.where(x > 0, x, _SELU_ALPHA * (ops.exp(ops.minimum(x, 0.0)) - 1.0))


class Softplus(nn.Cell):
    """``torch.nn.Softplus(beta, threshold)``: MindSpore has only the function ``ops.softplus``."""

    def __init__(self, beta: float = 1.0, threshold: float = 20.0):
        super().__init__()
        self.beta, self.threshold = beta, threshold

    def construct(self, x):
        return ops.softplus(x, self.beta, self.threshold)


class Embedding(nn.Cell):
    """``torch.nn.Embedding(num, dim, padding_idx)``: the padding row gets no gradient, as in
    PyTorch (``mindspore.nn.Embedding`` zeroes the row at init but still trains it)."""

    def __init__(self, vocab_size: int, embedding_size: int, padding_idx=None):
        super().__init__()
        self.embedding_table = Parameter(initializer(Normal(1.0), [vocab_size, embedding_size], ms.float32),
                                         name="embedding_table")
        mask = np.ones((vocab_size, 1), np.float32)
        if padding_idx is not None:
            mask[padding_idx] = 0.0
        self.mask = Tensor(mask)

    def construct(self, ids):
        table = self.embedding_table * self.mask + ops.stop_gradient(self.embedding_table) * (1.0 - self.mask)
        return ops.gather(table, ids, 0)


class CrossEntropyLoss(nn.CrossEntropyLoss):
    """``mindspore.nn.CrossEntropyLoss`` that takes PyTorch's int64 class indices (MindSpore's wants int32)."""

    def construct(self, logits, labels):
        if labels.dtype == ms.int64:
            labels = labels.astype(ms.int32)
        return super().construct(logits, labels)
