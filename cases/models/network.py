"""Small CNN pair: two conv/batch-norm/relu/max-pool blocks, adaptive pooling, a linear head.

Layer indices inside ``features`` (0..7) and the attribute names ``pool``,
``flatten`` and ``fc`` are the same on both sides.  Batch-norm momentum is
written in each framework's own convention: MindSpore keeps ``momentum`` of
the old running value (0.9), PyTorch weighs the new batch value (0.1).
"""

import mindspore as ms
import torch

CHANNELS = (3, 8, 4)
POOLED_SIZE = (5, 5)
NUM_CLASSES = 10
MS_BN_MOMENTUM = 0.9
TORCH_BN_MOMENTUM = 1.0 - MS_BN_MOMENTUM
FC_IN = CHANNELS[-1] * POOLED_SIZE[0] * POOLED_SIZE[1]


def _ms_block(in_channels, out_channels):
    return [
        ms.nn.Conv2d(in_channels, out_channels, 3, pad_mode="pad", padding=1, has_bias=True),
        ms.nn.BatchNorm2d(out_channels, momentum=MS_BN_MOMENTUM),
        ms.nn.ReLU(),
        ms.nn.MaxPool2d(kernel_size=2, stride=2),
    ]


def _torch_block(in_channels, out_channels):
    return [
        torch.nn.Conv2d(in_channels, out_channels, 3, padding=1, bias=True),
        torch.nn.BatchNorm2d(out_channels, momentum=TORCH_BN_MOMENTUM),
        torch.nn.ReLU(),
        torch.nn.MaxPool2d(kernel_size=2, stride=2),
    ]


class MSNetwork(ms.nn.Cell):
    """Two conv blocks (3 -> 8 -> 4 channels), AdaptiveMaxPool2d(5, 5), Dense(100, 10)."""

    def __init__(self):
        super().__init__()
        layers = _ms_block(CHANNELS[0], CHANNELS[1]) + _ms_block(CHANNELS[1], CHANNELS[2])
        self.features = ms.nn.SequentialCell(layers)
        self.pool = ms.nn.AdaptiveMaxPool2d(POOLED_SIZE)
        self.flatten = ms.nn.Flatten()
        self.fc = ms.nn.Dense(FC_IN, NUM_CLASSES)

    def construct(self, x):
        return self.fc(self.flatten(self.pool(self.features(x))))


class TorchNetwork(torch.nn.Module):
    """Two conv blocks (3 -> 8 -> 4 channels), AdaptiveMaxPool2d(5, 5), Linear(100, 10)."""

    def __init__(self):
        super().__init__()
        layers = _torch_block(CHANNELS[0], CHANNELS[1]) + _torch_block(CHANNELS[1], CHANNELS[2])
        self.features = torch.nn.Sequential(*layers)
        self.pool = torch.nn.AdaptiveMaxPool2d(POOLED_SIZE)
        self.flatten = torch.nn.Flatten()
        self.fc = torch.nn.Linear(FC_IN, NUM_CLASSES)

    def forward(self, x):
        return self.fc(self.flatten(self.pool(self.features(x))))
