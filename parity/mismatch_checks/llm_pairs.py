"""Self-test pairs for the ``llm`` family: hand-written MindSpore LLM layers against transformers'
conventions, small enough to build from a self-test's keyword arguments.

transformers itself is not imported here (its import needs torchvision, which the CPU builds may
not load): :class:`TorchRotaryQuery` computes what transformers 4.57.1's ``LlamaRotaryEmbedding``
and ``apply_rotary_pos_emb`` compute, and :class:`TorchGELU` and :class:`TorchNewGELU` what its
``GELUActivation`` (``hidden_act="gelu"``) and ``NewGELUActivation`` (``"gelu_new"``) compute, in
their own words; ``tests/test_llm.py`` holds each to transformers' own bit for bit.
"""

from __future__ import annotations

import math

import mindspore as ms
import numpy as np
import torch
from mindspore import nn, ops

__all__ = ["TorchRotaryQuery", "RotaryQuery", "LAYOUTS", "TorchGELU", "TorchNewGELU"]

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
            self.q_proj.weight.copy_(draw / hidden_size ** 0.5)
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
