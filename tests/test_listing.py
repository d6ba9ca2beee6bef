"""A training case's loss, optimizer and scheduler, named by dotted path (``parity.Training``), are
built when the case runs, and a path that cannot be built is a usage error naming the case.

Case modules name what they build by dotted path (``"package.module:Name"``), so that importing them
costs only parity and numpy: ``parity list`` reads the catalogue without importing a framework
(tests/engine/test_case.py, with the rest that needs none)."""

from __future__ import annotations

import pytest
import torch

from parity import ParityCase, Training, randint, randn
from parity.errors import ParityUsageError

BATCHES = [(randn((2, 4)), randint((2,), 0, 3))]


def test_a_training_case_names_its_loss_optimizer_and_scheduler_by_path():
    training = Training(
        BATCHES,
        loss=("cases.models.training:guide_ms_loss", "torch.nn:CrossEntropyLoss"),
        optimizer="cases.models.training:adamw",
        lr_scheduler="cases.models.training:warmup",
    )
    kwargs = training.kwargs("case 'Loop'")
    ms_loss, torch_loss = kwargs["loss"]
    assert type(ms_loss).__name__ == "SoftmaxCrossEntropyWithLogits"
    assert isinstance(torch_loss, torch.nn.CrossEntropyLoss)
    assert kwargs["optimizer"].__name__ == "adamw" and kwargs["lr_scheduler"].__name__ == "warmup"
    assert isinstance(Training(BATCHES, loss="torch.nn:MSELoss", optimizer=None).kwargs()["loss"], torch.nn.MSELoss)


@pytest.mark.parametrize(
    "field, value, message",
    [
        ("loss", "torch.nn:NoSuchLoss", r"case 'Loop' loss: cannot import 'torch.nn:NoSuchLoss'"),
        ("loss", "torch.nn:Linear", r"case 'Loop' loss: building 'torch.nn:Linear' failed: TypeError"),
        ("optimizer", "no_such_module_here:adam", r"case 'Loop' optimizer: cannot import 'no_such_module_here:adam'"),
    ],
)
def test_a_bad_path_is_a_usage_error_naming_the_case(field, value, message):
    arguments = {"loss": "torch.nn:MSELoss", "optimizer": "cases.models.training:adam", field: value}
    case = ParityCase("Loop", mindspore="m:a", torch="t:b", training=Training(BATCHES, **arguments))
    with pytest.raises(ParityUsageError, match=message):
        case.training.kwargs(f"case {case.name!r}")
