"""ResNet with Bottleneck blocks in torchvision's layout, for MindSpore and PyTorch.

Both sides share one parametrisation (blocks per stage, base width) and the
attribute names of torchvision's ``resnet50``: ``conv1``, ``bn1``, ``relu``,
``maxpool``, ``layer1`` .. ``layer4``, ``avgpool``, ``fc``; each Bottleneck has
``conv1``..``conv3``, ``bn1``..``bn3``, ``relu`` and ``downsample`` (a
conv1x1 + batch-norm sequence, or None).  The stride sits on ``conv2``
(ResNet v1.5).  As in torchvision, the PyTorch side updates in place
(``ReLU(inplace=True)``, ``out += identity``); localisation captures through it.
"""

import dataclasses

import mindspore as ms
import torch

EXPANSION = 4
BN_EPS = 1e-5
MS_BN_MOMENTUM = 0.9
TORCH_BN_MOMENTUM = 1.0 - MS_BN_MOMENTUM


@dataclasses.dataclass(frozen=True)
class ResNetSpec:
    """How many Bottleneck blocks each of the four stages has, and the first stage's width."""

    layers: tuple
    width: int = 64

    def stages(self):
        """Yield ``(attribute name, [(in_planes, planes, stride), ...])`` for layer1..layer4.

        Only the first block of a stage strides (and changes the channel count).
        """
        in_planes = self.width
        for index, blocks in enumerate(self.layers):
            planes = self.width * 2**index
            first_stride = 1 if index == 0 else 2
            block_args = [(in_planes, planes, first_stride)]
            block_args += [(planes * EXPANSION, planes, 1)] * (blocks - 1)
            in_planes = planes * EXPANSION
            yield f"layer{index + 1}", block_args

    @property
    def fc_in(self):
        return self.width * 2 ** (len(self.layers) - 1) * EXPANSION


RESNET50 = ResNetSpec(layers=(3, 4, 6, 3), width=64)
RESNET_SMALL = ResNetSpec(layers=(1, 1, 1, 1), width=16)


def _needs_downsample(in_planes, planes, stride):
    return stride != 1 or in_planes != planes * EXPANSION


# MindSpore ---------------------------------------------------------------


def _ms_conv(in_planes, out_planes, kernel_size, stride=1):
    return ms.nn.Conv2d(
        in_planes,
        out_planes,
        kernel_size,
        stride=stride,
        pad_mode="pad",
        padding=kernel_size // 2,
        has_bias=False,
    )


def _ms_bn(planes):
    return ms.nn.BatchNorm2d(planes, eps=BN_EPS, momentum=MS_BN_MOMENTUM)


class MSBottleneck(ms.nn.Cell):
    """1x1 -> 3x3 (strided) -> 1x1 convolutions with a residual connection (MindSpore)."""

    def __init__(self, in_planes, planes, stride=1):
        super().__init__()
        self.conv1 = _ms_conv(in_planes, planes, 1)
        self.bn1 = _ms_bn(planes)
        self.conv2 = _ms_conv(planes, planes, 3, stride)
        self.bn2 = _ms_bn(planes)
        self.conv3 = _ms_conv(planes, planes * EXPANSION, 1)
        self.bn3 = _ms_bn(planes * EXPANSION)
        self.relu = ms.nn.ReLU()
        self.downsample = None
        if _needs_downsample(in_planes, planes, stride):
            self.downsample = ms.nn.SequentialCell(
                [_ms_conv(in_planes, planes * EXPANSION, 1, stride), _ms_bn(planes * EXPANSION)]
            )

    def construct(self, x):
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        if self.downsample is not None:
            identity = self.downsample(x)
        return self.relu(out + identity)


class MSResNet(ms.nn.Cell):
    """Bottleneck ResNet built from a :class:`ResNetSpec` (MindSpore)."""

    def __init__(self, spec, num_classes=10):
        super().__init__()
        self.conv1 = ms.nn.Conv2d(3, spec.width, 7, stride=2, pad_mode="pad", padding=3, has_bias=False)
        self.bn1 = _ms_bn(spec.width)
        self.relu = ms.nn.ReLU()
        self.maxpool = ms.nn.MaxPool2d(kernel_size=3, stride=2, pad_mode="pad", padding=1)
        for name, block_args in spec.stages():
            blocks = [MSBottleneck(*args) for args in block_args]
            setattr(self, name, ms.nn.SequentialCell(blocks))
        self.avgpool = ms.nn.AdaptiveAvgPool2d((1, 1))
        self.fc = ms.nn.Dense(spec.fc_in, num_classes)

    def construct(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        x = ms.ops.flatten(self.avgpool(x), start_dim=1)
        return self.fc(x)


# PyTorch -----------------------------------------------------------------


def _torch_conv(in_planes, out_planes, kernel_size, stride=1):
    return torch.nn.Conv2d(in_planes, out_planes, kernel_size, stride=stride, padding=kernel_size // 2, bias=False)


def _torch_bn(planes):
    return torch.nn.BatchNorm2d(planes, eps=BN_EPS, momentum=TORCH_BN_MOMENTUM)


class TorchBottleneck(torch.nn.Module):
    """1x1 -> 3x3 (strided) -> 1x1 convolutions with a residual connection (PyTorch)."""

    def __init__(self, in_planes, planes, stride=1):
        super().__init__()
        self.conv1 = _torch_conv(in_planes, planes, 1)
        self.bn1 = _torch_bn(planes)
        self.conv2 = _torch_conv(planes, planes, 3, stride)
        self.bn2 = _torch_bn(planes)
        self.conv3 = _torch_conv(planes, planes * EXPANSION, 1)
        self.bn3 = _torch_bn(planes * EXPANSION)
        self.relu = torch.nn.ReLU(inplace=True)
        self.downsample = None
        if _needs_downsample(in_planes, planes, stride):
            self.downsample = torch.nn.Sequential(
                _torch_conv(in_planes, planes * EXPANSION, 1, stride),
                _torch_bn(planes * EXPANSION),
            )

    def forward(self, x):
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        if self.downsample is not None:
            identity = self.downsample(x)
        out += identity
        return self.relu(out)


class TorchResNet(torch.nn.Module):
    """Bottleneck ResNet built from a :class:`ResNetSpec` (PyTorch)."""

    def __init__(self, spec, num_classes=10):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, spec.width, 7, stride=2, padding=3, bias=False)
        self.bn1 = _torch_bn(spec.width)
        self.relu = torch.nn.ReLU(inplace=True)
        self.maxpool = torch.nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        for name, block_args in spec.stages():
            blocks = [TorchBottleneck(*args) for args in block_args]
            setattr(self, name, torch.nn.Sequential(*blocks))
        self.avgpool = torch.nn.AdaptiveAvgPool2d((1, 1))
        self.fc = torch.nn.Linear(spec.fc_in, num_classes)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        x = torch.flatten(self.avgpool(x), 1)
        return self.fc(x)


# Factories ---------------------------------------------------------------


def ms_resnet50(num_classes=10):
    """MindSpore ResNet-50: stages (3, 4, 6, 3), width 64."""
    return MSResNet(RESNET50, num_classes)


def torch_resnet50(num_classes=10):
    """PyTorch ResNet-50: stages (3, 4, 6, 3), width 64 (161 parameters, as torchvision)."""
    return TorchResNet(RESNET50, num_classes)


def ms_resnet_small(num_classes=10):
    """MindSpore small ResNet for fast tests: stages (1, 1, 1, 1), width 16."""
    return MSResNet(RESNET_SMALL, num_classes)


def torch_resnet_small(num_classes=10):
    """PyTorch small ResNet for fast tests: stages (1, 1, 1, 1), width 16."""
    return TorchResNet(RESNET_SMALL, num_classes)
