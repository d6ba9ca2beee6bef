"""Property-based checks: for every layer configuration that ``parity.strategies`` draws,
``parity.translate(m)`` computes what ``m`` computes (forward outputs, input and parameter
gradients; running statistics in training mode), as ``parity.check`` sees it.

Profiles (tests/conftest.py): "fast" by default (a few derandomized examples per family, the same
on every run), "thorough" with ``--hypothesis-profile=thorough``. A failure shows the falsifying
``LayerCase``, Hypothesis's ``@reproduce_failure`` line and a ``Reproduce:`` note with the pytest
command and a line of Python that runs the same check without Hypothesis.
"""

from __future__ import annotations

import copy
import os

import pytest
import torch
from hypothesis import Phase, currently_in_test_context, given, note, settings

import parity
from parity.strategies import (
    LayerCase,
    conv_layers,
    layers,
    norm_layers,
    pool_layers,
    recurrent_layers,
    upsample_layers,
)
from parity.translation.layers import table


def _command(config) -> str:
    nodeid = os.environ.get("PYTEST_CURRENT_TEST", "tests/test_properties.py").rsplit(" (", 1)[0]
    profile = settings.get_current_profile_name().split("-with-")[0]  # Hypothesis's verbosity suffix
    command = f'pytest "{nodeid}" --hypothesis-profile={profile}'
    seed = config.getoption("--hypothesis-seed") if config is not None else None
    if seed is not None:
        return f"{command} --hypothesis-seed={seed}"
    if not settings.default.derandomize:
        return f"{command} --hypothesis-seed=<N>  (this run was unseeded: the @reproduce_failure line replays it)"
    return command


def check_translation(case: LayerCase, config=None) -> None:
    """The property. ``reference="float64"``: a norm over two values is ill-conditioned (its float32
    gradients differ by up to 2% between correct implementations); MindSpore passes there only
    when its error against PyTorch float64 is within 10x PyTorch float32's own."""
    if currently_in_test_context():  # not in the plain tests of known bugs
        note(
            f"Reproduce: {_command(config)}\n"
            f"    or in Python: import parity; from parity.strategies import LayerCase; case = {case!r}; "
            f"m = case.torch_module(); parity.check(parity.translate(m), m, case.inputs, train={case.train}, "
            f"seed={case.seed}, reference='float64')"
        )
    module = case.torch_module()
    parity.check(parity.translate(module), module, case.inputs, train=case.train, seed=case.seed, reference="float64")


# --- translation bugs these properties found -------------------------------------------------
# A bug's region is cut out of its family's property (as narrowly as the bug allows) and pinned by
# its smallest falsifying examples as strict xfails until it is fixed; then the examples stay here
# as regressions and the cut-out goes.

FIXED_BUGS = [
    # AvgPool2d(divisor_override, count_include_pad=False): MindSpore's gradient divided windows over
    # the padding by their real count (corner gradient 1.0 instead of 0.25).
    pytest.param(
        LayerCase(
            "AvgPool2d",
            dict(kernel_size=2, padding=1, count_include_pad=False, divisor_override=4),
            shapes=[(1, 1, 4, 4)],
        ),
        id="avgpool2d-divisor-padding",
    ),
    pytest.param(
        LayerCase(
            "AvgPool2d",
            dict(kernel_size=2, ceil_mode=True, count_include_pad=False, divisor_override=3),
            shapes=[(1, 1, 5, 5)],
        ),
        id="avgpool2d-divisor-ceil",
    ),
    # Upsample(mode='linear', align_corners=False or None) to an output length of 1: nn.Upsample
    # returned the first element (align_corners=True arithmetic) where PyTorch interpolates at the
    # centre (input 0..5, size=1: MindSpore 0.0, PyTorch 2.5).
    pytest.param(LayerCase("Upsample", dict(size=1, mode="linear"), shapes=[(1, 1, 2)]), id="upsample-linear-size-1"),
    pytest.param(
        LayerCase(
            "Upsample",
            dict(scale_factor=0.5, recompute_scale_factor=True, mode="linear", align_corners=False),
            shapes=[(1, 1, 3)],
        ),
        id="upsample-linear-scale-to-1",
    ),
]


@pytest.mark.parametrize("case", FIXED_BUGS)
def test_fixed_translation_bug_stays_fixed(case):
    check_translation(case)


# --- the properties, one per family ----------------------------------------------------------


@given(case=conv_layers())
def test_conv(pytestconfig, case):
    check_translation(case, pytestconfig)


@given(case=pool_layers())
def test_pool(pytestconfig, case):
    check_translation(case, pytestconfig)


@given(case=norm_layers())
def test_norm(pytestconfig, case):
    check_translation(case, pytestconfig)


@given(case=upsample_layers())
def test_upsample(pytestconfig, case):
    check_translation(case, pytestconfig)


@given(case=recurrent_layers())
def test_recurrent(pytestconfig, case):
    check_translation(case, pytestconfig)


# --- the properties can fail -----------------------------------------------------------------


def test_a_wrong_translation_is_falsified(monkeypatch):
    """Translate Conv2d with pad_mode='same' whatever its padding (the classic porting slip): the
    conv property must find a falsifying example and report it with the reproduce note."""
    right = table._BUILDERS[torch.nn.Conv2d]  # the registry's table: no public way to swap a builder

    def pad_same(module, ctx):
        wrong = copy.copy(module)  # the PyTorch side keeps its padding
        wrong.padding = "same"
        return right(wrong, ctx)

    monkeypatch.setitem(table._BUILDERS, torch.nn.Conv2d, pad_same)

    @settings(max_examples=20, database=None, phases=[Phase.generate, Phase.shrink])
    @given(case=conv_layers(dims=(2,)))
    def conv_property(case):
        check_translation(case)

    with pytest.raises(parity.ParityMismatch) as failure:
        conv_property()
    notes = "\n".join(getattr(failure.value, "__notes__", []))
    assert "test case: conv_property(" in notes or "Falsifying example: conv_property(" in notes  # 6.1xx wording
    assert "case=LayerCase('Conv2d', dict(" in notes
    assert "Reproduce: pytest " in notes and "parity.check(parity.translate(m), m, case.inputs" in notes


# --- the strategies themselves ---------------------------------------------------------------


@given(case=layers())
def test_a_drawn_case_prints_as_the_expression_that_rebuilds_it(case):
    assert eval(repr(case), {"LayerCase": LayerCase}) == case


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: conv_layers(dims=(3,)), r"dims must be a non-empty selection of \(1, 2\), got \(3,\)"),
        (lambda: pool_layers(kinds=()), r"kinds must be a non-empty selection"),
        (lambda: norm_layers(max_channels=0), r"max_channels must be an int >= 1, got 0"),
        (lambda: recurrent_layers(max_seq=True), r"max_seq must be an int >= 1, got True"),
    ],
)
def test_strategy_arguments_are_checked_when_called(call, message):
    with pytest.raises(parity.ParityUsageError, match=message):
        call()
