"""The ``parity`` fixture's ``check_training``, tested from outside with pytester: bound to the
session's seed, to the marker's tolerance, reported in the run summary and named in failures."""

import pytest

from parity import options as opts
from parity.errors import ParityUsageError

PARITY, SEED, MODE = opts.PARITY, opts.SEED.flag, opts.MODE.flag

pytestmark = pytest.mark.usefixtures("collect_inner_cells")  # tests/conftest.py

TRAINING_TESTS = """
import pytest


def _pair():
    import torch
    import parity

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.BatchNorm1d(6), torch.nn.Linear(6, 3))
    return parity.translate(model), model


def test_pass(parity):
    import torch

    cell, model = _pair()
    result = parity.check_training(cell, model, [(parity.randn((4, 4)), parity.randint((4,), 0, 3))],
                                   loss=torch.nn.CrossEntropyLoss(), steps=2,
                                   optimizer=lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9))
    assert result.passed and parity.results == [result]
    assert result.seed == 7 and len(result.steps) == 2


def test_fail(parity):
    import mindspore, torch

    cell, model = _pair()
    parity.check_training(cell, model, [(parity.randn((4, 4)), parity.randint((4,), 0, 3))],
                          loss=torch.nn.CrossEntropyLoss(), steps=2,
                          optimizer=(lambda p: mindspore.nn.SGD(p, learning_rate=0.11),
                                     lambda p: torch.optim.SGD(p, lr=0.1)))


@pytest.mark.parity(tolerance={"*": (1e-7, 1e-9)}, train=True)
def test_marker_tolerance(parity):
    import torch

    cell, model = _pair()
    result = parity.check_training(cell, model, [(parity.randn((4, 4)), parity.randint((4,), 0, 3))],
                                   loss=torch.nn.CrossEntropyLoss(), steps=1,
                                   optimizer=lambda p: torch.optim.SGD(p, lr=0.1))
    assert {c.tolerance_source for c in result.comparisons} == {"@pytest.mark.parity(tolerance=...)"}
"""


@pytest.fixture(scope="module", autouse=True)
def warm_frameworks():
    """Run, in this process, what the in-process runs will run (pytester drops modules first
    imported during a run; lazily imported framework internals must survive that)."""
    import torch

    import parity
    import parity.engine.training.loop  # noqa: F401
    import parity.plugin.items  # noqa: F401

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.BatchNorm1d(6), torch.nn.Linear(6, 3))
    parity.check_training(
        parity.translate(model),
        model,
        [(parity.randn((4, 4)), parity.randint((4,), 0, 3))],
        loss=torch.nn.CrossEntropyLoss(),
        steps=1,
        optimizer=lambda p: torch.optim.SGD(p, lr=0.1),
    )


def test_fixture_check_training_is_bound_to_the_session(pytester):
    pytester.makepyfile(test_train=TRAINING_TESTS)
    result = pytester.runpytest(PARITY, f"{SEED}=7")
    out = result.stdout.str()
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*ParityMismatch*MindSpore and PyTorch do not train the same! First at step 1, optimizer state 'lr'*",
            "*Case:       test_train.py::test_fail  (test_train.py:*)",
            "*Batches: seed 7 -> *",
            f"*Reproduce: pytest test_train.py::test_fail {PARITY} {SEED}=7",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "*= parity summary =*",
            "ok    test_train.py::test_pass: worst margin *x allowed (*)",
            "FAIL  test_train.py::test_fail: worst margin *x allowed (*)",
        ]
    )
    assert "parity/engine/training/loop.py" not in out and "site-packages/torch" not in out


def test_fixture_check_training_follows_the_sessions_mode(pytester):
    pytester.makepyfile(
        test_modes="""
def test_modes(parity):
    import torch
    from parity import translate

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.BatchNorm1d(6), torch.nn.Linear(6, 3))
    result = parity.check_training(translate(model), model, [(parity.randn((4, 4)), parity.randint((4,), 0, 3))],
                                   loss=torch.nn.CrossEntropyLoss(), steps=2,
                                   optimizer=lambda p: torch.optim.Adam(p, lr=1e-2))
    assert result.mode == "both"
    assert {c.mode for c in result.comparisons} == {"pynative", "graph"}
    assert len(result[2].stage("params")) == 2 * len(list(model.parameters()))
"""
    )
    result = pytester.runpytest(PARITY, f"{MODE}=both")
    result.assert_outcomes(passed=1)


TRAINING_CATALOGUE = """
import mindspore
import torch
from parity import TRANSLATE, ParityCase, Training, randint, randn


def torch_net():
    return torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.BatchNorm1d(6), torch.nn.Linear(6, 3))


BATCHES = [(randn((4, 4)), randint((4,), 0, 3))]

Trains = ParityCase("Trains", mindspore=TRANSLATE, torch=torch_net,
                    training=Training(BATCHES, loss=torch.nn.CrossEntropyLoss(), steps=2,
                                      optimizer=lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9)))

WrongLr = ParityCase("WrongLr", mindspore=TRANSLATE, torch=torch_net,
                     training=Training(BATCHES, loss=torch.nn.CrossEntropyLoss(), steps=2,
                                       optimizer=(lambda p: mindspore.nn.SGD(p, learning_rate=0.11),
                                                  lambda p: torch.optim.SGD(p, lr=0.1))),
                     xfail="MindSpore's learning rate is 0.11")
"""


def test_catalogue_runs_training_cases(pytester):
    pytester.makefile(".toml", pyproject='[tool.pytest.ini_options]\nparity_cases = ["catalogue"]\n')
    pytester.mkdir("catalogue")
    pytester.path.joinpath("catalogue", "loops.py").write_text(TRAINING_CATALOGUE)
    result = pytester.runpytest(PARITY, "-v")
    result.assert_outcomes(passed=1, xfailed=1)
    result.stdout.fnmatch_lines_random(
        [
            "catalogue/loops.py::Trains[[]training[]] PASSED*",
            "catalogue/loops.py::WrongLr[[]training[]] XFAIL*",
            "ok    catalogue/loops.py::Trains[[]training[]]: worst margin *x allowed*",
            "xfail catalogue/loops.py::WrongLr[[]training[]]: worst margin *x allowed*",
        ]
    )


def test_a_training_case_takes_no_inputs():
    import torch

    from parity import ParityCase, Training, randint, randn

    training = Training(
        [(randn((2, 4)), randint((2,), 0, 3))],
        loss=torch.nn.CrossEntropyLoss(),
        optimizer=lambda p: torch.optim.SGD(p, lr=0.1),
    )
    with pytest.raises(ParityUsageError, match="a training case takes its batches from Training"):
        ParityCase("Both", mindspore="m:a", torch="t:b", inputs=randn((2, 4)), training=training)
    with pytest.raises(ParityUsageError, match=r"training must be parity.Training\(batches, loss, optimizer"):
        ParityCase("Dict", mindspore="m:a", torch="t:b", training={"loss": None})
    with pytest.raises(ParityUsageError, match="give inputs="):
        ParityCase("Neither", mindspore="m:a", torch="t:b")
    assert [v.id for v in ParityCase("Loop", mindspore="m:a", torch="t:b", training=training).variants()] == [
        "Loop[training]"
    ]
