"""--parity-report (JSON-lines records, also under xdist) and what parity adds to pytest's JUnit XML.
Real pairs, run with pytester as in tests/test_plugin.py. The record loader and the environment
record, which need no framework: tests/nightly/."""

import json
import textwrap
import xml.etree.ElementTree as ET

import pytest

from parity import options as opts
from parity.nightly.records import RECORD_KEY, SCHEMA, VERDICTS, read_records
from parity.plugin import REPORT
from parity.plugin.junit import PROPERTIES

PARITY = opts.PARITY

pytestmark = pytest.mark.usefixtures("collect_inner_cells")  # tests/conftest.py

# The inner tests write what their checks returned (or raised), read straight from the results,
# for the outer test to compare with the records.
INNER = """
import json
from pathlib import Path

import pytest

import parity as parity_package


def dump(name, result):
    figures = [{"kind": c.kind, "name": c.name, "max_abs": c.max_abs, "max_rel": c.max_rel, "margin": c.margin,
                "cosine": c.cosine, "passed": c.passed} for c in result.comparisons]
    Path(f"{name}.json").write_text(json.dumps({"worst_margin": result.worst_margin, "tensors": figures}))


def test_pass(parity):
    import mindspore, torch

    dump("pass0", parity.check(mindspore.nn.Dense(4, 3), torch.nn.Linear(4, 3), parity.randn((2, 4))))
    dump("pass1", parity.check(mindspore.nn.Dense(4, 3), torch.nn.Linear(4, 3), parity.randn((2, 4)), seed=7))


def test_fail(parity):
    import mindspore, torch

    torch.manual_seed(0)  # the weights (copied to MindSpore); any seed diverges forward at '1' by ~20x
    ms = mindspore.nn.SequentialCell(mindspore.nn.Dense(8, 8), mindspore.nn.GELU(approximate=False))
    pt = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.GELU(approximate="tanh"))
    try:
        parity.check(ms, pt, parity.randn((4, 8)))
    except parity_package.ParityMismatch as exc:
        dump("fail", exc.result)
        raise


def test_swapped(parity):
    import mindspore, torch

    parity.check(torch.nn.Linear(4, 3), mindspore.nn.Dense(4, 3), parity.randn((2, 4)))


@pytest.mark.xfail(reason="PyTorch uses the tanh approximation", strict=True)
def test_expected(parity):
    import mindspore, torch

    parity.check(mindspore.nn.GELU(approximate=False), torch.nn.GELU(approximate="tanh"), parity.randn((2, 4)))


def test_plain():
    pass
"""


@pytest.fixture(scope="module", autouse=True)
def warm_frameworks():
    """Run, in this process, what the in-process runs run: pytester drops modules first imported
    during a run, and lazily imported framework internals must survive that."""
    import mindspore
    import torch

    import parity
    import parity.nightly.records  # noqa: F401
    import parity.plugin.items  # noqa: F401

    parity.check(mindspore.nn.Dense(4, 3), torch.nn.Linear(4, 3), parity.randn((2, 4)))
    model = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.Linear(6, 3))
    parity.check_training(
        parity.translate(model),
        model,
        [(parity.randn((4, 4)), parity.randint((4,), 0, 3))],
        loss=torch.nn.CrossEntropyLoss(),
        steps=1,
        optimizer=(lambda p: mindspore.nn.SGD(p, learning_rate=0.1), lambda p: torch.optim.SGD(p, lr=0.1)),
    )
    with pytest.raises(parity.ParityMismatch):
        parity.check(
            mindspore.nn.SequentialCell(mindspore.nn.Dense(8, 8), mindspore.nn.GELU(approximate=False)),
            torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.GELU(approximate="tanh")),
            parity.randn((4, 8)),
        )


def by_key(records):
    return {(r["nodeid"], r["index"]): r for r in records}


def test_a_report_holds_the_environment_and_one_record_per_check(pytester):
    pytester.makepyfile(test_inner=INNER)
    result = pytester.runpytest(PARITY, f"{REPORT}=run.jsonl", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, failed=2, xfailed=1)
    lines = pytester.path.joinpath("run.jsonl").read_text().splitlines()
    assert all(json.loads(line)["schema"] == SCHEMA for line in lines)
    environment, records = read_records(pytester.path / "run.jsonl")

    versions = environment["versions"]
    assert environment["type"] == "environment" and len(lines) == 1 + len(records)
    assert versions["mindspore"] and versions["torch"].startswith("2.") and versions["numpy"] and versions["python"]
    assert versions["parity"] and environment["device"] == "CPU" and environment["host"]["cpu_model"]
    assert isinstance(environment["host"]["cpu_flags"], list)
    assert environment["run"] == {"seed": None, "mode": None, "device": "CPU", "xdist_workers": None}

    found = by_key(records)
    assert (
        sorted(found)
        == sorted((r["nodeid"], r["index"]) for r in records)
        == [
            ("test_inner.py::test_expected", 0),
            ("test_inner.py::test_fail", 0),
            ("test_inner.py::test_pass", 0),
            ("test_inner.py::test_pass", 1),
            ("test_inner.py::test_swapped", 0),
        ]
    )
    assert {r["verdict"] for r in records} <= set(VERDICTS)
    assert [found[("test_inner.py::test_pass", i)]["seed"] for i in (0, 1)] == [1234, 7]
    assert found[("test_inner.py::test_expected", 0)]["verdict"] == "xfail"
    swapped = found[("test_inner.py::test_swapped", 0)]
    assert swapped["verdict"] == "error" and swapped["tensors"] == [] and swapped["pair"] is None
    assert swapped["error"]["type"] == "ParityUsageError" and "swapped" in swapped["error"]["message"]


def test_records_carry_the_numbers_of_the_checks(pytester):
    pytester.makepyfile(test_inner=INNER)
    pytester.runpytest(PARITY, f"{REPORT}=run.jsonl", "-p", "no:cacheprovider", "-k", "test_pass or test_fail")
    _, records = read_records(pytester.path / "run.jsonl")
    found = by_key(records)
    for name, key in (("pass0", ("test_inner.py::test_pass", 0)), ("fail", ("test_inner.py::test_fail", 0))):
        record, measured = found[key], json.loads(pytester.path.joinpath(f"{name}.json").read_text())
        assert record["worst_margin"] == pytest.approx(measured["worst_margin"], rel=1e-12)
        figures = [
            {k: t[k] for k in ("kind", "name", "max_abs", "max_rel", "margin", "cosine", "passed")}
            for t in record["tensors"]
        ]
        assert figures == measured["tensors"]

    passed = found[("test_inner.py::test_pass", 0)]
    assert passed["verdict"] == "pass" and passed["pair"] == {"mindspore": "Dense", "torch": "Linear"}
    assert (
        passed["call"] == "check" and passed["case"] == "test_inner.py::test_pass" and passed["modes"] == ["pynative"]
    )
    assert [(t["kind"], t["name"]) for t in passed["tensors"]] == [
        ("output", "output"),
        ("input grad", "input[0]"),
        ("param grad", "bias"),
        ("param grad", "weight"),
    ]
    output = passed["tensors"][0]
    assert output["ms_shape"] == output["torch_shape"] == [2, 3] and output["ms_dtype"] == "float32"
    assert output["tolerance"] == {"rtol": 1.3e-6, "atol": 1e-5} and output["tolerance_source"] == "float32 default"
    assert passed["likely_causes"] == [] and passed["error"] is None and passed["duration"] > 0
    assert passed["first_divergence"] is None and passed["layers"] is None  # no capture in a pass (localize="auto")

    failed = found[("test_inner.py::test_fail", 0)]
    assert failed["verdict"] == "fail" and failed["worst_margin"] > 1
    assert failed["first_divergence"]["forward"]["layer"] == "1"
    assert failed["first_divergence"]["forward"]["ms_type"] == "GELU"
    forward = {layer["layer"]: layer for layer in failed["layers"]["forward"]}  # the whole per-layer table
    assert [forward[p]["status"] for p in ("0", "1")] == ["ok", "FAIL"]
    assert forward["0"]["out_margin"] <= 1 < forward["1"]["out_margin"] and forward["1"]["in_margin"] <= 1
    assert forward["1"]["out_margin"] == failed["first_divergence"]["forward"]["out_margin"]
    # Each layer's own error (fed PyTorch's inputs): the GELU owns its error, nothing flowed in.
    assert forward["1"]["own_status"] == "own" and forward["1"]["own_margin"] > 1 and forward["0"]["own_status"] == "ok"
    assert failed["first_divergence"]["forward"]["own_status"] == "own"
    assert [(e["layer"], e["direction"]) for e in failed["own_errors"]][0] == ("1", "forward")
    assert any("gelu-approximate-default" in cause for cause in failed["own_errors"][0]["causes"])
    assert failed["first_nonfinite"] is None and passed["own_errors"] is None and passed["first_nonfinite"] is None
    assert any("gelu-approximate-default" in cause for cause in failed["likely_causes"])
    worst = max(failed["tensors"], key=lambda t: t["margin"])
    assert not worst["passed"] and worst["max_abs"] > 0 and worst["envelope"]["outside"] > 0
    assert failed["reproduce"] == f"pytest test_inner.py::test_fail {PARITY} --parity-seed=1234"
    assert "Likely cause: " in failed["error"]["message"]


def test_junit_has_the_whole_message_and_scalar_properties(pytester):
    pytester.makepyfile(test_inner=INNER)
    result = pytester.runpytest(
        PARITY, "--junitxml=junit.xml", "-p", "no:cacheprovider", "-k", "test_pass or test_fail"
    )
    result.assert_outcomes(passed=1, failed=1)
    cases = {case.get("name"): case for case in ET.parse(pytester.path / "junit.xml").iter("testcase")}

    message = cases["test_fail"].find("failure").get("message")
    assert message.startswith("parity.errors.ParityMismatch: MindSpore and PyTorch outputs are not close!")
    assert "\nLikely cause: known mismatch 'gelu-approximate-default'" in message
    assert message.rstrip().endswith(f"Reproduce: pytest test_inner.py::test_fail {PARITY} --parity-seed=1234")
    assert "more lines" not in message

    def properties(name):
        return [(p.get("name"), p.get("value")) for p in cases[name].iter("property")]

    failed = dict(properties("test_fail"))
    assert set(failed) == set(PROPERTIES) - {"parity_repro"}  # no --parity-repro here
    assert failed["parity_seed"] == "1234" and failed["parity_mode"] == "pynative" and failed["parity_device"] == "CPU"
    assert float(failed["parity_worst_margin"]) > 1
    assert failed["parity_first_divergent_layer"] == "forward: '1' (GELU <-> GELU)"
    assert failed["parity_likely_cause"].startswith("known mismatch 'gelu-approximate-default'")
    worst = max(json.loads(pytester.path.joinpath(f"pass{i}.json").read_text())["worst_margin"] for i in (0, 1))
    assert dict(properties("test_pass")) == {
        "parity_seed": "1234,7",
        "parity_mode": "pynative",
        "parity_device": "CPU",
        "parity_worst_margin": f"{worst:.6g}",
    }
    every = [name for case in cases for name, _ in properties(case)]
    assert set(every) <= set(PROPERTIES) and RECORD_KEY not in every


def test_a_catalogue_item_is_one_record_with_its_case(pytester):
    pytester.makefile(".toml", pyproject='[tool.pytest.ini_options]\nparity_cases = ["catalogue"]\n')
    pytester.mkdir("catalogue")
    pytester.path.joinpath("catalogue", "tiny.py").write_text(
        textwrap.dedent("""
        from parity import ParityCase, randn


        def ms_dense():
            import mindspore

            return mindspore.nn.Dense(4, 3)


        def torch_linear():
            import torch

            return torch.nn.Linear(4, 3)


        Tiny = ParityCase("Tiny", mindspore=ms_dense, torch=torch_linear, inputs=randn((2, 4)))
    """)
    )
    pytester.runpytest(PARITY, f"{REPORT}=run.jsonl", "-p", "no:cacheprovider").assert_outcomes(passed=1)
    _, records = read_records(pytester.path / "run.jsonl")
    assert [(r["nodeid"], r["case"], r["call"], r["verdict"]) for r in records] == [
        ("catalogue/tiny.py::Tiny[eval]", "Tiny", "case", "pass")
    ]


TRAINING = """
import json
from pathlib import Path

import parity as parity_package


def test_training(parity):
    import mindspore, torch

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.Linear(6, 3))
    try:
        parity.check_training(parity_package.translate(model), model,
                              [(parity.randn((4, 4)), parity.randint((4,), 0, 3))],
                              loss=torch.nn.CrossEntropyLoss(), steps=2,
                              optimizer=(lambda p: mindspore.nn.SGD(p, learning_rate=0.11),
                                         lambda p: torch.optim.SGD(p, lr=0.1)))
    except parity_package.ParityMismatch as exc:
        result = exc.result
        step, first = result.first_failure
        Path("training.json").write_text(json.dumps({
            "losses": [[s.ms_loss, s.torch_loss] for s in result.steps], "first": [step, first.kind, first.name],
            "tensors": [[s.step, c.kind, c.name, c.margin] for s in result.steps for c in s.comparisons]}))
        raise
"""


def test_a_training_check_records_its_steps(pytester):
    pytester.makepyfile(test_inner=TRAINING)
    pytester.runpytest(PARITY, f"{REPORT}=run.jsonl", "-p", "no:cacheprovider").assert_outcomes(failed=1)
    _, (record,) = read_records(pytester.path / "run.jsonl")
    measured = json.loads(pytester.path.joinpath("training.json").read_text())
    assert record["call"] == "check_training" and record["verdict"] == "fail" and record["train"] is True
    training = record["training"]
    assert [[s["ms_loss"], s["torch_loss"]] for s in training["losses"]] == measured["losses"]
    assert [training["first_failure"][k] for k in ("step", "kind", "name")] == measured["first"]
    assert [[t["step"], t["kind"], t["name"], t["margin"]] for t in record["tensors"]] == measured["tensors"]
    assert training["optimizer"] and training["loss"] and record["first_divergence"] is None


XDIST_TESTS = """
def test_one(parity):
    import mindspore, torch

    parity.check(mindspore.nn.Dense(4, 3), torch.nn.Linear(4, 3), parity.randn((2, 4)))


def test_two(parity):
    import mindspore, torch

    for seed in (1, 2):
        parity.check(mindspore.nn.Dense(4, 3), torch.nn.Linear(4, 3), parity.randn((2, 4)), seed=seed)


def test_fail(parity):
    import mindspore, torch

    parity.check(mindspore.nn.GELU(approximate=False), torch.nn.GELU(approximate="tanh"), parity.randn((2, 4)))


def test_plain():
    pass
"""


def test_under_xdist_the_controller_writes_every_record_once(pytester):
    pytester.makepyfile(test_a=XDIST_TESTS, test_b=XDIST_TESTS)
    result = pytester.runpytest_subprocess(
        PARITY, "-n", "2", f"{REPORT}=run.jsonl", "--junitxml=junit.xml", "-p", "no:cacheprovider"
    )
    result.assert_outcomes(passed=6, failed=2)
    environment, records = read_records(pytester.path / "run.jsonl")
    keys = [(r["nodeid"], r["index"]) for r in records]
    expected = {
        (f"test_{f}.py::test_{t}", i) for f in "ab" for t, n in (("one", 1), ("two", 2), ("fail", 1)) for i in range(n)
    }
    assert len(keys) == len(expected) == 8 and set(keys) == expected
    assert environment["run"]["xdist_workers"] == 2
    assert {r["worker"] for r in records} <= {"gw0", "gw1"}
    assert sorted(r["verdict"] for r in records).count("fail") == 2
    messages = [f.get("message") for f in ET.parse(pytester.path / "junit.xml").iter("failure")]
    assert len(messages) == 2 and all("\nLikely cause: " in m for m in messages)
