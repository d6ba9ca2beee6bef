"""The pytest side, tested from outside with pytester: options, skipping without --parity, the
fixture, the marker, the catalogue items, the summary, and xdist.

In-process runs share the frameworks tests/conftest.py imported; `runpytest_subprocess` is used
where the environment matters (which modules get imported, xdist)."""

import textwrap

import hypothesis  # noqa: F401  imported here, the hypothesis plugin's import survives each in-process run
import pytest

from parity import options as opts
from parity.plugin import SKIP_REASON

PARITY, SEED, MODE, DEVICE = opts.PARITY, opts.SEED.flag, opts.MODE.flag, opts.DEVICE.flag

pytestmark = pytest.mark.usefixtures("collect_inner_cells")  # tests/conftest.py

PYPROJECT = """
[tool.pytest.ini_options]
parity_cases = ["catalogue"]
"""

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

FACTORIES = """
from parity import ParityCase, Tolerance, randn


def ms_dense():
    import mindspore

    return mindspore.nn.Dense(4, 3)


def torch_linear():
    import torch

    return torch.nn.Linear(4, 3)


def ms_gelu():
    import mindspore

    return mindspore.nn.GELU(approximate=False)


def torch_gelu():
    import torch

    return torch.nn.GELU(approximate="tanh")
"""

CASES = """
Tiny = ParityCase("Tiny", mindspore=ms_dense, torch=torch_linear, inputs=randn((2, 4)), train=(False, True))

Gelu = ParityCase("Gelu", mindspore=ms_gelu, torch=torch_gelu, inputs=randn((2, 8)),
                  xfail="MindSpore GELU is exact here; PyTorch uses the tanh approximation")

Fixed = ParityCase("Fixed", mindspore=ms_gelu, torch=torch_gelu, inputs=randn((2, 8)),
                   tolerance=Tolerance(1e-2, 1e-2), xfail="stale: the tolerance already covers it")
"""

BROKEN = """
Broken = ParityCase("Broken", mindspore=ms_gelu, torch=torch_gelu, inputs=randn((2, 8)))
"""

CATALOGUE = FACTORIES + CASES
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


def write_catalogue(pytester, text=CATALOGUE):
    pytester.mkdir("catalogue")
    pytester.path.joinpath("catalogue", "tiny.py").write_text(textwrap.dedent(text))


# -- without --parity --------------------------------------------------------------------------


def test_parity_tests_are_skipped_without_the_flag(project):
    project.makepyfile(
        test_skip="""
        import pytest

        def test_fixture(parity):
            raise AssertionError("must not run")

        @pytest.mark.parity(tolerance=(1e-3, 1e-3))
        def test_marked():
            raise AssertionError("must not run")

        def test_plain():
            pass
    """
    )
    result = project.runpytest("-rs", "--strict-markers")
    result.assert_outcomes(passed=1, skipped=2)
    assert "pytest --parity" in SKIP_REASON
    result.stdout.fnmatch_lines_random(
        [f"SKIPPED [[]1[]] test_skip.py: {SKIP_REASON}", f"SKIPPED [[]1[]] test_skip.py:*: {SKIP_REASON}"]
    )


def test_loading_the_plugin_imports_no_framework(project):
    """A fresh process: the plugin is loaded, parity tests and a catalogue are collected and
    skipped, and neither framework is imported."""
    project.makeconftest("""
        import sys
        from pathlib import Path

        def pytest_sessionfinish(session):
            loaded = [name for name in ("parity.plugin", "mindspore", "torch") if name in sys.modules]
            Path("modules.txt").write_text(" ".join(loaded))
    """)
    project.makepyfile(
        test_light="""
        import pytest

        def test_fixture(parity):
            pass

        @pytest.mark.parity
        def test_marked():
            pass
    """
    )
    write_catalogue(project)
    result = project.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(skipped=3)
    assert project.path.joinpath("modules.txt").read_text() == "parity.plugin"


def test_help_shows_the_options(pytester):
    result = pytester.runpytest("--help")
    assert result.ret == 0
    result.stdout.fnmatch_lines(
        ["*MindSpore <-> PyTorch parity*", f"*{PARITY} *"] + [f"*{option.flag}*" for option in opts.OPTIONS],
        consecutive=False,
    )
    text = result.stdout.str()
    for option in opts.OPTIONS:
        assert option.help.split(":")[0][:30] in text
        for choice in option.choices or ():
            assert choice in text
    result.stdout.fnmatch_lines(["*parity_cases*"])


def test_catalogue_without_the_flag_is_one_skipped_placeholder_and_is_not_imported(project):
    write_catalogue(project, CATALOGUE + '\nraise RuntimeError("imported without --parity")\n')
    result = project.runpytest("-rs", "-v")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(
        [
            "catalogue/tiny.py::[[]needs --parity[]] SKIPPED (parity catalogue: run w*",
            "SKIPPED [[]1[]] *: parity catalogue: run with `pytest --parity` to build and compare these pairs",
        ]
    )


def test_catalogue_placeholder_skip_points_at_the_catalogue_file(project):
    write_catalogue(project)
    result = project.runpytest("-rs")
    result.stdout.fnmatch_lines(["SKIPPED [[]1[]] catalogue/tiny.py*: parity catalogue: run with `pytest --parity`*"])


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


# -- the catalogue -----------------------------------------------------------------------------


def test_catalogue_cases_are_items_per_variant(project):
    write_catalogue(project)
    result = project.runpytest(PARITY, "--collect-only", "-q")
    result.stdout.fnmatch_lines(
        [
            "catalogue/tiny.py::Tiny[[]eval[]]",
            "catalogue/tiny.py::Tiny[[]train[]]",
            "catalogue/tiny.py::Gelu[[]eval[]]",
            "catalogue/tiny.py::Fixed[[]eval[]]",
        ]
    )


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


def test_catalogue_case_names_must_be_unique(project):
    write_catalogue(project, FACTORIES + BROKEN + BROKEN.replace("Broken = ", "Again = "))
    result = project.runpytest(PARITY)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(
        ["*ERROR collecting catalogue/tiny.py*", "*case names must be unique, repeated: [[]'Broken'[]]*"]
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
