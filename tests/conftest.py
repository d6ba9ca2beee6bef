"""Import both frameworks before any in-process pytester run: pytester restores sys.modules
afterwards, and torch cannot be imported twice in one process. Also the fixtures several
modules share: the in-process Cell collection and the report page's headless browser."""

import gc
import os
import shutil
import sys

import mindspore  # noqa: F401
import pytest
import torch  # noqa: F401

# Hypothesis profiles for tests/test_properties.py (README: "Property-based checks").
# "fast" is the default: the same few examples on every run, for `make test` and CI.
# "thorough" is for nightly runs: pytest --hypothesis-profile=thorough (Hypothesis's own option).
from hypothesis import settings  # noqa: E402

settings.register_profile("fast", max_examples=8, deadline=None, derandomize=True, database=None, print_blob=True)
settings.register_profile("thorough", max_examples=200, deadline=None, print_blob=True)


def pytest_configure(config):
    if not config.getoption("--hypothesis-profile"):  # the option, when given, was loaded by Hypothesis
        settings.load_profile("fast")


@pytest.fixture
def collect_inner_cells():
    """Free the Cells of in-process pytester runs while MindSpore is still whole, not at interpreter
    exit (an inner failure leaves its traceback, and the Cells in its frames, in sys.last_*).
    Modules that run MindSpore in-process use it: pytestmark = pytest.mark.usefixtures(...)."""
    before = getattr(sys, "last_value", None)
    yield
    if getattr(sys, "last_value", None) is not before:
        for name in ("last_type", "last_value", "last_traceback", "last_exc"):
            if hasattr(sys, name):
                delattr(sys, name)
        gc.collect()


def _chromium(playwright):
    """playwright's own Chromium, else the system's (Debian's ``chromium``, or PARITY_CHROMIUM)."""
    from playwright.sync_api import Error

    try:
        return playwright.chromium.launch()
    except Error as exc:
        reason = str(exc).strip().splitlines()[0]
    for candidate in (
        os.environ.get("PARITY_CHROMIUM"),
        shutil.which("chromium"),
        shutil.which("chromium-browser"),
        shutil.which("google-chrome"),
    ):
        if candidate:
            return playwright.chromium.launch(executable_path=candidate)
    pytest.skip(
        f"no browser to load the page in: playwright's Chromium is not installed ({reason}; "
        "`python -m playwright install chromium` downloads it) and no chromium is on PATH"
    )


@pytest.fixture(scope="module")
def browser():
    """A headless Chromium for the report page's tests (tests/test_report_page.py, test_report_tree.py)."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (the `test` extra)")
    with sync_api.sync_playwright() as playwright:
        chromium = _chromium(playwright)
        yield chromium
        chromium.close()
