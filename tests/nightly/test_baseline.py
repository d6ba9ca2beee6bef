"""--parity-save-baseline and --parity-baseline without a check to run: the options in --help, their
usage errors, and the comparison's rules (drift over the floor, new failures) on records written
here. Runs of real pairs: tests/test_baseline.py."""

import pytest

from parity import options as opts
from parity.nightly.baseline import BASELINE, DRIFT, DRIFT_FAILS, SAVE_BASELINE
from parity.nightly.runs import BASELINE_FILE

PARITY = opts.PARITY


@pytest.mark.parametrize(
    "args, message",
    [
        ([f"{BASELINE}=base"], f"ERROR: {BASELINE} need {PARITY}: without it parity tests are skipped*"),
        ([PARITY, f"{BASELINE}=nowhere"], f"ERROR: {BASELINE}: *nowhere does not exist*"),
        ([PARITY, f"{BASELINE}=."], f"ERROR: {BASELINE}: * holds no {BASELINE_FILE}, nor folders holding one*"),
        (
            [PARITY, f"{SAVE_BASELINE}=x", f"{DRIFT}=1"],
            f"ERROR: {DRIFT}: the drift factor must be a finite number greater than 1, got '1'",
        ),
        ([PARITY, f"{SAVE_BASELINE}=x", f"{DRIFT}=four"], f"ERROR: {DRIFT}: expected a number greater than 1*"),
        (
            [PARITY, f"{SAVE_BASELINE}=test_nothing.py"],
            f"ERROR: {SAVE_BASELINE}: *test_nothing.py is a file; give a folder*",
        ),
    ],
)
def test_bad_options_are_usage_errors(pytester, args, message):
    pytester.makepyfile(test_nothing="def test_nothing():\n    pass\n")
    result = pytester.runpytest("-p", "no:cacheprovider", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])


def test_help_shows_the_baseline_options(pytester):
    result = pytester.runpytest("--help")
    result.stdout.fnmatch_lines(
        [f"*{BASELINE}=DIR*", f"*{SAVE_BASELINE}=DIR*", f"*{DRIFT}=FACTOR*", f"*{DRIFT_FAILS}={{yes,no}}*"],
        consecutive=False,
    )


# -- the comparison's rules, on records written here (tests/test_baseline.py measures real ones) -


def record(nodeid, verdict, *tensors, error=None):
    return {
        "nodeid": nodeid,
        "index": 0,
        "verdict": verdict,
        "worst_margin": max((t["margin"] for t in tensors), default=None),
        "tensors": list(tensors),
        "error": error,
    }


def tensor(margin, passed=None, name="output", tolerance=(1.3e-6, 1e-5)):
    return {
        "kind": "output",
        "name": name,
        "mode": "pynative",
        "margin": margin,
        "passed": margin <= 1 if passed is None else passed,
        "tolerance": {"rtol": tolerance[0], "atol": tolerance[1]},
    }


def compared(before, after, **kwargs):
    from parity.nightly import drift
    from parity.nightly.runs import Run

    return drift.compare(
        Run({"created": "2026-01-01T00:00:00+00:00"}, before, ("base",)),
        after,
        {"created": "2026-01-02T00:00:00+00:00"},
        **kwargs,
    )


def test_drift_is_growth_over_the_floor_and_a_tolerance_change_is_said():
    tiny = compared([record("t::a", "pass", tensor(1e-9))], [record("t::a", "pass", tensor(1e-8))])
    assert tiny.changes == []  # ten times larger, and far inside the tolerance: not drift
    floored = compared([record("t::a", "pass", tensor(1e-9))], [record("t::a", "pass", tensor(4.1e-3))])
    assert [c.kind for c in floored.changes] == ["drift"] and floored.changes[0].tensors[0].ratio == pytest.approx(4.1)
    at_factor = compared([record("t::a", "pass", tensor(0.01))], [record("t::a", "pass", tensor(0.04))])
    assert at_factor.changes == []  # "more than" the factor
    loosened = compared(
        [record("t::a", "pass", tensor(0.01))], [record("t::a", "pass", tensor(0.5, tolerance=(1e-3, 1e-3)))], factor=10
    )
    assert loosened.changes[0].line() == (
        "DRIFT t::a: output 'output' [pynative] margin 0.5, 50x the baseline's 0.01; "
        "tolerance changed (rtol 1.3e-06 atol 1e-05 -> rtol 0.001 atol 0.001)"
    )


def test_new_failures_count_errors_and_newly_failing_tensors_of_a_check_that_failed_before():
    error = {"type": "ParityUsageError", "message": "..."}
    found = compared(
        [
            record("t::a", "pass", tensor(0.1)),
            record("t::b", "fail", tensor(2.0), tensor(0.5, name="x")),
            record("t::c", "fail", tensor(3.0)),
            record("t::d", "xfail", tensor(3.0)),
        ],
        [
            record("t::a", "error", error=error),
            record("t::b", "fail", tensor(2.0), tensor(1.5, name="x")),
            record("t::c", "fail", tensor(9.0)),
            record("t::d", "pass", tensor(0.2)),
        ],
    )
    assert [(c.kind, c.label) for c in found.changes] == [("new failure", "t::a"), ("new failure", "t::b")]
    assert found.changes[0].line() == "NEW FAILURE t::a: ParityUsageError (baseline: pass)"
    assert found.changes[1].line() == "NEW FAILURE t::b: output 'x' [pynative] margin 1.5 (baseline 0.5, fail)"
    assert found.regressions(drift_fails=False) == ["2 new failures"]
