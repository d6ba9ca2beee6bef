"""parity.check_training against the real frameworks: tiny nets, 3 steps."""

import mindspore
import pytest
import torch

import parity
from parity.registry.optimizers import NORM_SKIPPED, lint_optimizer


def _net():
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Linear(6, 8),
        torch.nn.BatchNorm1d(8),
        torch.nn.ReLU(),
        torch.nn.Linear(8, 5),
        torch.nn.LayerNorm(5),
        torch.nn.Linear(5, 3),
    )


BATCHES = [(parity.randn((4, 6)), parity.randint((4,), 0, 3)), (parity.randn((4, 6)), parity.randint((4,), 0, 3))]


@pytest.mark.parametrize(
    "factory",
    [
        lambda p: torch.optim.Adam(p, lr=1e-3, weight_decay=1e-5),
        lambda p: torch.optim.AdamW(p, lr=1e-2, amsgrad=True),
        lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, dampening=0.1, weight_decay=1e-3),
        lambda p: torch.optim.RMSprop(p, lr=1e-2, momentum=0.5, centered=True),
        lambda p: torch.optim.Adagrad(p, lr=0.1, lr_decay=0.01, initial_accumulator_value=0.1),
    ],
    ids=["adam", "adamw-amsgrad", "sgd-momentum", "rmsprop-centered", "adagrad"],
)
def test_translated_optimizers_train_the_same(factory):
    model = _net()
    result = parity.check_training(
        parity.translate(model),
        model,
        BATCHES,
        optimizer=factory,
        loss=torch.nn.CrossEntropyLoss(label_smoothing=0.1),
        steps=3,
    )
    assert result.passed and len(result.steps) == 3
    assert len(result.ms_losses) == len(result.torch_losses) == 3
    assert result.ms_losses[0] == pytest.approx(result.torch_losses[0], rel=1e-5)
    assert result.torch_losses[0] != result.torch_losses[2]  # the weights moved
    assert {c.kind for c in result.comparisons} == {"loss", "param grad", "optimizer state", "parameter", "buffer"}


def test_param_groups_nesterov_clipping_and_accumulation():
    model = _net()
    factory = lambda p: torch.optim.SGD(  # noqa: E731
        [
            {"params": model[0].parameters(), "lr": 0.05},
            {
                "params": list(model[1].parameters())
                + list(model[3].parameters())
                + list(model[4].parameters())
                + list(model[5].parameters()),
                "weight_decay": 1e-2,
            },
        ],
        lr=0.1,
        momentum=0.9,
        nesterov=True,
    )
    result = parity.check_training(
        parity.translate(model),
        model,
        BATCHES,
        optimizer=factory,
        loss=torch.nn.CrossEntropyLoss(),
        steps=2,
        clip_grad_norm=0.5,
        accumulate=2,
    )
    compared = {c.name for c in result[1].stage("state")}
    assert {"0.weight:lr", "5.weight:lr", "0.weight:momentum_buffer"} <= compared  # each group's lr, as used
    assert result.passed


def test_regression_losses_translate():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.Tanh(), torch.nn.Linear(6, 2))
    batches = [(parity.randn((5, 4)), parity.uniform((5, 2), 0, 1))]
    for loss in (torch.nn.MSELoss(), torch.nn.L1Loss(), torch.nn.SmoothL1Loss(beta=0.5)):
        assert parity.check_training(
            parity.translate(model), model, batches, loss=loss, steps=2, optimizer=lambda p: torch.optim.SGD(p, lr=0.1)
        ).passed, loss


class _SmoothedCrossEntropy(torch.nn.Module):
    """A loss Module of the user's own: functional cross entropy with label smoothing, plus a
    penalty on the logits' size."""

    def forward(self, logits, labels):
        return torch.nn.functional.cross_entropy(logits, labels, label_smoothing=0.1) + 1e-3 * logits.pow(2).mean()


def test_a_loss_module_calling_functional_losses_translates():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.Tanh(), torch.nn.Linear(6, 3))
    batches = [(parity.randn((5, 4)), parity.randint((5,), 0, 3))]
    result = parity.check_training(
        parity.translate(model),
        model,
        batches,
        loss=_SmoothedCrossEntropy(),
        steps=2,
        optimizer=lambda p: torch.optim.SGD(p, lr=0.1),
    )
    assert result.passed


def test_users_nn_adam_with_weight_decay_fails_at_step_one_naming_both_entries():
    model = _net()
    cell = parity.translate(model)
    with pytest.raises(parity.ParityMismatch) as info:
        parity.check_training(
            cell,
            model,
            BATCHES,
            loss=torch.nn.CrossEntropyLoss(),
            steps=3,
            optimizer=(
                lambda p: mindspore.nn.Adam(p, learning_rate=1e-3, weight_decay=1e-2),
                lambda p: torch.optim.Adam(p, lr=1e-3, weight_decay=1e-2),
            ),
        )
    result, text = info.value.result, str(info.value)
    step, first = result.first_failure
    assert (step, first.kind, first.name, first.ms_name) == (
        1,
        "optimizer state",
        "1.weight:exp_avg",
        "1.gamma:exp_avg",
    )
    assert not result[2].stage("params")[2].passed  # BatchNorm's gamma itself differs from step 2
    assert result[1].stage("grads") and all(c.passed for c in result[1].stage("grads"))
    assert "First at step 1, optimizer state 'exp_avg' of parameter '1.weight' (MindSpore '1.gamma')" in text
    assert f"Likely cause: known mismatch '{NORM_SKIPPED}'" in text
    assert "Likely cause: known mismatch 'adam-eps-placement'" in text
    for part in (
        "Tolerance: float32 default",
        "Per step (loss MindSpore vs PyTorch",
        "Reproduce: parity.check_training(",
    ):
        assert part in text
    assert (
        "Note: optimizer lint: mindspore.nn.Adam(weight_decay=0.01) (here ['1.gamma', '1.beta', '4.gamma', "
        "'4.beta'])" in text
    )  # what the lint found before the first step


def test_a_wrong_learning_rate_is_named_at_its_step_and_stage():
    model = _net()
    with pytest.raises(parity.ParityMismatch) as info:
        parity.check_training(
            parity.translate(model),
            model,
            BATCHES,
            loss=torch.nn.CrossEntropyLoss(),
            steps=2,
            optimizer=(lambda p: mindspore.nn.SGD(p, learning_rate=0.11), lambda p: torch.optim.SGD(p, lr=0.1)),
        )
    step, first = info.value.result.first_failure
    assert (step, first.kind) == (1, "optimizer state") and first.name.endswith(":lr")


def test_dropout_is_refused():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Dropout(0.5))
    with pytest.raises(parity.ParityUsageError, match=r"Dropout draws different masks.*PyTorch \['1'\]"):
        parity.check_training(
            parity.translate(model),
            model,
            [(parity.randn((2, 4)), parity.randn((2, 3)))],
            loss=torch.nn.MSELoss(),
            optimizer=lambda p: torch.optim.SGD(p, lr=0.1),
        )


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"steps": 0}, "steps must be an integer >= 1"),
        ({"accumulate": 1.5}, "accumulate must be an integer >= 1"),
        ({"clip_grad_norm": -1}, "clip_grad_norm must be a number > 0"),
        ({"batches": []}, "batches is empty"),
        ({"batches": [parity.randn((2, 4))]}, r"batches\[0\] must be an \(inputs, target\) pair"),
        ({"optimizer": "adam"}, "optimizer must be a function of the parameters"),
        ({"optimizer": lambda p: torch.optim.LBFGS(p)}, "no MindSpore translation of torch.optim.lbfgs.LBFGS"),
        ({"loss": mindspore.nn.MSELoss()}, "loss must be a PyTorch loss Module"),
    ],
)
def test_usage_errors(kwargs, message):
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 3)
    call = {
        "batches": [(parity.randn((2, 4)), parity.randn((2, 3)))],
        "loss": torch.nn.MSELoss(),
        "optimizer": lambda p: torch.optim.SGD(p, lr=0.1),
        **kwargs,
    }
    with pytest.raises((parity.ParityUsageError, parity.ParityUnsupported), match=message):
        parity.check_training(parity.translate(model), model, call.pop("batches"), **call)


def test_readme_example():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.BatchNorm1d(8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
    batches = [(parity.randn((4, 6)), parity.randint((4,), 0, 3))]
    result = parity.check_training(
        parity.translate(model),
        model,
        batches,
        loss=torch.nn.CrossEntropyLoss(),
        optimizer=lambda p: torch.optim.Adam(p, lr=1e-3, weight_decay=1e-5),
    )
    assert str(result).startswith("ok: mindspore SequentialCell <-> torch Sequential (3 steps, pynative)")
    assert result.worst_margin <= 1


@pytest.mark.parametrize(
    "build, entry",
    [
        (lambda p: mindspore.nn.Adam(p, learning_rate=1e-3, weight_decay=1e-5), NORM_SKIPPED),
        (lambda p: mindspore.nn.Momentum(p, 0.1, 0.9, weight_decay=1e-4), "momentum-weight-decay-skips-gamma-beta"),
        (lambda p: mindspore.nn.SGD(p, 0.1, weight_decay=1e-4), "sgd-weight-decay-skips-gamma-beta"),
    ],
    ids=["adam", "momentum", "sgd"],
)
def test_optimizer_lint_flags_weight_decay_that_skips_norm_parameters(build, entry):
    cell = parity.translate(_net())
    issues = lint_optimizer(build(cell.trainable_params()))
    assert [i.entry_id for i in issues] == [entry]
    assert "(here ['1.gamma', '1.beta', '4.gamma', '4.beta'])" in str(issues[0]) and "fix: " in str(issues[0])
    assert lint_optimizer(build(cell.trainable_params()), acknowledged=(entry,)) == []
    dense = parity.translate(torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Linear(3, 2)))
    assert lint_optimizer(build(dense.trainable_params())) == []  # nothing named gamma/beta: all decayed


def test_optimizer_lint_is_quiet_without_decay_or_with_a_group_of_its_own():
    params = parity.translate(_net()).trainable_params()
    assert lint_optimizer(mindspore.nn.Adam(params, learning_rate=1e-3)) == []
    assert lint_optimizer(mindspore.nn.Adam([{"params": params, "weight_decay": 1e-2}], learning_rate=1e-3)) == []


class _CountingLoss(torch.nn.CrossEntropyLoss):
    calls = 0

    def forward(self, *args):
        type(self).calls += 1
        return super().forward(*args)


def test_a_training_case_with_such_an_optimizer_is_refused_before_any_step():
    from parity.catalogue import build
    from parity.engine.settings import Settings

    loss = _CountingLoss()
    case = parity.ParityCase(
        "GuideAdam",
        mindspore=parity.TRANSLATE,
        torch=_net,
        training=parity.Training(
            BATCHES,
            loss=(mindspore.nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"), loss),
            optimizer=(
                lambda p: mindspore.nn.Adam(p, learning_rate=1e-3, weight_decay=1e-5),
                lambda p: torch.optim.Adam(p, lr=1e-3, weight_decay=1e-5),
            ),
        ),
    )
    (variant,) = case.variants()
    with pytest.raises(
        parity.ParityUsageError,
        match=r"known to train differently from PyTorch's, before any step:"
        r"\n  mindspore.nn.Adam\(weight_decay=1e-05\)",
    ) as info:
        variant.run(*build(case), Settings())
    assert f"acknowledge=('{NORM_SKIPPED}',)" in str(info.value)
    assert _CountingLoss.calls == 0


def test_graph_mode_compiles_the_train_step_and_agrees_with_pynative():
    model = _net()
    cell = parity.translate(model)
    result = parity.check_training(
        cell,
        model,
        BATCHES,
        loss=torch.nn.CrossEntropyLoss(),
        steps=3,
        clip_grad_norm=0.5,
        optimizer=lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, nesterov=True),
        ms_mode="both",
    )
    assert result.passed and result.mode == "both"
    by_mode = {}
    for c in result[3].stage("params"):
        by_mode.setdefault(c.name, {})[c.mode] = c.max_abs
    assert all(set(found) == {"pynative", "graph"} for found in by_mode.values())
    assert "(3 steps, both)" in str(result)


@pytest.mark.parametrize(
    "optimizer",
    [
        lambda p: torch.optim.Adam(p, lr=1e-2),  # translated
        (
            lambda p: mindspore.nn.Momentum(
                p, learning_rate=0.1, momentum=0.9
            ),  # MindSpore's own, its state Parameters
            lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9),
        ),
    ],
    ids=["translated", "mindspore-own"],
)
def test_both_modes_step_in_turn_on_one_cell_and_each_trains_as_it_would_alone(optimizer):
    """With ms_mode="both" PYNATIVE takes each step just before GRAPH on the same Cell, its weights
    and BatchNorm statistics parked between its steps: each mode's every tensor compares exactly as
    the same mode trained on its own."""

    def train(mode):
        model = _net()
        return parity.check_training(
            parity.translate(model),
            model,
            BATCHES,
            loss=torch.nn.CrossEntropyLoss(),
            steps=3,
            optimizer=optimizer,
            ms_mode=mode,
        )

    both = train("both")
    for mode in ("pynative", "graph"):
        alone = train(mode)
        assert [(c.kind, c.name, c.max_abs, c.margin) for step in alone.steps for c in step.comparisons] == [
            (c.kind, c.name, c.max_abs, c.margin) for step in both.steps for c in step.comparisons if c.mode == mode
        ]
    assert any(c.kind == "buffer" for c in both.comparisons)


def test_graph_mode_runs_the_users_optimizer_compiled_and_still_names_its_mismatch():
    model = _net()
    with pytest.raises(parity.ParityMismatch) as info:
        parity.check_training(
            parity.translate(model),
            model,
            BATCHES,
            loss=torch.nn.CrossEntropyLoss(),
            steps=2,
            ms_mode="graph",
            optimizer=(
                lambda p: mindspore.nn.Adam(p, learning_rate=1e-3, weight_decay=1e-2),
                lambda p: torch.optim.Adam(p, lr=1e-3, weight_decay=1e-2),
            ),
        )
    step, first = info.value.result.first_failure
    assert (step, first.name, first.mode) == (1, "1.weight:exp_avg", "graph")
    assert "(train mode, graph)" in str(info.value)


def test_an_unbatched_sample_keeps_its_0_d_target():
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 3)
    result = parity.check_training(
        parity.translate(model),
        model,
        [(parity.randn((4,)), parity.randint((), 0, 3))],
        loss=torch.nn.CrossEntropyLoss(),
        optimizer=lambda p: torch.optim.SGD(p, lr=0.1),
        steps=2,
    )
    assert result.passed and result.torch_losses[0] != result.torch_losses[1]


def test_a_dropout_of_rate_0_is_no_dropout():
    # mindspore.nn.Dropout(p=0.0) keeps keep_prob=0.5 from its default: the rate decides.
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(6, 4), torch.nn.Dropout(p=0.0), torch.nn.Linear(4, 3))
    cell = mindspore.nn.SequentialCell(mindspore.nn.Dense(6, 4), mindspore.nn.Dropout(p=0.0), mindspore.nn.Dense(4, 3))
    assert parity.check_training(
        cell,
        model,
        BATCHES[:1],
        loss=torch.nn.CrossEntropyLoss(),
        steps=2,
        optimizer=lambda p: torch.optim.SGD(p, lr=0.1),
    ).passed
    cell = mindspore.nn.SequentialCell(mindspore.nn.Dense(6, 4), mindspore.nn.Dropout(p=0.2), mindspore.nn.Dense(4, 3))
    with pytest.raises(parity.ParityUsageError, match="Dropout draws different masks"):
        parity.check_training(
            cell,
            model,
            BATCHES[:1],
            loss=torch.nn.CrossEntropyLoss(),
            steps=2,
            optimizer=lambda p: torch.optim.SGD(p, lr=0.1),
        )


def test_a_network_trained_in_graph_mode_is_not_kept_alive():
    """MindSpore keeps every compiled function, and the network it closes over, in a process-wide
    cache; after check_training nothing of the pair's MindSpore side is left."""
    import gc
    import weakref

    model = _net()
    cell = parity.translate(model)
    alive = weakref.ref(cell)
    parity.check_training(
        cell,
        model,
        BATCHES,
        steps=1,
        loss=torch.nn.CrossEntropyLoss(),
        optimizer=lambda p: torch.optim.Adam(p, lr=1e-3),
        ms_mode="graph",
    )
    del cell
    gc.collect()
    assert alive() is None


def _ms_loss_changed_at(step, change):
    """MindSpore's side of ``torch.nn.CrossEntropyLoss()``, its value passed through ``change`` at
    step ``step`` (from 0) alone: a fault there, certain on every CPU, and nowhere else (PYNATIVE:
    the function runs once a step)."""
    cross_entropy, calls = parity.translate(torch.nn.CrossEntropyLoss()), []

    def loss(logits, labels):
        calls.append(None)
        value = cross_entropy(logits, labels)
        return change(value) if len(calls) == step + 1 else value

    return loss


def test_the_envelopes_reruns_stop_at_the_last_step_still_open(monkeypatch):
    """Each stage after the envelope's first pair reruns PyTorch's training from the start for the
    tensors still open, and only as far as the last step that holds one. MindSpore's loss is off at
    step 2 of 3, so that tensor is open through every stage on every CPU: the second pair and
    float64 run, and stop at step 2 unless the host's rounding leaves a tensor of step 3 open too.
    The first pair steps beside the main run, on copies, up to the last step with a tensor near
    its tolerance (whichever those are here)."""
    from parity.engine.training.reruns import TorchReruns

    asked, stepped = [], []
    original, original_step = TorchReruns._run, TorchReruns.step

    def spy(self, dtype, wanted, **kwargs):
        asked.append((kwargs.get("cast"), kwargs.get("draw"), {s: set(keys) for s, keys in wanted.items()}))
        return original(self, dtype, wanted, **kwargs)

    def spy_step(self, trainer, scheduler, step, wanted, draw=None, ulps=0.0, cast=None, views=False):
        stepped.append((draw, ulps, step, trainer.model is self.module))
        return original_step(self, trainer, scheduler, step, wanted, draw, ulps, cast, views)

    monkeypatch.setattr(TorchReruns, "_run", spy)
    monkeypatch.setattr(TorchReruns, "step", spy_step)
    model = _net()
    with pytest.raises(parity.ParityMismatch) as info:
        parity.check_training(
            parity.translate(model),
            model,
            BATCHES,
            steps=3,
            optimizer=lambda p: torch.optim.SGD(p, lr=0.1),
            loss=(_ms_loss_changed_at(1, lambda value: value + 1.0), torch.nn.CrossEntropyLoss()),  # not its gradient
        )
    result = info.value.result
    step, first = result.first_failure
    assert (step, first.kind) == (2, "loss") and (first.envelope.draws, first.envelope.float64) == (4, True)
    judged = [(i, c) for i, s in enumerate(result.steps) for c in s.comparisons if c.envelope is not None]
    for _, c in judged:  # decided as soon as its margin is within HEADROOM, else every run
        assert (c.envelope.draws, c.envelope.float64) in ((2, False), (4, False), (4, True))
        assert (c.envelope.draws, c.envelope.float64) == (4, True) or c.margin <= 0.5

    def still_open(after):  # {step: keys} of the tensors still open after the first ``after`` runs
        found = {}
        for i, c in judged:
            if c.envelope.draws + c.envelope.float64 > after:
                found.setdefault(i, set()).add((c.kind, c.torch_name))
        return found

    after_first, after_second = still_open(2), still_open(4)
    assert ("loss", "loss") in after_first[1] and ("loss", "loss") in after_second[1]
    # each later run asked for exactly the tensors open before its stage, and ran as far as their last step
    assert asked == [(None, 1, after_first)] * 2 + [("float64", None, after_second)]
    again = [(draw, ulps, s) for draw, ulps, s, on_checked in stepped if on_checked]
    assert again == [
        (draw, ulps, s)
        for draw, ulps, last in (
            (1, 16.0, max(after_first)),
            (1, -16.0, max(after_first)),
            (None, 0.0, max(after_second)),
        )
        for s in range(last + 1)
    ]
    # the first pair: two copies of the module, each step once, up to the last step with a near tensor
    near_last = max(i for i, _ in judged)
    first = [(draw, ulps, s) for draw, ulps, s, on_checked in stepped if not on_checked]
    assert sorted(first) == sorted((0, u, s) for s in range(near_last + 1) for u in (16.0, -16.0))
    for u in (16.0, -16.0):
        assert [s for _, ulps, s in first if ulps == u] == list(range(near_last + 1))


def _verdicts(result):
    return [
        (step.step, c.kind, c.name, c.margin, c.passed, c.envelope) for step in result.steps for c in step.comparisons
    ]


def _tight_training(model, optimizer, ms_loss=None):
    tight = parity.Tolerance(rtol=1e-9, atol=1e-9)  # every tensor to the envelope
    loss = torch.nn.CrossEntropyLoss()
    try:
        return parity.check_training(
            parity.translate(model),
            model,
            BATCHES,
            tolerance=tight,
            steps=3,
            optimizer=optimizer,
            loss=loss if ms_loss is None else (ms_loss, loss),
        )
    except parity.ParityMismatch as exc:
        return exc.result


def test_the_first_pair_beside_the_main_run_gives_the_verdicts_of_the_runs_after_it(monkeypatch):
    """The envelope's first mirrored pair steps beside PyTorch's run on copies of the module; where
    no copy can be made, the same runs come after it. Every margin and envelope is the same, bit
    for bit, and the result says which way the runs went."""
    import copy

    from parity.engine.training import lockstep

    rmsprop = lambda p: torch.optim.RMSprop(p, lr=1e-2, momentum=0.5)  # noqa: E731
    # MindSpore's gradients 1% larger at step 2 of 3: its optimizer state is open through every
    # stage on every CPU, so the later stages run too, for tensors of a step before the last: values
    # the steps after it overwrite on the checked module
    beside = _tight_training(_net(), rmsprop, _ms_loss_changed_at(1, lambda value: value * 1.01))
    assert not any("rounding envelope: its first runs" in n for n in beside.notes)
    assert any(
        c.envelope is not None and c.envelope.draws > 2 and c.kind in ("parameter", "optimizer state")
        for step in beside.steps[:-1]
        for c in step.comparisons
    )

    def refuse(module, memo=None):
        raise TypeError("cannot pickle 'generator' object")

    monkeypatch.setattr(lockstep.copy, "deepcopy", refuse)
    after = _tight_training(_net(), rmsprop, _ms_loss_changed_at(1, lambda value: value * 1.01))
    monkeypatch.setattr(lockstep.copy, "deepcopy", copy.deepcopy)
    assert _verdicts(after) == _verdicts(beside)
    note = next(n for n in after.notes if "rounding envelope: its first runs" in n)
    assert "copy.deepcopy of the PyTorch module failed (TypeError: cannot pickle 'generator' object)" in note


def test_an_optimizer_factory_over_other_parameters_runs_the_pair_after_the_main_run():
    """A factory that ignores the parameters it is given (it closes over the checked module) would
    train the checked module from a copy: the pair then runs after the main run, and says why."""
    model = _net()
    reference = _tight_training(_net(), lambda p: torch.optim.SGD(p, lr=0.1))
    result = _tight_training(model, lambda p: torch.optim.SGD(model.parameters(), lr=0.1))
    assert _verdicts(result) == _verdicts(reference)
    assert any("did not build its optimizer over the parameters it was given" in n for n in result.notes)


def test_a_training_step_leaves_no_gradients_behind():
    """Each step's gradients are read and then released (``zero_grad(set_to_none=True)``), on the
    checked module as on the envelope's copies."""
    model = _net()
    _tight_training(model, lambda p: torch.optim.SGD(p, lr=0.1))
    assert all(p.grad is None for p in model.parameters())
