"""Small paired networks with one fault injectable at a known depth, for proving localisation.

Three pairs, with the same attribute paths on both sides:

* ``ms_resnet`` / ``torch_resnet``: stem (``conv1``, ``bn1``, ``relu``), two residual blocks
  (``layer1``: 8 -> 8 identity, ``layer2``: 8 -> 16 stride 2 with ``downsample``), a
  straight-through clamp ``clip`` between them (custom backward on both sides), ``pool``,
  ``flatten``, ``fc``.  Input ``(2, 3, 8, 8)``.
* ``ms_transformer`` / ``torch_transformer``: ``embed`` (Dense 8 -> 16), a fixed positional
  table added in the top-level code, two pre-norm encoder ``blocks`` (``ln1``, ``attn`` with
  ``q``/``k``/``v``/``softmax``/``dropout``/``proj``, ``ln2``, ``ffn`` with
  ``fc1``/``act``/``fc2``/``dropout``), ``norm``, ``head``.  Input ``(2, 6, 8)``.
* ``ms_deep_tanh`` / ``torch_deep_tanh``: twelve ``blocks.i`` of ``fc`` (Dense 16 -> 16) and
  ``act`` (tanh), to show that accumulated float32 noise blames no innocent layer.

The PyTorch side is the reference and never has a fault; ``fault=`` on the MindSpore side injects
exactly one (see ``RESNET_FAULTS``, ``TRANSFORMER_FAULTS``, ``DEEP_FAULTS``).  PyTorch weights are
drawn from a fixed seed (without touching the global generator), norm scales and shifts
included, so that swapping them shows; ``parity.check`` copies them into the MindSpore side.
"""

from __future__ import annotations

import math

import mindspore as ms
import numpy as np
import torch
from mindspore import nn, ops

from .spec import (  # noqa: F401  (the sizes and fault tables, read here as models.NAME too)
    CLIP,
    D_FF,
    D_IN,
    D_MODEL,
    DEEP_DEPTH,
    DEEP_FAULT_AT,
    DEEP_FAULT_SCALE,
    DEEP_FAULTS,
    DEEP_WIDTH,
    EPS,
    MS_BN_MOMENTUM,
    N_OUT,
    RESIDUAL_SCALE,
    RESNET_FAULTS,
    SEQ_LEN,
    TORCH_BN_MOMENTUM,
    TRANSFORMER_FAULTS,
    WEIGHT_SEED,
    WRONG_EPS,
    WRONG_MS_BN_MOMENTUM,
)


def _check_fault(fault, known) -> None:
    if fault is not None and fault not in known:
        raise ValueError(f"unknown fault {fault!r}; known: {sorted(known)}")


def _seeded(build):
    """Build a PyTorch model from WEIGHT_SEED without disturbing the global generator."""
    with torch.random.fork_rng():
        torch.manual_seed(WEIGHT_SEED)
        model = build()
        for module in model.modules():
            if isinstance(module, (torch.nn.BatchNorm2d, torch.nn.LayerNorm)):
                with torch.no_grad():  # scale in [0.5, 1.5), shift ~ N(0, 0.2): a swap shows
                    module.weight.uniform_(0.5, 1.5)
                    module.bias.normal_(0.0, 0.2)
    return model


def _positions() -> np.ndarray:
    """A fixed sinusoidal table (SEQ_LEN, D_MODEL), the same constant on both sides."""
    pos = np.arange(SEQ_LEN)[:, None]
    rate = np.exp(-math.log(10000.0) * np.arange(0, D_MODEL, 2) / D_MODEL)
    table = np.zeros((SEQ_LEN, D_MODEL), np.float32)
    table[:, 0::2], table[:, 1::2] = np.sin(pos * rate), np.cos(pos * rate)
    return table


# MindSpore faulty pieces ------------------------------------------------------------------


class SwappedBatchNorm2d(nn.BatchNorm2d):
    """Fault: inference batch norm that scales by ``beta`` and shifts by ``gamma``."""

    def construct(self, x):
        return self.bn_infer(x, self.beta, self.gamma, self.moving_mean, self.moving_variance)[0]


class SwappedLayerNorm(nn.LayerNorm):
    """Fault: layer norm that scales by ``beta`` and shifts by ``gamma``."""

    def construct(self, x):
        return self.layer_norm(x, self.beta, self.gamma)[0]


class TransposedDense(nn.Dense):
    """Fault: a square Dense computing ``x @ W + b`` instead of ``x @ W.T + b``."""

    def construct(self, x):
        return ops.matmul(x, self.weight) + self.bias


class BiasDroppedDense(nn.Dense):
    """Fault: a Dense that owns a bias parameter but never adds it."""

    def construct(self, x):
        return ops.matmul(x, self.weight.T)


class MSStraightThrough(nn.Cell):
    """``clamp(x, -1, 1)`` whose gradient passes straight through (``masked=False``), or, as a
    fault, is masked to the unclamped region as autograd would compute it (``masked=True``)."""

    def __init__(self, masked=False):
        super().__init__()
        self.masked = masked

    def construct(self, x):
        return ops.clamp(x, -CLIP, CLIP)

    def bprop(self, x, out, dout):
        if self.masked:
            return (dout * (ops.abs(x) <= CLIP).astype(dout.dtype),)
        return (dout,)


def _ms_conv(cin, cout, stride=1, kernel=3, padding=1):
    return nn.Conv2d(cin, cout, kernel, stride=stride, pad_mode="pad", padding=padding, has_bias=False)


def _ms_bn(channels, fault=False, eps=EPS, momentum=MS_BN_MOMENTUM):
    kind = SwappedBatchNorm2d if fault else nn.BatchNorm2d
    return kind(channels, eps=eps, momentum=momentum)


# PyTorch pieces ---------------------------------------------------------------------------


class _TorchStraightThroughFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return torch.clamp(x, -CLIP, CLIP)

    @staticmethod
    def backward(ctx, dout):
        return dout


class TorchStraightThrough(torch.nn.Module):
    """``clamp(x, -1, 1)`` whose gradient passes straight through (PyTorch)."""

    def forward(self, x):
        return _TorchStraightThroughFunction.apply(x)


def _torch_conv(cin, cout, stride=1, kernel=3, padding=1):
    return torch.nn.Conv2d(cin, cout, kernel, stride=stride, padding=padding, bias=False)


def _torch_bn(channels):
    return torch.nn.BatchNorm2d(channels, eps=EPS, momentum=TORCH_BN_MOMENTUM)


# ResNet-style -----------------------------------------------------------------------------


class MSBlock(nn.Cell):
    """conv-BN-ReLU-conv-BN plus identity or 1x1 downsample, then ReLU (MindSpore).
    ``faults`` names the faults to inject inside this block (by their RESNET_FAULTS key)."""

    def __init__(self, cin, cout, stride=1, faults=()):
        super().__init__()
        pad1 = (0, 2, 1, 1) if "padding" in faults else 1
        self.conv1 = _ms_conv(cin, cout, stride)
        self.bn1 = _ms_bn(
            cout,
            fault="bn_swap_gamma_beta" in faults,
            momentum=WRONG_MS_BN_MOMENTUM if "bn_momentum" in faults else MS_BN_MOMENTUM,
        )
        self.relu = nn.ReLU()
        self.conv2 = _ms_conv(cout, cout, padding=pad1)
        self.bn2 = _ms_bn(cout, eps=WRONG_EPS if "bn_eps" in faults else EPS)
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = nn.SequentialCell([_ms_conv(cin, cout, stride, kernel=1, padding=0), _ms_bn(cout)])
        self.shortcut_scale = RESIDUAL_SCALE if "residual_scale" in faults else 1.0

    def construct(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        identity = x if self.downsample is None else self.downsample(x)
        return self.relu(out + self.shortcut_scale * identity)


class TorchBlock(torch.nn.Module):
    """conv-BN-ReLU-conv-BN plus identity or 1x1 downsample, then ReLU (PyTorch)."""

    def __init__(self, cin, cout, stride=1):
        super().__init__()
        self.conv1 = _torch_conv(cin, cout, stride)
        self.bn1 = _torch_bn(cout)
        self.relu = torch.nn.ReLU()
        self.conv2 = _torch_conv(cout, cout)
        self.bn2 = _torch_bn(cout)
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = torch.nn.Sequential(_torch_conv(cin, cout, stride, kernel=1, padding=0), _torch_bn(cout))

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        identity = x if self.downsample is None else self.downsample(x)
        return self.relu(out + identity)


# Which block each ResNet fault goes into (None: outside the blocks).
_RESNET_FAULT_BLOCK = {
    "padding": "layer1",
    "bn_momentum": "layer1",
    "bn_eps": "layer2",
    "bn_swap_gamma_beta": "layer2",
    "residual_scale": "layer2",
    "custom_bprop": None,
}


class MSResNet(nn.Cell):
    """Stem, two residual blocks with a straight-through clamp between them, pool, fc (MindSpore)."""

    def __init__(self, fault=None):
        super().__init__()
        _check_fault(fault, RESNET_FAULTS)
        where = _RESNET_FAULT_BLOCK.get(fault)
        self.conv1 = _ms_conv(3, 8)
        self.bn1 = _ms_bn(8)
        self.relu = nn.ReLU()
        self.layer1 = MSBlock(8, 8, faults=(fault,) if where == "layer1" else ())
        self.clip = MSStraightThrough(masked=fault == "custom_bprop")
        self.layer2 = MSBlock(8, 16, stride=2, faults=(fault,) if where == "layer2" else ())
        self.pool = nn.AdaptiveAvgPool2d((1, 1))
        self.flatten = nn.Flatten()
        self.fc = nn.Dense(16, 10)

    def construct(self, x):
        x = self.relu(self.bn1(self.conv1(x)))
        x = self.layer2(self.clip(self.layer1(x)))
        return self.fc(self.flatten(self.pool(x)))


class TorchResNet(torch.nn.Module):
    """Stem, two residual blocks with a straight-through clamp between them, pool, fc (PyTorch)."""

    def __init__(self):
        super().__init__()
        self.conv1 = _torch_conv(3, 8)
        self.bn1 = _torch_bn(8)
        self.relu = torch.nn.ReLU()
        self.layer1 = TorchBlock(8, 8)
        self.clip = TorchStraightThrough()
        self.layer2 = TorchBlock(8, 16, stride=2)
        self.pool = torch.nn.AdaptiveAvgPool2d((1, 1))
        self.flatten = torch.nn.Flatten()
        self.fc = torch.nn.Linear(16, 10)

    def forward(self, x):
        x = self.relu(self.bn1(self.conv1(x)))
        x = self.layer2(self.clip(self.layer1(x)))
        return self.fc(self.flatten(self.pool(x)))


def ms_resnet(fault=None):
    return MSResNet(fault)


def torch_resnet():
    return _seeded(TorchResNet)


# Transformer-style ------------------------------------------------------------------------


def _ms_ln(fault=False, eps=EPS):
    kind = SwappedLayerNorm if fault else nn.LayerNorm
    return kind((D_MODEL,), begin_norm_axis=-1, begin_params_axis=-1, epsilon=eps)


class MSAttention(nn.Cell):
    """Single-head self-attention from Dense q/k/v, batched matmuls and Softmax (MindSpore)."""

    def __init__(self, transposed_proj=False, wrong_scale=False):
        super().__init__()
        self.q, self.k, self.v = nn.Dense(D_MODEL, D_MODEL), nn.Dense(D_MODEL, D_MODEL), nn.Dense(D_MODEL, D_MODEL)
        self.softmax = nn.Softmax(axis=-1)
        self.dropout = nn.Dropout(p=0.1)
        self.proj = (TransposedDense if transposed_proj else nn.Dense)(D_MODEL, D_MODEL)
        self.scale = 1.0 / D_MODEL if wrong_scale else 1.0 / math.sqrt(D_MODEL)

    def construct(self, x):
        q, k, v = self.q(x), self.k(x), self.v(x)
        scores = ops.matmul(q, k.swapaxes(-1, -2)) * self.scale
        weights = self.dropout(self.softmax(scores))
        return self.proj(ops.matmul(weights, v))


class MSFeedForward(nn.Cell):
    """Dense -> GELU -> Dense -> Dropout (MindSpore)."""

    def __init__(self, tanh_gelu=False, dropped_bias=False):
        super().__init__()
        self.fc1 = nn.Dense(D_MODEL, D_FF)
        self.act = nn.GELU(approximate=tanh_gelu)
        self.fc2 = (BiasDroppedDense if dropped_bias else nn.Dense)(D_FF, D_MODEL)
        self.dropout = nn.Dropout(p=0.1)

    def construct(self, x):
        return self.dropout(self.fc2(self.act(self.fc1(x))))


class MSEncoderBlock(nn.Cell):
    """Pre-norm encoder block: x + attn(ln1(x)), then + ffn(ln2(.)) (MindSpore)."""

    def __init__(self, faults=()):
        super().__init__()
        self.ln1 = _ms_ln(eps=WRONG_EPS if "ln_eps" in faults else EPS)
        self.attn = MSAttention(transposed_proj="transposed_weight" in faults, wrong_scale="attention_scale" in faults)
        self.ln2 = _ms_ln(fault="ln_swap_gamma_beta" in faults)
        self.ffn = MSFeedForward(tanh_gelu="gelu_tanh" in faults, dropped_bias="dropped_bias" in faults)

    def construct(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.ffn(self.ln2(x))


_TRANSFORMER_FAULT_BLOCK = {
    "ln_eps": 1,
    "transposed_weight": 1,
    "ln_swap_gamma_beta": 0,
    "gelu_tanh": 0,
    "dropped_bias": 0,
    "attention_scale": 0,
}


class MSTransformer(nn.Cell):
    """Input Dense, positional table, two encoder blocks, LayerNorm, head; token 0 is read out."""

    def __init__(self, fault=None):
        super().__init__()
        _check_fault(fault, TRANSFORMER_FAULTS)
        where = _TRANSFORMER_FAULT_BLOCK.get(fault)
        self.embed = nn.Dense(D_IN, D_MODEL)
        table = _positions()
        if fault == "positional_shift":
            table = np.roll(table, 1, axis=0)
        self.positions = ms.Tensor(table)
        self.blocks = nn.SequentialCell([MSEncoderBlock((fault,) if where == i else ()) for i in range(2)])
        self.norm = _ms_ln()
        self.head = nn.Dense(D_MODEL, N_OUT)

    def construct(self, x):
        x = self.embed(x) + self.positions
        return self.head(self.norm(self.blocks(x)))


class TorchAttention(torch.nn.Module):
    def __init__(self):
        super().__init__()
        lin = lambda: torch.nn.Linear(D_MODEL, D_MODEL)  # noqa: E731
        self.q, self.k, self.v = lin(), lin(), lin()
        self.softmax = torch.nn.Softmax(dim=-1)
        self.dropout = torch.nn.Dropout(p=0.1)
        self.proj = lin()
        self.scale = 1.0 / math.sqrt(D_MODEL)

    def forward(self, x):
        q, k, v = self.q(x), self.k(x), self.v(x)
        weights = self.dropout(self.softmax(torch.matmul(q, k.transpose(-1, -2)) * self.scale))
        return self.proj(torch.matmul(weights, v))


class TorchFeedForward(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(D_MODEL, D_FF)
        self.act = torch.nn.GELU()
        self.fc2 = torch.nn.Linear(D_FF, D_MODEL)
        self.dropout = torch.nn.Dropout(p=0.1)

    def forward(self, x):
        return self.dropout(self.fc2(self.act(self.fc1(x))))


class TorchEncoderBlock(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1 = torch.nn.LayerNorm(D_MODEL, eps=EPS)
        self.attn = TorchAttention()
        self.ln2 = torch.nn.LayerNorm(D_MODEL, eps=EPS)
        self.ffn = TorchFeedForward()

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.ffn(self.ln2(x))


class TorchTransformer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Linear(D_IN, D_MODEL)
        self.positions = torch.from_numpy(_positions())  # a constant, not a buffer: nothing to map
        self.blocks = torch.nn.Sequential(TorchEncoderBlock(), TorchEncoderBlock())
        self.norm = torch.nn.LayerNorm(D_MODEL, eps=EPS)
        self.head = torch.nn.Linear(D_MODEL, N_OUT)

    def forward(self, x):
        x = self.embed(x) + self.positions
        return self.head(self.norm(self.blocks(x)))


def ms_transformer(fault=None):
    return MSTransformer(fault)


def torch_transformer():
    return _seeded(TorchTransformer)


# Deep tanh stack --------------------------------------------------------------------------


class ScaledDense(nn.Dense):
    """Fault: a Dense whose output is scaled by ``DEEP_FAULT_SCALE``."""

    def construct(self, x):
        return super().construct(x) * DEEP_FAULT_SCALE


class SinhCoshTanh(nn.Cell):
    """tanh(x) as sinh(x) / cosh(x) on x clamped to [-9, 9] (where float32 tanh is 1 already).
    MindSpore 2.10's CPU tanh kernel is off by up to 8.3e-5 against float64 (PyTorch's by 3e-8;
    measured on 4096 N(0, 1.5) values): a genuine mismatch at the first tanh that would hide what
    the deep stack is here to show. This form is within 1.3e-7 (its gradient 2.4e-7); 2 sigmoid(2x) - 1
    would be within 1.5e-6 only, enough to use up half the float32 tolerance over twelve layers."""

    def construct(self, x):
        clamped = ops.clamp(x, -9.0, 9.0)
        return ops.sinh(clamped) / ops.cosh(clamped)


class MSDenseTanh(nn.Cell):
    def __init__(self, fault=False, native_tanh=False):
        super().__init__()
        self.fc = (ScaledDense if fault else nn.Dense)(DEEP_WIDTH, DEEP_WIDTH)
        self.act = nn.Tanh() if native_tanh else SinhCoshTanh()

    def construct(self, x):
        return self.act(self.fc(x))


class MSDeepTanh(nn.Cell):
    """Twelve Dense+tanh blocks; ``fault="tiny_scale"`` scales block 9's Dense output by 1 + 1e-4.
    ``native_tanh=True`` uses MindSpore's own (less accurate) ``nn.Tanh``."""

    def __init__(self, fault=None, native_tanh=False):
        super().__init__()
        _check_fault(fault, DEEP_FAULTS)
        self.blocks = nn.SequentialCell(
            [MSDenseTanh(fault == "tiny_scale" and i == DEEP_FAULT_AT, native_tanh) for i in range(DEEP_DEPTH)]
        )

    def construct(self, x):
        return self.blocks(x)


class TorchDenseTanh(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(DEEP_WIDTH, DEEP_WIDTH)
        self.act = torch.nn.Tanh()
        torch.nn.init.xavier_normal_(self.fc.weight, gain=5.0 / 3.0)  # tanh gain: activations stay O(1)

    def forward(self, x):
        return self.act(self.fc(x))


class TorchDeepTanh(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = torch.nn.Sequential(*[TorchDenseTanh() for _ in range(DEEP_DEPTH)])

    def forward(self, x):
        return self.blocks(x)


def ms_deep_tanh(fault=None, native_tanh=False):
    return MSDeepTanh(fault, native_tanh)


def torch_deep_tanh():
    return _seeded(TorchDeepTanh)
