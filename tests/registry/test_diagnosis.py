"""The diagnosis's arithmetic (``parity.registry.diagnosis``), on layer tables made by hand: whether
MindSpore's 'same' padding differs from PyTorch's for a shape, and what each layer saw (its input
shapes, whether it diverged on its own). Likely causes from real checks: tests/test_diagnosis.py."""

from __future__ import annotations

import pytest

from parity.engine.diagnosis.verdicts import LayerTable, LayerVerdict
from parity.registry import rules
from parity.registry.diagnosis import Seen, observed

same_pads_differ = rules.HELPERS["same_pads_differ"]


# ---------------------------------------------------------------- MindSpore 'same' vs PyTorch padding


@pytest.mark.parametrize(
    "shape, kernel, stride, padding, differs",
    [
        ((2, 64, 32, 32), 3, 2, 1, True),  # 'same' pads (0, 1), PyTorch (1, 1): the ResNet stem max-pool
        ((2, 64, 33, 33), 3, 2, 1, False),  # 'same' pads (1, 1) on an odd size
        ((2, 8, 16, 16), (3, 3), (1, 1), (1, 1), False),
        ((2, 8, 16, 16), (3, 3), (1, 1), (0, 0), True),
        ((2, 8, 16, 16), (1, 1), (1, 1), (0, 0), False),
        ((2, 8, 15, 16), (1, 1), (2, 2), (0, 0), False),  # a strided 1x1 kernel pads nothing either
        ((2, 8, 16, 16), 2, 2, 0, False),
        ((2, 8, 15, 15), 2, 2, 0, True),  # odd: 'same' keeps the last column, PyTorch drops it
        ((2, 4, 10), (3,), (1,), "valid", True),
        ((2, 4, 10), (4,), (1,), "same", False),  # PyTorch's own 'same' also puts the odd pad at the end
    ],
)
def test_same_pads_differ_for_the_input_shape(shape, kernel, stride, padding, differs):
    assert same_pads_differ(shape, kernel, stride, 1, padding) is differs


@pytest.mark.parametrize(
    "kernel, stride, padding, differs",
    [
        ((1, 1), (1, 1), (0, 0), False),
        ((1, 1), (2, 2), (0, 0), False),
        ((3, 3), (1, 1), (1, 1), False),
        ((3, 3), (2, 2), (1, 1), True),  # for even sizes
        ((2, 2), (2, 2), (0, 0), True),  # for odd sizes
        ((3, 3), (1, 1), (0, 0), True),
    ],
)
def test_same_pads_differ_for_some_input_when_the_shape_is_unknown(kernel, stride, padding, differs):
    assert same_pads_differ(None, kernel, stride, (1, 1), padding) is differs


def _verdict(path, status, shape, direction="forward", ms_path=None, fed=0.0):
    """A verdict whose inputs are ``fed`` times their tolerance off (relative error as much)."""
    return LayerVerdict(
        direction,
        path,
        ms_path or path,
        "Conv2d",
        "Conv2d",
        0,
        fed,
        fed,
        0.0,
        0.0,
        0.0,
        status=status,
        in_shapes=(shape,),
        ms_in_shapes=(shape,),
    )


def test_observed_collects_input_shapes_and_divergence():
    table = LayerTable(
        forward=[
            _verdict("a", "ok", (1, 3, 8, 8)),
            _verdict("a", "ok", (1, 3, 4, 4)),
            _verdict("a", "ok", (1, 3, 8, 8)),
            _verdict("b", "FAIL", (1, 4, 8, 8), ms_path="b_ms"),
            _verdict("c", "downstream", (1, 4, 4, 4), fed=5),
            _verdict("x", "unaligned", (1, 1)),
        ],
        backward=[_verdict("c", "FAIL", (1, 4, 4, 4), direction="backward")],
    )
    assert observed(table) == {
        "a": Seen("a", ((1, 3, 8, 8), (1, 3, 4, 4)), False),
        "b": Seen("b_ms", ((1, 4, 8, 8),), True),
        "c": Seen("c", ((1, 4, 4, 4),), True),
    }


def test_a_layers_own_failing_tensors_count_only_where_what_flowed_in_agreed():
    table = LayerTable(
        forward=[_verdict("bn", "ok", (2, 4)), _verdict("fed", "downstream", (2, 4), fed=3)],
        backward=[_verdict("bn", "ok", (2, 4), "backward", fed=3), _verdict("fed", "ok", (2, 4), "backward")],
    )
    seen = observed(table, [("bn", "buffer"), ("fed", "buffer"), ("fed", "param grad"), ("gone", "buffer")])
    assert {p: s.diverged for p, s in seen.items()} == {"bn": True, "fed": False}
    seen = observed(table, [("bn", "param grad")])  # its gradient flowed in already differing
    assert not seen["bn"].diverged
