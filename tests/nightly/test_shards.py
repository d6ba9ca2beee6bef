"""``--parity-shard=I/N``: the N shards are disjoint and together are the whole run, with and
without durations; durations balance the shards on time; bad input is a usage error.

Plain (non-parity) test files are enough: sharding looks at node ids only."""

import json
import random

import pytest

from parity.errors import ParityUsageError
from parity.nightly import shards
from parity.plugin import REPORT
from parity.plugin.fleet import DURATIONS, QUARANTINE, QUARANTINE_INI, RERUN_QUARANTINED, SHARD

# 26 tests: functions, a class, parametrised ids with brackets and spaces
TESTS = """
import pytest


@pytest.mark.parametrize("n", range(12))
def test_number(n):
    pass


@pytest.mark.parametrize("word", ["a", "b c", "[x]"])
def test_word(word):
    pass


class TestGroup:
    @pytest.mark.parametrize("k", range(5))
    def test_k(self, k):
        pass

    def test_alone(self):
        pass


def test_one():
    pass


def test_two():
    pass


def test_three():
    pass


def test_four():
    pass


def test_five():
    pass
"""


def collected(pytester, *args):
    result = pytester.runpytest("--collect-only", "-q", "-p", "no:cacheprovider", *args)
    nodeids = [line for line in result.outlines if "::" in line]
    # an empty shard is an empty selection, which pytest reports as such
    assert result.ret == (pytest.ExitCode.OK if nodeids else pytest.ExitCode.NO_TESTS_COLLECTED), result.stdout.str()
    return nodeids, result


def write_report(pytester, seconds, extra_lines=()):
    lines = [json.dumps({"nodeid": nodeid, "duration": s, "verdict": "pass"}) for nodeid, s in seconds.items()]
    path = pytester.path / "last.jsonl"
    path.write_text("\n".join([json.dumps({"environment": {"python": "3.11"}}), *lines, *extra_lines]) + "\n")
    return path


@pytest.mark.parametrize("count", [1, 3, 4])
def test_shards_are_disjoint_and_their_union_is_the_whole_run(pytester, count):
    pytester.makepyfile(test_many=TESTS)
    whole, _ = collected(pytester)
    parts = [collected(pytester, f"{SHARD}={i}/{count}")[0] for i in range(1, count + 1)]
    assert len(whole) == 26 and len(set(whole)) == 26
    assert sorted(nodeid for part in parts for nodeid in part) == sorted(whole)
    sizes = [len(part) for part in parts]
    assert max(sizes) - min(sizes) <= 1, sizes  # evenly by node id without durations
    for part in parts:  # each shard keeps the collection order
        assert part == [nodeid for nodeid in whole if nodeid in part]


def test_with_durations_the_union_is_the_whole_run_and_shards_balance_on_time(pytester):
    pytester.makepyfile(test_many=TESTS)
    whole, _ = collected(pytester)
    rng = random.Random(7)
    known = {nodeid: round(rng.uniform(0.1, 5.0), 3) for nodeid in whole[:20]}  # 6 tests are new since
    report = write_report(pytester, known, extra_lines=['{"nodeid": "test_gone.py::test_x", "duration": 9}'])
    parts = []
    for i in (1, 2, 3):
        part, result = collected(pytester, f"{SHARD}={i}/3", f"{DURATIONS}={report.name}")
        parts.append(part)
        result.stdout.fnmatch_lines(
            [
                f"parity shard {i}/3: {len(part)} of 26 tests, about * s of * s by the "
                f"durations in {report.name}; 6 without a recorded duration counted at the mean*",
                f"{len(part)}/26 tests collected ({26 - len(part)} deselected)*",
            ]
        )
    assert sorted(nodeid for part in parts for nodeid in part) == sorted(whole)
    mean = sum(known.values()) / len(known)
    loads = [sum(known.get(nodeid, mean) for nodeid in part) for part in parts]
    assert max(loads) - min(loads) <= max(known.values()), loads  # greedy longest-first bound


def slow_and_quick(pytester):
    """One 10 s test and nine 1 s tests: by durations 2 shards hold 1 and 9 tests, by node id 5 and 5."""
    pytester.makepyfile(
        test_slow="""
        def test_slow():
            pass
    """,
        test_quick="""
        import pytest

        @pytest.mark.parametrize("n", range(9))
        def test_quick(n):
            pass
    """,
    )
    seconds = {"test_slow.py::test_slow": 10.0, **{f"test_quick.py::test_quick[{n}]": 1.0 for n in range(9)}}
    return write_report(pytester, seconds)


def test_durations_decide_the_split_and_tests_really_run(pytester):
    report = slow_and_quick(pytester)
    first = pytester.runpytest("-p", "no:cacheprovider", f"{SHARD}=1/2", f"{DURATIONS}={report}")
    first.assert_outcomes(passed=1, deselected=9)
    first.stdout.fnmatch_lines(["*test_slow.py .*", "parity shard 1/2: 1 of 10 tests, about 10.0 s of 19.0 s *"])
    second = pytester.runpytest("-p", "no:cacheprovider", f"{SHARD}=2/2", f"{DURATIONS}={report}")
    second.assert_outcomes(passed=9, deselected=1)
    even = pytester.runpytest("-p", "no:cacheprovider", f"{SHARD}=1/2")
    even.assert_outcomes(passed=5, deselected=5)
    even.stdout.fnmatch_lines(["parity shard 1/2: 5 of 10 tests, split evenly by node id (no durations given)"])


@pytest.mark.parametrize("xdist", [(), ("-n", "2")], ids=["alone", "xdist"])
def test_the_durations_may_come_from_the_report_this_run_rewrites(pytester, xdist):
    """Read once, before the report is emptied; under xdist the workers split on what the
    controller read, so that they agree however far the new report has got."""
    report = slow_and_quick(pytester)
    args = ["-p", "no:cacheprovider", "-v", f"{SHARD}=1/2", f"{DURATIONS}={report.name}", f"{REPORT}={report.name}"]
    result = (pytester.runpytest_subprocess if xdist else pytester.runpytest)(*args, *xdist)
    result.assert_outcomes(passed=1)
    assert "test_slow.py::test_slow" in result.stdout.str() and "test_quick.py" not in result.stdout.str()
    assert "test_quick" not in report.read_text()  # the new report replaced the old one


def test_more_shards_than_tests_leaves_some_empty():
    nodeids = [f"t.py::test[{n}]" for n in range(5)]
    assigned = shards.partition(nodeids, 8)
    assert sorted(assigned) == [0, 1, 2, 3, 4]
    assert shards.select(nodeids, shards.Shard(7, 8))[0] == []


def test_the_split_does_not_depend_on_collection_order():
    nodeids = [f"t.py::test[{n}]" for n in range(40)]
    durations = shards.Durations({nodeid: (n * 37 % 11) / 3 for n, nodeid in enumerate(nodeids)})
    for given in (None, durations):
        before = dict(zip(nodeids, shards.partition(nodeids, 3, given)))
        shuffled = random.Random(1).sample(nodeids, len(nodeids))
        assert dict(zip(shuffled, shards.partition(shuffled, 3, given))) == before


def test_help_shows_the_fleet_options(pytester):
    result = pytester.runpytest("--help")
    result.stdout.fnmatch_lines(
        [
            f"*{SHARD}=I/N*",
            f"*{DURATIONS}=PATH*",
            f"*{QUARANTINE}=PATH*",
            f"*{RERUN_QUARANTINED}*",
            f"*{QUARANTINE_INI} (string)*",
        ],
        consecutive=False,
    )


@pytest.mark.parametrize("value", ["0/3", "4/3", "1/0", "2", "a/b", "1/3/4", "-1/3", ""])
def test_a_bad_shard_is_a_usage_error(pytester, value):
    pytester.makepyfile(test_many=TESTS)
    result = pytester.runpytest(f"{SHARD}={value}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: {SHARD}: *got {value!r}"])
    assert "Traceback" not in result.stderr.str()


def test_parse_shard():
    assert shards.parse_shard("2/4", SHARD) == shards.Shard(2, 4)
    assert str(shards.parse_shard(" 1 / 1 ", SHARD)) == "1/1"
    with pytest.raises(ParityUsageError, match=r"I must be between 1 and N"):
        shards.parse_shard("5/4", SHARD)


def test_a_missing_durations_file_is_a_usage_error(pytester):
    pytester.makepyfile(test_many=TESTS)
    result = pytester.runpytest(f"{SHARD}=1/2", f"{DURATIONS}=nowhere.jsonl")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: cannot read durations from *nowhere.jsonl: No such file or directory"])


def test_durations_sum_a_tests_checks_and_pass_over_other_lines(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text(
        "\n".join(
            [
                '{"environment": {}}',
                '{"nodeid": "a.py::t", "duration": 1.5}',
                '{"nodeid": "a.py::t", "duration": 2}',
                '{"nodeid": "a.py::u", "duration": "slow"}',
                '{"nodeid": "a.py::v", "duration": -1}',
                "[1, 2]",
                '{"nodeid": "a.py::w", "durat',
            ]
        )
    )
    found = shards.read_durations([path])
    assert found.seconds == {"a.py::t": 3.5} and found.unreadable == 2
    assert found.of("a.py::t") == 3.5 and found.of("new.py::x") == 3.5
