"""Fault injection: one known fault at a known depth of a small ResNet, Transformer or deep tanh
stack (``cases/faults``), and the localiser must name exactly that layer, in the result's layer
table and in the message's "Divergence" line.  Known misses are strict xfails whose reason starts
"LOCALISER MISS"; a hit-rate table is printed at the end of the run."""

from __future__ import annotations

from dataclasses import dataclass

import mindspore  # noqa: F401  (both frameworks before parity, as everywhere in tests/)
import pytest
import torch  # noqa: F401
from mindspore import nn as msnn

import parity
from cases.faults import catalogue, models
from parity import ParityMismatch, ParityUsageError
from parity.backends import mindspore as msb
from parity.catalogue import build

FAULTS = {fault.name: fault for fault in catalogue.FAULTS}


def _check(case, **overrides):
    ms_cell, torch_module = build(case)
    train = case.train[0] if isinstance(case.train, tuple) else case.train
    return parity.check(ms_cell, torch_module, case.inputs, **{"train": train, **case.check_kwargs(), **overrides})


def _divergence_line(message: str) -> str:
    return next(line for line in message.splitlines() if line.startswith("Divergence: "))


# -- the hit-rate table ------------------------------------------------------------------------


@dataclass
class _Outcome:
    fault: catalogue.InjectedFault
    found: str  # the layer the localiser named ("" for none)
    where: str  # its where-text (or the Divergence line for running statistics)

    @property
    def hit(self) -> bool:
        return self.found == self.fault.expected and all(name in self.where for name in self.fault.names)


_OUTCOMES = pytest.StashKey[dict]()


class _HitRateTable:
    """Prints, after the run, how many injected faults were localised to the injected layer."""

    def __init__(self, outcomes: dict):
        self.outcomes = outcomes

    def pytest_terminal_summary(self, terminalreporter):
        if not self.outcomes:
            return
        rows = list(self.outcomes.values())
        hits = sum(o.hit for o in rows)
        terminalreporter.write_sep("-", f"fault localisation: {hits}/{len(rows)} localised")
        width = max(len(o.fault.name) for o in rows)
        for o in rows:
            mark = "hit " if o.hit else "MISS"
            terminalreporter.write_line(
                f"{mark}  {o.fault.name:<{width}}  {o.fault.direction:<9} expected "
                f"{o.fault.expected!r}, got {o.found or 'nothing'!r}: {o.where}"
            )


@pytest.fixture
def outcomes(pytestconfig):
    if _OUTCOMES not in pytestconfig.stash:
        pytestconfig.stash[_OUTCOMES] = {}
        pytestconfig.pluginmanager.register(_HitRateTable(pytestconfig.stash[_OUTCOMES]))
    return pytestconfig.stash[_OUTCOMES]


# -- every injected fault is named exactly ----------------------------------------------------


def _statistic_line(result, message: str) -> str:
    """The line of a message that names a failing running statistic: the Divergence line, unless a
    layer's output or gradient beyond the tolerance took it (by rounding alone on another CPU: a
    ReLU's output at 1.02x, MindSpore moved by 4 ulps), then the Compared line (the first failure)."""
    layers_differ = any(result.layers.first(direction)[0] is not None for direction in ("forward", "backward"))
    prefix = "Compared: " if layers_differ else "Divergence: "
    return next(line for line in message.splitlines() if line.startswith(prefix))


def _localised(fault, result, message) -> _Outcome:
    if fault.direction == "buffer":
        buffers = [c for c in result.failures if c.kind == "buffer"]
        return _Outcome(fault, buffers[0].layer if buffers else "", _statistic_line(result, message))
    verdict, where = result.layers.first(fault.direction)
    return _Outcome(fault, verdict.path if verdict is not None else "", where)


# Where each fault's own error lies, fed PyTorch's inputs (see parity.engine.diagnosis.own): the layer itself,
# else the model's own code (""): a fault in the code between its layers, or in a layer that cannot
# be fed (a custom bprop: its backward runs in the code between 'layer1' and 'layer2').
_OWNER = {"TransformerPositionalShift": "", "ResNetCustomBprop": ""}


def _owns_it(fault, result) -> None:
    """Every layer with its own error is the faulty one (running statistics for a buffer fault)."""
    owner = _OWNER.get(fault.name, fault.expected)
    own = result.layers.own_errors
    assert own and {e.layer for e in own} == {owner}, [(e.label, e.direction, e.margin) for e in own]
    assert own[0].direction == fault.direction


def _faults():
    for fault in catalogue.FAULTS:
        marks = [pytest.mark.xfail(reason=fault.miss, raises=AssertionError, strict=True)] if fault.miss else []
        yield pytest.param(fault, id=fault.name, marks=marks)


@pytest.mark.parametrize("fault", list(_faults()))
def test_the_injected_fault_is_localised_to_its_layer(fault, outcomes):
    with pytest.raises(ParityMismatch) as info:
        _check(fault.case)
    result, message = info.value.result, str(info.value)
    outcome = outcomes[fault.name] = _localised(fault, result, message)

    line = _statistic_line(result, message) if fault.direction == "buffer" else _divergence_line(message)
    if fault.direction == "backward":  # the forward pass agrees: the backward table is the one shown
        assert result.layers.first("forward") == (None, "")
        assert line.startswith("Divergence: first at gradient flowing back out of ")
    if fault.direction == "buffer":  # outputs and gradients agree; only that layer's statistics differ
        assert {c.layer for c in result.failures} == {fault.expected}
        assert {c.kind for c in result.failures} == {"buffer"}
    assert outcome.found == fault.expected, f"localised to {outcome.found!r}: {outcome.where}"
    for name in fault.names:
        assert name in outcome.where and name in line, f"{name} missing from {line!r}"
    assert outcome.where in line
    _owns_it(fault, result)


@pytest.mark.parametrize("fault", list(_faults()))
def test_the_injected_fault_is_still_named_on_another_cpu(fault, seed=1):
    """The same, with MindSpore's layers perturbed by a few ulps as another CPU would round them
    (see tests/test_benign_perturbation.py): rounding noise must not hide a fault or move the blame."""
    ms_cell, torch_module = build(fault.case)
    train = fault.case.train[0] if isinstance(fault.case.train, tuple) else fault.case.train
    with msb.perturbed(ms_cell, seed=seed, ulps=4.0), pytest.raises(ParityMismatch) as info:
        parity.check(ms_cell, torch_module, fault.case.inputs, **{**fault.case.check_kwargs(), "train": train})
    outcome = _localised(fault, info.value.result, str(info.value))
    assert outcome.found == fault.expected, f"localised to {outcome.found!r}: {outcome.where}"
    _owns_it(fault, info.value.result)


def test_the_deep_fault_blames_no_earlier_layer():
    """Twelve layers of float32 noise before a 1e-4 fault at block 9: every earlier layer is ok."""
    with pytest.raises(ParityMismatch) as info:
        _check(FAULTS["DeepTanhTinyScale"].case)
    forward = info.value.result.layers.forward
    at = next(i for i, v in enumerate(forward) if v.path == f"blocks.{models.DEEP_FAULT_AT}.fc")
    assert [v.label for v in forward[:at] if v.status != "ok"] == []
    assert forward[at].status == "FAIL"
    assert max(v.out_margin for v in forward[:at]) < 1.0  # the noise stayed inside the tolerance


def test_a_bias_dropped_from_the_parameters_is_named_before_any_forward():
    """``has_bias=False`` itself (not just an unused bias) is a structural error naming the tensor."""
    ms_cell, torch_module = build(catalogue.TransformerClean)
    ms_cell.blocks[0].ffn.fc2 = msnn.Dense(models.D_FF, models.D_MODEL, has_bias=False)
    with pytest.raises(ParityUsageError, match=r"in PyTorch only \['blocks\.0\.ffn\.fc2\.bias'\]"):
        parity.check(ms_cell, torch_module, catalogue.TRANSFORMER_INPUT)


# -- negative controls ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "case, train",
    [(catalogue.ResNetClean, False), (catalogue.ResNetClean, True), (catalogue.TransformerClean, False)],
    ids=["ResNet-eval", "ResNet-train", "Transformer"],
)
def test_a_clean_network_passes_and_blames_no_layer(case, train):
    result = _check(case, train=train, localize=True)
    assert result.passed
    for direction in ("forward", "backward"):
        verdicts = getattr(result.layers, direction)
        assert verdicts, f"no {direction} layers captured"
        # beyond the tolerance by another CPU's rounding, a layer reads "noise" (the check passed)
        assert [v.label for v in verdicts if v.status not in ("ok", "noise")] == []


@pytest.fixture(scope="module")
def deep_clean():
    return _check(catalogue.DeepTanhClean, localize=True)


def test_the_clean_deep_stack_passes_at_the_default_tolerance(deep_clean):
    assert deep_clean.passed  # with the float64 reference, and no tolerance loosened
    assert {c.tolerance_source for c in deep_clean.comparisons} == {"float32 default"}
    assert [v.label for v in deep_clean.layers.forward if v.status != "ok"] == []


def test_the_clean_deep_stack_blames_no_layer_backward(deep_clean):
    assert [v.label for v in deep_clean.layers.backward if v.status == "FAIL"] == []


def test_mindspore_s_own_tanh_is_blamed_once_at_its_first_use():
    """Not injected: MindSpore's CPU tanh differs from PyTorch's by ~1e-5 at EVERY tanh; the
    localiser must name the first and call the later ones downstream, not twelve FAILs."""
    with pytest.raises(ParityMismatch) as info:
        _check(catalogue.DeepTanhMindSporeKernel, grads=False)
    layers = info.value.result.layers
    verdict, _ = layers.first("forward")
    assert verdict.path == "blocks.0.act" and verdict.ms_type == "Tanh"
    assert [v.label for v in layers.forward if v.status == "FAIL"] == ["blocks.0.act"]
    assert "Divergence: first at forward output of 'blocks.0.act' (Tanh <-> Tanh)" in str(info.value)
