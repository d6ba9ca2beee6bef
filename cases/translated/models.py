"""Small custom PyTorch Modules for the translated catalogue: they feed layers the arguments that
a flat tuple of inputs cannot (an LSTM's ``(h0, c0)`` pair, an attention mask), and they are
themselves translated as custom Modules (their ``forward`` runs on the translated children)."""

import numpy as np
import torch


class LSTMWithState(torch.nn.Module):
    """``LSTM(x, (h0, c0))`` with the initial state as two inputs."""

    def __init__(self, **lstm_kwargs):
        super().__init__()
        self.lstm = torch.nn.LSTM(**lstm_kwargs)

    def forward(self, x, h0, c0):
        return self.lstm(x, (h0, c0))


class MaskedAttention(torch.nn.Module):
    """``MultiheadAttention(q, k, v, attn_mask=mask, need_weights=...)``."""

    def __init__(self, need_weights=True, **attention_kwargs):
        super().__init__()
        self.attn = torch.nn.MultiheadAttention(**attention_kwargs)
        self.need_weights = need_weights

    def forward(self, query, key, value, mask):
        out = self.attn(query, key, value, attn_mask=mask, need_weights=self.need_weights)
        return out if self.need_weights else out[0]


class ConvBlock(torch.nn.Module):
    """A residual conv block: children, a parameter of its own, a plain attribute, a helper method."""

    def __init__(self, channels=4):
        super().__init__()
        self.conv = torch.nn.Conv2d(channels, channels, 3, padding=1)
        self.norm = torch.nn.BatchNorm2d(channels)
        self.act = torch.nn.ReLU()
        self.gate = torch.nn.Parameter(torch.full((1, channels, 1, 1), 0.5))
        self.residual = True

    def branch(self, x):
        return self.act(self.norm(self.conv(x)))

    def forward(self, x):
        y = self.branch(x) * self.gate
        return x + y if self.residual else y


class TinyNet(torch.nn.Module):
    """Containers of every kind around custom blocks."""

    def __init__(self):
        super().__init__()
        self.stem = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.GELU())
        self.blocks = torch.nn.ModuleList([ConvBlock(4), ConvBlock(4)])
        self.heads = torch.nn.ModuleDict({"pool": torch.nn.AdaptiveAvgPool2d(1), "flat": torch.nn.Flatten()})
        self.fc = torch.nn.Linear(4, 3)

    def forward(self, x):
        x = self.stem(x)
        for block in self.blocks:
            x = block(x)
        return self.fc(self.heads["flat"](self.heads["pool"](x)))


def encoder_stack(d_model=8, nhead=2, num_layers=2):
    """Two encoder layers and a final LayerNorm (nested tensors off: they are a fast path only)."""
    layer = torch.nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward=16)
    return torch.nn.TransformerEncoder(layer, num_layers, norm=torch.nn.LayerNorm(d_model), enable_nested_tensor=False)


def decoder_stack(d_model=8, nhead=2, num_layers=2):
    """Two decoder layers and a final LayerNorm."""
    layer = torch.nn.TransformerDecoderLayer(d_model, nhead, dim_feedforward=16)
    return torch.nn.TransformerDecoder(layer, num_layers, norm=torch.nn.LayerNorm(d_model))


def small_cnn():
    """A plain Sequential: conv, batch norm, activation, pooling, flatten, linear, dropout."""
    return torch.nn.Sequential(
        torch.nn.Conv2d(3, 4, 3, padding=1),
        torch.nn.BatchNorm2d(4),
        torch.nn.ReLU(),
        torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(4, 4, 3, stride=2, padding=1, bias=False),
        torch.nn.BatchNorm2d(4),
        torch.nn.SiLU(),
        torch.nn.AdaptiveAvgPool2d(1),
        torch.nn.Flatten(),
        torch.nn.Dropout(0.2),
        torch.nn.Linear(4, 3),
    )


def named_mlp():
    """A Sequential built from an OrderedDict: the translated children keep the names."""
    from collections import OrderedDict

    return torch.nn.Sequential(
        OrderedDict(
            [
                ("fc1", torch.nn.Linear(6, 8)),
                ("norm", torch.nn.LayerNorm(8)),
                ("act", torch.nn.GELU()),
                ("fc2", torch.nn.Linear(8, 2)),
                ("out", torch.nn.LogSoftmax(dim=-1)),
            ]
        )
    )


class UsesFunctional(torch.nn.Module):
    """Calls ``torch.nn.functional`` in forward: translated from its ``torch.fx`` trace."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 4)

    def forward(self, x):
        return torch.nn.functional.relu(self.fc(x))


def loss_with_tensors(loss, **kwargs):
    """``torch.nn.<loss>(**kwargs)`` with each numpy argument (class weights, ``pos_weight``) made a
    tensor: ``cases/translated/loss.py`` writes them as arrays, so that listing it imports no torch."""
    return getattr(torch.nn, loss)(
        **{k: torch.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
    )
