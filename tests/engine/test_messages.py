"""report.py: the failure message anatomy on Results built from real arrays, plus a few exact
golden messages for the builders (wording changes must be deliberate)."""

import re

import numpy as np
import pytest

import parity
from parity.engine.diagnosis import messages as report
from parity.engine.diagnosis.verdicts import LayerVerdict
from parity.engine.inputs import materialize
from parity.engine.result import Result
from parity.judge.envelope import Envelope
from parity.judge.metrics import Comparison, compare_arrays
from parity.judge.tolerance import ToleranceSpec, resolve
from parity.weights.transfer import Pair, WeightMap, WeightReport

NODE = "tests/test_dense.py::test_dense"


def compared(kind, name, ms, ref, *, ms_name=None, chain=(), mode="pynative", problem=None):
    """A Comparison as the runner makes it: tolerance resolved, metrics from compare_arrays."""
    tol, source = resolve(chain, (name, ms_name or name, name), str(ref.dtype))
    item = Comparison(
        kind,
        name,
        ms_name or name,
        name,
        mode,
        tuple(ms.shape),
        tuple(ref.shape),
        str(ms.dtype),
        str(ref.dtype),
        tol,
        source,
    )
    item.problem = problem
    if problem is None:
        for key, value in compare_arrays(ms, ref, tol).items():
            setattr(item, key, value)
    else:
        item.margin = float("inf")
    return item


def weights_report():
    wmap = WeightMap(
        [
            Pair("fc.weight", "fc.weight", "same name", (4, 4), (4, 4), True),
            Pair("fc.bias", "fc.bias", "same name", (4,), (4,), True),
        ]
    )
    return WeightReport(wmap, "PyTorch -> MindSpore", 2)


def result_of(comparisons, *, case=NODE, location="tests/test_dense.py:7", train=False, seed=1234):
    prefix = f"pytest {case} --parity" if case else ""
    return Result(
        "Dense",
        "Linear",
        comparisons,
        weights_report(),
        materialize(parity.randn((2, 4)), seed).describe(seed),
        seed,
        ("pynative",),
        train,
        case=case,
        location=location,
        reproduce=report.reproduce_line(prefix, seed),
    )


def small_pair():
    ref = np.arange(1, 9, dtype=np.float32).reshape(2, 4) / 8
    ms = ref.copy()
    ms[1, 2] += 0.001
    ms[0, 3] += 0.0004
    return ms, ref


# -- golden messages ---------------------------------------------------------------------------

GOLDEN_FAILURE = """\
MindSpore and PyTorch outputs are not close!

Case:       tests/test_dense.py::test_dense  (tests/test_dense.py:7)
Pair:       mindspore Dense <-> torch Linear (eval mode)
Divergence: first at forward output 'output'

Mismatched elements: 2 / 8 (25.0%)
Greatest absolute difference: 0.001 at index (1, 2) (up to 1e-05 allowed)
Greatest relative difference: 0.00114 at index (1, 2) (up to 1.3e-06 allowed)
Cosine similarity: 1.000000
Tolerance: float32 default (rtol=1.3e-06, atol=1e-05)

Compared tensors (1 of 2 failed):
  FAIL  outputs      0/1 within tolerance; worst 'output' at 89.8x allowed
  ok    input grads  1/1 within tolerance; worst 'input[0]' at 0x allowed

Weights: 2/2 tensors mapped and verified identical (PyTorch -> MindSpore)
Inputs: seed 1234 -> input[0]: float32[2, 4] ~ N(0, 1)

Reproduce: pytest tests/test_dense.py::test_dense --parity --parity-seed=1234"""


def test_golden_failure_message():
    ms, ref = small_pair()
    grad = np.ones((2, 4), np.float32)
    result = result_of([compared("output", "output", ms, ref), compared("input grad", "input[0]", grad.copy(), grad)])
    assert report.failure_message(result) == GOLDEN_FAILURE


def test_golden_summary_and_structure_lines():
    ms, ref = small_pair()
    failing = result_of([compared("output", "output", ms, ref)])
    passing = result_of([compared("output", "output", ref.copy(), ref)])
    assert report.summary_line(NODE, failing) == f"FAIL  {NODE}: worst margin 89.8x allowed (output 'output')"
    assert report.summary_line(NODE, passing) == f"ok    {NODE}: worst margin 0x allowed (output 'output')"
    assert report.summary_line(NODE, failing, expected=True) == (
        f"xfail {NODE}: worst margin 89.8x allowed (output 'output')"
    )
    assert report.structure_message(["output[0]", "output[1]"], ["output"]) == (
        "Output structures differ: MindSpore returns 2 tensors ['output[0]', 'output[1]'], PyTorch returns 1 "
        "['output']\nIn MindSpore only: ['output[0]', 'output[1]']\nIn PyTorch only: ['output']"
    )


# -- anatomy, with the numbers computed here ---------------------------------------------------


@pytest.fixture
def noisy_result():
    rng = np.random.default_rng(3)
    ref = rng.standard_normal((4, 6, 5)).astype(np.float32)
    ms = ref + rng.standard_normal(ref.shape).astype(np.float32) * 1e-5
    return ms, ref, result_of([compared("output", "output", ms, ref)])


def test_anatomy_counts_and_greatest_differences(noisy_result):
    ms, ref, result = noisy_result
    text = report.failure_message(result)
    diff = np.abs(ms.astype(np.float64) - ref.astype(np.float64))
    allowed = 1e-5 + 1.3e-6 * np.abs(ref.astype(np.float64))
    mismatched, total = int((diff > allowed).sum()), ref.size
    abs_at = tuple(int(i) for i in np.unravel_index(np.argmax(diff), ref.shape))
    rel_at = tuple(int(i) for i in np.unravel_index(np.argmax(diff / np.abs(ref)), ref.shape))
    assert 0 < mismatched < total

    lines = text.splitlines()
    assert lines[0] == "MindSpore and PyTorch outputs are not close!"
    assert f"Mismatched elements: {mismatched} / {total} ({100 * mismatched / total:.1f}%)" in lines
    assert (f"Greatest absolute difference: {report.fmt(diff.max())} at index {abs_at} (up to 1e-05 allowed)") in lines
    assert any(
        line.startswith("Greatest relative difference: ")
        and line.endswith(f"at index {rel_at} (up to 1.3e-06 allowed)")
        for line in lines
    )
    assert "Tolerance: float32 default (rtol=1.3e-06, atol=1e-05)" in lines


def test_anatomy_sections_in_order(noisy_result):
    _, _, result = noisy_result
    text = report.failure_message(result, likely_causes=["known mismatch 'gelu-approximate'"])
    order = [
        "not close!",
        "Case:",
        "Pair:",
        "Divergence:",
        "Mismatched elements:",
        "Greatest absolute",
        "Greatest relative",
        "Tolerance:",
        "Compared tensors",
        "Likely cause: known mismatch 'gelu-approximate'",
        "Weights: 2/2 tensors mapped",
        "Inputs: seed 1234 -> input[0]: float32[2, 4] ~ N(0, 1)",
        f"Reproduce: pytest {NODE} --parity --parity-seed=1234",
    ]
    positions = [text.index(part) for part in order]
    assert positions == sorted(positions)
    assert text.splitlines()[-1].startswith("Reproduce: ")


def test_without_a_case_the_reproduce_line_is_a_call():
    ms, ref = small_pair()
    text = report.failure_message(result_of([compared("output", "output", ms, ref)], case="", seed=99))
    assert "Case:" not in text
    assert text.splitlines()[-1] == "Reproduce: parity.check(..., seed=99)"
    assert "Inputs: seed 99 -> " in text


def test_the_tolerance_line_names_an_override():
    ms, ref = small_pair()
    chain = (ToleranceSpec.parse({"out*": parity.Tolerance(1e-4, 1e-4)}),)
    text = report.failure_message(result_of([compared("output", "output", ms, ref, chain=chain)]))
    assert "Tolerance: check(tolerance=...)['out*'] (rtol=0.0001, atol=0.0001)" in text.splitlines()
    assert "(up to 0.0001 allowed)" in text


def test_first_failure_in_order_is_the_divergence_and_others_are_listed():
    ms, ref = small_pair()
    grad = np.ones((2, 4), np.float32)
    comparisons = [compared("output", "output", ref.copy(), ref)]
    comparisons += [
        compared("param grad", f"layer{i}.weight", grad * 1.01, grad, ms_name=f"layer{i}.gamma", mode="graph")
        for i in range(8)
    ]
    text = report.failure_message(result_of(comparisons))
    assert "Divergence: first at gradient of parameter 'layer0.weight' (MindSpore 'layer0.gamma'), graph mode" in text
    also = next(line for line in text.splitlines() if line.startswith("Also failing: "))
    assert also.count("param grad 'layer") == 5
    assert also.endswith(" and 2 more")
    assert "Compared tensors (8 of 9 failed):" in text


def test_shape_problems_have_their_own_headline_and_no_tolerance():
    ms, ref = np.zeros((2, 240, 12, 12), np.float32), np.zeros((2, 240, 9, 9), np.float32)
    text = report.failure_message(result_of([compared("output", "output", ms, ref, problem="shape")]))
    assert text.splitlines()[0] == "Forward output shapes differ: MindSpore (2, 240, 12, 12) vs PyTorch (2, 240, 9, 9)"
    assert "Tolerance:" not in text
    assert "Mismatched elements" not in text


def test_dtype_problems_have_their_own_headline():
    text = report.failure_message(
        result_of(
            [compared("param grad", "fc.weight", np.zeros(3, np.float16), np.zeros(3, np.float32), problem="dtype")]
        )
    )
    assert text.splitlines()[0] == "Gradient of parameter dtypes differ: MindSpore float16 vs PyTorch float32"


def test_non_finite_disagreement_headline_and_positions():
    ref = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    ms = ref.copy()
    ms[0, 1] = np.nan
    ms[1, 0] = np.inf
    text = report.failure_message(result_of([compared("output", "output", ms, ref)]))
    assert text.splitlines()[0] == "Non-finite values differ between MindSpore and PyTorch!"
    assert "Non-finite: MindSpore 2, PyTorch 0 NaN/Inf; 2 positions disagree; at (0, 1), (1, 0)" in text


def test_notes_are_shown():
    ms, ref = small_pair()
    result = result_of([compared("output", "output", ms, ref)])
    result.notes.append("something to know")
    assert "Note: something to know" in report.failure_message(result).splitlines()


@pytest.mark.parametrize(
    "value, text",
    [
        (0.0, "0"),
        (0.5, "0.5"),
        (1e-5, "1e-05"),
        (1.3e-6, "1.3e-06"),
        (0.00114, "0.00114"),
        (89.83, "89.8"),
        (12345.0, "1.2e+04"),
        (float("nan"), "nan"),
        (float("inf"), "inf"),
        (float("-inf"), "-inf"),
    ],
)
def test_fmt(value, text):
    assert report.fmt(value) == text


def test_index_formatting_of_one_dimensional_and_scalar_indices():
    one_d = compared("output", "output", np.array([0.0, 1.0], np.float32), np.zeros(2, np.float32))
    scalar = compared("output", "output", np.array(1.0, np.float32), np.array(0.0, np.float32))
    assert re.search(r"Greatest absolute difference: 1 at index \(1,\) ", report.failure_message(result_of([one_d])))
    assert re.search(r"Greatest absolute difference: 1 at index \(\) ", report.failure_message(result_of([scalar])))


def test_summary_flags_a_pass_that_needed_the_rounding_envelope():
    ms, ref = small_pair()
    item = compared("param grad", "fc.weight", ms, ref)
    assert item.mismatched > 0  # out of the elementwise tolerance...
    beyond = item.margin
    # ...but inside PyTorch's own rounding envelope: the margin shown is against what was allowed.
    item.envelope = Envelope(
        draws=4, float64=True, factor=2.0, margin=0.3, outside=0, ms_error=2e-6, spread=1e-6, tolerance_margin=beyond
    )
    item.margin = 0.3
    passing = result_of([item])
    assert passing.passed
    assert report.summary_line(NODE, passing) == (
        f"ok    {NODE}: worst margin 0.3x allowed (param grad 'fc.weight'); noise-judged: 1 tensor beyond the "
        f"tolerance but inside PyTorch's rounding envelope (e.g. 'fc.weight' at {report.fmt(beyond)}x the "
        "tolerance alone)"
    )
    message_line = report.envelope_line(item.envelope)
    assert message_line.startswith(
        "Rounding envelope: every element inside it (allowed: tolerance + 2x PyTorch's "
        "own spread over 4 perturbed runs and float64; 0.3x allowed at worst)"
    )


# -- a layer row whose output shapes differ ----------------------------------------------------


def test_a_layer_row_with_different_output_shapes_says_so():
    verdict = LayerVerdict(
        "forward",
        "pool",
        "pool",
        "MaxPool2d",
        "MaxPool2d",
        0,
        0.0,
        0.0,
        float("inf"),
        float("inf"),
        float("inf"),
        status="FAIL",
        in_shapes=((2, 3, 8, 8),),
        ms_in_shapes=((2, 3, 8, 8),),
        out_shapes=((2, 3, 4, 4),),
        ms_out_shapes=((2, 3, 7, 7),),
    )
    line = report.layer_lines([verdict], "forward")[1]
    assert line.endswith("MaxPool2d              shapes differ: (2, 3, 7, 7) vs (2, 3, 4, 4)   <- first divergence")
    assert "inf" not in line
