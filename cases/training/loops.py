"""Training loops as a migration writes them, a few steps each.

* ``SmallCNN_Adam``: a BatchNorm CNN, 5 steps of translated ``torch.optim.Adam`` under a
  translated ``CrossEntropyLoss``, over two batches.
* ``ResNetGuide``: the ResNet-50 migration guide's loop (Adam, lr 1e-3, weight_decay 1e-5;
  PyTorch's ``CrossEntropyLoss`` against MindSpore's ``SoftmaxCrossEntropyWithLogits(sparse=True,
  reduction='mean')``), 3 steps, on the small Bottleneck ResNet of ``cases.models.resnet`` and
  32 x 32 images: ResNet-50 itself trains the same but takes minutes per check on CPU.
* ``TransformerBlock_AdamW``: a pre-LN Transformer encoder block (``nn.TransformerEncoderLayer``
  against a MindSpore block written by hand, ``cases.models.transformer``) with a classification
  head, 5 steps of translated ``AdamW`` (weight_decay 0.01) under a linear warmup, gradients
  clipped to norm 0.5 (the unclipped norms are 1.1 to 1.3: every step clips). The key projection's
  bias has no gradient in exact arithmetic (softmax ignores a shift shared by all keys), so its
  rounding-level gradient moves under AdamW: the rounding envelope judges it.
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


def adamw(params):
    return torch.optim.AdamW(params, lr=1e-3, weight_decay=0.01)


def warmup(optimizer):
    return torch.optim.lr_scheduler.LinearLR(optimizer, start_factor=0.25, total_iters=3)


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

SEQUENCES = [(randn((4, 8, 32)), randint((4,), 0, 5)), (randn((4, 8, 32)), randint((4,), 0, 5))]

TransformerBlock_AdamW = ParityCase(
    "TransformerBlock_AdamW", mindspore="cases.models.transformer:MSEncoderClassifier",
    torch="cases.models.transformer:TorchEncoderClassifier",
    training=Training(SEQUENCES, loss=torch.nn.CrossEntropyLoss(), optimizer=adamw, lr_scheduler=warmup,
                      clip_grad_norm=0.5, steps=5))
