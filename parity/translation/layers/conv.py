"""Convolutions: ``Conv1d/2d/3d`` and ``ConvTranspose1d/2d/3d``.

MindSpore facts this relies on (mindspore 2.10, ``mindspore/nn/layer/conv.py``):

* ``pad_mode`` defaults to ``"same"`` and ``has_bias`` to ``False``: both are always passed.
  ``padding=n`` becomes ``pad_mode="pad"`` with ``padding`` per side: an int for the 1-d Cells,
  ``(top, bottom, left, right)`` for 2-d and ``(head, tail, top, bottom, left, right)`` for 3-d.
  PyTorch's ``padding="same"``/``"valid"`` are MindSpore's ``pad_mode="same"``/``"valid"`` (both put
  an odd excess after).
* ``Conv1d``/``Conv1dTranspose`` keep a 4-d weight ``(out, in, 1, k)``: parity pairs it with
  PyTorch's 3-d weight across the unit dim.
* ``padding_mode`` (reflect, replicate, circular) does not exist: the input is padded with
  ``ops.pad`` first and the convolution runs with ``pad_mode="valid"``. ``ops.pad`` has no
  5-d reflect kernel on CPU, so ``Conv3d(padding_mode="reflect")`` is unsupported there.
* The transposed Cells add ``output_padding`` as zeros after the bias. PyTorch computes those rows,
  so where ``output_padding <= padding`` the translation crops less at the end instead
  (asymmetric ``padding``); ``Conv3dTranspose``'s kernel computes ``output_padding`` itself.
"""

from __future__ import annotations

from typing import Dict, List, Tuple, Union

import torch
from mindspore import Tensor, nn, ops

from .table import Context, ntuple, single, translates

__all__ = ["PaddedConv1d", "PaddedConv2d", "PaddedConv3d", "Conv1dTransposeCropped"]


class PaddedConv1d(nn.Conv1d):
    """``nn.Conv1d`` after ``ops.pad(x, torch_pads, mode)`` (one class per rank, no mixin: GRAPH
    mode resolves ``super()`` against the instance's own class)."""

    def construct(self, x: Tensor) -> Tensor:
        return super().construct(ops.pad(x, self.torch_pads, mode=self.torch_padding_mode))


class PaddedConv2d(nn.Conv2d):
    """``nn.Conv2d`` after ``ops.pad(x, torch_pads, mode)``."""

    def construct(self, x: Tensor) -> Tensor:
        return super().construct(ops.pad(x, self.torch_pads, mode=self.torch_padding_mode))


class PaddedConv3d(nn.Conv3d):
    """``nn.Conv3d`` after ``ops.pad(x, torch_pads, mode)``."""

    def construct(self, x: Tensor) -> Tensor:
        return super().construct(ops.pad(x, self.torch_pads, mode=self.torch_padding_mode))


class Conv1dTransposeCropped(nn.Conv2dTranspose):
    """``ConvTranspose1d`` with ``output_padding``: ``nn.Conv1dTranspose`` has none and pads only
    symmetrically, so this runs ``nn.Conv2dTranspose`` over a unit height with a shorter end crop."""

    def construct(self, x: Tensor) -> Tensor:
        return super().construct(x.expand_dims(2)).squeeze(2)


_CONV = {
    torch.nn.Conv1d: (nn.Conv1d, PaddedConv1d),
    torch.nn.Conv2d: (nn.Conv2d, PaddedConv2d),
    torch.nn.Conv3d: (nn.Conv3d, PaddedConv3d),
}
_TRANSPOSED = {
    torch.nn.ConvTranspose1d: nn.Conv1dTranspose,
    torch.nn.ConvTranspose2d: nn.Conv2dTranspose,
    torch.nn.ConvTranspose3d: nn.Conv3dTranspose,
}


def _per_side(sides: List[Tuple[int, int]], nd: int):
    """[(before, after)] per spatial dim -> MindSpore's ``padding`` (an int for 1-d Cells)."""
    if nd == 1:
        return sides[0][0]
    return tuple(p for pair in sides for p in pair)


def _sides(module, nd: int) -> List[Tuple[int, int]]:
    """(before, after) per spatial dim for numeric padding or ``"same"``, as PyTorch computes them."""
    if module.padding == "same":
        totals = [d * (k - 1) for d, k in zip(ntuple(module.dilation, nd), ntuple(module.kernel_size, nd))]
        return [(t // 2, t - t // 2) for t in totals]
    if module.padding == "valid":
        return [(0, 0)] * nd
    return [(p, p) for p in ntuple(module.padding, nd)]


def _common(module, nd: int) -> dict:
    sizes: Dict[str, Union[int, Tuple[int, ...]]] = {
        k: ntuple(getattr(module, k), nd) for k in ("kernel_size", "stride", "dilation")
    }
    if nd == 1:
        sizes = {k: single(v) for k, v in sizes.items()}
    return dict(
        in_channels=module.in_channels,
        out_channels=module.out_channels,
        group=module.groups,
        has_bias=module.bias is not None,
        **sizes,
    )


@translates(*_CONV)
def conv(module: Union[torch.nn.Conv1d, torch.nn.Conv2d, torch.nn.Conv3d], ctx: Context) -> nn.Cell:
    nd = len(module.kernel_size)
    plain, padded = _CONV[ctx.layer_class]
    kwargs = _common(module, nd)
    if module.padding_mode == "zeros":
        if isinstance(module.padding, str):
            return plain(pad_mode=module.padding, **kwargs)
        return plain(pad_mode="pad", padding=_per_side(_sides(module, nd), nd), **kwargs)
    mode = module.padding_mode  # ops.pad names the modes like PyTorch: reflect, replicate, circular
    ctx.require(
        not (mode == "reflect" and nd == 3 and ctx.device == "CPU"),
        "padding_mode='reflect' needs a 5-d reflect pad, which MindSpore's ops.pad lacks on CPU",
    )
    cell: nn.Cell = padded(pad_mode="valid", **kwargs)
    cell.torch_pads = tuple(p for pair in reversed(_sides(module, nd)) for p in pair)
    cell.torch_padding_mode = mode
    return cell


def _transposed_padding(module, ctx: Context, nd: int):
    """(padding, output_padding) for MindSpore: crop ``output_padding`` less at the end if it fits."""
    pads, extra = ntuple(module.padding, nd), ntuple(module.output_padding, nd)
    if all(e <= p for e, p in zip(extra, pads)):
        return [(p, p - e) for p, e in zip(pads, extra)], (0,) * nd
    ctx.require(
        module.bias is None or nd == 3,
        "output_padding larger than padding: MindSpore fills those rows with zeros after adding "
        "the bias, PyTorch computes them (equal only without bias)",
    )
    return [(p, p) for p in pads], extra


@translates(*_TRANSPOSED)
def conv_transpose(
    module: Union[torch.nn.ConvTranspose1d, torch.nn.ConvTranspose2d, torch.nn.ConvTranspose3d], ctx: Context
) -> nn.Cell:
    nd = len(module.kernel_size)
    kwargs = _common(module, nd)
    sides, extra = _transposed_padding(module, ctx, nd)
    if nd == 1 and (sides[0][0] != sides[0][1] or any(extra)):
        kwargs.update(
            kernel_size=(1, kwargs["kernel_size"]), stride=(1, kwargs["stride"]), dilation=(1, kwargs["dilation"])
        )
        if any(extra):
            kwargs["output_padding"] = (0,) + extra
        return Conv1dTransposeCropped(pad_mode="pad", padding=(0, 0) + sides[0], **kwargs)
    if any(extra):
        kwargs["output_padding"] = extra
    if nd == 1:
        return nn.Conv1dTranspose(pad_mode="pad", padding=sides[0][0], **kwargs)
    return _TRANSPOSED[ctx.layer_class](pad_mode="pad", padding=_per_side(sides, nd), **kwargs)
