"""A pre-LN Transformer encoder block with a classification head, for MindSpore and PyTorch.

PyTorch builds the block from ``torch.nn.TransformerEncoderLayer(norm_first=True,
batch_first=True, dropout=0.0)``; MindSpore writes the same block by hand from
``nn.MultiheadAttention``, ``nn.Dense`` and ``nn.LayerNorm``, with PyTorch's attribute names
(``self_attn`` with its packed ``in_proj_weight``, ``linear1``/``linear2``, ``norm1``/``norm2``),
so every weight pairs by name or by the norm renames. What the MindSpore side must say
explicitly: ``LayerNorm(epsilon=1e-5)`` (MindSpore's default is 1e-7) and no Dropout cells (the
training check refuses a Dropout that could draw a mask). The head classifies the mean over the
sequence.
"""

import mindspore as ms
import torch

D_MODEL, HEADS, FFN, CLASSES = 32, 4, 64, 5
LN_EPS = 1e-5


class TorchEncoderClassifier(torch.nn.Module):
    def __init__(self, d_model=D_MODEL, heads=HEADS, ffn=FFN, classes=CLASSES):
        super().__init__()
        self.block = torch.nn.TransformerEncoderLayer(
            d_model, heads, dim_feedforward=ffn, dropout=0.0, layer_norm_eps=LN_EPS, batch_first=True, norm_first=True
        )
        self.head = torch.nn.Linear(d_model, classes)

    def forward(self, x):
        return self.head(self.block(x).mean(dim=1))


class MSPreLNBlock(ms.nn.Cell):
    """x + attention(norm1(x)), then + linear2(relu(linear1(norm2(x)))): PyTorch's norm_first layer."""

    def __init__(self, d_model=D_MODEL, heads=HEADS, ffn=FFN):
        super().__init__()
        self.self_attn = ms.nn.MultiheadAttention(d_model, heads, batch_first=True)
        self.linear1 = ms.nn.Dense(d_model, ffn)
        self.linear2 = ms.nn.Dense(ffn, d_model)
        self.norm1 = ms.nn.LayerNorm((d_model,), epsilon=LN_EPS)
        self.norm2 = ms.nn.LayerNorm((d_model,), epsilon=LN_EPS)
        self.relu = ms.nn.ReLU()

    def construct(self, x):
        h = self.norm1(x)
        x = x + self.self_attn(h, h, h, need_weights=False)[0]
        return x + self.linear2(self.relu(self.linear1(self.norm2(x))))


class MSEncoderClassifier(ms.nn.Cell):
    def __init__(self, d_model=D_MODEL, heads=HEADS, ffn=FFN, classes=CLASSES):
        super().__init__()
        self.block = MSPreLNBlock(d_model, heads, ffn)
        self.head = ms.nn.Dense(d_model, classes)

    def construct(self, x):
        return self.head(self.block(x).mean(axis=1))
