"""The two tiers of tests/conftest.py, checked where both frameworks are installed (so that their
absence from a framework-free session is the conftest's doing, not the environment's): a session of
framework-free folders imports neither framework, and fails where one gets imported; any other
session has both imported before it collects. This module imports neither framework itself."""

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FRAMEWORKS = ("mindspore", "torch")


def core_tests():
    """The Makefile's CORE_TESTS: the folders `make test-core` runs."""
    found = re.search(r"^CORE_TESTS := (.+)$", (ROOT / "Makefile").read_text(encoding="utf-8"), re.M)
    return found.group(1).split()


def run_pytest(*args, plugin=None, tmp_path=None):
    """pytest in a fresh interpreter from the checkout's root; ``plugin``, source text, is loaded
    as ``-p tier_probe``."""
    env = None
    if plugin is not None:
        (tmp_path / "tier_probe.py").write_text(plugin)
        env = {**os.environ, "PYTHONPATH": str(tmp_path)}
        args = ("-p", "tier_probe", *args)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture(scope="module", autouse=True)
def both_frameworks_installed():
    missing = [name for name in FRAMEWORKS if importlib.util.find_spec(name) is None]
    assert not missing, f"these checks need both frameworks installed; missing: {missing}"


def test_a_session_with_framework_tests_imported_both_before_collecting():
    assert set(FRAMEWORKS) <= set(sys.modules)


def test_the_framework_free_folders_collect_without_importing_either_framework():
    done = run_pytest("--collect-only", "-q", *core_tests())
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    collected = int(re.search(r"^(\d+) tests collected", done.stdout, re.M).group(1))
    assert collected > 300  # every folder, not an empty selection
    summary = f"framework-free ({' '.join(core_tests())}): neither mindspore nor torch was imported"
    assert summary in done.stdout.splitlines()  # the guard ran, over the Makefile's folders


IMPORT_IN_A_TEST = """
def pytest_runtest_call(item):
    import torch  # noqa: F401
"""

IMPORT_AT_COLLECTION = """
import pytest


def pytest_collectstart(collector):
    if isinstance(collector, pytest.Module):
        import mindspore  # noqa: F401
"""


def test_a_framework_imported_by_a_framework_free_test_fails_it(tmp_path):
    done = run_pytest("tests/judge/test_golden.py", plugin=IMPORT_IN_A_TEST, tmp_path=tmp_path)
    assert done.returncode == pytest.ExitCode.TESTS_FAILED, done.stdout[-3000:] + done.stderr[-3000:]
    assert "tests/judge/test_golden.py::test_golden_judge_rule (call) imported torch: the tests in" in done.stdout


def test_a_framework_imported_while_collecting_a_framework_free_module_fails_its_collection(tmp_path):
    done = run_pytest("tests/judge/test_golden.py", plugin=IMPORT_AT_COLLECTION, tmp_path=tmp_path)
    assert done.returncode == pytest.ExitCode.INTERRUPTED, done.stdout[-3000:] + done.stderr[-3000:]
    assert "ERROR collecting tests/judge/test_golden.py" in done.stdout
    assert "tests/judge/test_golden.py imported mindspore: the tests in" in done.stdout
