"""Pooling: ``MaxPool1d/2d/3d``, ``AvgPool1d/2d/3d``, ``AdaptiveAvgPool1d/2d/3d``,
``AdaptiveMaxPool1d/2d/3d``, ``LPPool1d/2d``.

MindSpore facts (mindspore 2.10, ``mindspore/nn/layer/pooling.py``): the pooling Cells default to
``kernel_size=1, stride=1, pad_mode="valid"`` (PyTorch: ``stride=kernel_size``), so all three are
always passed. ``padding``, ``dilation``, ``ceil_mode``, ``return_indices`` (max) and
``count_include_pad``/``divisor_override`` (average) need ``pad_mode="pad"``, which runs the 3-d
kernels (``MaxPool3DWithArgmax``, ``AvgPool3D``) over unit dims; ``nn.AvgPool1d`` has no
``divisor_override``. ``nn.AdaptiveAvgPool1d``/``AdaptiveMaxPool1d`` need the length to be a multiple
of the output size (PyTorch does not), so the 1-d adaptive pools run the 2-d Cells over a unit height.
"""

from __future__ import annotations

from typing import Dict, Tuple, Union, cast

import torch
from mindspore import Tensor, nn

from .table import Context, Size, ntuple, single, translates

__all__ = ["AdaptiveAvgPool1dAnyLength", "AdaptiveMaxPool1dAnyLength"]


class AdaptiveAvgPool1dAnyLength(nn.AdaptiveAvgPool2d):
    """``torch.nn.AdaptiveAvgPool1d`` for any input length: the 2-d Cell over ``(N, C, 1, L)``."""

    def construct(self, x: Tensor) -> Tensor:
        return super().construct(x.expand_dims(-2)).squeeze(-2)


class AdaptiveMaxPool1dAnyLength(nn.AdaptiveMaxPool2d):
    """``torch.nn.AdaptiveMaxPool1d`` for any input length; indices into ``1 x L`` are indices into ``L``."""

    def construct(self, x: Tensor) -> Union[Tensor, Tuple[Tensor, Tensor]]:
        out = super().construct(x.expand_dims(-2))
        if self.return_indices:
            return out[0].squeeze(-2), out[1].squeeze(-2)
        return out.squeeze(-2)


_MAX = {torch.nn.MaxPool1d: nn.MaxPool1d, torch.nn.MaxPool2d: nn.MaxPool2d, torch.nn.MaxPool3d: nn.MaxPool3d}
_AVG = {torch.nn.AvgPool1d: nn.AvgPool1d, torch.nn.AvgPool2d: nn.AvgPool2d, torch.nn.AvgPool3d: nn.AvgPool3d}
_ADAPTIVE = {
    torch.nn.AdaptiveAvgPool1d: AdaptiveAvgPool1dAnyLength,
    torch.nn.AdaptiveAvgPool2d: nn.AdaptiveAvgPool2d,
    torch.nn.AdaptiveAvgPool3d: nn.AdaptiveAvgPool3d,
    torch.nn.AdaptiveMaxPool1d: AdaptiveMaxPool1dAnyLength,
    torch.nn.AdaptiveMaxPool2d: nn.AdaptiveMaxPool2d,
    torch.nn.AdaptiveMaxPool3d: nn.AdaptiveMaxPool3d,
}
_LP = {torch.nn.LPPool1d: nn.LPPool1d, torch.nn.LPPool2d: nn.LPPool2d}
_DIMS = {
    torch.nn.MaxPool1d: 1,
    torch.nn.MaxPool2d: 2,
    torch.nn.MaxPool3d: 3,
    torch.nn.AvgPool1d: 1,
    torch.nn.AvgPool2d: 2,
    torch.nn.AvgPool3d: 3,
}


def _sizes(module, nd: int, names) -> dict:
    """Window arguments as MindSpore takes them: ints for 1-d Cells, tuples otherwise (PyTorch
    already stores ``stride=None`` as the kernel size)."""
    found: Dict[str, Union[int, Tuple[int, ...]]] = {}
    for name in names:
        value = ntuple(getattr(module, name), nd)
        found[name] = single(value) if nd == 1 else value
    return found


@translates(*_MAX)
def max_pool(module: Union[torch.nn.MaxPool1d, torch.nn.MaxPool2d, torch.nn.MaxPool3d], ctx: Context) -> nn.Cell:
    nd = _DIMS[ctx.layer_class]
    kwargs = _sizes(module, nd, ("kernel_size", "stride", "padding", "dilation"))
    plain = (
        not any(ntuple(module.padding, nd))
        and set(ntuple(module.dilation, nd)) == {1}
        and not module.ceil_mode
        and not module.return_indices
    )
    if plain:
        return _MAX[ctx.layer_class](kernel_size=kwargs["kernel_size"], stride=kwargs["stride"], pad_mode="valid")
    return _MAX[ctx.layer_class](
        pad_mode="pad", ceil_mode=module.ceil_mode, return_indices=module.return_indices, **kwargs
    )


@translates(*_AVG)
def avg_pool(module: Union[torch.nn.AvgPool1d, torch.nn.AvgPool2d, torch.nn.AvgPool3d], ctx: Context) -> nn.Cell:
    nd = _DIMS[ctx.layer_class]
    kwargs = _sizes(module, nd, ("kernel_size", "stride", "padding"))
    divisor = getattr(module, "divisor_override", None)
    if nd == 1:
        ctx.require(divisor is None, "divisor_override: nn.AvgPool1d has none")
    elif divisor is not None:
        kwargs["divisor_override"] = divisor
    # PyTorch ignores count_include_pad once divisor_override is set; MindSpore's gradient does
    # not (it divides windows over the padding by their real count), so pass True there.
    include_pad = True if divisor is not None else module.count_include_pad
    return _AVG[ctx.layer_class](pad_mode="pad", ceil_mode=module.ceil_mode, count_include_pad=include_pad, **kwargs)


@translates(*_ADAPTIVE)
def adaptive_pool(
    module: Union[torch.nn.modules.pooling._AdaptiveAvgPoolNd, torch.nn.modules.pooling._AdaptiveMaxPoolNd],
    ctx: Context,
) -> nn.Cell:
    size = module.output_size
    cell_type = _ADAPTIVE[ctx.layer_class]
    if cell_type in (AdaptiveAvgPool1dAnyLength, AdaptiveMaxPool1dAnyLength):
        size = (1, single(cast(Size, size)))  # a 1-d pool's: an int or (int,), never None
    if getattr(module, "return_indices", False):
        return cell_type(size, return_indices=True)
    return cell_type(size)


@translates(*_LP)
def lp_pool(module: Union[torch.nn.LPPool1d, torch.nn.LPPool2d], ctx: Context) -> nn.Cell:
    return _LP[ctx.layer_class](
        float(module.norm_type), module.kernel_size, stride=module.stride, ceil_mode=module.ceil_mode
    )
