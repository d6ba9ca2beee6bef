"""Normalisation: ``BatchNorm1d/2d/3d``, ``LayerNorm``, ``GroupNorm``, ``InstanceNorm1d/2d/3d``.

MindSpore facts (mindspore 2.10, ``mindspore/nn/layer/normalization.py``):

* BatchNorm ``momentum`` is the weight of the old running value (default 0.9): PyTorch's ``m`` is
  MindSpore's ``1 - m``; PyTorch's ``momentum=None`` (cumulative average) has no counterpart.
  ``use_batch_statistics=None`` follows the train flag like PyTorch; ``True`` is PyTorch's
  ``track_running_stats=False``. MindSpore always holds ``gamma/beta/moving_mean/moving_variance``
  parameters: those PyTorch lacks (``affine=False``, no running stats) become constant tensors.
  ``BatchNorm3d`` wraps a ``BatchNorm2d`` (parameters under ``bn2d.``).
* ``LayerNorm`` defaults to ``epsilon=1e-7`` (PyTorch 1e-5): always passed. Its kernel takes no
  negative ``begin_norm_axis`` but -1, and the input rank is unknown when the Cell is built, so a
  ``normalized_shape`` of several dims is normalised by :class:`LayerNormTrailing`, which flattens
  them into one. It always has ``gamma`` and ``beta``. (``nn.LayerNormExt`` has no CPU kernel.)
* ``GroupNorm(num_groups, num_channels, eps, affine)`` wants ``eps`` as a float.
* ``InstanceNorm`` defaults to ``affine=True`` (PyTorch ``False``) and always normalises with the
  instance statistics: PyTorch's ``track_running_stats=True`` (running statistics in eval) has no
  counterpart, and the running-statistics parameters it keeps anyway become constants. Its
  ``InstanceNorm`` kernel does not exist on CPU: there, ``GroupNorm(C, C)`` (one channel per
  group, the same arithmetic) stands in.
"""

from __future__ import annotations

from typing import Union

import torch
from mindspore import Tensor, nn

from .table import Context, as_constant, translates

__all__ = ["LayerNormTrailing"]

_BATCH = {
    torch.nn.BatchNorm1d: nn.BatchNorm1d,
    torch.nn.BatchNorm2d: nn.BatchNorm2d,
    torch.nn.BatchNorm3d: nn.BatchNorm3d,
}
_INSTANCE = {
    torch.nn.InstanceNorm1d: nn.InstanceNorm1d,
    torch.nn.InstanceNorm2d: nn.InstanceNorm2d,
    torch.nn.InstanceNorm3d: nn.InstanceNorm3d,
}


class LayerNormTrailing(nn.LayerNorm):
    """``nn.LayerNorm`` over the trailing ``len(normalized_shape)`` axes of an input of any rank."""

    def construct(self, x: Tensor) -> Tensor:
        shape = x.shape
        flat = x.reshape(shape[: len(shape) - len(self.normalized_shape)] + (-1,))
        y, _, _ = self.layer_norm(flat, self.gamma.reshape(-1).astype(x.dtype), self.beta.reshape(-1).astype(x.dtype))
        return y.reshape(shape)


def _stats_owner(cell):
    """The Cell that holds the parameters (``BatchNorm3d`` delegates to its ``bn2d``)."""
    return getattr(cell, "bn2d", cell)


@translates(*_BATCH)
def batch_norm(
    module: Union[torch.nn.BatchNorm1d, torch.nn.BatchNorm2d, torch.nn.BatchNorm3d], ctx: Context
) -> nn.Cell:
    if module.momentum is None:
        raise ctx.unsupported("momentum=None (a cumulative moving average) has no MindSpore counterpart")
    tracking = module.track_running_stats
    cell = _BATCH[ctx.layer_class](
        module.num_features,
        eps=float(module.eps),
        momentum=1.0 - module.momentum,
        affine=module.affine,
        use_batch_statistics=None if tracking else True,
    )
    owner = _stats_owner(cell)
    if not module.affine:
        as_constant(owner, ("gamma", "beta"))
    if not tracking:
        as_constant(owner, ("moving_mean", "moving_variance"))
    return cell


@translates(torch.nn.LayerNorm)
def layer_norm(module: torch.nn.LayerNorm, ctx: Context) -> nn.Cell:
    cell_type = nn.LayerNorm if len(module.normalized_shape) == 1 else LayerNormTrailing
    cell = cell_type(
        tuple(module.normalized_shape), begin_norm_axis=-1, begin_params_axis=-1, epsilon=float(module.eps)
    )
    if not module.elementwise_affine:
        as_constant(cell, ("gamma", "beta"))
    elif module.bias is None:
        as_constant(cell, ("beta",))
    return cell


@translates(torch.nn.GroupNorm)
def group_norm(module: torch.nn.GroupNorm, ctx: Context) -> nn.Cell:
    cell = nn.GroupNorm(module.num_groups, module.num_channels, eps=float(module.eps), affine=module.affine)
    if not module.affine:
        as_constant(cell, ("gamma", "beta"))
    return cell


@translates(*_INSTANCE)
def instance_norm(
    module: Union[torch.nn.InstanceNorm1d, torch.nn.InstanceNorm2d, torch.nn.InstanceNorm3d], ctx: Context
) -> nn.Cell:
    ctx.require(
        not module.track_running_stats,
        "track_running_stats=True: MindSpore's InstanceNorm always normalises with the instance "
        "statistics, PyTorch uses the running ones in eval mode",
    )
    if ctx.device == "CPU":
        cell = nn.GroupNorm(module.num_features, module.num_features, eps=float(module.eps), affine=module.affine)
    else:
        cell = _INSTANCE[ctx.layer_class](
            module.num_features, eps=float(module.eps), momentum=float(module.momentum or 0.1), affine=module.affine
        )
        as_constant(cell, ("moving_mean", "moving_variance"))
    if not module.affine:
        as_constant(cell, ("gamma", "beta"))
    return cell
