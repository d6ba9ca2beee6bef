"""How a Result reads: its one-line ``str`` and, with ``--parity-mode=both``, the mode each failing
tensor failed in. Results are built from real arrays, as the runner builds them (no framework)."""

import numpy as np
import pytest

from parity.engine.diagnosis import messages as report
from parity.engine.result import Result
from parity.judge.metrics import Comparison, compare_arrays
from parity.judge.tolerance import resolve
from parity.weights.transfer import Pair, WeightMap, WeightReport

REF = np.linspace(-1, 1, 8, dtype=np.float32).reshape(2, 4)


def compared(kind, name, mode, shift=0.0, *, ms_shape=None):
    """A Comparison of REF against REF + shift in ``mode`` (a different shape: a shape problem)."""
    tol, source = resolve((), (name,), "float32")
    ms = REF + np.float32(shift)
    item = Comparison(kind, name, name, name, mode, ms_shape or ms.shape, REF.shape, "float32", "float32", tol, source)
    if ms_shape is not None:
        item.problem, item.margin = "shape", float("inf")
        return item
    for key, value in compare_arrays(ms, REF, tol).items():
        setattr(item, key, value)
    return item


def result_of(comparisons, modes=("pynative", "graph"), problem=""):
    wmap = WeightMap([Pair("fc.weight", "fc.weight", "same name", (2, 4), (2, 4), True)])
    return Result(
        "Dense",
        "Linear",
        comparisons,
        WeightReport(wmap, "PyTorch -> MindSpore", 1),
        "seed 1234 -> input[0]: float32[2, 4] ~ N(0, 1)",
        1234,
        modes,
        False,
        reproduce="parity.check(..., seed=1234)",
        problem=problem,
    )


def both_modes(graph_only=(), both=()):
    """Output, input grad and param grad in both modes; ``graph_only`` names fail in GRAPH mode
    only, ``both`` in both modes."""
    found = []
    for mode in ("pynative", "graph"):
        for kind, name in (("output", "output"), ("input grad", "input[0]"), ("param grad", "fc.weight")):
            bad = name in both or (mode == "graph" and name in graph_only)
            found.append(compared(kind, name, mode, 0.01 if bad else 0.0))
    return found


def test_a_tensor_failing_in_graph_mode_only_names_graph():
    message = report.failure_message(result_of(both_modes(graph_only=("output",))))
    assert "Divergence: first at forward output 'output' (graph)" in message.splitlines()
    assert "In graph mode:" not in message  # figures are labelled only when they could be either mode's
    assert "  FAIL  outputs      1/2 within tolerance; worst 'output' (graph) at 982x allowed" in message


def test_a_tensor_failing_in_both_modes_says_both_and_others_are_listed_once_each():
    result = result_of(both_modes(graph_only=("fc.weight",), both=("input[0]", "output")))
    lines = report.failure_message(result).splitlines()
    assert "Divergence: first at forward output 'output' (pynative and graph)" in lines
    assert lines[lines.index("In pynative mode:") + 1].startswith("Mismatched elements: 8 / 8")
    also = next(line for line in lines if line.startswith("Also failing: "))
    assert also == (
        "Also failing: input grad 'input[0]' (pynative and graph, 982x), param grad 'fc.weight' (graph, 982x)"
    )


def test_a_gradient_failing_names_its_mode_on_the_compared_line():
    lines = report.failure_message(result_of(both_modes(graph_only=("fc.weight",)))).splitlines()
    assert "Compared:   gradient of parameter 'fc.weight' (graph)" in lines


def test_one_mode_keeps_the_plain_wording():
    result = result_of([compared("output", "output", "graph", 0.01)], modes=("graph",))
    message = report.failure_message(result)
    assert "Divergence: first at forward output 'output', graph mode" in message.splitlines()
    assert "(graph)" not in message


def test_str_of_a_passing_result():
    result = result_of(
        [compared("output", "output", "pynative"), compared("param grad", "fc.weight", "pynative")], modes=("pynative",)
    )
    assert str(result) == (
        "ok: mindspore Dense <-> torch Linear (eval, pynative); 2 of 2 tensors within tolerance; "
        "worst output 'output' at 0x allowed"
    )


def test_str_of_a_failing_result_names_the_worst_tensor_its_mode_and_the_divergence():
    result = result_of(both_modes(graph_only=("fc.weight",), both=("output",)))
    assert str(result) == (
        "FAIL: mindspore Dense <-> torch Linear (eval, pynative and graph); 3 of 6 tensors within "
        "tolerance; worst output 'output' (pynative) at 982x allowed; divergence first at "
        "forward output 'output' (pynative and graph)"
    )


def test_str_of_shape_and_structure_failures():
    shaped = result_of([compared("output", "output", "pynative", ms_shape=(2, 5))], modes=("pynative",))
    assert str(shaped).endswith(
        "; 0 of 1 tensors within tolerance; worst output 'output' shape differs; "
        "divergence first at forward output 'output'"
    )
    problem = "Output structures differ: MindSpore returns 2 tensors ['output[0]', 'output[1]'], PyTorch returns 1"
    structure = result_of([], modes=("pynative",), problem=problem + "\nIn MindSpore only: ['output[1]']")
    assert str(structure) == f"FAIL: mindspore Dense <-> torch Linear (eval, pynative); {problem}"


@pytest.mark.parametrize("modes", [("pynative",), ("pynative", "graph")])
def test_repr_keeps_the_full_record(modes):
    result = result_of(both_modes() if len(modes) > 1 else [compared("output", "output", "pynative")], modes=modes)
    assert repr(result).startswith("Result(ms_type='Dense', torch_type='Linear', comparisons=[Comparison(")
    assert "\n" not in str(result) and len(str(result)) < 300
