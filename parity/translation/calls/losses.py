"""Loss functions in the call table (``F.mse_loss``, ``F.cross_entropy``, ``F.kl_div``...), each
composed from MindSpore's element-wise operators as PyTorch's ATen writes it, so values and
gradients are PyTorch's.

``reduction`` is ``'none'``, ``'mean'`` or ``'sum'`` (``kl_div`` also ``'batchmean'``); the legacy
``size_average``/``reduce`` arguments map onto it as PyTorch maps them. ``cross_entropy`` takes class
probabilities or class indices, with ``weight``, ``ignore_index`` (indices) and
``label_smoothing``, normalised as PyTorch normalises each.
"""

from __future__ import annotations

import math
from typing import Dict, Optional

import mindspore as ms
from mindspore import Tensor, ops

from .arguments import INTEGRAL, Adapter, Entry
from .linalg import pairwise_distance

__all__ = ["FUNCTIONS", "METHODS"]


def _reduction(size_average: Optional[bool], reduce: Optional[bool], reduction: str) -> str:
    if size_average is None and reduce is None:
        return reduction
    if reduce is False:
        return "none"
    return "sum" if size_average is False else "mean"


def _reduce(loss: Tensor, reduction: str) -> Tensor:
    if reduction == "none":
        return loss
    if reduction == "sum":
        return ops.sum(loss)
    if reduction == "mean":
        return ops.mean(loss)
    raise TypeError(f"reduction={reduction!r}: PyTorch knows only 'none', 'mean' and 'sum'")


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None) -> Tensor:
    loss = ops.square(input - target)
    return _reduce(loss if weight is None else loss * weight, _reduction(size_average, reduce, reduction))


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None) -> Tensor:
    loss = ops.abs(input - target)
    return _reduce(loss if weight is None else loss * weight, _reduction(size_average, reduce, reduction))


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0) -> Tensor:
    distance = ops.abs(input - target)
    if beta == 0:
        loss = distance
    else:
        loss = ops.where(distance < beta, 0.5 * distance * distance / beta, distance - 0.5 * beta)
    return _reduce(loss, _reduction(size_average, reduce, reduction))


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None) -> Tensor:
    distance = ops.abs(input - target)
    loss = ops.where(distance < delta, 0.5 * distance * distance, delta * (distance - 0.5 * delta))
    return _reduce(loss if weight is None else loss * weight, reduction)


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None, reduction="mean") -> Tensor:
    """``-(t log x + (1 - t) log(1 - x))``, each log at least -100, as PyTorch clamps them."""
    low = ms.Tensor(-100.0, input.dtype)
    loss = -(target * ops.maximum(ops.log(input), low) + (1 - target) * ops.maximum(ops.log(1 - input), low))
    return _reduce(loss if weight is None else loss * weight, _reduction(size_average, reduce, reduction))


def binary_cross_entropy_with_logits(
    input, target, weight=None, size_average=None, reduce=None, reduction="mean", pos_weight=None
) -> Tensor:
    """``(1 - t) x + w (log(exp(-m) + exp(-x - m)) + m)``, ``m = max(-x, 0)``, ``w = (p - 1) t + 1``."""
    top = ops.clamp(-input, 0, None)
    log_sum = ops.log(ops.exp(-top) + ops.exp(-input - top)) + top
    if pos_weight is not None:
        log_sum = ((pos_weight - 1) * target + 1) * log_sum
    loss = (1 - target) * input + log_sum
    return _reduce(loss if weight is None else loss * weight, _reduction(size_average, reduce, reduction))


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False) -> Tensor:
    if log_target:
        loss = ops.exp(target) * (target - input)
    else:
        loss = ops.xlogy(target, target) - target * input
    reduction = _reduction(size_average, reduce, reduction)
    if reduction == "batchmean":
        return ops.sum(loss) / (input.shape[0] if input.ndim else 1)
    return _reduce(loss, reduction)


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean") -> Tensor:
    loss = ops.log1p(ops.exp(-target * input))
    return _reduce(loss, _reduction(size_average, reduce, reduction))


def margin_ranking_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None, reduction="mean") -> Tensor:
    loss = ops.clamp(-target * (input1 - input2) + margin, 0, None)
    return _reduce(loss, _reduction(size_average, reduce, reduction))


def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None, reduction="mean") -> Tensor:
    zero = ops.zeros_like(input)
    clamped = ops.clamp(margin - input, 0, None)
    loss = ops.where(target != 1, clamped, zero) + ops.where(target != -1, input, zero)
    return _reduce(loss, _reduction(size_average, reduce, reduction))


def cosine_embedding_loss(
    input1, input2, target, margin=0.0, size_average=None, reduce=None, reduction="mean"
) -> Tensor:
    dim = input1.ndim - 1
    eps = 1e-12
    products = ops.sum(input1 * input2, dim)
    magnitudes = (ops.sum(input1 * input1, dim) + eps) * (ops.sum(input2 * input2, dim) + eps)
    cosine = products / ops.sqrt(magnitudes)
    zero = ops.zeros_like(cosine)
    loss = ops.where(target == 1, 1 - cosine, zero) + ops.where(target == -1, ops.clamp(cosine - margin, 0, None), zero)
    return _reduce(loss, _reduction(size_average, reduce, reduction))


def poisson_nll_loss(
    input, target, log_input=True, full=False, size_average=None, eps=1e-8, reduce=None, reduction="mean"
) -> Tensor:
    loss = ops.exp(input) - target * input if log_input else input - target * ops.log(input + eps)
    if full:
        safe = ops.where(target > 1, target, ops.ones_like(target))
        stirling = safe * ops.log(safe) - safe + 0.5 * ops.log(2 * math.pi * safe)
        loss = loss + ops.where(target > 1, stirling, ops.zeros_like(target))
    return _reduce(loss, _reduction(size_average, reduce, reduction))


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean") -> Tensor:
    """``0.5 (log v + (x - t)^2 / v)``, ``v`` clamped to ``eps`` outside the gradient, as PyTorch does."""
    if not isinstance(var, Tensor):
        var = ops.full(input.shape, float(var), dtype=input.dtype)
    if var.shape != input.shape and tuple(input.shape[:-1]) == tuple(var.shape):
        var = ops.expand_dims(var, -1)
    var = var + ops.stop_gradient(ops.clamp(var, eps, None) - var)
    loss = 0.5 * (ops.log(var) + ops.square(input - target) / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


def triplet_margin_loss(
    anchor,
    positive,
    negative,
    margin=1.0,
    p=2.0,
    eps=1e-6,
    swap=False,
    size_average=None,
    reduce=None,
    reduction="mean",
) -> Tensor:
    positive_distance = pairwise_distance(anchor, positive, p, eps)
    negative_distance = pairwise_distance(anchor, negative, p, eps)
    if swap:
        negative_distance = ops.minimum(negative_distance, pairwise_distance(positive, negative, p, eps))
    loss = ops.clamp(margin + positive_distance - negative_distance, 0, None)
    return _reduce(loss, _reduction(size_average, reduce, reduction))


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None, reduction="mean") -> Tensor:
    loss = -(target * ops.logsigmoid(input) + (1 - target) * ops.logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    loss = ops.sum(loss, input.ndim - 1) / input.shape[-1]
    return _reduce(loss, _reduction(size_average, reduce, reduction))


def _picked(log_probs: Tensor, target: Tensor, weight: Optional[Tensor], ignore_index: int, reduction: str):
    """``-w[y] log p[y]`` per sample (classes on dimension 1, or 0 unbatched), the mean over the
    weights of the samples not ignored."""
    classes = 1 if log_probs.ndim > 1 else 0
    target = target.astype(ms.int64)
    kept = target != ignore_index
    safe = ops.where(kept, target, ops.zeros_like(target))
    picked = ops.squeeze(ops.gather_elements(log_probs, classes, ops.expand_dims(safe, classes)), classes)
    weights = ops.ones_like(picked) if weight is None else ops.gather(weight, safe, 0)
    weights = ops.where(kept, weights, ops.zeros_like(weights))
    loss = -picked * weights
    if reduction == "mean":
        return ops.sum(loss) / ops.sum(weights)
    return _reduce(loss, reduction)


def _smoothing(log_probs: Tensor, target: Tensor, weight: Optional[Tensor], ignore_index: int, reduction: str):
    """The uniform part of label smoothing with class indices, as PyTorch's ``cross_entropy``
    computes it: ``-sum_c w[c] log p[c]`` per sample not ignored; its mean divided by the weights of
    the samples' own classes, as the picked part's is."""
    classes = 1 if log_probs.ndim > 1 else 0
    target = target.astype(ms.int64)
    kept = target != ignore_index
    if weight is not None:
        log_probs = log_probs * ops.reshape(weight, (log_probs.shape[classes],) + (1,) * (log_probs.ndim - classes - 1))
    loss = ops.where(kept, -ops.sum(log_probs, classes), ops.zeros_like(kept, dtype=log_probs.dtype))
    if reduction != "mean":
        return _reduce(loss, reduction)
    if weight is None:
        return ops.sum(loss) / ops.sum(kept.astype(loss.dtype))
    own = ops.gather(weight, ops.where(kept, target, ops.zeros_like(target)), 0)
    return ops.sum(loss) / ops.sum(ops.where(kept, own, ops.zeros_like(own)))


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean") -> Tensor:
    return _picked(input, target, weight, ignore_index, _reduction(size_average, reduce, reduction))


def cross_entropy(
    input,
    target,
    weight=None,
    size_average=None,
    ignore_index=-100,
    reduce=None,
    reduction="mean",
    label_smoothing=0.0,
) -> Tensor:
    reduction = _reduction(size_average, reduce, reduction)
    classes = 1 if input.ndim > 1 else 0
    log_probs = ops.log_softmax(input, classes)
    if target.dtype in INTEGRAL:
        picked = _picked(log_probs, target, weight, ignore_index, reduction)
        if not label_smoothing:
            return picked
        return (1 - label_smoothing) * picked + _smoothing(log_probs, target, weight, ignore_index, reduction) * (
            label_smoothing / input.shape[classes]
        )
    count = input.shape[classes]
    if label_smoothing:
        target = target * (1 - label_smoothing) + label_smoothing / count
    if weight is not None:
        log_probs = log_probs * ops.reshape(weight, (count,) + (1,) * (input.ndim - classes - 1))
    loss = -ops.sum(target * log_probs, classes)
    if reduction == "mean":
        return ops.sum(loss) / (loss.size if input.ndim > 1 else 1)
    return _reduce(loss, reduction)


FUNCTIONS: Dict[str, Entry] = {
    "torch.nn.functional.mse_loss": mse_loss,
    "torch.nn.functional.l1_loss": l1_loss,
    "torch.nn.functional.smooth_l1_loss": smooth_l1_loss,
    "torch.nn.functional.huber_loss": huber_loss,
    "torch.nn.functional.binary_cross_entropy": binary_cross_entropy,
    "torch.nn.functional.binary_cross_entropy_with_logits": binary_cross_entropy_with_logits,
    "torch.nn.functional.kl_div": kl_div,
    "torch.nn.functional.soft_margin_loss": soft_margin_loss,
    "torch.nn.functional.margin_ranking_loss": margin_ranking_loss,
    "torch.nn.functional.hinge_embedding_loss": hinge_embedding_loss,
    "torch.nn.functional.cosine_embedding_loss": cosine_embedding_loss,
    "torch.nn.functional.poisson_nll_loss": poisson_nll_loss,
    "torch.nn.functional.gaussian_nll_loss": gaussian_nll_loss,
    "torch.nn.functional.triplet_margin_loss": triplet_margin_loss,
    "torch.nn.functional.multilabel_soft_margin_loss": multilabel_soft_margin_loss,
    "torch.nn.functional.nll_loss": nll_loss,
    "torch.nn.functional.cross_entropy": cross_entropy,
}
METHODS: Dict[str, Adapter] = {}
