"""check_training on half-precision pairs: each side trains in its own dtype, a tensor the float16
default tolerance alone would fail is judged against PyTorch's training in float64 (the golden
judge of parity.judge.golden), a fault still fails and is named, and what cannot run (bfloat16
layers without a MindSpore CPU kernel, two precisions, loss scaling) is refused before any step."""

from __future__ import annotations

import mindspore as ms
import ml_dtypes
import numpy as np
import pytest
import torch
from mindspore import nn as msnn

import parity
from parity import ParityMismatch, ParityUnsupported, ParityUsageError
from parity.backends import torch as tb
from parity.engine.inputs import Inputs, materialize

BATCHES = [(parity.randn((16, 8)), parity.randn((16, 4))), (parity.randn((16, 8)), parity.randn((16, 4)))]
SGD = lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9)  # noqa: E731


def _pair(seed=0):
    torch.manual_seed(seed)
    module = torch.nn.Sequential(
        torch.nn.Linear(8, 32), torch.nn.Tanh(), torch.nn.Linear(32, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4)
    )
    return parity.translate(module), module


def _float16(seed=0):
    cell, module = _pair(seed)
    return cell.to_float(ms.float16), module.half()


def _train(cell, module, **kwargs):
    options = dict(loss=torch.nn.MSELoss(), optimizer=SGD, steps=3, seed=2)
    return parity.check_training(cell, module, BATCHES, **{**options, **kwargs})


def test_float16_sgd_passes_by_the_golden_where_the_tolerance_alone_fails():
    result = _train(*_float16())
    judged = [c for c in result.comparisons if c.golden is not None]
    assert result.passed and judged
    assert max(c.golden.tolerance_margin for c in judged) > 1  # the float16 default alone fails (232x measured)
    assert all(c.golden.margin <= 1 for c in judged)
    step = result[1]
    assert step.stage("loss")[0].ms_dtype == step.stage("loss")[0].torch_dtype == "float16"
    param = next(c for c in step.stage("params") if c.name == "0.weight")
    assert (param.ms_dtype, param.torch_dtype, param.tolerance_source) == ("float32", "float16", "float16 default")
    assert any(n.startswith("master weights: MindSpore keeps 6 parameters in float32") for n in result.notes)


def test_float16_adam_with_half_parameters_on_both_sides_passes():
    cell, module = _pair(1)
    for param in cell.get_parameters():
        param.set_dtype(ms.float16)
    result = _train(cell, module.half(), optimizer=lambda p: torch.optim.Adam(p, lr=1e-3, eps=1e-4))
    assert result.passed
    assert {c.ms_dtype for c in result.comparisons if c.kind == "parameter"} == {"float16"}
    assert not any(n.startswith("master weights") for n in result.notes)


def test_float16_wrong_loss_fails_at_the_first_loss_by_the_golden():
    cell, module = _float16()
    with pytest.raises(ParityMismatch) as info:
        _train(cell, module, loss=(msnn.L1Loss(), torch.nn.MSELoss()))
    step, first = info.value.result.first_failure
    assert (step, first.kind) == (1, "loss")
    assert first.golden is not None and first.golden.margin > 10  # 52-76x measured


def test_float16_wrong_momentum_fails_and_names_the_tensor():
    cell, module = _float16()
    ms_sgd = lambda p: msnn.SGD(p, learning_rate=0.1, momentum=0.8)  # noqa: E731
    with pytest.raises(ParityMismatch) as info:
        _train(cell, module, optimizer=(ms_sgd, SGD))
    step, first = info.value.result.first_failure
    assert step == 2 and first.name.endswith(":momentum_buffer") and first.margin > 2  # 12-21x measured
    assert "MindSpore and PyTorch do not train the same! First at step 2, optimizer state 'momentum_buffer'" in str(
        info.value
    )


def test_float16_adam_with_an_eps_float16_cannot_hold_names_it():
    cell, module = _float16()
    with pytest.raises(ParityMismatch) as info:
        _train(cell, module, optimizer=lambda p: torch.optim.Adam(p, lr=1e-3))
    assert "torch.optim.Adam(eps=1e-08) on float16 parameters keeps its state in float16, where eps is 0" in str(
        info.value
    )


def test_bfloat16_dense_is_refused_before_any_step():
    cell, module = _pair()
    with pytest.raises(ParityUnsupported, match="bfloat16-linear-cpu-unsupported"):
        _train(cell.to_float(ms.bfloat16), module.bfloat16())


def test_two_precisions_are_a_usage_error():
    cell, module = _pair()
    with pytest.raises(ParityUsageError, match="MindSpore computes in float16, PyTorch in float32"):
        _train(cell.to_float(ms.float16), module)


def test_loss_scaling_a_half_pair_is_a_usage_error():
    with pytest.raises(ParityUsageError, match="loss_scale with a float16 pair is not supported yet"):
        _train(*_float16(), loss_scale=lambda: torch.amp.GradScaler("cpu"))


def test_torch_train_step_takes_and_returns_bfloat16_bit_for_bit():
    torch.manual_seed(0)
    module = torch.nn.Linear(4, 2).bfloat16()
    step = tb.TrainStep(
        module,
        torch.nn.MSELoss(),
        torch.optim.Adam(module.parameters()),
        accumulate=1,
        clip_grad_norm=None,
        device="cpu",
    )
    x = materialize(parity.randn((3, 4)), 0).args[0].astype(ml_dtypes.bfloat16)
    target = np.ones((3, 2), ml_dtypes.bfloat16)
    expected = torch.nn.functional.mse_loss(module(tb.from_numpy(x)), tb.from_numpy(target))
    expected.backward()
    wanted = tb.to_numpy(module.weight.grad).copy()
    module.zero_grad()
    loss, grads = step.step([(Inputs((x,), {}, {}), target)])
    assert loss == float(expected.detach())
    assert grads["weight"].dtype == np.dtype(ml_dtypes.bfloat16)
    assert grads["weight"].view(np.int16).tolist() == wanted.view(np.int16).tolist()
    assert step.state()["weight"]["exp_avg"].dtype == np.dtype(ml_dtypes.bfloat16)


def test_mixed_precision_o2_is_refused_pointing_at_check_amp():
    cell, module = _pair()
    amp_cell = ms.amp.auto_mixed_precision(cell, "O2")
    with pytest.raises(
        ParityUsageError, match=r"trains in mixed precision .*parity\.check\(cell, module, inputs, amp="
    ):
        _train(amp_cell, module)
