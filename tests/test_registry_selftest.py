"""The known-mismatch registry against the installed MindSpore and PyTorch.

Every entry with a self-test: the naive pair differs the stated way and the fix agrees forward and
backward (a naive pair that agrees is STALE and fails here). Every stated default matches the
installed signatures; every [[available]] API runs and agrees; diagnosis ranks real pairs.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import math
from pathlib import Path

import pytest

import parity
from parity.mismatch_checks import check_available, resolve, selftest
from parity.registry import diagnose, docs, likely_causes, load
from parity.registry.signatures import check_arguments, check_rule_arguments, documented_platforms

# The llm family names transformers' layers; transformers imports torchvision, whose CPU build
# loads only once its two unguarded operators are declared (cases/models/zoo_compat.py).
TRANSFORMERS = importlib.util.find_spec("transformers") is not None
if TRANSFORMERS:
    from cases.models.zoo_compat import import_quietly

    import_quietly("transformers.models.llama.modeling_llama")

REGISTRY = load()
TESTED = [e for e in REGISTRY if e.selftest is not None]
MEASURED = docs.read_measured()["entries"]
ROOT = Path(parity.__file__).resolve().parent.parent


@pytest.mark.parametrize("entry", TESTED, ids=[e.id for e in TESTED])
def test_selftest(entry):
    outcome = selftest(entry)
    if outcome.status == "not-applicable":
        pytest.skip(outcome.message)
    assert outcome.status == "ok", f"{entry.location}: {outcome}"
    stored = MEASURED.get(entry.id, {})
    value, fresh = stored.get("before_value"), outcome.naive.value
    if value is not None and fresh is not None:
        assert math.isclose(fresh, value, rel_tol=0.1), (
            f"{entry.id}: measured {fresh:.3g} now, {value:.3g} stored: run `python -m parity.mismatch_checks measure`"
        )


@pytest.mark.parametrize("entry", list(REGISTRY), ids=[e.id for e in REGISTRY])
def test_stated_defaults_match_installed_signatures(entry):
    if entry.family == "llm" and not TRANSFORMERS:
        pytest.skip("transformers is not installed")
    assert check_arguments(entry, resolve) + check_rule_arguments(entry, resolve) == []


def test_every_api_resolves():
    for entry in REGISTRY:
        if entry.family == "llm" and not TRANSFORMERS:
            continue
        resolve(entry.torch)
        if entry.selftest is not None and entry.selftest.fixed:
            resolve(entry.fixed_api)


def test_mint_platforms_match_docstrings():
    for entry in REGISTRY:
        if entry.family == "mint":
            assert list(entry.runs_on) == documented_platforms(resolve(entry.mindspore)), entry.id
    for record in REGISTRY.available:
        assert list(record.documented) == documented_platforms(resolve(record.mindspore)), record.mindspore


@pytest.mark.parametrize("record", REGISTRY.available, ids=[r.mindspore.rsplit(".", 1)[-1] for r in REGISTRY.available])
def test_available_api_runs_and_agrees(record):
    outcome = check_available(record)
    assert outcome.observed == "agrees", f"{record.location}: {record.mindspore} on CPU: {outcome.detail}"


def test_stale_entry_fails(tmp_path):
    """An entry whose 'naive' pair is already right must come out STALE, not ok."""
    source = (ROOT / REGISTRY.get("gelu-approximate-default").file).read_text(encoding="utf-8")
    start = source.index('[[mismatch]]\nid = "gelu-approximate-default"')
    block = source[start : source.index("[[mismatch]]", start + 5)]
    block = block.replace("ms_kwargs = {}", "ms_kwargs = { approximate = false }", 1)
    path = tmp_path / "stale.toml"
    path.write_text("schema = 1\n\n" + block, encoding="utf-8")
    outcome = selftest(load([path]).get("gelu-approximate-default"))
    assert outcome.status == "stale" and "no longer triggers" in outcome.message


@pytest.mark.parametrize(
    "entry_id, ms_kwargs, optimizer, torch_kwargs",
    [
        # no gamma/beta in the name: with zero gradients both only decay, alike
        ("adamweightdecay-weight-decay-skips-gamma-beta", None, {"name": "w"}, None),
        # a global norm of 3.7: the 1e-6 is below float32 rounding
        ("clip-by-global-norm-no-eps", {"clip_norm": 1.0}, {"grad_scale": 1.0}, {"max_norm": 1.0}),
        # the run ends one step after T_max: cosine_decay_lr and CosineAnnealingLR agree up to there
        ("cosine-decay-lr-holds-after-decay", {"total_step": 6}, {}, None),
    ],
    ids=["adamweightdecay-named-w", "clip-norm-3.7", "cosine-within-t-max"],
)
def test_optimizer_selftests_see_agreement(entry_id, ms_kwargs, optimizer, torch_kwargs):
    """The same optimizer, clip and schedule pairs where the two formulas meet come out STALE."""
    entry = REGISTRY.get(entry_id)
    spec = dataclasses.replace(
        entry.selftest,
        ms_kwargs={**entry.selftest.ms_kwargs, **(ms_kwargs or {})},
        torch_kwargs=torch_kwargs or entry.selftest.torch_kwargs,
        optimizer={**entry.selftest.optimizer, **optimizer},
    )
    outcome = selftest(dataclasses.replace(entry, selftest=spec))
    assert outcome.status == "stale", outcome
    assert outcome.naive.value < 1e-6, outcome


def _excluding_installed(entry):
    """``entry`` with a MindSpore range that leaves out the installed release."""
    from packaging.specifiers import SpecifierSet

    from parity.registry import installed_versions

    return dataclasses.replace(
        entry, versions={**entry.versions, "mindspore": SpecifierSet(f"!={installed_versions()[0]}")}
    )


def test_check_range_runs_an_entry_outside_its_range_and_finds_it_too_narrow():
    entry = _excluding_installed(REGISTRY.get("gelu-approximate-default"))
    assert selftest(entry).status == "not-applicable"  # not run: the range says so
    outcome = selftest(entry, check_range=True)
    assert outcome.status == "outside-range", outcome
    assert "the mismatch shows on MindSpore " in outcome.message and "widen the range" in outcome.message


def test_check_range_confirms_an_entry_absent_outside_its_range():
    entry = _excluding_installed(REGISTRY.get("gelu-approximate-default"))
    spec = dataclasses.replace(entry.selftest, ms_kwargs={"approximate": False})  # the naive pair agrees
    outcome = selftest(dataclasses.replace(entry, selftest=spec), check_range=True)
    assert outcome.status == "not-applicable", outcome
    assert outcome.message.startswith("outside its versions (mindspore !=") and outcome.message.endswith(
        "as measured: the naive pair agrees"
    ), outcome


# ---------------------------------------------------------------- diagnosis on real models


def _nets():
    import mindspore.nn as mn
    import torch.nn as tn

    ms_net = mn.SequentialCell([mn.Conv2d(3, 4, 3), mn.GELU(), mn.BatchNorm2d(4), mn.SeLU()])
    torch_net = tn.Sequential(tn.Conv2d(3, 4, 3), tn.GELU(), tn.BatchNorm2d(4), tn.SELU())
    return ms_net, torch_net


def test_diagnose_ranks_built_arguments_high():
    found = diagnose(*_nets(), device="CPU")
    high = [d for d in found if d.score >= 0.5]
    assert {d.entry.id for d in high} == {
        "conv2d-pad-mode-default",
        "conv2d-has-bias-default",
        "gelu-approximate-default",
    }
    gelu = next(d for d in high if d.entry.id == "gelu-approximate-default")
    assert str(gelu) == (
        "known mismatch 'gelu-approximate-default' at '1' (MindSpore approximate=True vs PyTorch approximate='none')"
    )
    conv = next(d for d in high if d.entry.id == "conv2d-pad-mode-default")
    assert "MindSpore pad_mode='same' vs PyTorch padding=(0, 0)" in str(conv)
    low = [d for d in found if d.score < 0.5]
    assert [d.entry.id for d in low] == ["selu-gradient"] and found[-1] is low[-1]


def test_diagnose_leaves_out_fixed_layers():
    import mindspore.nn as mn
    import torch.nn as tn

    ms_net = mn.SequentialCell(
        [mn.Conv2d(3, 4, 3, pad_mode="pad", has_bias=True), mn.GELU(approximate=False), mn.BatchNorm2d(4, momentum=0.7)]
    )
    torch_net = tn.Sequential(tn.Conv2d(3, 4, 3), tn.GELU(), tn.BatchNorm2d(4, momentum=0.3))
    assert diagnose(ms_net, torch_net) == []


def test_diagnose_pairs_unequal_paths_in_definition_order():
    import mindspore.nn as mn
    import torch.nn as tn

    class MSNet(mn.Cell):
        def __init__(self):
            super().__init__()
            self.act = mn.LeakyReLU()

    class TorchNet(tn.Module):
        def __init__(self):
            super().__init__()
            self.activation = tn.LeakyReLU()

    found = diagnose(MSNet(), TorchNet())
    assert [str(d) for d in found] == [
        "known mismatch 'leakyrelu-negative-slope-default' at 'activation' "
        "(MindSpore 'act') (MindSpore alpha=0.2 vs PyTorch negative_slope=0.01)"
    ]


def test_likely_causes_for_a_failure_message():
    import mindspore.nn as mn
    import torch.nn as tn

    causes = likely_causes(mn.GELU(), tn.GELU(), device="CPU")
    assert causes == [
        "known mismatch 'gelu-approximate-default' at '(root)' (MindSpore approximate=True vs "
        "PyTorch approximate='none'); fix: pass approximate=False (or approximate=True for "
        "PyTorch's approximate='tanh')"
    ]


def test_likely_causes_put_the_diverging_layer_first():
    ms_net, torch_net = _nets()
    causes = likely_causes(ms_net, torch_net, at="1")
    assert causes[0].startswith("known mismatch 'gelu-approximate-default' at '1'") and len(causes) == 3
