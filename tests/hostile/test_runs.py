"""Runs cut short: a test whose xdist worker crashes (``os._exit``, a segfault) or a run interrupted
(KeyboardInterrupt) is recorded in ``--parity-report`` as ``crashed`` / ``interrupted``, counted,
and fails ``parity report``. The xdist runs are real pytest subprocesses (pytester, ``-n 2``)."""

import pytest

from parity.cli import main as parity_main
from parity.nightly.records import CUT_SHORT, VERDICTS, read_records
from parity.plugin import REPORT

# Stand-in check records, so that these runs cost no framework import: each test whose name holds
# "check" hands one passing record to its call report, as the ``parity`` fixture does.
CONFTEST = """
import pytest

from parity.nightly.records import RECORD_KEY, check_record


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if report.when == "call" and "check" in item.name:
        record = check_record(nodeid=item.nodeid, case=item.nodeid, call="check", index=0, device="CPU", seed=1,
                              duration=0.0, error=RuntimeError("stand-in"))
        record.update(verdict="pass", error=None)
        report.user_properties.append((RECORD_KEY, record))
    return report
"""

CRASHES = """
import ctypes
import os


def test_check_one():
    pass


def test_check_two():
    pass


def test_check_exits():
    os._exit(3)  # the worker dies: the call report (and its record) never comes


def test_check_segfaults():
    ctypes.string_at(0)


def test_check_three():
    pass


def test_plain():
    pass
"""

STOPS = """
def test_check_before():
    pass


def test_stops():
    raise KeyboardInterrupt


def test_check_never_reached():
    pass
"""


def _report(pytester, *args):
    """``parity report run.jsonl --markdown out.md``: the exit status and what it printed."""
    pytester.chdir()
    code = parity_main(["report", str(pytester.path / "run.jsonl"), "--markdown", "out.md", *args])
    return code


def _verdicts(pytester):
    return {r["nodeid"].rpartition("::")[2]: r["verdict"] for r in read_records(pytester.path / "run.jsonl")[1]}


def test_cut_short_verdicts_are_known_verdicts():
    assert set(CUT_SHORT) <= set(VERDICTS)


def test_crashed_workers_under_xdist_are_recorded_counted_and_fail_the_report(pytester, capsys):
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_a=CRASHES)
    result = pytester.runpytest_subprocess("-n", "2", f"{REPORT}=run.jsonl", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            f"the run was cut short: 2 tests did not finish, recorded in {REPORT} as such: *"
            "test_a.py::test_check_* (crashed), test_a.py::test_check_* (crashed)"
        ]
    )
    assert _verdicts(pytester) == {
        "test_check_one": "pass",
        "test_check_two": "pass",
        "test_check_three": "pass",
        "test_check_exits": "crashed",
        "test_check_segfaults": "crashed",
    }
    records = read_records(pytester.path / "run.jsonl")[1]
    crashed = next(r for r in records if r["nodeid"].endswith("test_check_exits"))
    assert crashed["call"] == "test" and crashed["index"] == 0 and crashed["worker"] in ("gw0", "gw1")
    assert crashed["error"]["type"] == "WorkerCrashed"
    assert "crashed while running this test" in crashed["error"]["message"]
    capsys.readouterr()
    assert _report(pytester, "--html", "out.html") == 1
    out = capsys.readouterr().out
    assert "one run of 5 checks: 3 pass, 2 crashed" in out
    assert "note: the run was cut short: 2 crashed (" in out and "test_a.py::test_check_exits" in out
    markdown = (pytester.path / "out.md").read_text()
    assert "the run was cut short" in markdown and markdown.count("| crashed |") == 2
    assert 'data-verdict="crashed"' in (pytester.path / "out.html").read_text()


def test_a_keyboard_interrupt_in_an_xdist_worker_is_recorded_as_interrupted(pytester, capsys):
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_b=STOPS)
    # no replacement worker: it would only start to be shut down
    result = pytester.runpytest_subprocess(
        "-n", "2", "--max-worker-restart=0", f"{REPORT}=run.jsonl", "-p", "no:cacheprovider"
    )
    assert result.ret != pytest.ExitCode.OK
    verdicts = _verdicts(pytester)
    assert verdicts["test_stops"] == "interrupted" and "crashed" not in verdicts.values(), verdicts
    capsys.readouterr()
    assert _report(pytester) == 1
    out = capsys.readouterr().out
    assert "the run was cut short: 1 interrupted (test_b.py::test_stops)" in out
    assert "the tests after an interruption did not run" in out


def test_a_keyboard_interrupt_without_xdist_is_recorded_as_interrupted(pytester, capsys):
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_c=STOPS)
    result = pytester.runpytest(f"{REPORT}=run.jsonl", "-p", "no:cacheprovider", no_reraise_ctrlc=True)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    records = read_records(pytester.path / "run.jsonl")[1]
    assert [(r["nodeid"], r["verdict"]) for r in records] == [
        ("test_c.py::test_check_before", "pass"),
        ("test_c.py::test_stops", "interrupted"),
    ]
    assert "the tests after it did not run" in records[1]["error"]["message"]
    result.stdout.fnmatch_lines(["*the run was cut short: 1 test did not finish*test_c.py::test_stops (interrupted)"])
    assert _report(pytester) == 1


def test_a_run_stopped_between_tests_is_still_marked_as_interrupted(pytester):
    pytester.makeconftest(
        CONFTEST
        + """

def pytest_runtest_logfinish(nodeid):
    if nodeid.endswith("test_check_before"):
        raise KeyboardInterrupt
"""
    )
    pytester.makepyfile(test_d=STOPS)
    result = pytester.runpytest(f"{REPORT}=run.jsonl", "-p", "no:cacheprovider", no_reraise_ctrlc=True)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert _verdicts(pytester) == {"test_check_before": "pass", "(run)": "interrupted"}


def test_a_complete_run_is_not_cut_short(pytester, capsys):
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_e="def test_check_fine():\n    pass\n")
    assert pytester.runpytest(f"{REPORT}=run.jsonl", "-p", "no:cacheprovider").ret == pytest.ExitCode.OK
    capsys.readouterr()
    assert _report(pytester) == 0
    assert "cut short" not in capsys.readouterr().out
