"""The ``parity`` fixture's ``check_data_parallel``: bound to the session's seed, reported in the run
summary, written to ``--parity-report`` with its ``data_parallel`` section and to JUnit properties.
One test launches real workers (about 35 s on a loaded 2-core machine); the rest judge results
built here, as parity.engine.data_parallel.run builds them, without a worker."""

import json
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from parity import options as opts
from parity.engine.data_parallel import launch
from parity.engine.data_parallel.result import PAIRS, DataParallelResult, DataParallelStep, failure_message
from parity.engine.diagnosis import messages as report
from parity.judge.envelope import Envelope
from parity.judge.metrics import ArrayPair, compare_pair
from parity.judge.tolerance import ToleranceSpec
from parity.nightly.records import check_record, read_records
from parity.plugin import REPORT

PARITY, SEED, MODE = opts.PARITY, opts.SEED.flag, opts.MODE.flag
MISSING = launch.missing_launchers()

pytestmark = pytest.mark.usefixtures("collect_inner_cells")  # tests/conftest.py

DP_TESTS = """
import json
from pathlib import Path

import torch


def mlp():
    return torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3))


def test_dp(parity):
    result = parity.check_data_parallel(parity.TRANSLATE, mlp, [(parity.randn((8, 6)), parity.randint((8,), 0, 3))],
                                        loss=torch.nn.CrossEntropyLoss(),
                                        optimizer=lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9))
    assert parity.results == [result]
    worst = result.worst
    Path("measured.json").write_text(json.dumps({
        "seed": result.seed, "worst": [worst.kind, worst.name, worst.mode, worst.margin],
        "losses": [[s.step, s.losses] for s in result.steps], "tensors": len(result.comparisons)}))
"""


@pytest.mark.skipif(bool(MISSING), reason="; ".join(MISSING))
def test_fixture_check_data_parallel_is_bound_reported_and_recorded(pytester):
    pytester.makepyfile(test_dp=DP_TESTS)
    result = pytester.runpytest(
        PARITY, f"{SEED}=7", f"{REPORT}=run.jsonl", "--junitxml=junit.xml", "-p", "no:cacheprovider"
    )
    result.assert_outcomes(passed=1)
    measured = json.loads(pytester.path.joinpath("measured.json").read_text())
    kind, name, pair, margin = measured["worst"]
    assert measured["seed"] == 7 and pair in {" vs ".join(p) for p in PAIRS}
    result.stdout.fnmatch_lines(
        [
            "*= parity summary =*",
            f"ok    test_dp.py::test_dp: worst margin {report.fmt(margin)}x allowed ({kind} '{name}', {pair})",
        ]
    )

    _, (record,) = read_records(pytester.path / "run.jsonl")
    assert (record["call"], record["verdict"], record["seed"], record["modes"]) == (
        "check_data_parallel",
        "pass",
        7,
        ["pynative"],
    )
    assert record["pair"] == {"mindspore": "SequentialCell", "torch": "Sequential"}
    assert record["training"] is None and record["worst_margin"] == margin
    assert len(record["tensors"]) == measured["tensors"] and {t["mode"] for t in record["tensors"]} == {
        " vs ".join(p) for p in PAIRS
    }
    dp = record["data_parallel"]
    assert dp["workers"] == 2 and dp["pairs"] == [" vs ".join(p) for p in PAIRS]
    assert dp["failing_pairs"] == [] and dp["disagreeing"] is None and dp["first_failure"] is None
    assert [
        [s["step"], {run: s[run.lower().replace(" ", "_").replace("pytorch", "torch")] for run in losses}]
        for s, (_, losses) in zip(dp["losses"], measured["losses"])
    ] == measured["losses"]
    assert {"MindSpore workers", "PyTorch workers", "total"} <= set(dp["seconds"])
    assert record["reproduce"] == f"pytest test_dp.py::test_dp {PARITY} {SEED}=7"

    case = next(ET.parse(pytester.path / "junit.xml").iter("testcase"))
    properties = {p.get("name"): p.get("value") for p in case.iter("property")}
    assert properties == {
        "parity_seed": "7",
        "parity_mode": "pynative",
        "parity_device": "CPU",
        "parity_worst_margin": f"{margin:.6g}",
    }


def test_fixture_check_data_parallel_refuses_a_graph_mode_session(pytester):
    pytester.makepyfile(
        test_dp="""
import torch


def test_dp(parity):
    parity.check_data_parallel(parity.TRANSLATE, "torch.nn:Identity", [(parity.randn((8, 6)), parity.randn((8, 6)))],
                               loss=torch.nn.MSELoss(), optimizer=lambda p: torch.optim.SGD(p, lr=0.1))
"""
    )
    result = pytester.runpytest(PARITY, f"{MODE}=graph", f"{REPORT}=run.jsonl", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*ParityUnsupported: check_data_parallel() trains in PyNative mode only; the "
            f"session's {MODE}=graph asks for graph mode"
        ]
    )
    _, (record,) = read_records(pytester.path / "run.jsonl")
    assert (record["call"], record["verdict"], record["data_parallel"]) == ("check_data_parallel", "unsupported", None)


# -- a result built here: PyTorch parallel off at step 1 -------------------------------------------


def _compared(label: str, run: np.ndarray, reference: np.ndarray, kind: str = "param grad", name: str = "0.weight"):
    pair = ArrayPair(kind, name, name, name, label, run, reference, "0")
    return compare_pair(pair, (ToleranceSpec.parse(None, source="test"),), check_dtype=True)


def _torch_parallel_off() -> DataParallelResult:
    reference = np.linspace(0.5, 1.5, 8, dtype=np.float32).reshape(2, 4)
    off = reference.copy()
    off[1, 2] += 1e-3
    pairs = {}
    for run, ref in PAIRS:
        label = f"{run} vs {ref}"
        c = _compared(label, off if "PyTorch parallel" in (run, ref) else reference, reference)
        if not c.passed:
            c.envelope = Envelope(
                draws=4,
                float64=True,
                factor=2.0,
                margin=40.0,
                outside=1,
                ms_error=3e-4,
                spread=1e-7,
                tolerance_margin=c.margin,
                total=c.total,
            )
            c.margin = c.envelope.margin
        pairs[label] = [c]
    losses = {"MindSpore single": 1.25, "MindSpore parallel": 1.25, "PyTorch single": 1.25, "PyTorch parallel": 1.5}
    return DataParallelResult(
        "SequentialCell",
        "Sequential",
        2,
        [DataParallelStep(1, losses, pairs)],
        "SGD",
        "MSELoss",
        "seed 7 -> ...",
        7,
        reproduce="pytest test_dp.py::test_dp --parity --parity-seed=7",
    )


def test_a_data_parallel_failure_names_the_pairs_runs_in_the_envelope_line():
    result = _torch_parallel_off()
    message = failure_message(result)
    assert (
        "Divergence: first at step 1 of 1, PyTorch parallel vs PyTorch single, applied gradient of '0.weight'"
        in message
    )
    assert "relative error of PyTorch parallel to PyTorch single 0.0003 vs PyTorch's spread 1e-07" in message
    assert "relative error MindSpore" not in message
    # check and check_training keep theirs
    assert report.envelope_line(result.first_failure[2].envelope).endswith(
        "relative error MindSpore 0.0003 vs PyTorch's spread 1e-07"
    )


def test_a_failed_data_parallel_check_names_the_disagreeing_run_in_summary_and_record():
    result = _torch_parallel_off()
    assert report.summary_line("test_dp.py::test_dp", result) == (
        "FAIL  test_dp.py::test_dp: worst margin 40x allowed (param grad '0.weight', PyTorch parallel vs PyTorch "
        "single); PyTorch parallel disagrees with the other three runs"
    )
    result.shard_findings = ["PyTorch worker 1 trained on the full batch (8 rows) at step 1, not its shard"]
    assert report.summary_line("test_dp.py::test_dp", result).endswith(
        "; PyTorch worker 1 trained on the full batch (8 rows) at step 1, not its shard"
    )

    record = check_record(
        nodeid="test_dp.py::test_dp",
        case="test_dp.py::test_dp",
        call="check_data_parallel",
        index=0,
        device="CPU",
        seed=7,
        duration=1.0,
        result=result,
    )
    assert record["verdict"] == "fail" and record["worst_margin"] == 40.0 and record["weights"] is None
    dp = record["data_parallel"]
    assert dp["failing_pairs"] == ["PyTorch parallel vs PyTorch single", "MindSpore parallel vs PyTorch parallel"]
    assert dp["disagreeing"] == "PyTorch parallel disagrees with the other three runs"
    assert dp["first_failure"] == {
        "step": 1,
        "pair": "PyTorch parallel vs PyTorch single",
        "kind": "param grad",
        "name": "0.weight",
    }
    assert dp["losses"] == [
        {"step": 1, "mindspore_single": 1.25, "mindspore_parallel": 1.25, "torch_single": 1.25, "torch_parallel": 1.5}
    ]
    assert dp["shard_findings"] == result.shard_findings
    assert [t["mode"] for t in record["tensors"]] == [" vs ".join(p) for p in PAIRS]
    assert [t["envelope"] is not None for t in record["tensors"]] == [False, False, True, True]
