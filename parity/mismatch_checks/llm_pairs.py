"""Self-test pairs for the ``llm`` family: hand-written MindSpore LLM layers against transformers'
conventions, small enough to build from a self-test's keyword arguments.

transformers itself is not imported here (its import needs torchvision, which the CPU builds may
not load). Each PyTorch side computes what transformers 4.57.1 computes, in its own words:
:class:`TorchRotaryQuery` its ``LlamaRotaryEmbedding`` and ``apply_rotary_pos_emb``;
:class:`TorchGELU`, :class:`TorchNewGELU` and :class:`TorchGELUTanh` its ``GELUActivation``
(``hidden_act="gelu"``), ``NewGELUActivation`` (``"gelu_new"``) and ``GELUTanh``
(``"gelu_pytorch_tanh"``); :class:`TorchMaskedAttention` its eager attention under its additive
padding mask; :class:`TorchRMSNorm` its ``LlamaRMSNorm``; :class:`TorchAttentionSoftmax` its
float32 softmax of the scores; :class:`TorchGroupedAttention` its ``repeat_kv`` and ``head_dim``
scaling; :class:`TorchTiedLM` its tied ``lm_head``. ``tests/test_llm.py`` holds each to
transformers' own bit for bit.
"""

from __future__ import annotations

import math

import mindspore as ms
import numpy as np
import torch
from mindspore import nn, ops

__all__ = [
    "TorchRotaryQuery",
    "RotaryQuery",
    "LAYOUTS",
    "TorchGELU",
    "TorchNewGELU",
    "TorchGELUTanh",
    "TorchMaskedAttention",
    "MaskedAttention",
    "FILLS",
    "TorchRMSNorm",
    "RMSNorm",
    "TorchAttentionSoftmax",
    "AttentionSoftmax",
    "TorchGroupedAttention",
    "GroupedAttention",
    "REPEATS",
    "SCALES",
    "TorchTiedLM",
    "TiedLM",
]

FILLS = ("min", "-inf")

LAYOUTS = ("half", "interleaved")


def _inv_freq(head_dim: int, theta: float) -> np.ndarray:
    return 1.0 / (theta ** (np.arange(0, head_dim, 2, dtype=np.int64).astype(np.float32) / head_dim))


class TorchRotaryQuery(torch.nn.Module):
    """``q_proj`` then rotary position embeddings, transformers' way: ``cos``/``sin`` of
    ``cat(freqs, freqs)`` and ``q * cos + rotate_half(q) * sin``, ``rotate_half`` pairing element
    i of a head with element i + head_dim/2. In (batch, n, hidden), out (batch, heads, n, head_dim)."""

    def __init__(self, hidden_size: int = 16, num_heads: int = 2, rope_theta: float = 10000.0):
        super().__init__()
        self.head_dim = hidden_size // num_heads
        self.q_proj = torch.nn.Linear(hidden_size, hidden_size, bias=False)
        with torch.no_grad():  # the same weights whatever ran before: the measured difference is stable
            draw = torch.randn(hidden_size, hidden_size, generator=torch.Generator().manual_seed(0))
            self.q_proj.weight.copy_(draw / hidden_size**0.5)
        self.register_buffer("inv_freq", torch.from_numpy(_inv_freq(self.head_dim, rope_theta)), persistent=False)

    def forward(self, x):
        b, n, _ = x.shape
        q = self.q_proj(x).view(b, n, -1, self.head_dim).transpose(1, 2)
        freqs = torch.arange(n, dtype=torch.float32)[:, None] * self.inv_freq[None, :]
        emb = torch.cat((freqs, freqs), dim=-1)
        half = self.head_dim // 2
        rotated = torch.cat((-q[..., half:], q[..., :half]), dim=-1)
        return q * emb.cos() + rotated * emb.sin()


class RotaryQuery(nn.Cell):
    """The MindSpore side: ``layout="half"`` as transformers; ``layout="interleaved"`` pairs
    adjacent elements (2i, 2i+1), turned by frequency i (Meta's LLaMA, ``view_as_complex``)."""

    def __init__(self, hidden_size: int = 16, num_heads: int = 2, rope_theta: float = 10000.0, layout: str = "half"):
        super().__init__()
        if layout not in LAYOUTS:
            raise ValueError(f"layout must be one of {LAYOUTS}, got {layout!r}")
        self.head_dim = hidden_size // num_heads
        self.layout = layout
        self.q_proj = nn.Dense(hidden_size, hidden_size, has_bias=False)
        self.inv_freq = ms.Tensor(_inv_freq(self.head_dim, rope_theta))

    def construct(self, x):
        b, n, _ = x.shape
        q = ops.transpose(ops.reshape(self.q_proj(x), (b, n, -1, self.head_dim)), (0, 2, 1, 3))
        freqs = ops.arange(n).astype(ms.float32)[:, None] * self.inv_freq[None, :]
        half = self.head_dim // 2
        if self.layout == "half":
            emb = ops.cat((freqs, freqs), axis=-1)
            rotated = ops.cat((-q[..., half:], q[..., :half]), axis=-1)
        else:
            emb = ops.repeat_interleave(freqs, 2, axis=-1)
            pairs = ops.reshape(q, (b, -1, n, half, 2))
            rotated = ops.reshape(ops.stack((-pairs[..., 1], pairs[..., 0]), axis=-1), q.shape)
        return q * ops.cos(emb) + rotated * ops.sin(emb)


class TorchGELU(torch.nn.Module):
    """transformers' ``GELUActivation`` (``hidden_act="gelu"``: BERT, RoBERTa, GPT-NeoX): the exact,
    erf GELU of ``torch.nn.functional.gelu``."""

    def forward(self, x):
        return torch.nn.functional.gelu(x)


class TorchNewGELU(torch.nn.Module):
    """transformers' ``NewGELUActivation`` (``hidden_act="gelu_new"``: GPT-2, GPT-J, CodeGen): the
    tanh approximation written out, ``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))``."""

    def forward(self, x):
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


class TorchGELUTanh(torch.nn.Module):
    """transformers' ``GELUTanh`` (``hidden_act="gelu_pytorch_tanh"``: Gemma, Gemma 2): PyTorch's
    tanh approximation, ``torch.nn.functional.gelu(x, approximate="tanh")``."""

    def forward(self, x):
        return torch.nn.functional.gelu(x, approximate="tanh")


def _seeded_linear(hidden_size: int, seed: int) -> torch.nn.Linear:
    linear = torch.nn.Linear(hidden_size, hidden_size, bias=False)
    with torch.no_grad():  # the same weights whatever ran before: the measured difference is stable
        draw = torch.randn(hidden_size, hidden_size, generator=torch.Generator().manual_seed(seed))
        linear.weight.copy_(draw / hidden_size**0.5)
    return linear


class TorchMaskedAttention(torch.nn.Module):
    """Self-attention under transformers' eager mask: causal, the first ``padding`` tokens of the
    first sequence left padding, ``0`` where a query may attend and float32's smallest finite value
    where it may not (``masking_utils.eager_mask``), added to the scores and softmaxed in float32
    (``eager_attention_forward``). The first ``padding`` queries of that sequence attend to nothing:
    their scores are all the smallest value, and their weights uniform. In (batch, n, hidden), out
    (batch, heads, n, head_dim)."""

    def __init__(self, hidden_size: int = 16, num_heads: int = 2, padding: int = 2):
        super().__init__()
        self.num_heads, self.padding = num_heads, padding
        self.head_dim = hidden_size // num_heads
        self.q_proj, self.k_proj, self.v_proj = (_seeded_linear(hidden_size, s) for s in (0, 1, 2))

    def forward(self, x):
        b, n, _ = x.shape
        q, k, v = (p(x).view(b, n, -1, self.head_dim).transpose(1, 2) for p in (self.q_proj, self.k_proj, self.v_proj))
        positions = torch.arange(n)
        real = (positions[None, :] >= self.padding) | (torch.arange(b)[:, None] != 0)
        allowed = (positions[None, :] <= positions[:, None])[None, None] & real[:, None, None, :]
        mask = torch.where(allowed, 0.0, torch.finfo(torch.float32).min)
        scores = torch.matmul(q, k.transpose(2, 3)) * self.head_dim**-0.5 + mask
        return torch.matmul(torch.nn.functional.softmax(scores, dim=-1, dtype=torch.float32), v)


class MaskedAttention(nn.Cell):
    """The MindSpore side: ``fill="min"`` masks with float32's smallest finite value, as transformers;
    ``fill="-inf"`` with ``-inf``, as hand-written attention often does (``masked_fill(-inf)``)."""

    def __init__(self, hidden_size: int = 16, num_heads: int = 2, padding: int = 2, fill: str = "min"):
        super().__init__()
        if fill not in FILLS:
            raise ValueError(f"fill must be one of {FILLS}, got {fill!r}")
        self.num_heads, self.padding = num_heads, padding
        self.head_dim = hidden_size // num_heads
        self.q_proj, self.k_proj, self.v_proj = (nn.Dense(hidden_size, hidden_size, has_bias=False) for _ in range(3))
        self.fill = float(np.finfo(np.float32).min) if fill == "min" else float("-inf")

    def construct(self, x):
        b, n, _ = x.shape
        q, k, v = (
            ops.transpose(ops.reshape(p(x), (b, n, -1, self.head_dim)), (0, 2, 1, 3))
            for p in (self.q_proj, self.k_proj, self.v_proj)
        )
        positions = ops.arange(n)
        real = ops.logical_or(positions[None, :] >= self.padding, ops.arange(b)[:, None] != 0)
        allowed = ops.logical_and((positions[None, :] <= positions[:, None])[None, None], real[:, None, None, :])
        zeros = ops.zeros(allowed.shape, ms.float32)
        scores = ops.matmul(q, ops.transpose(k, (0, 1, 3, 2))) * self.head_dim**-0.5
        scores = scores + ops.select(allowed, zeros, zeros + self.fill)
        return ops.matmul(ops.softmax(scores, -1), v)


class TorchRMSNorm(torch.nn.Module):
    """transformers' ``LlamaRMSNorm``: in float32 whatever the input's dtype, ``x * rsqrt(mean(x**2) +
    eps)``, cast back to the input's dtype before the weight multiplies it. ``dtype``: the weight's."""

    def __init__(self, hidden_size: int = 64, eps: float = 1e-6, dtype: str = "float32"):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(hidden_size, dtype=getattr(torch, dtype)))
        self.variance_epsilon = eps

    def forward(self, x):
        input_dtype = x.dtype
        x = x.to(torch.float32)
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.variance_epsilon)
        return self.weight * x.to(input_dtype)


class RMSNorm(nn.Cell):
    """The MindSpore side: ``upcast=True`` computes in float32 and casts back, as transformers;
    ``upcast=False`` in the input's dtype (in float16 the square's mean rounds, and overflows to inf
    once the root mean square passes 256)."""

    def __init__(self, hidden_size: int = 64, eps: float = 1e-6, dtype: str = "float32", upcast: bool = True):
        super().__init__()
        self.weight = ms.Parameter(ms.Tensor(np.ones(hidden_size), getattr(ms, dtype)), name="weight")
        self.eps, self.upcast = eps, upcast

    def construct(self, x):
        input_dtype = x.dtype
        if self.upcast:
            x = x.astype(ms.float32)
        x = x * ops.rsqrt(ops.mean(ops.pow(x, 2), -1, keep_dims=True) + self.eps)
        return self.weight * x.astype(input_dtype)


class TorchAttentionSoftmax(torch.nn.Module):
    """transformers' ``eager_attention_forward`` from the scores on: softmax over the last axis in
    float32 whatever the scores' dtype (``softmax(scores, dim=-1, dtype=torch.float32)``), cast back
    to the query's dtype, then the weights times the values. In: scores and values in a half dtype."""

    def forward(self, scores, values):
        weights = torch.nn.functional.softmax(scores, dim=-1, dtype=torch.float32).to(values.dtype)
        return torch.matmul(weights.float(), values.float()).to(values.dtype)


class AttentionSoftmax(nn.Cell):
    """The MindSpore side: ``upcast=True`` softmaxes in float32 and casts back, as transformers;
    ``upcast=False`` in the scores' dtype, as ``ops.softmax`` does given float16."""

    def __init__(self, upcast: bool = True):
        super().__init__()
        self.upcast = upcast

    def construct(self, scores, values):
        weights = ops.softmax(scores.astype(ms.float32) if self.upcast else scores, -1).astype(values.dtype)
        return ops.matmul(weights.astype(ms.float32), values.astype(ms.float32)).astype(values.dtype)


REPEATS = ("interleave", "tile")
SCALES = ("head_dim", "hidden_size")


class TorchGroupedAttention(torch.nn.Module):
    """transformers' LLaMA attention without rotary embeddings: ``num_key_value_heads`` key/value
    heads, each repeated for ``num_heads // num_key_value_heads`` consecutive query heads
    (``repeat_kv``: ``expand`` then ``reshape``, i.e. ``repeat_interleave`` on the head axis), scores
    scaled by ``head_dim ** -0.5`` and softmaxed in float32. In (batch, n, hidden), out (batch, n, hidden)."""

    def __init__(self, hidden_size: int = 16, num_heads: int = 4, num_key_value_heads: int = 2):
        super().__init__()
        self.num_heads, self.num_key_value_heads = num_heads, num_key_value_heads
        self.head_dim = hidden_size // num_heads
        kv = num_key_value_heads * self.head_dim
        self.q_proj = _seeded_linear(hidden_size, 0)
        self.k_proj, self.v_proj = (_seeded_projection(hidden_size, kv, s) for s in (1, 2))

    def forward(self, x):
        b, n, _ = x.shape
        q = self.q_proj(x).view(b, n, -1, self.head_dim).transpose(1, 2)
        k, v = (p(x).view(b, n, -1, self.head_dim).transpose(1, 2) for p in (self.k_proj, self.v_proj))
        groups = self.num_heads // self.num_key_value_heads
        k, v = (
            t[:, :, None]
            .expand(b, self.num_key_value_heads, groups, n, self.head_dim)
            .reshape(b, self.num_heads, n, self.head_dim)
            for t in (k, v)
        )
        scores = torch.matmul(q, k.transpose(2, 3)) * self.head_dim**-0.5
        weights = torch.nn.functional.softmax(scores, dim=-1, dtype=torch.float32).to(q.dtype)
        return torch.matmul(weights, v).transpose(1, 2).reshape(b, n, -1)


class GroupedAttention(nn.Cell):
    """The MindSpore side: ``repeat="interleave"`` gives query head h the key/value head
    ``h // groups``, as transformers; ``repeat="tile"`` (``ops.tile`` on the head axis) gives it
    ``h % num_key_value_heads``. ``scale="head_dim"`` scales the scores by ``head_dim ** -0.5``, as
    transformers; ``scale="hidden_size"`` by ``hidden_size ** -0.5``."""

    def __init__(
        self,
        hidden_size: int = 16,
        num_heads: int = 4,
        num_key_value_heads: int = 2,
        repeat: str = "interleave",
        scale: str = "head_dim",
    ):
        super().__init__()
        if repeat not in REPEATS or scale not in SCALES:
            raise ValueError(f"repeat must be one of {REPEATS} and scale one of {SCALES}, got {repeat!r}, {scale!r}")
        self.num_heads, self.num_key_value_heads, self.repeat = num_heads, num_key_value_heads, repeat
        self.head_dim = hidden_size // num_heads
        self.scaling = (self.head_dim if scale == "head_dim" else hidden_size) ** -0.5
        kv = num_key_value_heads * self.head_dim
        self.q_proj = nn.Dense(hidden_size, hidden_size, has_bias=False)
        self.k_proj, self.v_proj = nn.Dense(hidden_size, kv, has_bias=False), nn.Dense(hidden_size, kv, has_bias=False)

    def construct(self, x):
        b, n, _ = x.shape
        q, k, v = (
            ops.transpose(ops.reshape(p(x), (b, n, -1, self.head_dim)), (0, 2, 1, 3))
            for p in (self.q_proj, self.k_proj, self.v_proj)
        )
        groups = self.num_heads // self.num_key_value_heads
        if self.repeat == "interleave":
            k, v = ops.repeat_interleave(k, groups, 1), ops.repeat_interleave(v, groups, 1)
        else:
            k, v = ops.tile(k, (1, groups, 1, 1)), ops.tile(v, (1, groups, 1, 1))
        scores = ops.matmul(q, ops.transpose(k, (0, 1, 3, 2))) * self.scaling
        out = ops.matmul(ops.softmax(scores.astype(ms.float32), -1).astype(q.dtype), v)
        return ops.reshape(ops.transpose(out, (0, 2, 1, 3)), (b, n, -1))


def _seeded_projection(features: int, out_features: int, seed: int) -> torch.nn.Linear:
    linear = torch.nn.Linear(features, out_features, bias=False)
    with torch.no_grad():
        draw = torch.randn(out_features, features, generator=torch.Generator().manual_seed(seed))
        linear.weight.copy_(draw / features**0.5)
    return linear


class TorchTiedLM(torch.nn.Module):
    """An embedding and an output layer that share one weight (transformers' ``tie_word_embeddings``:
    ``lm_head.weight`` is ``embed_tokens.weight``), a tanh between. In token ids, out logits."""

    def __init__(self, vocab_size: int = 32, hidden_size: int = 16):
        super().__init__()
        self.embed_tokens = torch.nn.Embedding(vocab_size, hidden_size)
        self.lm_head = torch.nn.Linear(hidden_size, vocab_size, bias=False)
        self.lm_head.weight = self.embed_tokens.weight

    def forward(self, ids):
        return self.lm_head(torch.tanh(self.embed_tokens(ids)))


class _Table(nn.Cell):
    def __init__(self, vocab_size: int, hidden_size: int):
        super().__init__()
        self.weight = ms.Parameter(ms.Tensor(np.zeros((vocab_size, hidden_size), np.float32)), name="weight")


class TiedLM(nn.Cell):
    """The MindSpore side: ``tied=True`` holds one Parameter in both places, as transformers;
    ``tied=False`` gives the output layer a Parameter of its own (the weight copied in, as a port that
    loads ``lm_head.weight`` from the checkpoint's tied tensor does), so the two train apart."""

    def __init__(self, vocab_size: int = 32, hidden_size: int = 16, tied: bool = True):
        super().__init__()
        self.embed_tokens, self.lm_head = _Table(vocab_size, hidden_size), _Table(vocab_size, hidden_size)
        if tied:
            self.lm_head.weight = self.embed_tokens.weight

    def construct(self, ids):
        hidden = ops.tanh(ops.gather(self.embed_tokens.weight, ids, 0))
        return ops.matmul(hidden, ops.transpose(self.lm_head.weight, (1, 0)))
