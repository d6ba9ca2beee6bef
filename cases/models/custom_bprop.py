"""A straight-through scaled clamp whose hand-written backward differs from autograd's.

Forward, on both sides: ``y = clamp(x, -1, 1) * scale``.
Backward, on both sides: ``dx = dout * scale`` everywhere, with no masking of
the clamped region.  The automatic gradient would be zero where ``|x| > 1``,
so a tool that ignored the custom backward (MindSpore ``bprop`` or a
``torch.autograd.Function``) would report different input and weight grads.
"""

import mindspore as ms
import torch

IN_FEATURES = 16
OUT_FEATURES = 8
CLIP = 1.0
SCALE = 2.0


class MSStraightThroughClamp(ms.nn.Cell):
    """``clamp(x, -1, 1) * scale`` with a straight-through ``bprop`` (MindSpore)."""

    def __init__(self, scale=SCALE):
        super().__init__()
        self.scale = scale

    def construct(self, x):
        return ms.ops.clamp(x, -CLIP, CLIP) * self.scale

    def bprop(self, x, out, dout):
        return (dout * self.scale,)


class _TorchStraightThroughClampFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, scale):
        ctx.scale = scale
        return torch.clamp(x, -CLIP, CLIP) * scale

    @staticmethod
    def backward(ctx, dout):
        return dout * ctx.scale, None


class TorchStraightThroughClamp(torch.nn.Module):
    """``clamp(x, -1, 1) * scale`` with a straight-through backward (PyTorch)."""

    def __init__(self, scale=SCALE):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        return _TorchStraightThroughClampFunction.apply(x, self.scale)


class MSCustomGradNet(ms.nn.Cell):
    """Dense(16, 8) followed by the straight-through clamp (MindSpore)."""

    def __init__(self):
        super().__init__()
        self.fc = ms.nn.Dense(IN_FEATURES, OUT_FEATURES)
        self.clamp = MSStraightThroughClamp()

    def construct(self, x):
        return self.clamp(self.fc(x))


class TorchCustomGradNet(torch.nn.Module):
    """Linear(16, 8) followed by the straight-through clamp (PyTorch)."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(IN_FEATURES, OUT_FEATURES)
        self.clamp = TorchStraightThroughClamp()

    def forward(self, x):
        return self.clamp(self.fc(x))
