"""Losses: each takes ``(input, target)`` (or the triples of the ranking and embedding losses)
like PyTorch's.

MindSpore facts (mindspore 2.10, ``mindspore/nn/loss/loss.py``):

* ``nn.CrossEntropyLoss`` wants ``int32`` class indices; PyTorch wants ``int64``:
  :class:`CrossEntropyLossInt64` casts them.
* ``SoftMarginLoss`` and ``TripletMarginLoss`` have no CPU kernel; ``TripletMarginLoss`` wants an
  int ``p`` (PyTorch stores a float).
* ``nn.SmoothL1Loss`` defaults to ``reduction="none"`` (PyTorch ``"mean"``): ``reduction`` is
  always passed. ``nn.HuberLoss`` takes ``delta``, ``SmoothL1Loss`` ``beta``, which must be > 0:
  PyTorch's ``beta=0`` (its L1 loss) becomes ``nn.L1Loss``.
* The backward of ``BCEWithLogitsLoss(reduction="mean")`` divides by the element count of the
  first batch PYNATIVE differentiated it on, for every later batch (its cached backward graph
  holds the count as a constant): :class:`BCEWithLogitsLoss` takes the mean itself.
* Class weights and ``pos_weight`` are plain tensors in MindSpore but buffers in PyTorch: the
  translation holds them as non-trainable parameters of the same name, so they pair and copy.
  (``BCEWithLogitsLoss`` refuses a Parameter in its constructor, so they are set afterwards.)
* ``nn.KLDivLoss(reduction)`` has no ``log_target``.
* ``nn.TripletMarginLoss(p, swap, eps, reduction, margin)``, ``nn.MultiMarginLoss(p, margin,
  reduction, weight)``, ``nn.PoissonNLLLoss(log_input, full, eps, reduction)``,
  ``nn.GaussianNLLLoss(*, full, eps, reduction)`` take PyTorch's arguments.
"""

from __future__ import annotations

from typing import Optional, Union

import mindspore as ms
import torch
from mindspore import nn

from .table import Context, as_parameter, translates

__all__ = ["CrossEntropyLossInt64", "BCEWithLogitsLoss"]


class CrossEntropyLossInt64(nn.CrossEntropyLoss):
    """``nn.CrossEntropyLoss`` that takes PyTorch's ``int64`` class indices (cast to the ``int32``
    MindSpore's kernel wants); also the known-mismatch registry's fix."""

    def construct(self, logits: ms.Tensor, labels: ms.Tensor) -> ms.Tensor:
        if labels.dtype == ms.int64:
            labels = labels.astype(ms.int32)
        return super().construct(logits, labels)


class BCEWithLogitsLoss(nn.Cell):
    """``nn.BCEWithLogitsLoss``'s arguments and loss, its ``'mean'`` taken here over the per-element
    losses, so that the gradient is right for batches of any size (MindSpore's own divides by the
    first batch's element count in PYNATIVE); also the known-mismatch registry's fix. Not a
    subclass: the registry's diagnosis tells it from the Cell it replaces."""

    def __init__(
        self, reduction: str = "mean", weight: Optional[ms.Tensor] = None, pos_weight: Optional[ms.Tensor] = None
    ):
        super().__init__()
        if reduction not in ("none", "mean", "sum"):
            raise ValueError(f"reduction must be 'none', 'mean' or 'sum', got {reduction!r}")
        self.reduction, self.weight, self.pos_weight = reduction, weight, pos_weight

    def construct(self, input: ms.Tensor, target: ms.Tensor) -> ms.Tensor:
        each = "none" if self.reduction == "mean" else self.reduction
        loss = ms.ops.binary_cross_entropy_with_logits(input, target, self.weight, self.pos_weight, each)
        return loss.mean() if self.reduction == "mean" else loss


def _with_buffers(cell, module, names=("weight",)):
    """Copy PyTorch's loss buffers (class weights) onto ``cell`` as non-trainable parameters."""
    for name in names:
        value = getattr(module, name, None)
        if value is not None:
            as_parameter(cell, name, value)
    return cell


# PyTorch classes whose MindSpore Cell takes only ``reduction``.
_REDUCTION_ONLY = {torch.nn.MSELoss: nn.MSELoss, torch.nn.L1Loss: nn.L1Loss, torch.nn.SoftMarginLoss: nn.SoftMarginLoss}
_NO_CPU_KERNEL = (torch.nn.SoftMarginLoss, torch.nn.TripletMarginLoss)


def _require_kernel(module, ctx: Context) -> None:
    ctx.require(
        not (ctx.kind in _NO_CPU_KERNEL and ctx.device == "CPU"),
        f"MindSpore has no CPU kernel for {ctx.layer_class.__name__}",
    )


@translates(*_REDUCTION_ONLY)
def reduction_only(module: Union[torch.nn.MSELoss, torch.nn.L1Loss, torch.nn.SoftMarginLoss], ctx: Context) -> nn.Cell:
    _require_kernel(module, ctx)
    return _REDUCTION_ONLY[ctx.layer_class](reduction=module.reduction)


@translates(torch.nn.CrossEntropyLoss)
def cross_entropy(module: torch.nn.CrossEntropyLoss, ctx: Context) -> nn.Cell:
    cell = CrossEntropyLossInt64(
        ignore_index=module.ignore_index, reduction=module.reduction, label_smoothing=float(module.label_smoothing)
    )
    return _with_buffers(cell, module)


@translates(torch.nn.NLLLoss)
def nll(module: torch.nn.NLLLoss, ctx: Context) -> nn.Cell:
    return _with_buffers(nn.NLLLoss(ignore_index=module.ignore_index, reduction=module.reduction), module)


@translates(torch.nn.SmoothL1Loss)
def smooth_l1(module: torch.nn.SmoothL1Loss, ctx: Context) -> nn.Cell:
    if module.beta == 0:  # PyTorch: "beta=0 is equivalent to L1Loss"; MindSpore refuses beta=0 when it runs
        return nn.L1Loss(reduction=module.reduction)
    return nn.SmoothL1Loss(beta=float(module.beta), reduction=module.reduction)


@translates(torch.nn.HuberLoss)
def huber(module: torch.nn.HuberLoss, ctx: Context) -> nn.Cell:
    return nn.HuberLoss(reduction=module.reduction, delta=float(module.delta))


@translates(torch.nn.BCELoss)
def bce(module: torch.nn.BCELoss, ctx: Context) -> nn.Cell:
    return _with_buffers(nn.BCELoss(reduction=module.reduction), module)


@translates(torch.nn.BCEWithLogitsLoss)
def bce_with_logits(module: torch.nn.BCEWithLogitsLoss, ctx: Context) -> nn.Cell:
    return _with_buffers(BCEWithLogitsLoss(reduction=module.reduction), module, ("weight", "pos_weight"))


@translates(torch.nn.MultiLabelSoftMarginLoss)
def multilabel_soft_margin(module: torch.nn.MultiLabelSoftMarginLoss, ctx: Context) -> nn.Cell:
    return _with_buffers(nn.MultiLabelSoftMarginLoss(reduction=module.reduction), module)


@translates(torch.nn.KLDivLoss)
def kl_div(module: torch.nn.KLDivLoss, ctx: Context) -> nn.Cell:
    ctx.require(not module.log_target, "log_target=True: MindSpore's nn.KLDivLoss takes probabilities only")
    return nn.KLDivLoss(reduction=module.reduction)


@translates(torch.nn.CosineEmbeddingLoss)
def cosine_embedding(module: torch.nn.CosineEmbeddingLoss, ctx: Context) -> nn.Cell:
    return nn.CosineEmbeddingLoss(margin=float(module.margin), reduction=module.reduction)


@translates(torch.nn.MarginRankingLoss)
def margin_ranking(module: torch.nn.MarginRankingLoss, ctx: Context) -> nn.Cell:
    return nn.MarginRankingLoss(margin=float(module.margin), reduction=module.reduction)


@translates(torch.nn.HingeEmbeddingLoss)
def hinge_embedding(module: torch.nn.HingeEmbeddingLoss, ctx: Context) -> nn.Cell:
    return nn.HingeEmbeddingLoss(margin=float(module.margin), reduction=module.reduction)


@translates(torch.nn.TripletMarginLoss)
def triplet_margin(module: torch.nn.TripletMarginLoss, ctx: Context) -> nn.Cell:
    _require_kernel(module, ctx)
    ctx.require(float(module.p).is_integer(), f"p={module.p}: nn.TripletMarginLoss takes an integer norm degree")
    return nn.TripletMarginLoss(
        p=int(module.p),
        swap=module.swap,
        eps=float(module.eps),
        reduction=module.reduction,
        margin=float(module.margin),
    )


@translates(torch.nn.MultiMarginLoss)
def multi_margin(module: torch.nn.MultiMarginLoss, ctx: Context) -> nn.Cell:
    cell = nn.MultiMarginLoss(p=module.p, margin=float(module.margin), reduction=module.reduction)
    return _with_buffers(cell, module)


@translates(torch.nn.PoissonNLLLoss)
def poisson_nll(module: torch.nn.PoissonNLLLoss, ctx: Context) -> nn.Cell:
    return nn.PoissonNLLLoss(
        log_input=module.log_input, full=module.full, eps=float(module.eps), reduction=module.reduction
    )


@translates(torch.nn.GaussianNLLLoss)
def gaussian_nll(module: torch.nn.GaussianNLLLoss, ctx: Context) -> nn.Cell:
    return nn.GaussianNLLLoss(full=module.full, eps=float(module.eps), reduction=module.reduction)
