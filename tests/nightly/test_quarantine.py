"""The quarantine file: quarantined tests run and report but do not fail the run, the summary
lists their failures with reason and issue, a quarantined test that passes is stale, an expired
entry no longer quarantines, ``--parity-rerun-quarantined`` runs only the quarantined tests, and
a bad file is a usage error that names the file and the entry."""

import datetime
import re
import textwrap
from pathlib import Path

import pytest

from parity.nightly import quarantine
from parity.plugin.fleet import QUARANTINE, QUARANTINE_INI, RERUN_QUARANTINED, SHARD

TESTS = """
import pytest


def test_broken():
    assert 1 == 2


def test_fixed():
    pass


def test_other():
    assert False, "not quarantined"


def test_old():
    assert False, "its quarantine expired"


def test_fine():
    pass


@pytest.mark.parametrize("n", [1, 2, 3])
def test_param(n):
    assert n == 2
"""

ACTIVE, EXPIRED = "2999-12-31", "2000-01-01"


def entry(case, until=ACTIVE, reason="flaky on the nightly build", issue="https://example.org/issues/7", **more):
    lines = ["[[quarantine]]", f"case = {case!r}", f"reason = {reason!r}", f"issue = {issue!r}", f"until = {until}"]
    return "\n".join(lines + [f"{key} = {value!r}" for key, value in more.items()]) + "\n"


QUARANTINE_FILE = "\n".join(
    [
        entry("test_q.py::test_broken"),
        entry("test_q.py::test_fixed", reason="fixed upstream?", issue="#12"),
        entry("test_q.py::test_old", until=EXPIRED, issue="#3"),
        entry("test_q.py::test_param[*]", reason="only 2 passes", issue="#4"),  # brackets are literal
    ]
)


@pytest.fixture
def project(pytester):
    pytester.makepyfile(test_q=TESTS)
    pytester.path.joinpath("parity-quarantine.toml").write_text(QUARANTINE_FILE)
    return pytester


def test_quarantined_failures_do_not_fail_the_run_and_the_summary_lists_them(project):
    result = project.runpytest("-p", "no:cacheprovider", "-ra")
    result.assert_outcomes(passed=1, failed=2, xfailed=3, xpassed=2)
    result.stdout.fnmatch_lines_random(
        [
            "XFAIL test_q.py::test_broken - quarantined: flaky on the nightly build "
            "(https://example.org/issues/7, until 2999-12-31)",
            "FAILED test_q.py::test_other - AssertionError: not quarantined*",
            "FAILED test_q.py::test_old - AssertionError: its quarantine expired*",
            "quarantine (parity-quarantine.toml): 5 quarantined tests ran, 3 failed without failing the run, "
            "2 passed (stale)",
            "quarantined failure test_q.py::test_broken: flaky on the nightly build "
            "(https://example.org/issues/7, until 2999-12-31)",
            "quarantined failure test_q.py::test_param[[]1]: only 2 passes (#4, until 2999-12-31)",
            "quarantined failure test_q.py::test_param[[]3]: only 2 passes (#4, until 2999-12-31)",
            "stale quarantine test_q.py::test_fixed: passed; its entry 'test_q.py::test_fixed' may go (#12)",
            "stale quarantine test_q.py::test_param[[]2]: passed; its entry 'test_q.py::test_param[[]*[]]' may go (#4)",
            "expired quarantine 'test_q.py::test_old' (until 2000-01-01): no longer quarantines, its failures fail "
            "the run; renew or remove it in parity-quarantine.toml (#3)",
        ]
    )


def test_a_run_whose_only_failures_are_quarantined_passes(project):
    result = project.runpytest("-p", "no:cacheprovider", "-k", "broken or fixed or fine or param")
    assert result.ret == pytest.ExitCode.OK
    result.assert_outcomes(passed=1, xfailed=3, xpassed=2, deselected=2)


def test_rerun_quarantined_runs_only_them_and_lists_the_stale(project):
    result = project.runpytest("-p", "no:cacheprovider", RERUN_QUARANTINED)
    assert result.ret == pytest.ExitCode.OK
    result.assert_outcomes(xfailed=3, xpassed=2, deselected=3)  # test_old's entry expired: not rerun
    result.stdout.fnmatch_lines_random(
        [
            f"{RERUN_QUARANTINED}: 5 quarantined tests selected",
            "stale quarantine test_q.py::test_fixed: passed; *",
            "stale quarantine test_q.py::test_param[[]2]: passed; *",
        ]
    )


def test_rerun_quarantined_with_a_shard(project):
    first = project.runpytest("-p", "no:cacheprovider", RERUN_QUARANTINED, f"{SHARD}=1/2")
    second = project.runpytest("-p", "no:cacheprovider", RERUN_QUARANTINED, f"{SHARD}=2/2")
    counts = [result.parseoutcomes() for result in (first, second)]
    assert [c.get("xfailed", 0) + c.get("xpassed", 0) for c in counts] == [3, 2]


def test_the_quarantine_is_applied_under_xdist(project):
    result = project.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2", "-k", "broken or fixed")
    assert result.ret == pytest.ExitCode.OK
    result.assert_outcomes(xfailed=1, xpassed=1)
    result.stdout.fnmatch_lines_random(
        [
            "quarantined failure test_q.py::test_broken: flaky on the nightly build *",
            "stale quarantine test_q.py::test_fixed: passed; *",
        ]
    )


def test_the_file_from_the_option_and_from_the_ini_key(project):
    moved = project.path / "ci" / "quarantine.toml"
    moved.parent.mkdir()
    project.path.joinpath("parity-quarantine.toml").rename(moved)
    given = project.runpytest("-p", "no:cacheprovider", f"{QUARANTINE}=ci/quarantine.toml", "-k", "broken")
    given.assert_outcomes(xfailed=1, deselected=7)
    given.stdout.fnmatch_lines(["quarantined failure test_q.py::test_broken: *"])
    project.makeini(f"[pytest]\n{QUARANTINE_INI} = ci/quarantine.toml\n")
    from_ini = project.runpytest("-p", "no:cacheprovider", "-k", "broken")
    from_ini.assert_outcomes(xfailed=1, deselected=7)
    without = project.runpytest("-p", "no:cacheprovider", "-k", "broken", "-c", "/dev/null")
    without.assert_outcomes(failed=1, deselected=7)


def test_the_quarantine_wins_over_a_tests_own_xfail(pytester):
    pytester.makepyfile(
        test_own="""
        import pytest

        @pytest.mark.xfail(raises=KeyError, reason="own")
        def test_wrong_error():
            assert False

        @pytest.mark.xfail(strict=True, reason="own")
        def test_passes():
            pass
    """
    )
    pytester.path.joinpath("parity-quarantine.toml").write_text(entry("test_own.py::*", issue="#5"))
    result = pytester.runpytest("-p", "no:cacheprovider", "-ra")
    assert result.ret == pytest.ExitCode.OK
    result.assert_outcomes(xfailed=1, xpassed=1)
    result.stdout.fnmatch_lines_random(
        ["XFAIL test_own.py::test_wrong_error - quarantined: *", "stale quarantine test_own.py::test_passes: passed; *"]
    )


BAD_FILES = {
    "missing key": (
        "[[quarantine]]\ncase = 'test_q.py::test_broken'\nreason = 'x'\nuntil = 2030-01-01\n",
        "entry 1 (case 'test_q.py::test_broken'): missing issue; an entry has case, reason, issue, until",
    ),
    "unknown key": (
        entry("test_q.py::test_fixed") + entry("test_q.py::test_broken", reson="typo"),
        "entry 2 (case 'test_q.py::test_broken'): unknown keys [[]'reson'[]]; an entry has *",
    ),
    "bad date": (
        entry("test_q.py::test_broken", until='"next week"'),
        "entry 1 (case 'test_q.py::test_broken'): until must be an ISO date such as 2025-12-31, got 'next week'",
    ),
    "date and time": (
        entry("test_q.py::test_broken", until="2030-01-01T10:00:00"),
        "entry 1 (case *): until must be an ISO date *, got datetime.datetime(2030, 1, 1, 10, 0)",
    ),
    "empty reason": (
        entry("test_q.py::test_broken", reason=" "),
        "entry 1 (case 'test_q.py::test_broken'): reason must be a non-empty string, got ' '",
    ),
    "no case": (entry("").replace("case = ''\n", ""), "entry 1: missing case; *"),
    "duplicate": (
        entry("test_q.py::test_broken") + entry("test_q.py::test_broken"),
        "entries 1 and 2 both quarantine 'test_q.py::test_broken'",
    ),
    "not TOML": ("[[quarantine]\n", "not valid TOML: *"),
    "not tables": ("quarantine = [1]\n", "entry 1: must be a table with keys case, reason, issue, until"),
    "top-level key": (
        'quarantined = "x"\n',
        "unknown top-level keys [[]'quarantined'[]]; entries are *quarantine* tables",
    ),
}


@pytest.mark.parametrize("text, message", BAD_FILES.values(), ids=BAD_FILES.keys())
def test_a_bad_file_is_a_usage_error_naming_file_and_entry(project, text, message):
    project.path.joinpath("parity-quarantine.toml").write_text(text)
    result = project.runpytest("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: quarantine file parity-quarantine.toml: {message}"])
    assert "Traceback" not in result.stderr.str()


def test_a_string_date_is_accepted(project):
    project.path.joinpath("parity-quarantine.toml").write_text(entry("test_q.py::test_broken", until=f'"{ACTIVE}"'))
    project.runpytest("-p", "no:cacheprovider", "-k", "broken").assert_outcomes(xfailed=1, deselected=7)


def test_missing_files_are_usage_errors(project):
    missing = project.runpytest(f"{QUARANTINE}=nowhere.toml")
    assert missing.ret == pytest.ExitCode.USAGE_ERROR
    missing.stderr.fnmatch_lines(["ERROR: cannot read the quarantine file *nowhere.toml: No such file or directory"])
    project.path.joinpath("parity-quarantine.toml").unlink()
    rerun = project.runpytest(RERUN_QUARANTINED)
    assert rerun.ret == pytest.ExitCode.USAGE_ERROR
    rerun.stderr.fnmatch_lines([f"ERROR: {RERUN_QUARANTINED}: there is no quarantine file (give {QUARANTINE}=PATH, *"])


def test_an_expired_entry_of_a_passing_test_is_still_reported(project):
    project.path.joinpath("parity-quarantine.toml").write_text(entry("test_q.py::test_fine", until=EXPIRED))
    result = project.runpytest("-p", "no:cacheprovider", "-k", "fine")
    result.assert_outcomes(passed=1, deselected=7)
    result.stdout.fnmatch_lines(["expired quarantine 'test_q.py::test_fine' (until 2000-01-01): no longer *"])


def test_the_readme_example_is_a_valid_entry(tmp_path):
    readme = (Path(__file__).parents[2] / "docs" / "tutorials" / "nightly.md").read_text(encoding="utf-8")
    example = re.search(r"```toml\n(\[\[quarantine\]\]\n.*?)```", readme, re.S)[1]
    tmp_path.joinpath("q.toml").write_text(example)
    loaded = quarantine.load(tmp_path / "q.toml", today=datetime.date(2025, 12, 31))
    assert [e.until for e in loaded.active] == [datetime.date(2025, 12, 31)] and not loaded.expired
    assert loaded.find("cases/models/conv_block.py::ConvBlock[fp32]") is loaded.active[0]
    assert loaded.find("cases/models/conv_block.py::ConvBlocks[fp32]") is None


def test_no_quarantine_file_changes_nothing(pytester):
    pytester.makepyfile(test_q=textwrap.dedent(TESTS))
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=3, failed=5)
    assert "parity summary" not in result.stdout.str()
