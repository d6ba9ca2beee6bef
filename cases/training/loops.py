"""Training loops as a migration writes them, a few steps each.

* ``SmallCNN_Adam``: a BatchNorm CNN, 5 steps of translated ``torch.optim.Adam`` under a
  translated ``CrossEntropyLoss``, over two batches.
* ``ResNetGuide``: the ResNet-50 migration guide's loop (Adam, lr 1e-3, weight_decay 1e-5;
  PyTorch's ``CrossEntropyLoss`` against MindSpore's ``SoftmaxCrossEntropyWithLogits(sparse=True,
  reduction='mean')``), 3 steps, on the small Bottleneck ResNet of ``cases.models.resnet`` and
  32 x 32 images: ResNet-50 itself trains the same but takes minutes per check on CPU.
"""

import mindspore
import torch

from parity import TRANSLATE, ParityCase, Training, randint, randn


def torch_small_cnn(classes=10):
    return torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(8, 16, 3, padding=1), torch.nn.BatchNorm2d(16), torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(16, classes))


def adam(params):
    return torch.optim.Adam(params, lr=1e-3)


def guide_adam(params):
    return torch.optim.Adam(params, lr=1e-3, weight_decay=1e-5)


IMAGES = [(randn((4, 3, 16, 16)), randint((4,), 0, 10)), (randn((4, 3, 16, 16)), randint((4,), 0, 10))]

SmallCNN_Adam = ParityCase(
    "SmallCNN_Adam", mindspore=TRANSLATE, torch=torch_small_cnn,
    training=Training(IMAGES, loss=torch.nn.CrossEntropyLoss(), optimizer=adam, steps=5))

ResNetGuide = ParityCase(
    "ResNetGuide", mindspore="cases.models.resnet:ms_resnet_small", torch="cases.models.resnet:torch_resnet_small",
    training=Training([(randn((4, 3, 32, 32)), randint((4,), 0, 10))], optimizer=guide_adam, steps=3,
                      loss=(mindspore.nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"),
                            torch.nn.CrossEntropyLoss())))
