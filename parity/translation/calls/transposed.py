"""Transposed convolutions as functions in the call table: ``F.conv_transpose1d``/``2d``/``3d``
(``torch.conv_transpose1d``/...), composed as the convolution they are the gradient of.

The input is spread by ``stride`` (zeros between its elements), padded by ``dilation * (k - 1) -
padding`` on each side (cropped where that is negative) and by ``output_padding`` after, and
convolved at stride 1 with the kernel flipped and its input and output channels swapped within
each group.
"""

from __future__ import annotations

from typing import Dict, Optional, Sequence, Tuple, Union

from mindspore import Tensor, ops

from .arguments import Adapter, Entry
from .convolution import conv2d, conv3d

__all__ = ["FUNCTIONS", "METHODS"]

Size = Union[int, Sequence[int]]


def _each(value: Size, count: int) -> Tuple[int, ...]:
    if isinstance(value, int):
        return (value,) * count
    value = tuple(value)
    return value * count if len(value) == 1 else value


def _spread(x: Tensor, axis: int, stride: int) -> Tensor:
    """Zeros between the elements of ``x`` along ``axis``: ``stride - 1`` after each but the last."""
    if stride == 1:
        return x
    moved = ops.moveaxis(x, axis, -1)
    length = moved.shape[-1]
    zeros = ops.zeros(moved.shape + (stride - 1,), x.dtype)
    spread = ops.cat([ops.expand_dims(moved, -1), zeros], -1).reshape(moved.shape[:-1] + (length * stride,))
    return ops.moveaxis(spread[..., : (length - 1) * stride + 1], -1, axis)


def _pad(x: Tensor, axis: int, before: int, after: int) -> Tensor:
    """Zeros before and after ``x`` along ``axis``; a negative width crops."""
    if before < 0:
        x = x[(slice(None),) * axis + (slice(-before, None),)]
        before = 0
    if after < 0:
        x = x[(slice(None),) * axis + (slice(0, x.shape[axis] + after),)]
        after = 0
    parts = []
    if before:
        parts.append(ops.zeros(x.shape[:axis] + (before,) + x.shape[axis + 1 :], x.dtype))
    parts.append(x)
    if after:
        parts.append(ops.zeros(x.shape[:axis] + (after,) + x.shape[axis + 1 :], x.dtype))
    return ops.cat(parts, axis) if len(parts) > 1 else x


def _conv_transpose(
    spatial: int,
    input: Tensor,
    weight: Tensor,
    bias: Optional[Tensor],
    stride: Size,
    padding: Size,
    output_padding: Size,
    groups: int,
    dilation: Size,
) -> Tensor:
    if isinstance(padding, str):
        raise TypeError(f"conv_transpose{spatial}d(padding={padding!r}) is not translated: PyTorch takes numbers")
    unbatched = input.ndim == spatial + 1
    x = input.expand_dims(0) if unbatched else input
    strides, pads = _each(stride, spatial), _each(padding, spatial)
    extra, dilations = _each(output_padding, spatial), _each(dilation, spatial)
    kernel = weight.shape[2:]
    for i in range(spatial):
        axis = 2 + i
        x = _spread(x, axis, strides[i])
        edge = dilations[i] * (kernel[i] - 1) - pads[i]
        x = _pad(x, axis, edge, edge + extra[i])
    c_in, c_out = weight.shape[0], weight.shape[1]
    flipped = ops.flip(weight, tuple(range(2, 2 + spatial)))
    grouped = flipped.reshape((groups, c_in // groups, c_out) + kernel)
    turned = ops.swapaxes(grouped, 1, 2).reshape((groups * c_out, c_in // groups) + kernel)
    if spatial == 1:
        out = conv2d(x.expand_dims(2), turned.expand_dims(2), None, 1, 0, (1, dilations[0]), groups).squeeze(2)
    elif spatial == 2:
        out = conv2d(x, turned, None, 1, 0, dilations, groups)
    else:
        out = conv3d(x, turned, None, 1, 0, dilations, groups)
    if bias is not None:
        out = out + bias.reshape((1, -1) + (1,) * spatial)
    return out.squeeze(0) if unbatched else out


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    return _conv_transpose(1, input, weight, bias, stride, padding, output_padding, groups, dilation)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    return _conv_transpose(2, input, weight, bias, stride, padding, output_padding, groups, dilation)


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    return _conv_transpose(3, input, weight, bias, stride, padding, output_padding, groups, dilation)


FUNCTIONS: Dict[str, Entry] = {
    "torch.conv_transpose1d": conv_transpose1d,
    "torch.conv_transpose2d": conv_transpose2d,
    "torch.conv_transpose3d": conv_transpose3d,
    "torch.nn.functional.conv_transpose1d": conv_transpose1d,
    "torch.nn.functional.conv_transpose2d": conv_transpose2d,
    "torch.nn.functional.conv_transpose3d": conv_transpose3d,
}
METHODS: Dict[str, Adapter] = {}
