"""Hypothesis strategies that draw ``torch.nn`` layer configurations together with inputs they accept.

Each strategy draws a :class:`LayerCase`: the layer's class name and constructor arguments, the
shapes of its inputs, whether to compare in training mode, and the seed for its weights and
inputs. Its ``repr`` is the Python expression that rebuilds it, so the falsifying example
Hypothesis prints can be pasted as it is::

    from hypothesis import given
    import parity
    from parity.strategies import conv_layers

    @given(case=conv_layers())
    def test_conv_translates(case):
        module = case.torch_module()
        parity.check(parity.translate(module), module, case.inputs, train=case.train, seed=case.seed)

Sizes stay tiny by default (channels <= 6, spatial sizes <= 10, sequences <= 5) so that an example
runs in well under a second. Only what :func:`parity.translate` supports is drawn; every
configuration left out is named below with the registry entry or translation note that says why,
so that a property never has to ``assume`` a failure away.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Dict, Sequence, Tuple

from hypothesis import strategies as st

from .engine.inputs import InputSpec, randn
from .errors import ParityUsageError

__all__ = ["LayerCase", "conv_layers", "pool_layers", "norm_layers", "upsample_layers", "recurrent_layers", "layers"]

NORMS = ("BatchNorm1d", "BatchNorm2d", "LayerNorm", "GroupNorm", "InstanceNorm1d", "InstanceNorm2d")
RECURRENT = ("RNN", "LSTM", "GRU")


@dataclass(frozen=True, repr=False)
class LayerCase:
    """One drawn configuration: ``torch.nn.<layer>(**kwargs)`` fed ``parity.randn`` inputs of
    ``shapes``, compared in training mode when ``train``. ``seed`` seeds the PyTorch weights
    (:meth:`torch_module`) and is the ``seed`` to pass to ``parity.check`` (inputs, cotangents)."""

    layer: str
    kwargs: Dict[str, object]
    shapes: Tuple[Tuple[int, ...], ...]
    train: bool = False
    seed: int = 0

    def __post_init__(self):
        object.__setattr__(self, "shapes", tuple(tuple(int(d) for d in shape) for shape in self.shapes))

    @property
    def inputs(self) -> Tuple[InputSpec, ...]:
        """The input specs for ``parity.check``: N(0, 1) samples of each shape."""
        return tuple(randn(shape) for shape in self.shapes)

    def torch_module(self):
        """The PyTorch layer, its weights drawn from ``seed`` (norm layers' constant initial
        weights and running statistics too, so that swapped or ignored ones show)."""
        import torch

        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(self.seed)
            module = getattr(torch.nn, self.layer)(**self.kwargs)
            if self.layer in NORMS:
                _vary_constant_state(module)
        return module

    def __repr__(self) -> str:
        args = ", ".join(f"{key}={value!r}" for key, value in self.kwargs.items())
        extra = ", train=True" if self.train else ""
        return f"LayerCase({self.layer!r}, dict({args}), shapes={list(self.shapes)!r}{extra}, seed={self.seed})"

    def _repr_pretty_(self, printer, cycle) -> None:
        """Hypothesis prints falsifying examples with its pretty printer: show the same expression."""
        printer.text(repr(self))


def _vary_constant_state(module) -> None:
    """Give a norm layer's weights (ones), biases (zeros) and running statistics seeded values."""
    import torch

    with torch.no_grad():
        for name, tensor in list(module.named_parameters()) + list(module.named_buffers()):
            if not tensor.is_floating_point():
                continue
            if name in ("weight", "running_var"):
                tensor.uniform_(0.5, 1.5)
            else:
                tensor.normal_(0.0, 0.5)


# --- shared helpers ---------------------------------------------------------------------------


def _bound(name: str, value: int, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ParityUsageError(f"{name} must be an int >= {low}, got {value!r}")
    return value


def _choices(name: str, given: Sequence, allowed: Sequence) -> Tuple:
    given = tuple(given)
    unknown = [g for g in given if g not in allowed]
    if not given or unknown:
        raise ParityUsageError(f"{name} must be a non-empty selection of {allowed!r}, got {given!r}")
    return given


def _short(values: Sequence[int]):
    """``(3, 3)`` -> ``3``; PyTorch accepts both, and the int reads better in a falsifying example."""
    return values[0] if len(set(values)) == 1 else tuple(values)


def _trim(kwargs: dict, defaults: dict) -> dict:
    """Drop the arguments that equal PyTorch's defaults (type included: 1 is not True), for a short repr."""
    return {
        k: v for k, v in kwargs.items() if k not in defaults or defaults[k] != v or type(defaults[k]) is not type(v)
    }


def _per_dim(draw, nd: int, low: int, high: int) -> Tuple[int, ...]:
    return tuple(draw(st.integers(low, high)) for _ in range(nd))


def _seeds():
    return st.integers(0, 2**16 - 1)


# --- convolution ----------------------------------------------------------------------------

_CONV_DEFAULTS = dict(stride=1, padding=0, dilation=1, groups=1, bias=True, padding_mode="zeros")


@st.composite
def _conv(draw, dims, max_channels, max_size, max_batch):
    nd = draw(st.sampled_from(dims))
    groups = draw(st.integers(1, min(3, max_channels)))
    in_channels = groups * draw(st.integers(1, max_channels // groups))
    out_channels = groups * draw(st.integers(1, max_channels // groups))
    kernel = _per_dim(draw, nd, 1, 4)
    stride = _per_dim(draw, nd, 1, 3)
    dilation = _per_dim(draw, nd, 1, 2)
    padding_mode = draw(st.sampled_from(("zeros", "reflect", "replicate", "circular")))
    # PyTorch refuses padding='same' with a stride; 'valid' and numbers are always legal.
    padding = draw(st.sampled_from(("number", "valid", "same") if set(stride) == {1} else ("number", "valid")))
    if padding == "number":
        padding = _per_dim(draw, nd, 0, 3)
    totals = [d * (k - 1) for d, k in zip(dilation, kernel)]
    if padding == "same":
        sides = [(t // 2, t - t // 2) for t in totals]
    elif padding == "valid":
        sides = [(0, 0)] * nd
    else:
        sides = [(p, p) for p in padding]
        padding = _short(padding)
    spatial = []
    for total, (before, after) in zip(totals, sides):
        low = max(1, total + 1 - before - after)  # one output at least
        if padding_mode == "reflect":
            low = max(low, before + 1, after + 1)  # PyTorch reflects less than the size
        elif padding_mode == "circular":
            low = max(low, before, after)  # and wraps at most once
        spatial.append(draw(st.integers(low, max(low, max_size))))
    kwargs = dict(
        in_channels=in_channels,
        out_channels=out_channels,
        kernel_size=_short(kernel),
        stride=_short(stride),
        padding=padding,
        dilation=_short(dilation),
        groups=groups,
        bias=draw(st.booleans()),
        padding_mode=padding_mode,
    )
    batch = draw(st.integers(1, max_batch))
    return LayerCase(f"Conv{nd}d", _trim(kwargs, _CONV_DEFAULTS), [(batch, in_channels, *spatial)], seed=draw(_seeds()))


def conv_layers(
    *, dims: Sequence[int] = (1, 2), max_channels: int = 6, max_size: int = 10, max_batch: int = 2
) -> st.SearchStrategy[LayerCase]:
    """``Conv1d``/``Conv2d``: channels and groups (dividing both), kernel, stride, numeric or
    ``'same'``/``'valid'`` padding (``'same'`` only where PyTorch allows it: stride 1), dilation,
    bias and every ``padding_mode``, with an input large enough for one output and for the padding
    mode. ``Conv3d`` is left out (CPU time; ``padding_mode='reflect'`` is unsupported there)."""
    dims = _choices("dims", dims, (1, 2))
    return _conv(
        dims,
        _bound("max_channels", max_channels, 1),
        _bound("max_size", max_size, 1),
        _bound("max_batch", max_batch, 1),
    )


# --- pooling ----------------------------------------------------------------------------------

_POOL_DEFAULTS = dict(
    stride=None, padding=0, dilation=1, ceil_mode=False, count_include_pad=True, divisor_override=None
)


@st.composite
def _pool(draw, kinds, dims, max_channels, max_size, max_batch):
    kind = draw(st.sampled_from(kinds))
    nd = draw(st.sampled_from(dims))
    kernel = _per_dim(draw, nd, 1, 4)
    stride = draw(st.one_of(st.none(), st.tuples(*[st.integers(1, 3)] * nd)))
    padding = tuple(draw(st.integers(0, k // 2)) for k in kernel)  # PyTorch: at most half the kernel
    kwargs = dict(kernel_size=_short(kernel), stride=stride and _short(stride), padding=_short(padding))
    dilation = (1,) * nd
    if kind == "max":
        dilation = _per_dim(draw, nd, 1, 2)
        kwargs["dilation"] = _short(dilation)
    kwargs["ceil_mode"] = draw(st.booleans())
    if kind == "avg":
        kwargs["count_include_pad"] = draw(st.booleans())
        if nd == 2:  # AvgPool1d has no divisor_override
            kwargs["divisor_override"] = draw(st.one_of(st.none(), st.integers(1, 5)))
    spatial = []
    for k, d, p in zip(kernel, dilation, padding):
        low = max(1, d * (k - 1) + 1 - 2 * p)
        spatial.append(draw(st.integers(low, max(low, max_size))))
    shape = (draw(st.integers(1, max_batch)), draw(st.integers(1, max_channels)), *spatial)
    layer = f"{'Max' if kind == 'max' else 'Avg'}Pool{nd}d"
    return LayerCase(layer, _trim(kwargs, _POOL_DEFAULTS), [shape], seed=draw(_seeds()))


def pool_layers(
    *,
    kinds: Sequence[str] = ("max", "avg"),
    dims: Sequence[int] = (1, 2),
    max_channels: int = 6,
    max_size: int = 10,
    max_batch: int = 2,
) -> st.SearchStrategy[LayerCase]:
    """``MaxPool1d/2d`` and ``AvgPool1d/2d``: kernel, stride (or PyTorch's default, the kernel),
    padding up to half the kernel (PyTorch's limit), ``ceil_mode``, dilation (max),
    ``count_include_pad`` and ``divisor_override`` (average, 2-d: ``AvgPool1d`` has none)."""
    return _pool(
        _choices("kinds", kinds, ("max", "avg")),
        _choices("dims", dims, (1, 2)),
        _bound("max_channels", max_channels, 1),
        _bound("max_size", max_size, 1),
        _bound("max_batch", max_batch, 1),
    )


# --- normalisation ----------------------------------------------------------------------------

_NORM_DEFAULTS = dict(eps=1e-5, momentum=0.1, affine=True, track_running_stats=True, elementwise_affine=True, bias=True)


@st.composite
def _norm(draw, kinds, max_channels, max_size, max_batch):
    layer = draw(st.sampled_from(kinds))
    eps = draw(st.sampled_from((1e-5, 1e-3)))
    size = st.integers(1, max(1, min(max_size, 5)))
    train = False
    if layer == "LayerNorm":
        shape = (draw(st.integers(1, max_batch)), *draw(st.lists(size, min_size=1, max_size=3)))
        normalized = shape[len(shape) - draw(st.integers(1, len(shape) - 1)) :]
        affine = draw(st.booleans())
        kwargs = dict(
            normalized_shape=normalized[0] if len(normalized) == 1 else normalized, eps=eps, elementwise_affine=affine
        )
        if affine:
            kwargs["bias"] = draw(st.booleans())
        return LayerCase(layer, _trim(kwargs, _NORM_DEFAULTS), [shape], seed=draw(_seeds()))
    if layer == "GroupNorm":
        groups = draw(st.integers(1, min(3, max_channels)))
        channels = groups * draw(st.integers(1, max_channels // groups))
        spatial = draw(st.lists(size, max_size=2))
        kwargs = dict(num_groups=groups, num_channels=channels, eps=eps, affine=draw(st.booleans()))
    else:
        channels = draw(st.integers(1, max_channels))
        rank = {"BatchNorm1d": draw(st.sampled_from((0, 1))), "InstanceNorm1d": 1}.get(layer, 2)
        spatial = [draw(size) for _ in range(rank)]
        kwargs = dict(num_features=channels, eps=eps, affine=draw(st.booleans()))
        if layer.startswith("BatchNorm"):
            # momentum=None is unsupported (registry: batchnorm2d-momentum-none-unsupported)
            kwargs.update(momentum=draw(st.sampled_from((0.1, 0.5))), track_running_stats=draw(st.booleans()))
            train = draw(st.booleans())
        # InstanceNorm keeps PyTorch's track_running_stats=False: True has no counterpart
        # (parity/translation/norm.py: MindSpore always normalises with the instance statistics).
    # PyTorch refuses statistics over one value: BatchNorm's per channel (batch x spatial), GroupNorm's
    # per group (batch x channels per group x spatial) and InstanceNorm's per instance (spatial).
    per_instance = math.prod(spatial) * (channels // groups if layer == "GroupNorm" else 1)
    low = 2 if per_instance == 1 and not layer.startswith("InstanceNorm") else 1
    if layer.startswith("InstanceNorm") and per_instance == 1:
        spatial[-1] = 2
    shape = (draw(st.integers(low, max(low, max_batch))), channels, *spatial)
    return LayerCase(layer, _trim(kwargs, _NORM_DEFAULTS), [shape], train=train, seed=draw(_seeds()))


def norm_layers(
    *, kinds: Sequence[str] = NORMS, max_channels: int = 6, max_size: int = 5, max_batch: int = 3
) -> st.SearchStrategy[LayerCase]:
    """``BatchNorm1d/2d`` (affine, running statistics or not, momentum, eps, eval or train mode),
    ``LayerNorm`` (``normalized_shape`` over 1 to 3 trailing dims, ``elementwise_affine``, ``bias``),
    ``GroupNorm`` (groups dividing the channels) and ``InstanceNorm1d/2d`` (affine). Weights,
    biases and running statistics get seeded values instead of PyTorch's ones and zeros."""
    return _norm(
        _choices("kinds", kinds, NORMS),
        _bound("max_channels", max_channels, 1),
        _bound("max_size", max_size, 1),
        _bound("max_batch", max_batch, 1),
    )


# --- interpolation ----------------------------------------------------------------------------

# Scale factors PyTorch and MindSpore agree on without recomputing: whole numbers. Any other is
# drawn only with recompute_scale_factor=True (parity/translation/shape.py refuses the rest).
_WHOLE_SCALES = (1, 2, 3)
_OTHER_SCALES = (0.5, 0.75, 1.5, 2.5)
_LINEAR = {1: "linear", 2: "bilinear"}


@st.composite
def _upsample(draw, dims, max_channels, max_size, max_batch):
    nd = draw(st.sampled_from(dims))
    # "bicubic" is left out: it interpolates differently (registry: upsample-bicubic-formula).
    layer = draw(st.sampled_from(("Upsample",) + (("UpsamplingNearest2d", "UpsamplingBilinear2d") if nd == 2 else ())))
    spatial = _per_dim(draw, nd, 1, max(1, min(max_size, 6)))
    kwargs = {}
    if draw(st.booleans()):
        kwargs["size"] = _short(_per_dim(draw, nd, 1, max_size))
    else:
        # recompute_scale_factor is Upsample's only; the Upsampling*2d layers never recompute.
        recompute = draw(st.sampled_from((None, False, True))) if layer == "Upsample" else None
        scales = tuple(draw(st.sampled_from(_WHOLE_SCALES + (_OTHER_SCALES if recompute else ()))) for _ in range(nd))
        # One output element at least: grow the input where a scale below 1 would leave none.
        spatial = tuple(max(n, math.ceil(1 / s)) for n, s in zip(spatial, scales))
        kwargs["scale_factor"] = _short(scales)
        if recompute is not None:
            kwargs["recompute_scale_factor"] = recompute
    if layer == "Upsample":
        mode = draw(st.sampled_from(("nearest", _LINEAR[nd])))
        kwargs["mode"] = mode
        if mode != "nearest":  # PyTorch refuses align_corners for nearest
            align = draw(st.sampled_from((None, False, True)))
            if align is not None:
                kwargs["align_corners"] = align
    shape = (draw(st.integers(1, max_batch)), draw(st.integers(1, max_channels)), *spatial)
    return LayerCase(layer, kwargs, [shape], seed=draw(_seeds()))


def upsample_layers(
    *, dims: Sequence[int] = (1, 2), max_channels: int = 6, max_size: int = 10, max_batch: int = 2
) -> st.SearchStrategy[LayerCase]:
    """``Upsample`` (modes ``nearest`` and ``linear``/``bilinear``, ``align_corners``, ``size`` or
    ``scale_factor``, ``recompute_scale_factor``), ``UpsamplingNearest2d`` and ``UpsamplingBilinear2d``.
    Scale factors are whole numbers, or others with ``recompute_scale_factor=True`` (MindSpore maps
    source coordinates from the sizes: parity/translation/shape.py refuses the rest)."""
    return _upsample(
        _choices("dims", dims, (1, 2)),
        _bound("max_channels", max_channels, 1),
        _bound("max_size", max_size, 1),
        _bound("max_batch", max_batch, 1),
    )


# --- recurrent --------------------------------------------------------------------------------

_RNN_DEFAULTS = dict(num_layers=1, nonlinearity="tanh", bias=True, batch_first=False, bidirectional=False)


@st.composite
def _recurrent(draw, kinds, max_features, max_layers, max_seq, max_batch):
    layer = draw(st.sampled_from(kinds))
    input_size, hidden_size = draw(st.integers(1, max_features)), draw(st.integers(1, max_features))
    kwargs = dict(input_size=input_size, hidden_size=hidden_size, num_layers=draw(st.integers(1, max_layers)))
    if layer == "RNN":
        kwargs["nonlinearity"] = draw(st.sampled_from(("tanh", "relu")))
    kwargs.update(bias=draw(st.booleans()), batch_first=draw(st.booleans()), bidirectional=draw(st.booleans()))
    # Not drawn: proj_size (no MindSpore counterpart, translation refuses it) and dropout (random
    # between layers in training; the check runs in eval mode, where it does nothing).
    seq, batch = draw(st.integers(1, max_seq)), draw(st.integers(1, max_batch))
    shapes = [(batch, seq, input_size) if kwargs["batch_first"] else (seq, batch, input_size)]
    # An initial hidden state is one more array for RNN and GRU; LSTM's is a pair (h, c), which
    # parity's flat inputs cannot carry.
    if layer != "LSTM" and draw(st.booleans()):
        shapes.append((kwargs["num_layers"] * (2 if kwargs["bidirectional"] else 1), batch, hidden_size))
    return LayerCase(layer, _trim(kwargs, _RNN_DEFAULTS), shapes, seed=draw(_seeds()))


def recurrent_layers(
    *,
    kinds: Sequence[str] = RECURRENT,
    max_features: int = 6,
    max_layers: int = 2,
    max_seq: int = 5,
    max_batch: int = 3,
) -> st.SearchStrategy[LayerCase]:
    """``RNN`` (tanh or relu), ``LSTM`` and ``GRU``: input and hidden sizes, layers, bias,
    ``batch_first``, ``bidirectional``, sequence length, batch and (RNN, GRU) an initial state."""
    return _recurrent(
        _choices("kinds", kinds, RECURRENT),
        _bound("max_features", max_features, 1),
        _bound("max_layers", max_layers, 1),
        _bound("max_seq", max_seq, 1),
        _bound("max_batch", max_batch, 1),
    )


def layers() -> st.SearchStrategy[LayerCase]:
    """Any of the families above, with their default bounds."""
    return st.one_of(conv_layers(), pool_layers(), norm_layers(), upsample_layers(), recurrent_layers())
