"""Layer capture of calls with keyword arguments and of tensors that need no gradient.

transformers calls its layers with keyword arguments only (``self_attn(hidden_states=...,
attention_mask=..., position_embeddings=...)``) and hands them constants: masks, ``cos``/``sin``
made from positions, integer ids. Their inputs are recorded and compared by name, and a tensor
that needs no gradient is recorded but never hooked (MindSpore refuses: "The tensor requires grad
is false, which can not register tensor hook")."""

from __future__ import annotations

import mindspore as ms
import numpy as np
import pytest
import torch
from mindspore import nn as msnn
from mindspore import ops

import parity
from parity import ParityMismatch
from parity.backends import mindspore as msb
from parity.backends import torch as tb
from parity.engine.diagnosis.alignment import by_name
from parity.engine.diagnosis.recording import Recording

WIDTH = 4


class MSInner(msnn.Cell):
    def __init__(self, fault: bool = False):
        super().__init__()
        self.fc = msnn.Dense(WIDTH, WIDTH)
        self.fault = fault

    def construct(self, x, scale=None, mask=None):
        h = self.fc(x) * scale
        return (h * 1.01 if self.fault else h) + mask  # the fault: in the inner layer's own code


class MSOuter(msnn.Cell):
    """Hands its inner layer, by keyword: x, a float tensor computed from constants and a mask."""

    def __init__(self, fault: bool = False, positional: bool = False):
        super().__init__()
        self.inner = MSInner(fault)
        self.head = msnn.Dense(WIDTH, 2)
        self.positional = positional

    def construct(self, x):
        scale = ops.cos(ops.arange(WIDTH).astype(ms.float32))  # needs no gradient
        mask = ms.Tensor(np.full((WIDTH,), 0.5, np.float32))
        h = self.inner(x, scale, mask) if self.positional else self.inner(x=x, scale=scale, mask=mask)
        return self.head(h)


class TorchInner(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(WIDTH, WIDTH)

    def forward(self, x, mask=None, scale=None, ids=None):  # ids: given by PyTorch's caller alone
        return self.fc(x) * scale + mask


class TorchOuter(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = TorchInner()
        self.head = torch.nn.Linear(WIDTH, 2)

    def forward(self, x):
        scale = torch.cos(torch.arange(WIDTH, dtype=torch.float32))
        mask = torch.full((WIDTH,), 0.5)
        ids = torch.arange(x.shape[0])
        return self.head(self.inner(x=x, mask=mask, scale=scale, ids=ids))


X = np.linspace(-1.0, 1.0, 3 * WIDTH, dtype=np.float32).reshape(3, WIDTH)
COT = np.arange(6, dtype=np.float32).reshape(3, 2) - 2.5


def test_mindspore_capture_records_keywords_and_hooks_no_constant():
    net, recording = MSOuter(), Recording()
    with msb.capture(net, recording, backward=True) as layers:
        out, vjp = ms.vjp(net, ms.Tensor(X))  # used to raise: a hook on cos(arange(...))
        layers.flush()
        (dx,) = vjp(ms.Tensor(COT))
    inner = recording.get("inner", 0)
    assert inner.keywords and inner.input_names == ("x", "scale", "mask")
    np.testing.assert_array_equal(inner.inputs[0], X)
    np.testing.assert_allclose(inner.inputs[1], np.cos(np.arange(WIDTH, dtype=np.float32)), rtol=1e-6)
    assert inner.grad_input_names == ("x", "scale", "mask")
    np.testing.assert_allclose(inner.grad_inputs[0], dx.asnumpy(), rtol=1e-6)
    assert inner.grad_inputs[1] is None and inner.grad_inputs[2] is None  # constants: no gradient hooked
    assert not recording.get("head", 0).keywords and recording.get("head", 0).input_names == ("x",)
    assert recording.unmatched == []


def test_torch_capture_records_keywords():
    module, recording = TorchOuter(), Recording()
    x = torch.from_numpy(X).requires_grad_(True)
    with tb.capture(module, recording, backward=True):
        module(x).backward(torch.from_numpy(COT))
    inner = recording.get("inner", 0)
    assert inner.keywords and inner.input_names == ("x", "mask", "scale", "ids")
    assert inner.inputs[3].dtype == np.int64
    assert inner.grad_input_names == ("x", "mask", "scale", "ids")
    np.testing.assert_allclose(inner.grad_inputs[0], x.grad.numpy(), rtol=1e-6)
    assert inner.grad_inputs[1:] == [None, None, None]


def test_by_name_compares_the_names_both_sides_have_in_pytorch_order():
    a, b, c, d = (np.full(2, float(i)) for i in range(4))
    ms_side, ref = by_name([a, b, c], ("x", "scale", "mask"), [a, c, b, d], ("x", "mask", "scale", "ids"))
    assert [v[0] for v in ms_side] == [0.0, 2.0, 1.0] and [v[0] for v in ref] == [0.0, 2.0, 1.0]


def test_by_name_falls_back_to_position_without_a_common_name():
    a, b = np.zeros(2), np.ones(2)
    assert by_name([a], ("x",), [b], ("input",)) == ([a], [b])
    assert by_name([a], None, [b], ("input",)) == ([a], [b])


@pytest.mark.parametrize("positional", [False, True], ids=["keywords", "positional-vs-keywords"])
def test_a_pair_called_with_keywords_passes_with_every_layer_compared(positional):
    result = parity.check(MSOuter(positional=positional), TorchOuter(), parity.randn((3, WIDTH)), localize=True)
    inner = next(v for v in result.layers.forward if v.path == "inner")
    assert inner.status == "ok"
    assert inner.in_shapes == ((3, WIDTH), (WIDTH,), (WIDTH,))  # x, mask, scale: not ids (PyTorch's alone)
    assert {v.status for v in result.layers.forward + result.layers.backward} == {"ok"}


def test_a_fault_in_a_layer_called_with_keywords_is_named():
    with pytest.raises(ParityMismatch) as info:
        parity.check(MSOuter(fault=True), TorchOuter(), parity.randn((3, WIDTH)))
    verdict, where = info.value.result.layers.first("forward")
    assert verdict.path == "inner"
    assert "in the code of 'inner'" in where and "'inner.fc'" in where
    assert "Divergence: first in the forward pass, in the code of 'inner'" in str(info.value)
