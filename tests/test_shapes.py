"""parity.check_shapes: one pair over several input shapes, each judged as check judges it; in
GRAPH mode compiled once for a dynamic signature."""

from __future__ import annotations

import pytest
import torch
from mindspore import nn as msnn
from mindspore import ops

import parity
from parity import ParityMismatch, ParityUsageError
from parity.engine.inputs import materialize
from parity.engine.shapes.run import signature_of

SHAPES = [parity.randn((1, 5, 8)), parity.randn((3, 12, 8)), parity.randn((2, 17, 8))]


class MsPool(msnn.Cell):
    """Dense, tanh, mean over the sequence; ``first`` > 0 keeps only that many positions (a fault
    that shows once the sequence is longer)."""

    def __init__(self, first: int = 0):
        super().__init__()
        self.proj = msnn.Dense(8, 4)
        self.first = first

    def construct(self, x):
        h = ops.tanh(self.proj(x))
        if self.first:
            h = h[:, : self.first]
        return h.mean(axis=1)


class TorchPool(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(8, 4)

    def forward(self, x):
        return torch.tanh(self.proj(x)).mean(dim=1)


class MsGraphPool(MsPool):
    """The same Cell under another class: GRAPH mode's compile cache has seen no Cell of it."""


class MsFixedLength(msnn.Cell):
    """Reshapes to a fixed sequence length of 5: any other length fails in MindSpore."""

    def __init__(self):
        super().__init__()
        self.proj = msnn.Dense(8, 4)

    def construct(self, x):
        return ops.tanh(self.proj(x)).reshape(-1, 5, 4).mean(axis=1)


def test_every_shape_is_checked_and_passes():
    result = parity.check_shapes(MsPool(), TorchPool(), SHAPES)
    assert result.passed and len(result.shapes) == 3
    assert [r["output"].torch_shape for r in result.results] == [(1, 4), (3, 4), (2, 4)]
    assert str(result).startswith("ok: mindspore MsPool <-> torch TorchPool over 3 input shapes (pynative)")


def test_graph_mode_compiles_once_for_the_dynamic_signature():
    result = parity.check_shapes(MsGraphPool(), TorchPool(), SHAPES, ms_mode="graph")
    assert result.passed
    assert result.signature == [((None, None, 8), "float32")]
    assert [s.compiled for s in result.shapes] == [1, 0, 0] and result.recompiled == []
    assert any("dynamic signature input[0] (None, None, 8) float32" in note for note in result.notes)


def test_a_shape_that_computes_differently_is_named():
    with pytest.raises(ParityMismatch) as info:
        parity.check_shapes(MsPool(first=8), TorchPool(), SHAPES)
    message = str(info.value)
    assert message.startswith("MindSpore and PyTorch differ on 2 of 3 input shapes!")
    assert "  ok   [0] input[0] float32[1, 5, 8]" in message
    assert "  FAIL [1] input[0] float32[3, 12, 8]" in message and "  FAIL [2] input[0] float32[2, 17, 8]" in message
    assert "Shape [1], its check:" in message and "MindSpore and PyTorch outputs are not close!" in message
    result = info.value.result
    assert [s.index for s in result.failing_shapes] == [1, 2] and not result.passed


def test_a_shape_that_makes_mindspore_fail_is_named():
    with pytest.raises(ParityMismatch) as info:
        parity.check_shapes(MsFixedLength(), TorchPool(), SHAPES[:2])
    message = str(info.value)
    assert (
        "  ok   [0]" in message
        and "  FAIL [1] input[0] float32[3, 12, 8]: raised: The MindSpore side raised" in message
    )
    assert "Shape [1] raised:" in message


def test_the_signature_keeps_what_agrees():
    datas = [
        materialize(entry, 0)
        for entry in [
            (parity.randn((2, 5, 8)), parity.randint((2, 5), 0, 9)),
            (parity.randn((2, 9, 8)), parity.randint((2, 9), 0, 9)),
        ]
    ]
    assert signature_of(datas) == [((2, None, 8), "float32"), ((2, None), "int64")]


@pytest.mark.parametrize(
    "shapes, match",
    [
        ([parity.randn((2, 8)), parity.randn((2, 3, 8))], "ranks"),
        ([parity.randn((2, 8)), parity.randn((3, 8), dtype="float16")], "dtypes"),
        ([(parity.randn((2, 8)),), (parity.randn((3, 8)), parity.randn((3, 8)))], "same number of inputs"),
    ],
)
def test_a_signature_graph_mode_cannot_make_is_refused(shapes, match):
    with pytest.raises(ParityUsageError, match=match):
        parity.check_shapes(MsPool(), TorchPool(), shapes, ms_mode="graph")


@pytest.mark.parametrize("shapes", [[], parity.randn((2, 8)), "x", {"x": parity.randn((2, 8))}])
def test_shapes_must_be_a_list(shapes):
    with pytest.raises(ParityUsageError, match="one entry per shape"):
        parity.check_shapes(MsPool(), TorchPool(), shapes)


def test_the_readme_example():
    ms_cell, torch_module = MsPool(), TorchPool()
    result = parity.check_shapes(
        ms_cell,
        torch_module,
        [parity.randn((1, 5, 8)), parity.randn((3, 12, 8)), parity.randn((2, 17, 8))],
        ms_mode="both",
    )
    assert result.passed and len(result.results) == 3


def test_the_fixture_offers_check_shapes_and_translate(pytester):
    pytester.makepyfile(
        test_fixture="""
        import torch
        import parity as parity_module

        def test_shapes(parity):
            module = torch.nn.Sequential(torch.nn.Linear(8, 4), torch.nn.Tanh())
            cell = parity.translate(module)
            result = parity.check_shapes(cell, module, [parity.randn((2, 8)), parity.randn((5, 8))])
            assert result.passed and len(result.results) == 2
    """
    )
    result = pytester.runpytest("--parity", "--parity-report=shapes.jsonl", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    from parity.nightly.records import read_records

    _, checks = read_records(pytester.path / "shapes.jsonl")
    (record,) = checks
    assert record["call"] == "check_shapes" and record["verdict"] == "pass"
    assert [s["index"] for s in record["shapes"]] == [0, 1] and {t["shape"] for t in record["tensors"]} == {0, 1}
