"""A pass with little power says so: where most compared values lie within their absolute
tolerance of zero, a MindSpore side returning zeros would pass too (parity.engine.outputs.little_power)."""

import warnings

import numpy as np
import pytest
import torch
from mindspore import nn as msnn

import parity
from parity import ParityWarning

SCALE = 1e-7  # far below float32's default atol: every output value lies within it


class MSScaled(msnn.Cell):
    def __init__(self, scale, wrong=1.0):
        super().__init__()
        self.fc = msnn.Dense(6, 5)
        self.scale, self.wrong = scale, wrong

    def construct(self, x):
        return self.fc(x) * self.scale * self.wrong


class TorchScaled(torch.nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.fc = torch.nn.Linear(6, 5)
        self.scale = scale

    def forward(self, x):
        return self.fc(x) * self.scale


class MSPool(msnn.Cell):
    def __init__(self):
        super().__init__()
        self.pool = msnn.MaxPool2d(kernel_size=2, stride=2)

    def construct(self, x):
        return self.pool(x)


X = [np.random.default_rng(0).standard_normal((4, 6)).astype(np.float32)]


def _power_notes(result):
    return [n for n in result.notes if n.startswith("little power:")]


def test_values_below_the_absolute_tolerance_warn_that_the_pass_proves_little():
    with pytest.warns(ParityWarning, match="little power") as caught:
        result = parity.check(MSScaled(SCALE), TorchScaled(SCALE), X)
    (note,) = _power_notes(result)
    assert str(caught[0].message) == note
    assert "forward output" in note and "real weights" in note
    # the warning is the point: a MindSpore side twice as large passes this check as well
    with pytest.warns(ParityWarning):
        assert parity.check(MSScaled(SCALE, wrong=2.0), TorchScaled(SCALE), X).passed


def test_values_of_scale_pass_without_a_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error", ParityWarning)
        result = parity.check(MSScaled(1.0), TorchScaled(1.0), X)
    assert _power_notes(result) == []
    with pytest.raises(parity.ParityMismatch):  # and there a wrong side fails
        parity.check(MSScaled(1.0, wrong=2.0), TorchScaled(1.0), X)


def test_exact_zeros_by_construction_do_not_count_as_small_values():
    # most of a max-pool's input gradient is exactly zero (the unselected inputs): a fact, not a weak value
    image = [np.random.default_rng(1).standard_normal((2, 3, 8, 8)).astype(np.float32)]
    with warnings.catch_warnings():
        warnings.simplefilter("error", ParityWarning)
        result = parity.check(MSPool(), torch.nn.MaxPool2d(2, 2), image)
    grad = next(c for c in result.comparisons if c.kind == "input grad")
    assert grad.total == 2 * 3 * 8 * 8 and _power_notes(result) == []


def test_a_tensor_zero_throughout_has_no_power():
    # a head initialised to zero (torchvision's ViT): its output is zero on both sides, whatever the body computes
    ms_cell, module = MSScaled(0.0), TorchScaled(0.0)
    with pytest.warns(ParityWarning, match=r"forward output \(100% of 20\)"):
        parity.check(ms_cell, module, X)


def test_a_failing_check_carries_no_power_note():
    with pytest.raises(parity.ParityMismatch) as failed:
        parity.check(MSScaled(1.0, wrong=2.0), TorchScaled(1.0), X)
    assert _power_notes(failed.value.result) == []
