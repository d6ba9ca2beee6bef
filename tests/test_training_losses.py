"""Losses in check_training: each PyTorch loss, translated, trains a tiny net the same as PyTorch
for a few steps; a MindSpore loss built differently (given as a pair) fails at step 1, stage
'loss', and the check names it; MindSpore's BCEWithLogitsLoss gradient and what earlier runs in
the process leave behind."""

import mindspore
import numpy as np
import pytest
import torch

import parity
from parity.translation.loss import BCEWithLogitsLoss, CrossEntropyLossInt64

CLASSES = 5
WEIGHT = torch.tensor([0.2, 1.0, 2.0, 0.5, 1.5])
LABELS = np.array([0, 2, 4, 2, 1, 3], np.int64)  # class 2 twice: ignore_index=2 drops two rows
IGNORED = np.array([0, -100, 4, 3, -100, 1], np.int64)  # PyTorch's default ignore_index


def _net(log_softmax=False):
    torch.manual_seed(0)
    layers = [torch.nn.Linear(4, 8), torch.nn.BatchNorm1d(8), torch.nn.ReLU(), torch.nn.Linear(8, CLASSES)]
    return torch.nn.Sequential(*layers, *([torch.nn.LogSoftmax(dim=1)] if log_softmax else []))


def _classes(labels=LABELS):
    return [(parity.randn((6, 4)), labels), (parity.randn((6, 4)), labels[::-1].copy())]


REAL = [(parity.randn((6, 4)), parity.randn((6, CLASSES))), (parity.randn((6, 4)), parity.randn((6, CLASSES)))]
PROBABILITIES = [
    (parity.randn((6, 4)), parity.uniform((6, CLASSES), 0, 1)),
    (parity.randn((6, 4)), parity.uniform((6, CLASSES), 0, 1)),
]
SGD = lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9)  # noqa: E731
ADAM = lambda p: torch.optim.Adam(p, lr=1e-2)  # noqa: E731


@pytest.mark.parametrize(
    "loss, batches, optimizer, log_softmax",
    [
        (torch.nn.CrossEntropyLoss(), _classes(), SGD, False),
        (torch.nn.CrossEntropyLoss(label_smoothing=0.1), _classes(), ADAM, False),
        (torch.nn.CrossEntropyLoss(ignore_index=2), _classes(), SGD, False),
        (torch.nn.CrossEntropyLoss(), _classes(IGNORED), SGD, False),
        (torch.nn.CrossEntropyLoss(weight=WEIGHT, reduction="sum"), _classes(), SGD, False),
        (torch.nn.CrossEntropyLoss(weight=WEIGHT, ignore_index=2, label_smoothing=0.2), _classes(), ADAM, False),
        (torch.nn.CrossEntropyLoss(label_smoothing=0.1), PROBABILITIES, SGD, False),
        (torch.nn.NLLLoss(), _classes(), SGD, True),
        (torch.nn.NLLLoss(weight=WEIGHT, ignore_index=2), _classes(), ADAM, True),
        (torch.nn.MSELoss(), REAL, SGD, False),
        (torch.nn.MSELoss(reduction="sum"), REAL, SGD, False),
        (torch.nn.L1Loss(), REAL, ADAM, False),
        (torch.nn.SmoothL1Loss(beta=0.5), REAL, SGD, False),
        (torch.nn.SmoothL1Loss(beta=0.0), REAL, SGD, False),
        (torch.nn.BCEWithLogitsLoss(), PROBABILITIES, SGD, False),
        (
            torch.nn.BCEWithLogitsLoss(weight=WEIGHT, pos_weight=torch.tensor([2.0, 0.5, 1.0, 3.0, 1.5])),
            PROBABILITIES,
            ADAM,
            False,
        ),
        (torch.nn.BCEWithLogitsLoss(pos_weight=torch.tensor(2.0), reduction="sum"), PROBABILITIES, SGD, False),
    ],
    ids=[
        "ce",
        "ce-label-smoothing",
        "ce-ignore-index",
        "ce-ignore-default-100",
        "ce-weight-sum",
        "ce-weight-ignore-smoothing",
        "ce-probabilities",
        "nll",
        "nll-weight-ignore-index",
        "mse",
        "mse-sum",
        "l1",
        "smooth-l1-beta",
        "smooth-l1-beta-0",
        "bce-logits",
        "bce-logits-weight-pos-weight",
        "bce-logits-scalar-sum",
    ],
)
def test_translated_loss_trains_the_same(loss, batches, optimizer, log_softmax):
    model = _net(log_softmax)
    result = parity.check_training(parity.translate(model), model, batches, loss=loss, optimizer=optimizer, steps=2)
    assert result.passed and "(translated)" in result.loss
    assert result.torch_losses[0] != result.torch_losses[1]  # the second batch, after a step that moved the weights


def test_the_guides_loss_pair_trains_the_same():
    model = _net()
    result = parity.check_training(
        parity.translate(model),
        model,
        _classes(),
        steps=2,
        optimizer=ADAM,
        loss=(mindspore.nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"), torch.nn.CrossEntropyLoss()),
    )
    assert result.passed and result.loss.endswith("(given pair)")


@pytest.mark.parametrize(
    "ms_loss, torch_loss, batches, cause",
    [
        (CrossEntropyLossInt64(label_smoothing=0.2), torch.nn.CrossEntropyLoss(label_smoothing=0.1), _classes(), None),
        (CrossEntropyLossInt64(), torch.nn.CrossEntropyLoss(ignore_index=2), _classes(), None),
        (mindspore.nn.NLLLoss(), torch.nn.NLLLoss(weight=WEIGHT), _classes(), None),
        (
            mindspore.nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"),
            torch.nn.CrossEntropyLoss(ignore_index=2),
            _classes(),
            "softmaxcrossentropywithlogits-no-ignore-index",
        ),
        (mindspore.nn.SmoothL1Loss(beta=1.0, reduction="mean"), torch.nn.SmoothL1Loss(beta=0.5), REAL, None),
        (mindspore.nn.MSELoss(reduction="sum"), torch.nn.MSELoss(), REAL, None),
        (BCEWithLogitsLoss(), torch.nn.BCEWithLogitsLoss(pos_weight=torch.full((CLASSES,), 2.0)), PROBABILITIES, None),
    ],
    ids=[
        "label-smoothing",
        "ignore-index",
        "nll-weight",
        "sce-ignore-index",
        "smooth-l1-beta",
        "reduction",
        "bce-pos-weight",
    ],
)
def test_a_loss_built_differently_fails_at_step_one(ms_loss, torch_loss, batches, cause):
    model = _net(log_softmax=isinstance(torch_loss, torch.nn.NLLLoss))
    with pytest.raises(parity.ParityMismatch) as info:
        parity.check_training(
            parity.translate(model), model, batches, loss=(ms_loss, torch_loss), optimizer=SGD, steps=1
        )
    step, first = info.value.result.first_failure
    assert (step, first.kind) == (1, "loss")
    text = str(info.value)
    assert text.startswith("MindSpore and PyTorch do not train the same! First at step 1, loss\n")
    assert "Divergence: first at step 1 of 1, stage 'loss', loss" in text
    assert f"Loss:       {type(ms_loss).__module__.split('.')[0]}" in text and "(given pair)" in text
    if cause is not None:
        assert f"Likely cause: known mismatch '{cause}'" in text


def test_an_entry_about_a_label_value_is_cited_only_where_that_label_was_there():
    """The guide's loss pair has no ignore_index, which matters only for a label equal to PyTorch's
    (-100 by default): a failure elsewhere, on labels 0..4, names the optimizer, not the loss."""
    model = _net()
    slow = (lambda p: mindspore.nn.SGD(p, learning_rate=0.05, momentum=0.9), SGD)
    guide = (mindspore.nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"), torch.nn.CrossEntropyLoss())
    with pytest.raises(parity.ParityMismatch) as info:
        parity.check_training(parity.translate(model), model, _classes(), loss=guide, optimizer=slow, steps=1)
    assert "no-ignore-index" not in str(info.value)
    guide = (guide[0], torch.nn.CrossEntropyLoss(ignore_index=int(LABELS[0])))
    with pytest.raises(parity.ParityMismatch) as info:
        parity.check_training(parity.translate(model), model, _classes(), loss=guide, optimizer=slow, steps=1)
    assert "Likely cause: known mismatch 'softmaxcrossentropywithlogits-no-ignore-index'" in str(info.value)


# MindSpore's BCEWithLogitsLoss(reduction='mean') divides its gradient by the element count of the
# first batch it was differentiated on (registry: bcewithlogitsloss-mean-grad-first-shape).

TWO_SIZES = [
    (parity.randn((4, 4)), parity.uniform((4, CLASSES), 0, 1)),
    (parity.randn((6, 4)), parity.uniform((6, CLASSES), 0, 1)),
]


def test_mindspores_bce_with_logits_on_batches_of_two_sizes_fails_at_step_two_naming_the_entry():
    model = _net()
    with pytest.raises(parity.ParityMismatch) as info:
        parity.check_training(
            parity.translate(model),
            model,
            TWO_SIZES,
            optimizer=SGD,
            steps=2,
            loss=(mindspore.nn.BCEWithLogitsLoss(), torch.nn.BCEWithLogitsLoss()),
        )
    result = info.value.result
    step, first = result.first_failure
    assert (step, first.kind) == (2, "param grad")
    assert all(c.passed for c in result[2].stage("loss"))  # the loss agrees; only its gradient is off
    worst = max(result[2].stage("grads"), key=lambda c: c.margin)
    assert worst.max_rel == pytest.approx(30 / 20 - 1, rel=1e-3)  # divided by 4 x 5 elements, not 6 x 5
    assert "Likely cause: known mismatch 'bcewithlogitsloss-mean-grad-first-shape'" in str(info.value)
    translated = parity.check_training(
        parity.translate(model), model, TWO_SIZES, optimizer=SGD, steps=2, loss=torch.nn.BCEWithLogitsLoss()
    )
    assert translated.passed


def test_a_training_run_does_not_inherit_the_cached_gradient_of_an_earlier_check():
    """Regression: the registry's check of mint.nn.BCEWithLogitsLoss (a gradient of a (4, 5)
    batch) used to leave MindSpore's cached backward behind, and a later BCEWithLogits training
    run on 6 x 5 batches got 30/20 of PyTorch's parameter gradients."""
    from parity.mismatch_checks import check_available
    from parity.registry import load

    record = next(r for r in load().available if r.mindspore == "mindspore.mint.nn.BCEWithLogitsLoss")
    assert record.inputs[0]["randn"] == [4, 5] and check_available(record).observed == "agrees"
    model = _net()
    result = parity.check_training(
        parity.translate(model),
        model,
        PROBABILITIES[:1],
        optimizer=SGD,
        steps=2,
        loss=(mindspore.nn.BCEWithLogitsLoss(), torch.nn.BCEWithLogitsLoss()),
    )
    assert result.passed


def test_smooth_l1_with_beta_0_translates_to_l1():
    assert type(parity.translate(torch.nn.SmoothL1Loss(beta=0.0, reduction="sum"))) is mindspore.nn.L1Loss
