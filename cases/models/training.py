"""What ``cases/training/loops.py`` trains with, built only when a case runs: the small CNN, the
optimizers and scheduler (PyTorch's, translated by parity) and the MindSpore loss of the ResNet
guide. The catalogue names them by dotted path, so that listing it imports no framework."""

import mindspore
import torch


def torch_small_cnn(classes=10):
    return torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1),
        torch.nn.BatchNorm2d(8),
        torch.nn.ReLU(),
        torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(8, 16, 3, padding=1),
        torch.nn.BatchNorm2d(16),
        torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d(1),
        torch.nn.Flatten(),
        torch.nn.Linear(16, classes),
    )


def adam(params):
    return torch.optim.Adam(params, lr=1e-3)


def adamw(params):
    return torch.optim.AdamW(params, lr=1e-3, weight_decay=0.01)


def warmup(optimizer):
    return torch.optim.lr_scheduler.LinearLR(optimizer, start_factor=0.25, total_iters=3)


def guide_adam(params):
    return torch.optim.Adam(params, lr=1e-3, weight_decay=1e-5)


def guide_ms_loss():
    """The ResNet-50 migration guide's MindSpore loss (PyTorch's side: ``CrossEntropyLoss``)."""
    return mindspore.nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
