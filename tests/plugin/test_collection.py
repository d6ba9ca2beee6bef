"""What the plugin collects and skips without running a check: parity tests are skipped without
``--parity``, and loading the plugin imports neither framework; the catalogue is one skipped
placeholder without it, and with it one item per variant, case names unique. Runs of real checks
through the fixture, the marker and the catalogue: tests/test_plugin.py.

Helpers here are shared with tests/test_plugin.py, which imports them."""

import textwrap

import hypothesis  # noqa: F401  imported here, the hypothesis plugin's import survives each in-process run
import pytest

from parity import options as opts
from parity.plugin import SKIP_REASON

PARITY = opts.PARITY

PYPROJECT = """
[tool.pytest.ini_options]
parity_cases = ["catalogue"]
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


def test_catalogue_case_names_must_be_unique(project):
    write_catalogue(project, FACTORIES + BROKEN + BROKEN.replace("Broken = ", "Again = "))
    result = project.runpytest(PARITY)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(
        ["*ERROR collecting catalogue/tiny.py*", "*case names must be unique, repeated: [[]'Broken'[]]*"]
    )
