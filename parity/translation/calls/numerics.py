"""Numerics in the call table composed from MindSpore's CPU operators: ``erfinv`` and ``special.ndtri``,
``special.entr``, ``special.erfcx``, ``frexp``, ``mode``, ``gradient``, ``matrix_exp``,
``nanquantile``, ``histogram``, ``unique``/``unique_consecutive`` (forward only, as PyTorch has
them), ``nonzero_static``, and the ATen operators ``slice.Tensor``, ``_safe_softmax`` and
``_chunk_cat``, which a graph exported from ``torch.ops.aten`` calls.

``erfcx`` runs in float64 (``exp(x**2) * erfc(x)`` loses every digit of a float32 ``erfc`` past
x = 9) and takes the asymptotic series where even float64's ``erfc`` underflows. ``matrix_exp`` is
scaling and squaring over a Taylor polynomial of degree 18, which float32 rounds past.
"""

from __future__ import annotations

import collections
import math
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

import mindspore as ms
import torch
from mindspore import Tensor, nn, ops

from .arguments import Adapter, Entry, made_dtype

__all__ = ["FUNCTIONS", "METHODS", "aten_adapter"]

_Mode = collections.namedtuple("_Mode", ["values", "indices"])
_Frexp = collections.namedtuple("_Frexp", ["mantissa", "exponent"])
_Histogram = collections.namedtuple("_Histogram", ["hist", "bin_edges"])


class _Elementwise(nn.Cell):
    """An element-wise function with the gradient PyTorch defines for it (``derivative(x, y)``)."""

    def __init__(self, value: Callable[[Tensor], Tensor], derivative: Callable[[Tensor, Tensor], Tensor]):
        super().__init__()
        self.value, self.derivative = value, derivative

    def construct(self, x):
        return self.value(x)

    def bprop(self, x, out, dout):
        return (dout * self.derivative(x, out),)


def _erfinv(x: Tensor) -> Tensor:
    """MindSpore's ``erfinv`` (off by up to 0.3% near ±1 in float32) polished by two Newton steps
    on ``erf`` in float64."""
    wide = x.astype(ms.float64)
    y = ops.erfinv(x).astype(ms.float64)
    inside = ops.isfinite(y)
    for _ in range(2):
        step = (ops.erf(y) - wide) / (2.0 / math.sqrt(math.pi) * ops.exp(-y * y))
        y = ops.where(inside, y - step, y)
    return y.astype(x.dtype)


def _erfinv_derivative(x: Tensor, y: Tensor) -> Tensor:
    return math.sqrt(math.pi) / 2.0 * ops.exp(y * y)


def erfinv(input: Tensor) -> Tensor:
    return _Elementwise(_erfinv, _erfinv_derivative)(input)


def ndtri(input: Tensor) -> Tensor:
    return math.sqrt(2.0) * erfinv(2.0 * input - 1.0)


def _entr(x: Tensor) -> Tensor:
    positive = x > 0
    safe = ops.where(positive, x, ops.ones_like(x))
    below = ops.where(x < 0, ops.full_like(x, -math.inf), ops.zeros_like(x))
    return ops.where(positive, -safe * ops.log(safe), ops.where(ops.isnan(x), x, below))


def _entr_derivative(x: Tensor, y: Tensor) -> Tensor:
    return -(ops.log(x) + 1.0)


def entr(input: Tensor) -> Tensor:
    """``-x log x``; 0 at 0, -inf below, NaN at NaN; its gradient ``-(log x + 1)`` everywhere (NaN
    below 0, +inf at 0), as PyTorch has them."""
    return _Elementwise(_entr, _entr_derivative)(input)


def erfcx(input: Tensor) -> Tensor:
    """``exp(x**2) erfc(x)`` in float64; past x = 25 the series ``(1 - 1/(2x²) + 3/(4x⁴)) / (x sqrt(pi))``.
    Its gradient is PyTorch's ``2 x erfcx(x) - 2/sqrt(pi)`` (-inf where the value overflows)."""
    return _Elementwise(_erfcx, _erfcx_derivative)(input)


def _erfcx_derivative(x: Tensor, y: Tensor) -> Tensor:
    return 2.0 * x * y - 2.0 / math.sqrt(math.pi)


def _erfcx(input: Tensor) -> Tensor:
    x = input.astype(ms.float64)
    large = x > 25.0
    near = ops.where(large, ops.zeros_like(x), x)
    direct = ops.exp(near * near) * ops.erfc(near)
    far = ops.where(large, x, ops.full_like(x, 25.0))
    inverse = 1.0 / (far * far)
    series = (1.0 - 0.5 * inverse + 0.75 * inverse * inverse) / (far * math.sqrt(math.pi))
    return ops.where(large, series, direct).astype(input.dtype)


def frexp(input: Tensor) -> _Frexp:
    """Mantissa in [0.5, 1) (signed) and int32 exponent with ``input = mantissa * 2**exponent``; 0 at 0."""
    magnitude = ops.stop_gradient(ops.abs(input))
    finite = ops.logical_and(magnitude > 0, ops.isfinite(magnitude))
    safe = ops.where(finite, magnitude, ops.ones_like(magnitude))
    exponent = ops.floor(ops.log2(safe)) + 1
    scaled = safe / ops.pow(2.0, exponent)  # the logarithm's rounding can be one off: set it right
    exponent = exponent + (scaled >= 1).astype(exponent.dtype) - (scaled < 0.5).astype(exponent.dtype)
    exponent = ops.where(finite, exponent, ops.zeros_like(exponent))
    mantissa = ops.where(finite, input / ops.stop_gradient(ops.pow(2.0, exponent)), input)
    return _Frexp(mantissa, exponent.astype(ms.int32))


def mode(input: Tensor, dim: int = -1, keepdim: bool = False) -> _Mode:
    """The most frequent value along ``dim`` (the smallest of a tie) and the last index holding it."""
    if input.ndim == 0:
        return _Mode(input, ops.zeros((), ms.int64))
    moved = ops.moveaxis(input, dim, -1)
    values = ops.sort(moved, -1)[0]
    counts = ops.sum((ops.expand_dims(values, -1) == ops.expand_dims(values, -2)).astype(ms.int32), -1)
    top = ops.max(counts, -1, keepdims=True)[0]
    first = ops.argmax((counts == top).astype(ms.int32), -1, True)  # the smallest of the most frequent
    picked = ops.gather_elements(values, -1, first)
    length = moved.shape[-1]
    positions = ops.arange(length, dtype=ms.int64).reshape((1,) * (moved.ndim - 1) + (length,))
    holding = ops.where(ops.stop_gradient(moved) == picked, positions, ops.full_like(positions, -1))
    index = ops.max(holding, -1, keepdims=True)[0]
    found = ops.gather_elements(moved, -1, index)  # so the gradient reaches the element, as PyTorch's
    if keepdim:
        return _Mode(ops.moveaxis(found, -1, dim), ops.moveaxis(index, -1, dim))
    return _Mode(found.squeeze(-1), index.squeeze(-1))


def gradient(
    input: Tensor,
    *,
    spacing: Union[None, float, Sequence[Any]] = None,
    dim: Union[None, int, Sequence[int]] = None,
    edge_order: int = 1,
) -> Tuple[Tensor, ...]:
    """Central differences inside, one-sided ones of ``edge_order`` at the edges, for uniform spacing."""
    dims = list(range(input.ndim)) if dim is None else ([dim] if isinstance(dim, int) else list(dim))
    if spacing is None:
        steps: List[float] = [1.0] * len(dims)
    elif isinstance(spacing, (int, float)):
        steps = [float(spacing)] * len(dims)
    elif all(isinstance(s, (int, float)) for s in spacing):
        steps = [float(s) for s in spacing]
    else:
        raise TypeError("gradient(spacing=<coordinates as tensors>) is not translated: only uniform spacing")
    if edge_order not in (1, 2):
        raise TypeError(f"gradient(edge_order={edge_order}): PyTorch knows 1 and 2")
    out = []
    for axis, h in zip(dims, steps):
        axis %= input.ndim
        n = input.shape[axis]

        def at(start: int, stop: Optional[int], axis: int = axis) -> Tensor:
            return input[(slice(None),) * axis + (slice(start, stop),)]

        inner = (at(2, None) - at(0, n - 2)) / (2 * h)
        if edge_order == 1:
            first = (at(1, 2) - at(0, 1)) / h
            last = (at(n - 1, n) - at(n - 2, n - 1)) / h
        else:
            first = (-1.5 * at(0, 1) + 2 * at(1, 2) - 0.5 * at(2, 3)) / h
            last = (0.5 * at(n - 3, n - 2) - 2 * at(n - 2, n - 1) + 1.5 * at(n - 1, n)) / h
        out.append(ops.cat([first, inner, last], axis))
    return tuple(out)


def matrix_exp(input: Tensor) -> Tensor:
    """Scaling and squaring: ``exp(A) = exp(A / 2**s) ** (2**s)``, ``exp`` of the scaled matrix by Taylor."""
    norm = float(ops.max(ops.sum(ops.abs(ops.stop_gradient(input)), -2))[0]) if input.size else 0.0
    squarings = max(0, int(math.ceil(math.log2(norm))) + 1) if norm > 0.5 else 0
    scaled = input / (2.0**squarings)
    eye = ops.broadcast_to(ops.eye(input.shape[-1], input.shape[-1], input.dtype), input.shape)
    term, total = eye, eye
    for k in range(1, 19):
        term = ops.matmul(term, scaled) / k
        total = total + term
    for _ in range(squarings):
        total = ops.matmul(total, total)
    return total


def nanquantile(
    input: Tensor,
    q: Union[float, Tensor],
    dim: Optional[int] = None,
    keepdim: bool = False,
    *,
    interpolation: str = "linear",
) -> Tensor:
    """``quantile`` of the elements that are not NaN, each slice's ranks counted over its own; NaN
    where a slice holds no other. Read off a sort with NaN moved past every number."""
    if interpolation not in ("linear", "lower", "higher", "midpoint", "nearest"):
        raise TypeError(
            f"nanquantile(interpolation={interpolation!r}): PyTorch knows linear, lower, higher, midpoint, nearest"
        )
    rank = input.ndim
    whole = dim is None or rank == 0
    values = ops.reshape(input, (-1,)) if whole else ops.moveaxis(input, dim, -1)
    missing = ops.isnan(values)
    ordered = ops.sort(ops.where(missing, ops.full_like(values, math.inf), values), -1)[0]
    count = ops.sum(ops.logical_not(missing).astype(input.dtype), -1, keepdim=True)
    scalar = not isinstance(q, Tensor) or q.ndim == 0
    qs = ops.reshape(q if isinstance(q, Tensor) else ms.Tensor(q, input.dtype), (-1,)).astype(input.dtype)
    ranks = ops.reshape(qs, (-1,) + (1,) * ordered.ndim) * ops.maximum(count - 1, ops.zeros_like(count))
    below, above = ops.floor(ranks), ops.ceil(ranks)
    if interpolation == "lower":
        above = below
    elif interpolation == "higher":
        below = above
    elif interpolation == "nearest":
        below = above = ops.round(ranks)
    spread = ops.broadcast_to(ordered, (qs.shape[0],) + tuple(ordered.shape))
    low = ops.gather_elements(spread, -1, below.astype(ms.int64))
    high = ops.gather_elements(spread, -1, above.astype(ms.int64))
    if interpolation == "midpoint":
        low = low + (high - low) * 0.5
    elif interpolation == "linear":
        low = ops.where(above > below, low + (high - low) * (ranks - below), low)
    found = ops.where(count > 0, low, ops.full_like(low, math.nan)).squeeze(-1)  # (len(q), ...)
    if keepdim:
        found = ops.reshape(found, (found.shape[0],) + (1,) * rank) if whole else ops.expand_dims(found, dim % rank + 1)
    return found[0] if scalar else found


def histogram(
    input: Tensor,
    bins: Union[int, Tensor] = 100,
    *,
    range: Optional[Sequence[float]] = None,
    weight: Optional[Tensor] = None,
    density: bool = False,
) -> _Histogram:
    """Counts (or weights' sums) between edges, the last bin closed, as PyTorch's ``histogram``."""
    values = ops.reshape(input, (-1,))
    if isinstance(bins, Tensor):
        edges = bins.astype(input.dtype)
    else:
        if range is not None:
            low, high = float(range[0]), float(range[1])
        else:
            low, high = (float(ops.min(values)[0]), float(ops.max(values)[0])) if values.size else (0.0, 0.0)
        if low == high:
            low, high = low - 0.5, high + 0.5
        edges = ops.linspace(ms.Tensor(low, input.dtype), ms.Tensor(high, input.dtype), int(bins) + 1)
    count = edges.shape[0] - 1
    inside = ops.logical_and(values >= edges[0], values <= edges[-1])
    bucket = ops.sum((ops.expand_dims(values, -1) >= edges[1:-1]).astype(ms.int32), -1) if count > 1 else None
    slots = ops.arange(count, dtype=ms.int32)
    member = ops.ones((values.shape[0], count), ms.bool_) if bucket is None else ops.expand_dims(bucket, -1) == slots
    member = ops.logical_and(member, ops.expand_dims(inside, -1)).astype(input.dtype)
    weights = ops.ones_like(values) if weight is None else ops.reshape(weight, (-1,)).astype(input.dtype)
    hist = ops.sum(member * ops.expand_dims(weights, -1), 0)
    if density:
        hist = hist / (ops.sum(hist) * (edges[1:] - edges[:-1]))
    return _Histogram(hist, edges)


def _first_of_runs(values: Tensor) -> Tensor:
    """Where a run of equal elements begins, along a 1-d tensor."""
    if values.shape[0] < 2:
        return ops.ones(values.shape, ms.bool_)
    return ops.cat([ops.ones((1,), ms.bool_), values[1:] != values[:-1]])


def _runs(values: Tensor, return_inverse: bool, return_counts: bool, shape: Tuple[int, ...]) -> Any:
    starts = _first_of_runs(values)
    picked = ops.masked_select(values, starts)
    inverse = (ops.cumsum(starts.astype(ms.int64), 0) - 1) if values.shape[0] else ops.zeros((0,), ms.int64)
    out: List[Tensor] = [picked]
    if return_inverse:
        out.append(ops.reshape(inverse, shape))
    if return_counts:
        count = picked.shape[0]
        out.append(ops.sum((ops.expand_dims(inverse, -1) == ops.arange(count, dtype=ms.int64)).astype(ms.int64), 0))
    return out[0] if len(out) == 1 else tuple(out)


def unique(
    input: Tensor,
    sorted: bool = True,
    return_inverse: bool = False,
    return_counts: bool = False,
    dim: Optional[int] = None,
) -> Any:
    """The distinct elements in ascending order (PyTorch's CPU sorts them whether asked or not)."""
    if dim is not None:
        raise TypeError("unique(dim=...) is not translated: only the distinct elements of the whole tensor")
    flat = ops.reshape(input, (-1,))
    order = ops.sort(flat)[1] if flat.shape[0] else ops.zeros((0,), ms.int32)
    values = ops.gather(flat, order, 0) if flat.shape[0] else flat
    result = _runs(values, return_inverse, return_counts, tuple(input.shape))
    if not return_inverse:
        return result
    parts = list(result)
    back = ops.zeros_like(parts[1]).reshape(-1)
    back = ops.tensor_scatter_elements(back, order.astype(ms.int64), parts[1].reshape(-1), 0)
    parts[1] = ops.reshape(back, tuple(input.shape))
    return tuple(parts)


def unique_consecutive(
    input: Tensor, return_inverse: bool = False, return_counts: bool = False, dim: Optional[int] = None
) -> Any:
    if dim is not None:
        raise TypeError("unique_consecutive(dim=...) is not translated: only over the flattened tensor")
    return _runs(ops.reshape(input, (-1,)), return_inverse, return_counts, tuple(input.shape))


def nonzero_static(input: Tensor, *, size: int, fill_value: int = -1) -> Tensor:
    """``nonzero``'s first ``size`` rows, padded with ``fill_value`` rows up to ``size``."""
    found = ops.nonzero(input).astype(ms.int64) if input.ndim else ops.zeros((int(bool(input)), 0), ms.int64)
    found = found[:size]
    missing = size - found.shape[0]
    if missing:
        found = ops.cat([found, ops.full((missing, input.ndim), fill_value, dtype=ms.int64)])
    return found


def aten_slice(input: Tensor, dim: int = 0, start: Optional[int] = None, end: Optional[int] = None, step: int = 1):
    return input[(slice(None),) * (dim % max(input.ndim, 1)) + (slice(start, end, step),)]


def safe_softmax(input: Tensor, dim: int, dtype: Optional[torch.dtype] = None) -> Tensor:
    """Softmax, 0 along a slice that is -inf throughout (softmax's NaN there)."""
    x = input if dtype is None else input.astype(made_dtype(dtype))
    masked = ops.all(x == -math.inf, dim, keep_dims=True)
    safe = ops.where(ops.broadcast_to(masked, x.shape), ops.zeros_like(x), x)
    return ops.where(masked, ops.zeros_like(x), ops.softmax(safe, dim))


def chunk_cat(tensors: Sequence[Tensor], dim: int, num_chunks: int) -> Tensor:
    """Each tensor cut in ``num_chunks`` along ``dim`` (zero-padded to a multiple), every chunk's
    trailing elements flattened, the tensors' chunks side by side."""
    pieces = []
    for t in tensors:
        axis = dim % t.ndim
        size = t.shape[axis]
        chunk = -(-size // num_chunks)
        if chunk * num_chunks != size:
            pad = ops.zeros(t.shape[:axis] + (chunk * num_chunks - size,) + t.shape[axis + 1 :], t.dtype)
            t = ops.cat([t, pad], axis)
        pieces.append(ops.reshape(t, t.shape[:axis] + (num_chunks, -1)))
    return ops.cat(pieces, pieces[0].ndim - 1)


# ATen operators a graph calls as ``torch.ops.aten.<name>.<overload>``, by the operator's name.
ATEN: Dict[str, Adapter] = {
    "aten::slice.Tensor": aten_slice,
    "aten::_safe_softmax": safe_softmax,
}


def aten_adapter(target: Callable[..., Any]):
    """The call table's fallback for an ATen operator (``torch.ops.aten.slice.Tensor``): ``(adapter,
    None)``, or None."""
    if not isinstance(target, torch._ops.OpOverload):
        return None
    adapter = ATEN.get(target.name())
    return None if adapter is None else (adapter, None)


FUNCTIONS: Dict[str, Entry] = {
    "torch.erfinv": erfinv,
    "torch.special.erfinv": erfinv,
    "torch.special.ndtri": ndtri,
    "torch.special.entr": entr,
    "torch.special.erfcx": erfcx,
    "torch.frexp": frexp,
    "torch.mode": mode,
    "torch.gradient": gradient,
    "torch.matrix_exp": matrix_exp,
    "torch.linalg.matrix_exp": matrix_exp,
    "torch.nanquantile": nanquantile,
    "torch.histogram": histogram,
    "torch.functional.unique": unique,
    "torch.unique": unique,
    "torch.functional.unique_consecutive": unique_consecutive,
    "torch.unique_consecutive": unique_consecutive,
    "torch.nonzero_static": nonzero_static,
    "torch._chunk_cat": chunk_cat,
}
METHODS: Dict[str, Adapter] = {
    "erfinv": erfinv,
    "frexp": frexp,
    "mode": mode,
    "matrix_exp": matrix_exp,
    "nanquantile": nanquantile,
    "histogram": histogram,
    "unique": unique,
    "unique_consecutive": unique_consecutive,
    "nonzero_static": nonzero_static,
}
