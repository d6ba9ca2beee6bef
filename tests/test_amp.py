"""Mixed-precision pairs: MindSpore's auto_mixed_precision levels against torch.autocast, run for real."""

import os

import pytest
import torch
from mindspore import nn

import parity


class Mlp(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Dense(16, 32)
        self.act = nn.Tanh()
        self.fc2 = nn.Dense(32, 8)

    def construct(self, x):
        return self.fc2(self.act(self.fc1(x)))


class TorchMlp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(16, 32)
        self.act = torch.nn.Tanh()
        self.fc2 = torch.nn.Linear(32, 8)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


class Stem(nn.Cell):
    """LayerNorm then ReLU: O1's white list holds ReLU, CPU autocast runs it in its input's float32."""

    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm((16,), epsilon=1e-5)
        self.act = nn.ReLU()

    def construct(self, x):
        return self.act(self.norm(x))


class TorchStem(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = torch.nn.LayerNorm(16)
        self.act = torch.nn.ReLU()

    def forward(self, x):
        return self.act(self.norm(x))


def test_same_lists_pass_and_record_each_layers_precision():
    result = parity.check(Mlp(), TorchMlp(), parity.randn((4, 16)), amp="O2", localize=True)
    assert [(r.path, r.ms, r.torch) for r in result.precisions] == [
        ("fc1", "float16", "float16"), ("act", "float16", "float16"), ("fc2", "float16", "float16")]
    assert any("mixed precision: MindSpore O2 (float16) vs torch.autocast(float16)" in n for n in result.notes)


def test_o1_keeps_tanh_in_float32_and_passes():
    # O1 casts each converted layer's result back to float32: Tanh runs in float32 there, in float16
    # under autocast. MindSpore is the more precise side, which the golden judge allows.
    result = parity.check(Mlp(), TorchMlp(), parity.randn((4, 16)), amp="O1", localize=True)
    rows = {r.path: (r.ms, r.torch) for r in result.precisions}
    assert rows == {"fc1": ("float16", "float16"), "act": ("float32", "float16"), "fc2": ("float16", "float16")}


def test_o1_relu_in_float16_is_named_with_both_precisions():
    cell = Stem()
    with pytest.raises(parity.ParityMismatch) as info:
        parity.check(cell, TorchStem(), parity.randn((8, 16)), amp="O1")
    message = str(info.value)
    assert "first at forward output of 'act'" in message
    assert ("Likely cause: layer 'act' (ReLU) ran in different precisions: MindSpore O1 ran it in float16, "
            "torch.autocast(float16) in float32") in message
    assert type(cell.act) is nn.ReLU  # the user's Cell was not rewritten
    assert not os.path.exists("rewritten_network")  # O1's generated code went to parity's own folder


@pytest.mark.parametrize("amp, words", [
    ("O4", "unknown amp level 'O4'"),
    (parity.Amp("O1", dtype="float32"), "unknown amp dtype 'float32'"),
    (parity.Amp("O1", torch="bf16"), "unknown amp torch side 'bf16'"),
    (1, "amp must be a level name"),
])
def test_bad_amp_is_a_usage_error(amp, words):
    with pytest.raises(parity.ParityUsageError, match=words):
        parity.check(Mlp(), TorchMlp(), parity.randn((4, 16)), amp=amp)


def test_amp_helper_validates():
    assert str(parity.amp("O3", torch="half")) == "MindSpore O3 (float16) vs Module.half()"
    with pytest.raises(parity.ParityUsageError, match="parity.amp"):
        parity.amp("O9")
