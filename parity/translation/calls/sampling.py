"""Sampling an image at given coordinates in the call table: ``F.grid_sample`` (its 4-d form) and
the ATen-level ``torch.grid_sampler_2d``, MindSpore's ``ops.grid_sample``, which takes PyTorch's
modes and padding modes by name (the ATen form numbers them: 0 bilinear, 1 nearest, 2 bicubic;
0 zeros, 1 border, 2 reflection). Bicubic sampling is refused.

MindSpore 2.10's CPU backward logs "memcpy_s failed" from its GridSampler2DGrad kernel; the
gradients it returns agree with PyTorch's on every bilinear and nearest sample of PyTorch's
operator database.
"""

from __future__ import annotations

from typing import Dict, Optional

from mindspore import Tensor, ops

from .arguments import Adapter, Entry

__all__ = ["FUNCTIONS", "METHODS"]

_MODES = ("bilinear", "nearest", "bicubic")
_PADDINGS = ("zeros", "border", "reflection")


def grid_sample(
    input: Tensor,
    grid: Tensor,
    mode: str = "bilinear",
    padding_mode: str = "zeros",
    align_corners: Optional[bool] = None,
) -> Tensor:
    if input.ndim != 4:
        raise TypeError(f"grid_sample of a {input.ndim}-d input is not translated (only 4-d: N, C, H, W)")
    if mode not in ("bilinear", "nearest"):
        raise TypeError(f"grid_sample(mode={mode!r}) is not translated (bilinear and nearest are)")
    if padding_mode not in _PADDINGS:
        raise TypeError(f"grid_sample(padding_mode={padding_mode!r}): PyTorch knows {', '.join(_PADDINGS)}")
    return ops.grid_sample(input, grid, mode, padding_mode, bool(align_corners))


def grid_sampler_2d(
    input: Tensor, grid: Tensor, interpolation_mode: int, padding_mode: int, align_corners: bool
) -> Tensor:
    return grid_sample(input, grid, _MODES[interpolation_mode], _PADDINGS[padding_mode], align_corners)


FUNCTIONS: Dict[str, Entry] = {
    "torch.nn.functional.grid_sample": grid_sample,
    "torch.grid_sampler_2d": grid_sampler_2d,
}
METHODS: Dict[str, Adapter] = {}
