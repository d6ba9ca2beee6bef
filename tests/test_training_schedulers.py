"""Learning-rate schedulers in check_training: a PyTorch scheduler drives a translated
optimizer's learning rates, and the learning rate each step used is compared."""

import mindspore
import pytest
import torch
from torch.optim import lr_scheduler as sched

import parity


def _net():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.BatchNorm1d(8), torch.nn.ReLU(), torch.nn.Linear(8, 3))


BATCHES = [(parity.randn((4, 6)), parity.randint((4,), 0, 3))]
LOSS = torch.nn.CrossEntropyLoss()


def _lr_comparisons(result, name="0.weight"):
    return [next(c for c in s.stage("state") if c.name == f"{name}:lr") for s in result.steps]


@pytest.mark.parametrize(
    "factory, final_lr",
    [
        (lambda o: sched.StepLR(o, step_size=2, gamma=0.5), 0.1 * 0.5**2),
        (lambda o: sched.MultiStepLR(o, milestones=[1, 3], gamma=0.3), 0.1 * 0.3**2),
        (lambda o: sched.ExponentialLR(o, gamma=0.8), 0.1 * 0.8**4),
        (lambda o: sched.CosineAnnealingLR(o, T_max=4, eta_min=0.01), 0.01),
        (lambda o: sched.LambdaLR(o, lambda epoch: 1.0 / (epoch + 1)), 0.1 / 5),
        (lambda o: sched.LinearLR(o, start_factor=0.25, total_iters=2), 0.1),
    ],
    ids=["StepLR", "MultiStepLR", "ExponentialLR", "CosineAnnealingLR", "LambdaLR", "LinearLR"],
)
def test_a_pytorch_scheduler_drives_the_translated_optimizer(factory, final_lr):
    made = []

    def optimizer(params):
        made.append(torch.optim.SGD(params, lr=0.1, momentum=0.9))
        return made[-1]

    model = _net()
    result = parity.check_training(
        parity.translate(model), model, BATCHES, loss=LOSS, optimizer=optimizer, steps=4, lr_scheduler=factory
    )
    assert result.passed, str(result)
    assert made[0].param_groups[0]["lr"] == pytest.approx(final_lr)  # PyTorch's own run went through the schedule
    assert len(_lr_comparisons(result)) == 4 and all(c.passed for c in _lr_comparisons(result))
    assert "lr scheduler torch.optim." in result.optimizer and "(driving both)" in result.optimizer


def test_one_cycle_moves_adams_beta1_on_both_sides():
    model = _net()
    result = parity.check_training(
        parity.translate(model),
        model,
        BATCHES,
        loss=LOSS,
        steps=3,
        optimizer=lambda p: torch.optim.Adam(p, lr=1e-3),
        lr_scheduler=lambda o: sched.OneCycleLR(o, max_lr=1e-2, total_steps=6),
    )
    assert result.passed, str(result)


def test_a_schedule_missing_on_the_mindspore_side_fails_at_the_step_the_rate_changes():
    model = _net()
    with pytest.raises(parity.ParityMismatch) as info:
        parity.check_training(
            parity.translate(model),
            model,
            BATCHES,
            loss=LOSS,
            steps=3,
            optimizer=(lambda p: mindspore.nn.SGD(p, learning_rate=0.1), lambda p: torch.optim.SGD(p, lr=0.1)),
            lr_scheduler=(None, lambda o: sched.StepLR(o, step_size=2, gamma=0.5)),
        )
    step, first = info.value.result.first_failure
    assert (step, first.kind, first.name) == (3, "optimizer state", "0.weight:lr")
    assert "lr scheduler torch.optim.StepLR (MindSpore's own schedule)" in str(info.value)


def test_mindspores_own_dynamic_learning_rate_against_a_pytorch_scheduler():
    model = _net()
    result = parity.check_training(
        parity.translate(model),
        model,
        BATCHES,
        loss=LOSS,
        steps=4,
        optimizer=(
            lambda p: mindspore.nn.SGD(p, learning_rate=[0.1, 0.1, 0.05, 0.05]),
            lambda p: torch.optim.SGD(p, lr=0.1),
        ),
        lr_scheduler=(None, lambda o: sched.StepLR(o, step_size=2, gamma=0.5)),
    )
    assert result.passed, str(result)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"lr_scheduler": "steplr"}, "lr_scheduler must be a function of the optimizer"),
        ({"lr_scheduler": lambda o: sched.ReduceLROnPlateau(o)}, "ReduceLROnPlateau, which needs a metric"),
        ({"lr_scheduler": lambda o: o}, r"returned torch.optim.SGD, not a torch.optim.lr_scheduler scheduler"),
        (
            {
                "lr_scheduler": lambda o: sched.StepLR(o, 1),
                "optimizer": (lambda p: mindspore.nn.SGD(p, 0.1), lambda p: torch.optim.SGD(p, lr=0.1)),
            },
            r"a PyTorch scheduler drives a translated optimizer only",
        ),
        ({"lr_scheduler": (1, 2)}, r"lr_scheduler=\(ms_factory, torch_factory\) takes two functions"),
    ],
)
def test_scheduler_usage_errors(kwargs, message):
    model = _net()
    call = {"optimizer": lambda p: torch.optim.SGD(p, lr=0.1), **kwargs}
    with pytest.raises(parity.ParityUsageError, match=message):
        parity.check_training(parity.translate(model), model, BATCHES, loss=LOSS, steps=1, **call)
