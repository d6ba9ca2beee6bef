"""float16 and bfloat16 pairs: each side gets inputs and cotangents in its own dtype, bfloat16 crosses
numpy bit for bit, identical half-precision networks pass by default against the float64 golden, a
fault in half precision still fails and is named, and a bfloat16 layer without a MindSpore kernel
on CPU is refused before anything runs."""

from __future__ import annotations

import mindspore as ms
import ml_dtypes
import numpy as np
import pytest
import torch
from mindspore import nn as msnn
from mindspore import ops

import parity
from parity import ParityMismatch, ParityUnsupported
from parity.backends import mindspore as msb
from parity.backends import torch as tb

BF16 = np.dtype(ml_dtypes.bfloat16)


def mlp_pair(ms_act=msnn.Tanh):
    torch.manual_seed(0)
    module = torch.nn.Sequential(
        torch.nn.Linear(32, 64), torch.nn.Tanh(), torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10)
    )
    cell = msnn.SequentialCell(msnn.Dense(32, 64), ms_act(), msnn.Dense(64, 64), msnn.ReLU(), msnn.Dense(64, 10))
    return cell, module


def cnn_pair():
    torch.manual_seed(0)
    module = torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1),
        torch.nn.ReLU(),
        torch.nn.Conv2d(8, 16, 3, padding=1),
        torch.nn.Sigmoid(),
        torch.nn.Flatten(),
        torch.nn.Linear(16 * 8 * 8, 10),
    )
    cell = msnn.SequentialCell(
        msnn.Conv2d(3, 8, 3, pad_mode="pad", padding=1, has_bias=True),
        msnn.ReLU(),
        msnn.Conv2d(8, 16, 3, pad_mode="pad", padding=1, has_bias=True),
        msnn.Sigmoid(),
        msnn.Flatten(),
        msnn.Dense(16 * 8 * 8, 10),
    )
    return cell, module


def half_parameters(cell):
    """MindSpore's counterpart of ``Module.half()``: every parameter in float16."""
    for param in cell.get_parameters():
        param.set_dtype(ms.float16)
    return cell


# -- float16 -----------------------------------------------------------------------------------


def test_float16_mlp_to_float_against_half_passes_by_default():
    cell, module = mlp_pair()
    result = parity.check(cell.to_float(ms.float16), module.half(), parity.randn((16, 32)), seed=3)
    assert result["output"].ms_dtype == result["output"].torch_dtype == "float16"
    # MindSpore keeps float32 parameters under to_float: their gradients are compared in float16.
    assert result["0.weight"].ms_dtype == "float32" and result["0.weight"].torch_dtype == "float16"
    assert result["0.weight"].tolerance_source == "float16 default"
    judged = [c for c in result.comparisons if c.golden is not None]
    assert judged, "the float16 default tolerance alone should not decide this pair"
    assert any(c.golden.tolerance_margin > 1 for c in judged)  # the default tolerance alone fails...
    assert all(c.golden.margin <= 1 for c in judged)  # ...the golden judge passes
    assert any(
        "half precision: floating inputs given to MindSpore as float16, to PyTorch as float16" in n
        for n in result.notes
    )


def test_float16_cnn_half_parameters_passes_by_default():
    cell, module = cnn_pair()
    result = parity.check(half_parameters(cell), module.half(), parity.randn((4, 3, 8, 8)), seed=3)
    assert {c.ms_dtype for c in result.comparisons} == {"float16"}
    assert result.passed


def test_float16_survives_rounding_level_perturbation_of_mindspore():
    """Half an ulp of float16 on every MindSpore layer's output and gradient, relative to each
    element and at the layer's scale: about two roundings more per layer than PyTorch's."""
    cell, module = mlp_pair()
    cell.to_float(ms.float16)
    with msb.perturbed(cell, seed=5, ulps=0.5):
        result = parity.check(cell, module.half(), parity.randn((16, 32)), seed=5, localize=False)
    assert result.passed


def test_float16_fault_fails_and_names_the_layer():
    cell, module = mlp_pair(ms_act=msnn.Sigmoid)  # Tanh on the PyTorch side
    with pytest.raises(ParityMismatch) as caught:
        parity.check(cell.to_float(ms.float16), module.half(), parity.randn((16, 32)), seed=3)
    text = str(caught.value)
    assert "Divergence: first at forward output of '1'" in text, text
    output = caught.value.result["output"]
    assert output.golden is not None and output.golden.margin > 10, output.golden
    assert "Float64 golden (float16)" in text


def test_cotangent_takes_each_sides_output_dtype():
    """MindSpore in float16, PyTorch left in float32: MindSpore's backward gets a float16 cotangent
    (it raised "The dtype should be Float16, but got Float32" when given PyTorch's), and the
    difference is reported as what it is."""
    cell, module = mlp_pair()
    with pytest.raises(ParityMismatch) as caught:
        parity.check(cell.to_float(ms.float16), module, parity.randn((16, 32)), seed=3, localize=False)
    assert "Forward output dtypes differ: MindSpore float16 vs PyTorch float32" in str(caught.value)
    assert "MindSpore computes in float16, PyTorch in float32" in str(caught.value)


# -- bfloat16 ----------------------------------------------------------------------------------


def test_bfloat16_crosses_numpy_bit_for_bit():
    bits = np.arange(-32768, 32768, dtype=np.int32).astype(np.int16)
    values = bits.view(BF16)
    through_torch = tb.to_numpy(tb.from_numpy(values))
    through_ms = msb.to_numpy(ms.Tensor(values))
    assert through_torch.dtype == through_ms.dtype == BF16
    assert np.array_equal(through_torch.view(np.int16), bits)
    assert np.array_equal(through_ms.view(np.int16), bits)


class MSElementwise(msnn.Cell):
    def __init__(self):
        super().__init__()
        self.scale = ms.Parameter(ms.Tensor(np.full((4, 8), 0.5, np.float32)).astype(ms.bfloat16))
        self.shift = ms.Parameter(ms.Tensor(np.zeros((4, 8), np.float32)).astype(ms.bfloat16))

    def construct(self, x, y):
        return (x * self.scale + self.shift - y) / (y * y + 2.0) - x


class TorchElementwise(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = torch.nn.Parameter(torch.full((4, 8), 0.5, dtype=torch.bfloat16))
        self.shift = torch.nn.Parameter(torch.zeros((4, 8), dtype=torch.bfloat16))

    def forward(self, x, y):
        return (x * self.scale + self.shift - y) / (y * y + 2.0) - x


@pytest.mark.unperturbed("elementwise bfloat16 rounds alike on every CPU: bit identity is the point")
def test_bfloat16_elementwise_pair_is_bit_identical():
    torch.manual_seed(0)
    module = TorchElementwise()
    with torch.no_grad():
        module.scale.normal_()
        module.shift.normal_()
    result = parity.check(MSElementwise(), module, (parity.randn((4, 8)), parity.randn((4, 8))), seed=2)
    assert {(c.ms_dtype, c.torch_dtype) for c in result.comparisons} == {("bfloat16", "bfloat16")}
    assert [c.max_abs for c in result.comparisons] == [0.0] * len(result.comparisons)


def test_bfloat16_conv_is_refused_before_running():
    torch.manual_seed(0)
    calls = []
    module = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.Tanh()).bfloat16()
    module.register_forward_hook(lambda *args: calls.append(1))
    cell = msnn.SequentialCell(msnn.Conv2d(3, 4, 3, pad_mode="pad", padding=1, has_bias=True), msnn.Tanh())
    with pytest.raises(ParityUnsupported) as caught:
        parity.check(cell.to_float(ms.bfloat16), module, parity.randn((2, 3, 8, 8)))
    text = str(caught.value)
    assert "MindSpore computes in bfloat16" in text and "no bfloat16 kernel on CPU (Conv2D)" in text, text
    assert "'0'" in text and "bfloat16-conv2d-cpu-unsupported" in text and "'1'" in text
    assert calls == []


class MSExp(msnn.Cell):
    def __init__(self):
        super().__init__()
        self.scale = ms.Parameter(ms.Tensor(np.ones((4, 8), np.float32)).astype(ms.bfloat16))

    def construct(self, x):
        return ops.exp(x * self.scale)


class TorchExp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = torch.nn.Parameter(torch.ones((4, 8), dtype=torch.bfloat16))

    def forward(self, x):
        return torch.exp(x * self.scale)


def test_bfloat16_kernel_the_registry_does_not_know_is_named_when_it_fails():
    with pytest.raises(ParityUnsupported) as caught:
        parity.check(MSExp(), TorchExp(), parity.randn((4, 8)))
    text = str(caught.value)
    assert "has no bfloat16 kernel for Exp on CPU (raised during the forward pass)" in text, text


def test_float32_layers_are_not_flagged_by_bfloat16_entries():
    from parity.registry import diagnose

    cell, module = cnn_pair()
    assert not [d for d in diagnose(cell, module, device="CPU") if d.entry.dtypes]
    found = [d.entry.id for d in diagnose(cell.to_float(ms.bfloat16), module, device="CPU") if d.entry.dtypes]
    assert "bfloat16-conv2d-cpu-unsupported" in found and "bfloat16-relu-cpu-unsupported" in found
