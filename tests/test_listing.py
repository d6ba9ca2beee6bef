"""``parity list`` reads the catalogue without importing a framework.

Case modules name what they build by dotted path (``"package.module:Name"``), also for a training
case's loss, optimizer and scheduler (``parity.Training``), so that importing them costs only
parity and numpy: the frameworks load when a case runs.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch

from parity import ParityCase, Training, randint, randn
from parity.errors import ParityUsageError

ROOT = Path(__file__).resolve().parent.parent
BATCHES = [(randn((2, 4)), randint((2,), 0, 3))]


def test_listing_the_catalogue_imports_no_framework():
    code = (
        "import sys\nfrom parity import cli\n"
        "code = cli.main(['list', 'cases'])\n"
        "print(code, sorted({m.split('.')[0] for m in sys.modules} & {'torch', 'mindspore'}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    *items, last = out.stdout.strip().splitlines()
    assert last == "0 []", f"listing imported {last}; {out.stderr}"
    assert len(items) > 200 and all("::" in item for item in items)
    assert "cases/training/loops.py::ResNetGuide[training]" in items
    assert "cases/translated/loss.py::BCEWithLogitsLoss_pos_weight[eval]" in items


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


def test_a_path_without_a_colon_is_refused_when_the_case_is_written():
    with pytest.raises(
        ParityUsageError,
        match=r"Training optimizer: a dotted path is 'package.module:Name', "
        r"got 'torch.optim.Adam'",
    ):
        Training(BATCHES, loss="torch.nn:MSELoss", optimizer="torch.optim.Adam")
    with pytest.raises(ParityUsageError, match=r"Training loss: .* got 'torch.nn.MSELoss'"):
        Training(BATCHES, loss=("m:loss", "torch.nn.MSELoss"), optimizer=None)


def test_a_case_made_through_a_helper_is_located_at_the_line_that_called_it(tmp_path):
    """A case file that builds its cases through helpers of its own (the zoo's, the fault
    catalogue's) is located at the module-level line that called the helper, not at the helper's
    ``ParityCase(``; a case written directly, at its own line."""
    import importlib.util

    source = (
        "from parity import ParityCase, randn\n"
        "\n"
        "def _inner(name):\n"
        "    return ParityCase(name, mindspore='a.b:c', torch='a.b:d', inputs=randn((2,)))\n"
        "\n"
        "def _outer(name):\n"
        "    return _inner(name)\n"
        "\n"
        "Helped = _outer('Helped')\n"
        "Direct = ParityCase('Direct', mindspore='a.b:c', torch='a.b:d', inputs=randn((2,)))\n"
    )
    path = tmp_path / "helped_cases.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("helped_cases", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert (module.Helped.line, module.Direct.line) == (9, 10)
