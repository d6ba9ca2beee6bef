"""Conv2d + ReLU pair whose MindSpore side keeps its own padding default.

MindSpore's ``Conv2d`` pads with ``pad_mode="same"`` unless told otherwise,
while PyTorch's ``Conv2d`` uses ``padding=0``.  With the default the two
models disagree on output shape; ``pad_mode="pad"`` makes them agree.
"""

import mindspore as ms
import torch

IN_CHANNELS = 120
OUT_CHANNELS = 240
KERNEL_SIZE = 4


class MSConvReLU(ms.nn.Cell):
    """Conv2d(120, 240, 4) without bias, then ReLU (MindSpore)."""

    def __init__(self, pad_mode="same"):
        super().__init__()
        self.conv = ms.nn.Conv2d(IN_CHANNELS, OUT_CHANNELS, KERNEL_SIZE, has_bias=False, pad_mode=pad_mode)
        self.relu = ms.nn.ReLU()

    def construct(self, x):
        return self.relu(self.conv(x))


class TorchConvReLU(torch.nn.Module):
    """Conv2d(120, 240, 4) without bias and without padding, then ReLU (PyTorch)."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(IN_CHANNELS, OUT_CHANNELS, KERNEL_SIZE, bias=False)
        self.relu = torch.nn.ReLU()

    def forward(self, x):
        return self.relu(self.conv(x))
