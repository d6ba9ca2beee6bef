"""Causes confirmed by replay: on a failing check, each known mismatch found at a layer with its
own error is applied to PyTorch's layer (its attributes as MindSpore's layer has them, its input
padded as MindSpore pads it) and the layer fed its captured inputs again. Real pairs, both
frameworks."""

from __future__ import annotations

import mindspore  # noqa: F401  (both frameworks before parity, as everywhere in tests/)
import pytest
import torch
from mindspore import nn as msnn

import parity
from parity.backends import torch as tb


class _MindSporePort(msnn.Cell):
    """Three layers built as a port often builds them: stride-2 'same' padding, MindSpore's
    BatchNorm eps, MindSpore's GELU default (tanh); ``pool``: the convolution padded as PyTorch's,
    and an average pool with 'same' padding after the GELU."""

    def __init__(self, pool=False):
        super().__init__()
        padding = {"pad_mode": "pad", "padding": 1} if pool else {"pad_mode": "same"}
        self.conv = msnn.Conv2d(3, 8, 3, stride=2, has_bias=True, **padding)
        self.bn = msnn.BatchNorm2d(8)
        self.act = msnn.GELU()
        self.pool = msnn.AvgPool2d(3, 2, pad_mode="same") if pool else None
        self.fc = msnn.Dense(8, 4)

    def construct(self, x):
        y = self.act(self.bn(self.conv(x)))
        if self.pool is not None:
            y = self.pool(y)
        return self.fc(y.mean(axis=(2, 3)))


class _PyTorchOriginal(torch.nn.Module):
    def __init__(self, pool=False, eps=1e-3, approximate="none", padding=1):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, stride=2, padding=padding)
        self.bn = torch.nn.BatchNorm2d(8, eps=eps, momentum=0.01)
        self.act = torch.nn.GELU(approximate=approximate)
        self.pool = torch.nn.AvgPool2d(3, 2, padding=1) if pool else None
        self.fc = torch.nn.Linear(8, 4)

    def forward(self, x):
        y = self.act(self.bn(self.conv(x)))
        if self.pool is not None:
            y = self.pool(y)
        return self.fc(y.mean(dim=(2, 3)))


def _failure(ms_cell, torch_module):
    with pytest.raises(parity.ParityMismatch) as raised:
        parity.check(ms_cell, torch_module, parity.randn((2, 3, 8, 8)), grads=False)
    return raised.value


def _entries(causes):
    return [c.split("'")[1] for c in causes]


def test_each_layer_is_given_the_cause_its_replay_reproduces():
    failure = _failure(_MindSporePort(), _PyTorchOriginal())
    own = {e.layer: e for e in failure.result.layers.own_errors}
    assert sorted(own) == ["act", "bn", "conv"]
    assert _entries(own["conv"].causes) == ["conv2d-pad-mode-default"]
    assert _entries(own["bn"].causes) == ["batchnorm2d-eps-not-carried"]
    assert _entries(own["act"].causes) == ["gelu-approximate-default"]
    assert all("; confirmed: PyTorch's layer with " in c for e in own.values() for c in e.causes)
    assert "its input padded [0, 1, 0, 1] as MindSpore pads it" in own["conv"].causes[0]
    # momentum weighs only the running statistics: in eval mode its replay changes nothing
    assert _entries(own["bn"].unconfirmed) == ["batchnorm2d-momentum-convention"]
    assert "still differs from MindSpore's" in own["bn"].unconfirmed[0]
    text = str(failure)
    assert "(known mismatch 'batchnorm2d-eps-not-carried', confirmed)" in text
    assert "Ruled out by replay (1: " in text
    assert not any("momentum" in c for c in failure.likely_causes)
    assert sorted(_entries(failure.likely_causes)) == [
        "batchnorm2d-eps-not-carried",
        "conv2d-pad-mode-default",
        "gelu-approximate-default",
    ]


def test_a_cause_whose_entry_has_no_replay_says_so():
    failure = _failure(_MindSporePort(pool=True), _PyTorchOriginal(pool=True, eps=1e-5, approximate="tanh"))
    own = {e.layer: e for e in failure.result.layers.own_errors}
    assert "pool" in own
    (cause,) = [c for c in own["pool"].causes if "avgpool2d-pad-mode-same'" in c]
    assert "not confirmed: the entry has no replay" in cause
    assert "(known mismatch 'avgpool2d-pad-mode-same', not confirmed" in str(failure)


def test_a_replay_leaves_the_pytorch_layer_as_it_was():
    module = _PyTorchOriginal()
    before = (module.act.approximate, module.conv.padding, "approximate" in vars(module.act))
    x = torch.randn(2, 3, 8, 8)
    with tb.altered(
        module,
        {
            "act": ((("approximate", "tanh"),), (), 0.0),
            "conv": ((("padding", 0),), (((2, 3, 8, 8), (0, 1, 0, 1)),), 0.0),
        },
    ):
        assert module.act.approximate == "tanh"
        assert tuple(module.conv(x).shape) == (2, 8, 4, 4)
        assert tuple(module.conv(torch.randn(2, 3, 6, 6)).shape) == (2, 8, 2, 2)  # another shape: not padded
    assert (module.act.approximate, module.conv.padding, "approximate" in vars(module.act)) == before
    assert tuple(module.conv(x).shape) == (2, 8, 4, 4)
    with pytest.raises(AttributeError, match="GELU at 'act' has no attribute 'eps'"):
        with tb.altered(module, {"act": ((("eps", 1e-3),), (), 0.0)}):
            pass
    assert module.act.approximate == before[0]


def test_a_replay_that_changes_the_output_shape_confirms_it():
    # pad_mode='same' keeps 8x8 where PyTorch's padding=0 gives 6x6: the replay pads as MindSpore does
    ms_cell = msnn.SequentialCell(msnn.Conv2d(3, 4, 3, has_bias=True), msnn.ReLU())
    failure = _failure(ms_cell, torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.ReLU()))
    (own,) = failure.result.layers.own_errors
    assert _entries(own.causes) == ["conv2d-pad-mode-default"] and "; confirmed: " in own.causes[0]
    assert _entries(failure.likely_causes) == ["conv2d-pad-mode-default"]
