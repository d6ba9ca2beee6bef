"""Layers that move values around: ``Upsample`` (and ``UpsamplingNearest2d``/``UpsamplingBilinear2d``),
the ``Zero/Constant/Reflection/Replication/CircularPad`` families, ``PixelShuffle``,
``PixelUnshuffle`` and ``ChannelShuffle``.

MindSpore facts (mindspore 2.10, ``mindspore/nn/layer/basic.py`` and ``padding.py``):
``nn.Upsample(size, scale_factor, mode, align_corners, recompute_scale_factor)`` is
``ops.interpolate`` with PyTorch's argument names, but only ``trilinear`` and 5-d ``nearest`` take a
``scale_factor`` as such: the others need ``recompute_scale_factor=True`` (the output size is
computed, and the source coordinates come from the sizes). That is PyTorch's arithmetic when every
scale factor is a whole number or PyTorch recomputes too; other scale factors are refused.
The padding Cells take PyTorch's ``(left, right, top, bottom, ...)`` order; there is no
``ZeroPad1d``/``ZeroPad3d`` (a ``ConstantPad`` of 0 stands in) and no circular padding Cell (a
small Cell over ``ops.pad(mode="circular")`` stands in). A negative constant-padding width (a crop)
is right on CPU only on the first call of an input shape (known mismatch
``zeropad2d-negative-width-cpu-later-calls``): :class:`CroppingPad` pads the non-negative widths
and slices the rest off.
"""

from __future__ import annotations

import math
from typing import Sequence, Tuple, Union

import torch
from mindspore import Tensor, nn, ops

from .table import Context, translates

__all__ = ["CircularPad", "CroppingPad", "LinearUpsample"]


class CircularPad(nn.Cell):
    """``torch.nn.CircularPad1d/2d/3d``: mindspore.nn has no circular padding Cell."""

    def __init__(self, padding: Sequence[int]) -> None:
        super().__init__()
        self.padding = tuple(padding)

    def construct(self, x: Tensor) -> Tensor:
        return ops.pad(x, self.padding, mode="circular")


class CroppingPad(nn.Cell):
    """``torch.nn.ZeroPad2d`` and the ``ConstantPad`` family with a negative width: ``ops.pad``
    with the widths that are not negative, then each negative one sliced off its side (MindSpore's
    CPU kernel crops right on the first call of a shape only)."""

    def __init__(self, padding: Sequence[int], value: float = 0.0) -> None:
        super().__init__()
        self.padding = tuple(padding)
        self.grow = tuple(max(w, 0) for w in self.padding)
        self.value = float(value)
        # (axis from the end, cut before, cut after) of each axis with a negative width
        pairs = [(self.padding[i], self.padding[i + 1]) for i in range(0, len(self.padding), 2)]
        self.cuts = tuple((k + 1, max(-a, 0), max(-b, 0)) for k, (a, b) in enumerate(pairs) if min(a, b) < 0)

    def construct(self, x: Tensor) -> Tensor:
        x = ops.pad(x, self.grow, mode="constant", value=self.value)
        for back, before, after in self.cuts:
            axis = x.ndim - back
            x = ops.narrow(x, axis, before, x.shape[axis] - before - after)
        return x


def _scale(module, ctx: Context):
    """(scale_factor, recompute_scale_factor) for MindSpore (see the module docstring)."""
    scale = module.scale_factor
    if scale is None:
        return None, module.recompute_scale_factor
    scale = tuple(float(s) for s in scale) if isinstance(scale, tuple) else float(scale)
    if module.mode == "trilinear" or module.recompute_scale_factor:
        return scale, module.recompute_scale_factor
    whole = all(float(s).is_integer() for s in (scale if isinstance(scale, tuple) else (scale,)))
    ctx.require(
        whole,
        f"scale_factor={module.scale_factor} in mode {module.mode!r}: MindSpore maps source "
        "coordinates from the sizes, PyTorch from 1/scale_factor (equal for whole numbers only)",
    )
    return scale, True


class LinearUpsample(nn.Cell):
    """``torch.nn.Upsample(mode="linear", align_corners=False)``: ``nn.Upsample``, except to an output
    length of 1, where MindSpore returns the first element (``align_corners=True`` arithmetic) and
    PyTorch interpolates at the centre, source coordinate ``length / 2 - 0.5``."""

    def __init__(
        self,
        upsample: nn.Cell,
        size: Union[int, Tuple[int, ...], None],
        scale: Union[float, Tuple[float, ...], None],
    ) -> None:
        super().__init__()
        self.upsample = upsample
        self.size = size[0] if isinstance(size, tuple) else size
        self.scale = scale[0] if isinstance(scale, tuple) else scale

    def construct(self, x: Tensor) -> Tensor:
        length = x.shape[-1]
        out_length = self.size if self.size is not None else math.floor(length * self.scale)
        if out_length != 1:
            return self.upsample(x)
        source = max(length / 2.0 - 0.5, 0.0)
        low = math.floor(source)
        high = min(low + 1, length - 1)
        weight = source - low
        return x[..., low : low + 1] * (1.0 - weight) + x[..., high : high + 1] * weight


@translates(torch.nn.Upsample)
def upsample(module: torch.nn.Upsample, ctx: Context) -> nn.Cell:
    scale, recompute = _scale(module, ctx)
    size = tuple(module.size) if isinstance(module.size, (tuple, list)) else module.size
    cell = nn.Upsample(
        size=size,
        scale_factor=scale,
        mode=module.mode,
        align_corners=module.align_corners,
        recompute_scale_factor=recompute,
    )
    if module.mode == "linear" and not module.align_corners:
        return LinearUpsample(cell, size, scale)
    return cell


@translates(torch.nn.UpsamplingNearest2d, torch.nn.UpsamplingBilinear2d)
def upsampling_2d(module: torch.nn.Upsample, ctx: Context) -> nn.Cell:
    return upsample(module, ctx)


_CONSTANT = {
    torch.nn.ConstantPad1d: nn.ConstantPad1d,
    torch.nn.ConstantPad2d: nn.ConstantPad2d,
    torch.nn.ConstantPad3d: nn.ConstantPad3d,
    torch.nn.ZeroPad1d: nn.ConstantPad1d,
    torch.nn.ZeroPad2d: nn.ConstantPad2d,
    torch.nn.ZeroPad3d: nn.ConstantPad3d,
}
_EDGE = {
    torch.nn.ReflectionPad1d: nn.ReflectionPad1d,
    torch.nn.ReflectionPad2d: nn.ReflectionPad2d,
    torch.nn.ReflectionPad3d: nn.ReflectionPad3d,
    torch.nn.ReplicationPad1d: nn.ReplicationPad1d,
    torch.nn.ReplicationPad2d: nn.ReplicationPad2d,
    torch.nn.ReplicationPad3d: nn.ReplicationPad3d,
}


@translates(*_CONSTANT)
def constant_pad(module: torch.nn.modules.padding._ConstantPadNd, ctx: Context) -> nn.Cell:
    if min(module.padding) < 0:
        return CroppingPad(module.padding, float(module.value))
    if ctx.kind is torch.nn.ZeroPad2d:
        return nn.ZeroPad2d(tuple(module.padding))
    return _CONSTANT[ctx.layer_class](tuple(module.padding), float(module.value))


@translates(*_EDGE)
def edge_pad(
    module: Union[torch.nn.modules.padding._ReflectionPadNd, torch.nn.modules.padding._ReplicationPadNd], ctx: Context
) -> nn.Cell:
    return _EDGE[ctx.layer_class](tuple(module.padding))


@translates(torch.nn.CircularPad1d, torch.nn.CircularPad2d, torch.nn.CircularPad3d)
def circular_pad(module: torch.nn.modules.padding._CircularPadNd, ctx: Context) -> nn.Cell:
    return CircularPad(module.padding)


@translates(torch.nn.PixelShuffle)
def pixel_shuffle(module: torch.nn.PixelShuffle, ctx: Context) -> nn.Cell:
    return nn.PixelShuffle(module.upscale_factor)


@translates(torch.nn.PixelUnshuffle)
def pixel_unshuffle(module: torch.nn.PixelUnshuffle, ctx: Context) -> nn.Cell:
    return nn.PixelUnshuffle(module.downscale_factor)


@translates(torch.nn.ChannelShuffle)
def channel_shuffle(module: torch.nn.ChannelShuffle, ctx: Context) -> nn.Cell:
    return nn.ChannelShuffle(module.groups)
