"""The pytest side, tested from outside with pytester: the fixture, the marker and the catalogue
running real checks, the summary, and xdist. The options and what happens without --parity or
before a check runs need no framework: tests/plugin/.

In-process runs share the frameworks tests/conftest.py imported; `runpytest_subprocess` is used
where the environment matters (which modules get imported, xdist)."""

import hypothesis  # noqa: F401  imported here, the hypothesis plugin's import survives each in-process run
import pytest

from parity import options as opts

from plugin.test_collection import BROKEN, CASES, FACTORIES, PYPROJECT, write_catalogue

PARITY, SEED, MODE, DEVICE = opts.PARITY, opts.SEED.flag, opts.MODE.flag, opts.DEVICE.flag

pytestmark = pytest.mark.usefixtures("collect_inner_cells")  # tests/conftest.py


# Imports nothing heavy at module level: the framework imports live inside the tests.
FIXTURE_TESTS = """
import pytest


def test_pass(parity):
    import mindspore, torch

    result = parity.check(mindspore.nn.Dense(4, 3), torch.nn.Linear(4, 3), parity.randn((2, 4)))
    assert result.passed and parity.results == [result]


def test_fail(parity):
    import mindspore, torch

    parity.check(mindspore.nn.GELU(approximate=False), torch.nn.GELU(approximate="tanh"), parity.randn((2, 4)))
"""


BROKEN_CATALOGUE = FACTORIES + BROKEN


@pytest.fixture(scope="module", autouse=True)
def warm_frameworks():
    """Run, in this process, what the in-process runs will run: pytester drops modules first
    imported during a run, and lazily imported framework internals must survive that."""
    import mindspore
    import torch

    import parity
    import parity.plugin.items  # noqa: F401  what the fixture and the catalogue import

    for mode in ("pynative", "graph"):
        parity.check(mindspore.nn.Dense(4, 3), torch.nn.Linear(4, 3), parity.randn((2, 4)), ms_mode=mode, train=True)
    with pytest.raises(parity.ParityMismatch):
        parity.check(mindspore.nn.GELU(approximate=False), torch.nn.GELU(approximate="tanh"), parity.randn((2, 4)))


@pytest.fixture
def project(pytester):
    pytester.makefile(".toml", pyproject=PYPROJECT)
    return pytester


# -- the fixture with --parity ----------------------------------------------------------------


def test_fixture_pass_and_fail_with_the_summary(project):
    project.makepyfile(test_fixture=FIXTURE_TESTS)
    result = project.runpytest(PARITY)
    result.assert_outcomes(passed=1, failed=1)
    out = result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "*ParityMismatch*MindSpore and PyTorch outputs are not close!*",
            "*Case:       test_fixture.py::test_fail  (test_fixture.py:11)",
            f"*Reproduce: pytest test_fixture.py::test_fail {PARITY} {SEED}=1234",
        ]
    )
    assert "site-packages/mindspore" not in out
    assert "site-packages/torch" not in out
    result.stdout.fnmatch_lines(
        [
            "*= parity summary =*",
            "ok    test_fixture.py::test_pass: worst margin *x allowed (*)",  # which tensor: the CPU's rounding
            "FAIL  test_fixture.py::test_fail: worst margin *x allowed (*)",
        ]
    )


def test_fixture_failure_shows_no_parity_internals(project):
    project.makepyfile(test_fixture=FIXTURE_TESTS)
    result = project.runpytest(PARITY, "-k", "fail")
    result.assert_outcomes(failed=1)
    assert "parity/engine/check.py" not in result.stdout.str()
    assert "def run_check" not in result.stdout.str()


def test_seed_and_mode_options_reach_the_check(project):
    project.makepyfile(
        test_mode="""
        def test_mode(parity):
            import mindspore, torch

            result = parity.check(mindspore.nn.Dense(4, 3), torch.nn.Linear(4, 3), parity.randn((2, 4)))
            assert result.modes == ("graph",)
            assert result.seed == 7

        def test_fail(parity):
            import mindspore, torch

            parity.check(mindspore.nn.GELU(approximate=False), torch.nn.GELU(approximate="tanh"),
                         parity.randn((2, 4)))
    """
    )
    result = project.runpytest(PARITY, f"{MODE}=graph", f"{SEED}=7")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*Divergence: first at forward output 'output', graph mode*",
            "*Inputs: seed 7 -> input[[]0[]]: float32[[]2, 4[]] ~ N(0, 1)",
            f"*Reproduce: pytest test_mode.py::test_fail {PARITY} {MODE}=graph {SEED}=7",
        ]
    )


def test_the_marker_ignore_leaves_a_tensor_as_built(project):
    project.makepyfile(
        test_ignore="""
        import numpy as np
        import pytest

        def pair():
            import mindspore, torch
            cell = mindspore.nn.Dense(4, 3)
            cell.spare = mindspore.Parameter(mindspore.Tensor(np.ones(2, np.float32)))
            return cell, torch.nn.Linear(4, 3)

        @pytest.mark.parity(ignore=["spare"])
        def test_ignored(parity):
            result = parity.check(*pair(), parity.randn((2, 4)))
            assert result.weights.map.left_out == [("MindSpore", "spare")]

        def test_not_ignored(parity):
            parity.check(*pair(), parity.randn((2, 4)))
    """
    )
    result = project.runpytest(PARITY, "-rfE")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["FAILED test_ignore.py::test_not_ignored - *Unmapped*"])


def test_marker_arguments_reach_the_check_and_name_their_source(project):
    project.makepyfile(
        test_marker="""
        import pytest
        from parity import Tolerance

        GELU = "mindspore.nn.GELU(approximate=False), torch.nn.GELU(approximate='tanh'), parity.randn((2, 4))"

        @pytest.mark.parity(tolerance=Tolerance(1e-2, 1e-2))
        def test_loosened(parity):
            import mindspore, torch
            result = parity.check(*eval(GELU))
            assert {c.tolerance_source for c in result.comparisons} == {"@pytest.mark.parity(tolerance=...)"}

        @pytest.mark.parity(tolerance=Tolerance(1e-6, 1e-6))
        def test_too_tight(parity):
            import mindspore, torch
            parity.check(*eval(GELU))

        @pytest.mark.parity(tolerance=Tolerance(1e-6, 1e-6))
        def test_call_beats_marker(parity):
            import mindspore, torch
            parity.check(*eval(GELU), tolerance={"*": Tolerance(1e-2, 1e-2)})

        @pytest.mark.parity(train=True)
        def test_train(parity):
            import mindspore, torch
            assert parity.check(mindspore.nn.Dense(4, 3), torch.nn.Linear(4, 3), parity.randn((2, 4))).train

        @pytest.mark.parity(tolerence=(1, 1))
        def test_typo(parity):
            pass
    """
    )
    result = project.runpytest(PARITY, "-rfE")
    result.assert_outcomes(passed=3, failed=1, errors=1)
    result.stdout.fnmatch_lines(["*Tolerance: @pytest.mark.parity(tolerance=...) (rtol=1e-06, atol=1e-06)"])
    result.stdout.fnmatch_lines(["*ParityUsageError: @pytest.mark.parity got unknown arguments [[]'tolerence'[]]*"])
    result.stdout.fnmatch_lines_random(
        [
            "FAILED test_marker.py::test_too_tight - *ParityMismatch*",
            "ERROR test_marker.py::test_typo - *ParityUsageError*",
        ]
    )


def test_summary_of_an_output_structure_mismatch_names_it(project):
    project.makepyfile(
        test_structure="""
        def test_structure(parity):
            import mindspore, torch

            class Two(mindspore.nn.Cell):
                def __init__(self):
                    super().__init__()
                    self.fc = mindspore.nn.Dense(4, 3)

                def construct(self, x):
                    y = self.fc(x)
                    return y, y

            parity.check(Two(), torch.nn.Linear(4, 3), parity.randn((2, 4)))
    """
    )
    result = project.runpytest(PARITY)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*= parity summary =*", "* test_structure.py::test_structure: *structure*"])


def test_catalogue_run_with_strict_xfail_and_summary(project):
    write_catalogue(project, FACTORIES + CASES + BROKEN)
    result = project.runpytest(PARITY, "-v", "-rX")
    result.assert_outcomes(passed=2, xfailed=1, failed=2)
    result.stdout.fnmatch_lines(
        [
            "catalogue/tiny.py::Tiny[[]eval[]] PASSED*",
            "catalogue/tiny.py::Tiny[[]train[]] PASSED*",
            "catalogue/tiny.py::Gelu[[]eval[]] XFAIL*",
            "catalogue/tiny.py::Fixed[[]eval[]] FAILED*",
            "catalogue/tiny.py::Broken[[]eval[]] FAILED*",
        ]
    )
    result.stdout.fnmatch_lines(["*[[]XPASS(strict)[]]*stale: the tolerance already covers it*"])
    result.stdout.fnmatch_lines(["*= parity summary =*"])
    result.stdout.fnmatch_lines_random(
        [
            "ok    catalogue/tiny.py::Tiny[[]eval[]]: worst margin *",
            "ok    catalogue/tiny.py::Tiny[[]train[]]: worst margin *",
            "xfail catalogue/tiny.py::Gelu[[]eval[]]: worst margin *",
            "ok    catalogue/tiny.py::Fixed[[]eval[]]: worst margin *",
            "FAIL  catalogue/tiny.py::Broken[[]eval[]]: worst margin *",
        ]
    )


def test_a_failing_catalogue_case_prints_its_message_only(project):
    write_catalogue(project, BROKEN_CATALOGUE)
    result = project.runpytest(PARITY)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "ParityMismatch: MindSpore and PyTorch outputs are not close!",
            "Case:       catalogue/tiny.py::Broken[[]eval[]]  (catalogue/tiny.py:*)",
            f"Reproduce: pytest 'catalogue/tiny.py::Broken[[]eval[]]' {PARITY} {SEED}=1234",
        ]
    )
    out = result.stdout.str()
    assert "Traceback" not in out and "parity/engine/check.py" not in out
    assert "site-packages/mindspore" not in out and "site-packages/torch" not in out


# -- xdist -------------------------------------------------------------------------------------


def test_summary_under_xdist(project):
    project.makepyfile(test_fixture=FIXTURE_TESTS)
    result = project.runpytest_subprocess(PARITY, "-n", "2", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines_random(
        [
            "ok    test_fixture.py::test_pass: worst margin *x allowed*",
            "FAIL  test_fixture.py::test_fail: worst margin *x allowed*",
        ]
    )
    result.stdout.fnmatch_lines(["*= parity summary =*"])


def test_both_modes_name_the_modes_each_failing_tensor_failed_in(project):
    project.makepyfile(test_fixture=FIXTURE_TESTS)
    result = project.runpytest(PARITY, f"{MODE}=both", "-k", "fail")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*Divergence: first at forward output 'output' (pynative and graph)",
            "*In pynative mode:",
            "*FAIL  outputs      0/2 within tolerance; worst 'output' (*) at *x allowed",
            "*Also failing: input grad 'input[[]0[]]' (pynative and graph, *x)",
            f"*Reproduce: pytest test_fixture.py::test_fail {PARITY} {MODE}=both {SEED}=1234",
        ]
    )
