"""A MindSpore Bottleneck ResNet written the way mindcv writes its ``resnet50``.

The conventions that matter against torchvision's layout (``cases.models.resnet``):

* the stem max-pool is ``MaxPool2d(kernel_size=3, stride=2, pad_mode="same")`` where torchvision
  has ``padding=1``: on an even-sized input ``'same'`` pads the bottom and right only, so the
  pooled windows sit one row and column off PyTorch's (known mismatch ``maxpool2d-pad-mode-same``);
* the 1x1 convolutions (``conv1``, ``conv3``, the strided ``down_sample`` one) keep MindSpore's
  default ``pad_mode="same"``: a 1x1 kernel pads nothing under either convention, whatever the
  stride, so these agree with PyTorch's ``padding=0``;
* the 3x3 convolutions and the 7x7 stem use ``pad_mode="pad"`` with explicit padding;
* no convolution has a bias (MindSpore's default), BatchNorm keeps MindSpore's defaults
  (momentum 0.9, eps 1e-5), and the head is a global mean and a ``Dense`` ``classifier``.

Attribute names follow mindcv (``max_pool``, ``down_sample``, ``pool``, ``classifier``), so the
weights and layers pair with torchvision's names by kind and definition order.
"""

import mindspore as ms

from .resnet import EXPANSION, RESNET50, RESNET_SMALL


def _conv1x1(in_planes, out_planes, stride=1):
    return ms.nn.Conv2d(in_planes, out_planes, kernel_size=1, stride=stride)


def _conv3x3(in_planes, out_planes, stride=1):
    return ms.nn.Conv2d(in_planes, out_planes, kernel_size=3, stride=stride, pad_mode="pad", padding=1)


class Bottleneck(ms.nn.Cell):
    """1x1 -> 3x3 (strided) -> 1x1 with a residual connection, mindcv style."""

    def __init__(self, in_planes, planes, stride=1):
        super().__init__()
        self.conv1 = _conv1x1(in_planes, planes)
        self.bn1 = ms.nn.BatchNorm2d(planes)
        self.conv2 = _conv3x3(planes, planes, stride)
        self.bn2 = ms.nn.BatchNorm2d(planes)
        self.conv3 = _conv1x1(planes, planes * EXPANSION)
        self.bn3 = ms.nn.BatchNorm2d(planes * EXPANSION)
        self.relu = ms.nn.ReLU()
        self.down_sample = None
        if stride != 1 or in_planes != planes * EXPANSION:
            self.down_sample = ms.nn.SequentialCell(
                [_conv1x1(in_planes, planes * EXPANSION, stride), ms.nn.BatchNorm2d(planes * EXPANSION)]
            )

    def construct(self, x):
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        if self.down_sample is not None:
            identity = self.down_sample(x)
        return self.relu(out + identity)


class GlobalMean(ms.nn.Cell):
    """Mean over the spatial dimensions: (N, C, H, W) -> (N, C)."""

    def construct(self, x):
        return x.mean(axis=(2, 3))


class ResNet(ms.nn.Cell):
    """Bottleneck ResNet from a ``cases.models.resnet.ResNetSpec``, mindcv style."""

    def __init__(self, spec, num_classes=10):
        super().__init__()
        self.conv1 = ms.nn.Conv2d(3, spec.width, kernel_size=7, stride=2, pad_mode="pad", padding=3)
        self.bn1 = ms.nn.BatchNorm2d(spec.width)
        self.relu = ms.nn.ReLU()
        self.max_pool = ms.nn.MaxPool2d(kernel_size=3, stride=2, pad_mode="same")
        for name, block_args in spec.stages():
            setattr(self, name, ms.nn.SequentialCell([Bottleneck(*args) for args in block_args]))
        self.pool = GlobalMean()
        self.classifier = ms.nn.Dense(spec.fc_in, num_classes)

    def construct(self, x):
        x = self.max_pool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.classifier(self.pool(x))


def ms_resnet50(num_classes=10):
    """mindcv-style ResNet-50: stages (3, 4, 6, 3), width 64."""
    return ResNet(RESNET50, num_classes)


def ms_resnet_small(num_classes=10):
    """mindcv-style small ResNet: stages (1, 1, 1, 1), width 16."""
    return ResNet(RESNET_SMALL, num_classes)
