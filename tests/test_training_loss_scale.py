"""check_training(loss_scale=...): GradScaler against mindspore.amp's loss scalers, against the
real frameworks. An outlier batch (inputs of order 3e16) makes float32 gradients of order 1e32:
scaled by 2**24 they overflow, scaled by 2**16 they do not."""

import gc
import weakref

import mindspore
import numpy as np
import pytest
import torch

import parity
from parity.engine.training.loss_scale import REGISTRY_DEFAULTS

_rng = np.random.default_rng(0)
NORMAL = (parity.randn((4, 4)), parity.randn((4, 2)))
OUTLIER = ((_rng.standard_normal((4, 4)) * 3e16).astype(np.float32), _rng.standard_normal((4, 2)).astype(np.float32))
BATCHES = [NORMAL, OUTLIER, NORMAL]


def _net():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))


def _train(loss_scale, steps=4, batches=BATCHES, **kwargs):
    model = _net()
    return parity.check_training(
        parity.translate(model),
        model,
        batches,
        loss=torch.nn.MSELoss(),
        steps=steps,
        optimizer=lambda p: torch.optim.SGD(p, lr=0.01, momentum=0.9),
        loss_scale=loss_scale,
        **kwargs,
    )


def test_a_translated_grad_scaler_skips_the_outlier_step_on_both_sides():
    result = _train(lambda: torch.amp.GradScaler("cpu", init_scale=2.0**24, growth_interval=2))
    assert result.passed
    assert [s.skipped for s in result.steps] == [(False, False), (True, True), (False, False), (False, False)]
    # growth_interval=2: one finite step, the overflow halves the scale, two finite steps double it
    assert [s.scales for s in result.steps] == [(2.0**24,) * 2, (2.0**24,) * 2, (2.0**23,) * 2, (2.0**23,) * 2]
    assert not result[2].stage("grads") and result[3].stage("grads")  # overflowed gradients: thrown away on both
    assert [c.name for c in result[2].stage("scale")] == ["update skipped"]
    assert (
        "loss scaling mindspore.amp.DynamicLossScaler(scale_value=16777216 (2**24), scale_factor=2, "
        "scale_window=2)" in result.optimizer
    )


def test_graph_mode_and_a_static_scaler_against_a_scaler_that_backs_off():
    result = _train(
        (lambda: mindspore.amp.StaticLossScaler(2**24), lambda: torch.amp.GradScaler("cpu", init_scale=2.0**24)),
        ms_mode="graph",
    )
    assert [s.skipped for s in result.steps][1] == (True, True)
    assert result[3].scales == (2.0**24, 2.0**23)  # no step overflowed on one side only: a note, no failure
    assert result.notes == [
        "loss scales differ from step 3 (MindSpore 16777216 (2**24), PyTorch 8388608 (2**23)), "
        "and no step overflowed on one side only"
    ]


def test_differing_default_scales_fail_where_only_mindspore_overflows():
    entry_id, ms_default, torch_default = REGISTRY_DEFAULTS
    with pytest.raises(parity.ParityMismatch) as info:
        _train((lambda: mindspore.amp.DynamicLossScaler(ms_default, 2, 2000), lambda: torch.amp.GradScaler("cpu")))
    result, text = info.value.result, str(info.value)
    step, first = result.first_failure
    assert (step, first.kind, first.name) == (2, "loss scale", "update skipped")
    assert not result[1].failures  # step 1: no overflow, and the scale changes no number
    assert result[2].scales == (ms_default, torch_default) and result[2].skipped == (True, False)
    assert "First at step 2, loss scaling: the update skipped on one side only" in text
    assert "Divergence: first at step 2 of 4, stage 'scale'" in text
    assert (
        "Loss scaling: MindSpore skipped the update (a gradient overflowed) at loss scale 16777216 (2**24); "
        "PyTorch applied the update at loss scale 65536 (2**16)" in text
    )
    assert f"Likely cause: known mismatch '{entry_id}'" in text
    assert "FAIL 2**24 skip / 2**16" in text


def test_alike_scalers_with_an_outlier_that_overflows_at_both_scales():
    larger = [NORMAL, ((OUTLIER[0] * 100).astype(np.float32), OUTLIER[1]), NORMAL]
    result = _train(lambda: torch.amp.GradScaler("cpu"), steps=3, batches=larger)  # PyTorch's defaults, both sides
    assert result.passed and [s.skipped for s in result.steps] == [(False, False), (True, True), (False, False)]
    assert result[3].scales == (2.0**15, 2.0**15)


def test_a_mindspore_scaler_outlives_its_check():
    """MindSpore compiles a scaler's unscale once and knows its scale Parameter by ``id()``, keeping
    the Parameter's data with the graph: a scaler freed after one check could hand its address, and
    its last scale, to the next check's scaler, whose gradients then came out twice PyTorch's now
    and then (the outlier test above, one run in ten in one process). Every scaler is kept."""
    built = []

    def ms_factory():
        built.append(mindspore.amp.DynamicLossScaler(scale_value=2**16, scale_factor=2, scale_window=2000))
        return built[-1]

    _train((ms_factory, lambda: torch.amp.GradScaler("cpu")), steps=1)
    kept = [weakref.ref(scaler) for scaler in built]
    built.clear()
    gc.collect()
    assert kept and all(ref() is not None for ref in kept)


@pytest.mark.parametrize(
    "loss_scale, message",
    [
        (2**16, "give a function of no arguments returning a torch.amp.GradScaler"),
        (torch.amp.GradScaler("cpu"), "a built scaler keeps its state between runs: pass a factory"),
        ((lambda: 1,), "a pair (ms_factory, torch_factory) takes two functions"),
        (lambda: torch.optim.SGD, "the PyTorch scaler factory returned"),
        (lambda: torch.amp.GradScaler("cpu", enabled=False), "the GradScaler is disabled"),
        (lambda: torch.amp.GradScaler("cpu", growth_factor=3.0), "backoff_factor=0.5 is not 1/growth_factor"),
        (lambda: torch.amp.GradScaler("cpu", growth_factor=1.5, backoff_factor=0.5), "growth_factor=1.5 is no integer"),
        (lambda: torch.amp.GradScaler("cpu", init_scale=0.5), "init_scale=0.5 is below 1"),
        ((lambda: object(), lambda: torch.amp.GradScaler("cpu")), "not a mindspore.amp.LossScaler"),
        ((lambda x: x, lambda: torch.amp.GradScaler("cpu")), "the MindSpore scaler factory must take no arguments"),
    ],
    ids=[
        "number",
        "instance",
        "short-pair",
        "not-a-scaler",
        "disabled",
        "backoff",
        "growth",
        "init",
        "ms-not-a-scaler",
        "ms-factory-arguments",
    ],
)
def test_a_bad_loss_scale_is_a_usage_error(loss_scale, message):
    with pytest.raises(parity.ParityUsageError) as info:
        _train(loss_scale, steps=1)
    assert message in str(info.value)
    assert "check_training(loss_scale=...)" in str(info.value)
