"""Convolutions as functions in the call table: ``F.conv1d``/``F.conv2d``/``F.conv3d``
(``torch.conv1d``/``torch.conv2d``/``torch.conv3d``), as timm's ``Conv2dSame``, LeViT and the
NF-Net family call them with a module's own weights.

PyTorch pads each side of a dimension alike (``padding=(1, 2)``: 1 above and below, 2 left and
right), or says ``"same"``/``"valid"``; MindSpore's ``ops.conv2d`` takes the same as ``pad_mode``
(``"pad"`` with the two widths). A 1-d convolution runs as a 2-d one over a height of 1.
"""

from __future__ import annotations

from typing import Dict, Optional, Tuple, Union

from mindspore import Tensor, ops

from .arguments import Adapter, Entry

__all__ = ["FUNCTIONS", "METHODS"]

Pair = Union[int, Tuple[int, ...]]


def _pair(value: Pair) -> Tuple[int, int]:
    return (value, value) if isinstance(value, int) else (value[0], value[-1])


def conv2d(
    input: Tensor,
    weight: Tensor,
    bias: Optional[Tensor] = None,
    stride: Pair = 1,
    padding: Union[str, Pair] = 0,
    dilation: Pair = 1,
    groups: int = 1,
) -> Tensor:
    widths: Pair = 0
    if isinstance(padding, str):
        if padding == "same" and _pair(stride) != (1, 1):
            raise TypeError("conv2d with padding='same' and a stride (PyTorch refuses it too) is not translated")
        mode = padding
    else:
        mode, widths = ("pad", _pair(padding)) if any(_pair(padding)) else ("valid", 0)
    out = ops.conv2d(input, weight, None, _pair(stride), mode, widths, _pair(dilation), groups)
    return out if bias is None else out + bias.reshape(1, -1, 1, 1)


def conv1d(
    input: Tensor,
    weight: Tensor,
    bias: Optional[Tensor] = None,
    stride: Pair = 1,
    padding: Union[str, Pair] = 0,
    dilation: Pair = 1,
    groups: int = 1,
) -> Tensor:
    along = padding if isinstance(padding, str) else (0, _pair(padding)[0])
    if weight.ndim == 3:  # PyTorch's layout; a translated nn.Conv1d keeps MindSpore's (out, in, 1, k)
        weight = weight.expand_dims(2)
    out = conv2d(
        input.expand_dims(2), weight, None, (1, _pair(stride)[0]), along, (1, _pair(dilation)[0]), groups
    ).squeeze(2)
    return out if bias is None else out + bias.reshape(1, -1, 1)


def _triple(value: Pair) -> Tuple[int, int, int]:
    return (value,) * 3 if isinstance(value, int) else tuple(value) * (3 // len(value))  # type: ignore[return-value]


def conv3d(
    input: Tensor,
    weight: Tensor,
    bias: Optional[Tensor] = None,
    stride: Pair = 1,
    padding: Union[str, Pair] = 0,
    dilation: Pair = 1,
    groups: int = 1,
) -> Tensor:
    """``ops.conv3d``, which takes PyTorch's padding (each dimension's, on both of its sides)."""
    unbatched = input.ndim == 4
    if unbatched:
        input = input.expand_dims(0)
    widths: Union[int, Tuple[int, ...]] = 0
    if isinstance(padding, str):
        mode = padding
    else:
        widths = _triple(padding)
        mode = "pad" if any(widths) else "valid"
        widths = widths if any(widths) else 0
    out = ops.conv3d(input, weight, None, _triple(stride), mode, widths, _triple(dilation), groups)
    out = out if bias is None else out + bias.reshape(1, -1, 1, 1, 1)
    return out.squeeze(0) if unbatched else out


FUNCTIONS: Dict[str, Entry] = {
    "torch.conv2d": conv2d,
    "torch.conv1d": conv1d,
    "torch.nn.functional.conv2d": conv2d,
    "torch.nn.functional.conv1d": conv1d,
    "torch.conv3d": conv3d,
    "torch.nn.functional.conv3d": conv3d,
}
METHODS: Dict[str, Adapter] = {}
