"""Layers as functions in the call table: ``F.linear``, ``F.embedding``, the functional norms,
pools, ``F.pad``, ``F.interpolate``, ``F.scaled_dot_product_attention`` and torchvision's
``stochastic_depth``.

What each adapter closes, as read from mindspore 2.10 on CPU:

* ``F.layer_norm`` goes through the ``LayerNorm`` primitive ``nn.LayerNorm`` uses (``ops.layer_norm``'s
  kernel is not on CPU); ``F.group_norm`` is ``ops.group_norm`` (its kernel is on CPU).
* ``F.batch_norm`` goes through the ``BatchNorm`` primitive ``nn.BatchNorm2d`` uses, whose
  ``momentum`` is PyTorch's (the weight of the new batch; ``nn.BatchNorm2d`` takes the other
  convention, known mismatch ``batchnorm2d-momentum-convention``) and which updates the running
  statistics in place, with the unbiased variance, as PyTorch does. It takes 2-d and 4-d inputs:
  others are reshaped to 4-d. ``momentum=None`` (a cumulative average) is refused, as for the layer
  (``batchnorm2d-momentum-none-unsupported``).
* ``F.embedding``'s ``padding_idx`` row gets no gradient, as in PyTorch.
* ``stochastic_depth`` in train mode draws random numbers, and MindSpore's are not PyTorch's: its
  validator refuses it from its constant arguments when the trace is made (run the check in eval mode).
"""

from __future__ import annotations

import collections
import math
from typing import Dict, Optional, Sequence, Tuple, Union

import mindspore as ms
import numpy as np
from mindspore import Tensor, ops

from . import pooling
from .arguments import Adapter, Entry, Size

__all__ = ["FUNCTIONS", "METHODS"]


def linear(input: Tensor, weight: Tensor, bias: Optional[Tensor] = None) -> Tensor:
    return ops.dense(input, weight, bias)


def embedding(
    input: Tensor,
    weight: Tensor,
    padding_idx: Optional[int] = None,
    max_norm: Optional[float] = None,
    norm_type: float = 2.0,
    scale_grad_by_freq: bool = False,
    sparse: bool = False,
) -> Tensor:
    """Rows of ``weight``; the ``padding_idx`` row gets no gradient, as in PyTorch."""
    if max_norm is not None or scale_grad_by_freq:
        raise TypeError("embedding(max_norm=..., scale_grad_by_freq=True) is not translated")
    if padding_idx is not None:
        row = ops.arange(weight.shape[0]).reshape(-1, 1) == (padding_idx % weight.shape[0])
        weight = ops.where(row, ops.stop_gradient(weight), weight)
    return ops.gather(weight, input, 0)


def layer_norm(
    input: Tensor,
    normalized_shape: Sequence[int],
    weight: Optional[Tensor] = None,
    bias: Optional[Tensor] = None,
    eps: float = 1e-5,
) -> Tensor:
    """The ``LayerNorm`` primitive ``nn.LayerNorm`` uses (``ops.layer_norm``'s kernel is not on CPU), over
    the normalized dimensions flattened into one (the primitive needs a dimension before them)."""
    shape = tuple(normalized_shape) if isinstance(normalized_shape, (tuple, list)) else (normalized_shape,)
    size = int(math.prod(shape))
    lead = tuple(input.shape[: input.ndim - len(shape)])
    weight = ops.ones((size,), input.dtype) if weight is None else ops.reshape(weight, (size,))
    bias = ops.zeros((size,), input.dtype) if bias is None else ops.reshape(bias, (size,))
    flat = ops.reshape(input, (int(math.prod(lead)), size))
    out = ops.LayerNorm(begin_norm_axis=-1, begin_params_axis=-1, epsilon=eps)(flat, weight, bias)[0]
    return ops.reshape(out, tuple(input.shape))


def batch_norm(
    input: Tensor,
    running_mean: Optional[Tensor],
    running_var: Optional[Tensor],
    weight: Optional[Tensor] = None,
    bias: Optional[Tensor] = None,
    training: bool = False,
    momentum: Optional[float] = 0.1,
    eps: float = 1e-5,
) -> Tensor:
    if momentum is None:
        raise TypeError("batch_norm(momentum=None) (a cumulative moving average) has no MindSpore counterpart")
    channels = input.shape[1]
    weight = ops.ones((channels,), input.dtype) if weight is None else weight
    bias = ops.zeros((channels,), input.dtype) if bias is None else bias
    if running_mean is None or running_var is None:
        if not training:
            raise TypeError("batch_norm without running statistics needs training=True (PyTorch raises too)")
        return _batch_statistics_norm(input, weight, bias, eps)
    shape = input.shape
    flat = input if input.ndim in (2, 4) else ops.reshape(input, (shape[0], channels, -1, 1))
    out = ops.BatchNorm(is_training=bool(training), epsilon=float(eps), momentum=float(momentum))(
        flat, weight, bias, running_mean, running_var
    )[0]
    return out if input.ndim in (2, 4) else ops.reshape(out, shape)


def _batch_statistics_norm(input, weight, bias, eps):
    axes = (0,) + tuple(range(2, input.ndim))
    mean = ops.mean(input, axes, True)
    var = ops.mean(ops.square(input - mean), axes, True)
    view = (1, -1) + (1,) * (input.ndim - 2)
    return (input - mean) * ops.rsqrt(var + eps) * ops.reshape(weight, view) + ops.reshape(bias, view)


def group_norm(
    input: Tensor, num_groups: int, weight: Optional[Tensor] = None, bias: Optional[Tensor] = None, eps: float = 1e-5
) -> Tensor:
    return ops.group_norm(input, num_groups, weight, bias, float(eps))


def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12, out: object = None) -> Tensor:
    norm = ops.norm(input, p, dim, True)
    return input / ops.clamp(norm, min=eps)


# an adaptive pool's output size: one for every dimension or one per dimension, None keeping the input's
_OutputSize = Union[int, None, Sequence[Optional[int]]]


def _pooled_size(input, output_size, n):
    sizes = output_size if isinstance(output_size, (tuple, list)) else (output_size,) * n
    return tuple(input.shape[-n + i] if s is None else s for i, s in enumerate(sizes))


def adaptive_avg_pool2d(input: Tensor, output_size: _OutputSize) -> Tensor:
    return ops.adaptive_avg_pool2d(input, _pooled_size(input, output_size, 2))


def adaptive_max_pool2d(
    input: Tensor, output_size: _OutputSize, return_indices: bool = False
) -> Union[Tensor, Tuple[Tensor, Tensor]]:
    return ops.adaptive_max_pool2d(input, _pooled_size(input, output_size, 2), return_indices)


def avg_pool2d(
    input: Tensor,
    kernel_size: Size,
    stride: Optional[Size] = None,
    padding: Size = 0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
    divisor_override: Optional[int] = None,
) -> Tensor:
    if ceil_mode or divisor_override:  # MindSpore's gradient is wrong on CPU with these
        return pooling.avg_pool2d(input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)
    return ops.avg_pool2d(
        input,
        kernel_size,
        stride if stride else kernel_size,
        padding,
        ceil_mode,
        count_include_pad,
        divisor_override or 0,
    )


def max_pool2d(
    input: Tensor,
    kernel_size: Size,
    stride: Optional[Size] = None,
    padding: Size = 0,
    dilation: Size = 1,
    ceil_mode: bool = False,
    return_indices: bool = False,
) -> Union[Tensor, Tuple[Tensor, Tensor]]:
    if input.ndim == 3:  # unbatched: MindSpore's pool takes a batch
        return pooling.max_pool2d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)
    return ops.max_pool2d(
        input, kernel_size, stride if stride else kernel_size, padding, dilation, return_indices, ceil_mode
    )


def pad(input: Tensor, pad: Sequence[int], mode: str = "constant", value: Optional[float] = None) -> Tensor:
    return ops.pad(input, tuple(pad), mode, value)


def interpolate(
    input: Tensor,
    size: Optional[Size] = None,
    scale_factor: Union[float, Sequence[float], None] = None,
    mode: str = "nearest",
    align_corners: Optional[bool] = None,
    recompute_scale_factor: Optional[bool] = None,
    antialias: bool = False,
) -> Tensor:
    if antialias:
        raise TypeError("interpolate(antialias=True) is not translated")
    if scale_factor is not None:  # MindSpore samples by the sizes: give it the size PyTorch makes
        spatial = input.shape[2:]
        factors = tuple(scale_factor) if isinstance(scale_factor, (tuple, list)) else (scale_factor,) * len(spatial)
        sizes = [n * f for n, f in zip(spatial, factors)]
        exact = recompute_scale_factor or mode == "area"  # an area's windows depend on the sizes only
        if not exact and not all(float(s).is_integer() for s in sizes):
            raise TypeError(
                f"scale_factor={scale_factor} makes {sizes} pixels: PyTorch samples by 1/scale_factor, "
                "MindSpore by the sizes (pass recompute_scale_factor=True or size=)"
            )
        size = tuple(int(math.floor(s)) for s in sizes)
    if mode == "area":  # an adaptive average pool: MindSpore's takes only sizes the output divides
        return pooling.adaptive_average(
            input, tuple(size) if isinstance(size, (tuple, list)) else (size,) * (input.ndim - 2)
        )
    return ops.interpolate(input, size, None, mode, align_corners)


def scaled_dot_product_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    attn_mask: Optional[Tensor] = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    scale: Optional[float] = None,
    enable_gqa: bool = False,
) -> Tensor:
    """softmax(q k^T * scale + mask) v, as PyTorch's reference implementation defines it: ``enable_gqa``
    repeats each key/value head for its group of query heads (``repeat_interleave``), and a query
    that may attend to nothing gets zeros, as PyTorch gives. Masked scores are filled with the
    dtype's smallest value, never ``-inf``: MindSpore's CPU softmax breaks on a row of ``-inf``
    (known mismatch ``attention-mask-inf-vs-finfo-min``)."""
    if enable_gqa and key.shape[-3] != query.shape[-3]:
        groups = query.shape[-3] // key.shape[-3]
        key, value = ops.repeat_interleave(key, groups, -3), ops.repeat_interleave(value, groups, -3)
    scale = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    scores = ops.matmul(query * scale, ops.swapaxes(key, -2, -1))
    length, source = query.shape[-2], key.shape[-2]
    blocked = None
    if is_causal:
        blocked = ~ops.tril(ops.ones((length, source), ms.bool_))
    if attn_mask is not None:
        if attn_mask.dtype == ms.bool_:
            blocked = ~attn_mask if blocked is None else ops.logical_or(blocked, ~attn_mask)
        else:
            scores = scores + attn_mask
    infinite = ops.isinf(scores) & (scores < 0)
    blocked = infinite if blocked is None else ops.logical_or(ops.broadcast_to(blocked, scores.shape), infinite)
    smallest = float(np.finfo(ms.dtype_to_nptype(scores.dtype)).min)
    weights = ops.softmax(ops.masked_fill(scores, blocked, ms.Tensor(smallest, scores.dtype)), -1)
    weights = ops.masked_fill(weights, ops.all(blocked, -1, True), ms.Tensor(0, weights.dtype))
    if dropout_p > 0:
        weights = ops.dropout(weights, p=dropout_p, training=True)
    return ops.matmul(weights, value)


def stochastic_depth(input: Tensor, p: float, mode: str, training: bool = True) -> Tensor:
    return input  # the validator lets only the identity through


def _stochastic_depth_check(args, kwargs) -> Optional[str]:
    names = ("input", "p", "mode", "training")
    bound = dict(zip(names, args), **kwargs)
    if bound.get("training", True) and bound.get("p", 0) > 0:
        return (
            f"in train mode with p={bound['p']} it drops random samples, and MindSpore's random numbers "
            "are not PyTorch's (run the check in eval mode)"
        )
    return None


_EPS = {
    ms.float16: float(np.finfo(np.float16).eps),
    ms.float32: float(np.finfo(np.float32).eps),
    ms.float64: float(np.finfo(np.float64).eps),
    ms.bfloat16: 2.0**-7,
}


def rms_norm(
    input: Tensor, normalized_shape: Sequence[int], weight: Optional[Tensor] = None, eps: Optional[float] = None
) -> Tensor:
    """``x / sqrt(mean(x^2) + eps)`` over the normalized dimensions (``eps``: the dtype's epsilon by default)."""
    shape = tuple(normalized_shape) if isinstance(normalized_shape, (tuple, list)) else (normalized_shape,)
    if eps is None:
        eps = _EPS.get(input.dtype, float(np.finfo(np.float32).eps))
    axes = tuple(range(input.ndim - len(shape), input.ndim))
    out = input * ops.rsqrt(ops.mean(input * input, axes, True) + eps)
    return out if weight is None else out * weight


def instance_norm(
    input: Tensor,
    running_mean: Optional[Tensor] = None,
    running_var: Optional[Tensor] = None,
    weight: Optional[Tensor] = None,
    bias: Optional[Tensor] = None,
    use_input_stats: bool = True,
    momentum: float = 0.1,
    eps: float = 1e-5,
) -> Tensor:
    """Each sample's channels normalized over their own positions (the running statistics, when given
    with ``use_input_stats``, are refused by the validator: PyTorch updates them in place)."""
    view = (1, -1) + (1,) * (input.ndim - 2)
    if use_input_stats:
        axes = tuple(range(2, input.ndim))
        mean = ops.mean(input, axes, True)
        var = ops.mean(ops.square(input - mean), axes, True)
    else:
        mean, var = ops.reshape(running_mean, view), ops.reshape(running_var, view)
    out = (input - mean) * ops.rsqrt(var + eps)
    if weight is not None:
        out = out * ops.reshape(weight, view)
    return out if bias is None else out + ops.reshape(bias, view)


def _instance_norm_check(args, kwargs) -> Optional[str]:
    names = ("input", "running_mean", "running_var", "weight", "bias", "use_input_stats")
    bound = dict(zip(names, args), **kwargs)
    if bound.get("use_input_stats", True) and (
        bound.get("running_mean") is not None or bound.get("running_var") is not None
    ):
        return "with running statistics and use_input_stats=True it updates them in place, which is not translated"
    return None


def local_response_norm(input: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0) -> Tensor:
    """``x / (k + alpha * mean of x^2 over the ``size`` neighbouring channels, zero-padded) ** beta``."""
    channels = input.shape[1]
    band = np.zeros((channels, channels), np.float32)
    for c in range(channels):
        band[max(c - size // 2, 0) : min(c + (size - 1) // 2, channels - 1) + 1, c] = 1.0 / size
    squares = ops.moveaxis(input * input, 1, -1)
    averaged = ops.moveaxis(ops.matmul(squares, ms.Tensor(band, input.dtype)), -1, 1)
    return input / ops.pow(averaged * alpha + k, beta)


def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    return ops.pixel_shuffle(input, upscale_factor)


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:
    return ops.pixel_unshuffle(input, downscale_factor)


_Normalized = collections.namedtuple("_Normalized", ["output", "mean", "rstd"])


def native_layer_norm(
    input: Tensor, normalized_shape: Sequence[int], weight: Optional[Tensor], bias: Optional[Tensor], eps: float
) -> _Normalized:
    """``torch.native_layer_norm``: the output, and the mean and reciprocal deviation it used (which
    carry no gradient in PyTorch)."""
    axes = tuple(range(input.ndim - len(normalized_shape), input.ndim))
    mean = ops.mean(input, axes, True)
    rstd = ops.rsqrt(ops.mean(ops.square(input - mean), axes, True) + eps)
    out = (input - mean) * rstd
    out = out if weight is None else out * weight
    # PyTorch's mean and rstd outputs carry no gradient
    return _Normalized(out if bias is None else out + bias, ops.stop_gradient(mean), ops.stop_gradient(rstd))


def native_group_norm(
    input: Tensor,
    weight: Optional[Tensor],
    bias: Optional[Tensor],
    N: int,
    C: int,
    HxW: int,
    group: int,
    eps: float,
) -> _Normalized:
    """``torch.native_group_norm``: the output, and each (sample, group)'s mean and reciprocal deviation."""
    grouped = ops.reshape(input, (N, group, -1))
    mean = ops.mean(grouped, 2, True)
    rstd = ops.rsqrt(ops.mean(ops.square(grouped - mean), 2, True) + eps)
    out = ops.reshape((grouped - mean) * rstd, tuple(input.shape))
    view = (1, C) + (1,) * (input.ndim - 2)
    if weight is not None:
        out = out * ops.reshape(weight, view)
    if bias is not None:
        out = out + ops.reshape(bias, view)
    return _Normalized(out, ops.reshape(mean, (N, group)), ops.reshape(rstd, (N, group)))


def constant_pad_nd(input: Tensor, pad: Sequence[int], value: float = 0) -> Tensor:
    return ops.pad(input, tuple(pad), "constant", value)


def channel_shuffle(input: Tensor, groups: int) -> Tensor:
    shape = tuple(input.shape)
    grouped = ops.reshape(input, (shape[0], groups, shape[1] // groups) + shape[2:])
    return ops.reshape(ops.swapaxes(grouped, 1, 2), shape)


def feature_dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    return input  # the validator lets only the identity through


def _dropout_check(training_default: bool):
    def check(args, kwargs) -> Optional[str]:
        bound = dict(zip(("input", "p", "training"), args), **kwargs)
        if bound.get("training", training_default) and bound.get("p", 0.5) > 0:
            return (
                f"in train mode with p={bound.get('p', 0.5)} it drops random elements, and MindSpore's random "
                "numbers are not PyTorch's (run the check in eval mode)"
            )
        return None

    return check


FUNCTIONS: Dict[str, Entry] = {
    "torch.nn.functional.linear": linear,
    "torch.nn.functional.embedding": embedding,
    "torch.nn.functional.layer_norm": layer_norm,
    "torch.nn.functional.batch_norm": batch_norm,
    "torch.nn.functional.group_norm": group_norm,
    "torch.nn.functional.normalize": normalize,
    "torch.nn.functional.adaptive_avg_pool2d": adaptive_avg_pool2d,
    "torch.nn.functional.adaptive_max_pool2d": adaptive_max_pool2d,
    "torch.nn.functional.avg_pool2d": avg_pool2d,
    "torch.nn.functional.max_pool2d": max_pool2d,
    "torch.nn.functional.pad": pad,
    "torch.nn.functional.interpolate": interpolate,
    "torch.nn.functional.scaled_dot_product_attention": scaled_dot_product_attention,
    "torch.nn.functional.rms_norm": rms_norm,
    "torch.native_layer_norm": native_layer_norm,
    "torch.native_group_norm": native_group_norm,
    "torch.constant_pad_nd": constant_pad_nd,
    "torch.rms_norm": rms_norm,
    "torch.nn.functional.instance_norm": (instance_norm, _instance_norm_check),
    "torch.nn.functional.local_response_norm": local_response_norm,
    "torch.nn.functional.pixel_shuffle": pixel_shuffle,
    "torch.pixel_shuffle": pixel_shuffle,
    "torch.nn.functional.pixel_unshuffle": pixel_unshuffle,
    "torch.pixel_unshuffle": pixel_unshuffle,
    "torch.nn.functional.channel_shuffle": channel_shuffle,
    "torch.channel_shuffle": channel_shuffle,
    "torch.native_channel_shuffle": channel_shuffle,
    "torch.nn.functional.dropout1d": (feature_dropout, _dropout_check(True)),
    "torch.nn.functional.dropout2d": (feature_dropout, _dropout_check(True)),
    "torch.nn.functional.dropout3d": (feature_dropout, _dropout_check(True)),
    "torch.nn.functional.alpha_dropout": (feature_dropout, _dropout_check(False)),
    "torch.nn.functional.feature_alpha_dropout": (feature_dropout, _dropout_check(False)),
    "torchvision.ops.stochastic_depth.stochastic_depth": (stochastic_depth, _stochastic_depth_check),
}
METHODS: Dict[str, Adapter] = {}
