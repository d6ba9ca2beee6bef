"""What every test here needs, and when the frameworks are imported.

Two tiers. The folders named in FRAMEWORK_FREE hold the tests that need neither MindSpore nor
PyTorch: ``make test-core`` runs them in an environment with neither installed. Any other test
may need both.

A session whose paths all lie in those folders imports neither framework, and fails where one is
imported anyway: a module that imports one at collection fails to collect, a test that
imports one fails (an attempt counts, also one that raised ImportError or was caught: in an
environment without the frameworks that would be a silent skip, and pytester's in-process runs
count too). Any other session imports both frameworks, where installed, when collection starts
and so before any in-process pytester run: pytester restores sys.modules afterwards, and torch
cannot be imported twice in one process.

Also the fixtures several modules share: the in-process Cell collection and the report page's
headless browser; PARITY_TEST_PERTURB_ULPS, which runs the suite as on another CPU
(CONTRIBUTING.md); and the ``slow`` marker: such tests run only with ``--run-slow`` (``make
test-slow``, which CI runs), and say so where they are skipped."""

import contextlib
import functools
import gc
import importlib
import importlib.util
import os
import shutil
import sys
import zlib
from pathlib import Path

import pytest

# Hypothesis profiles for tests/test_properties.py (docs/how-to/property-based.md).
# "fast" is the default: the same few examples on every run, for `make test` and CI.
# "thorough" is for nightly runs: pytest --hypothesis-profile=thorough (Hypothesis's own option).
from hypothesis import settings

settings.register_profile("fast", max_examples=8, deadline=None, derandomize=True, database=None, print_blob=True)
settings.register_profile("thorough", max_examples=200, deadline=None, print_blob=True)

TESTS = Path(__file__).resolve().parent
# The framework-free tier: these folders of tests/, as the Makefile's CORE_TESTS lists them.
FRAMEWORK_FREE = ("engine", "judge", "nightly", "plugin", "registry", "tools")
FRAMEWORKS = ("mindspore", "torch")
GUARD = "framework-free"  # the name FrameworkFree is registered under


def framework_free(path):
    """Whether ``path`` lies in a framework-free folder."""
    return any(Path(path).is_relative_to(TESTS / folder) for folder in FRAMEWORK_FREE)


def pytest_addoption(parser):
    parser.addoption("--run-slow", action="store_true", help="also run the tests marked slow (make test-slow)")


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: over about ten seconds; runs with --run-slow (make test-slow, and in CI)")
    if not config.getoption("--hypothesis-profile"):  # the option, when given, was loaded by Hypothesis
        settings.load_profile("fast")
    config.addinivalue_line(
        "markers",
        "unperturbed(reason): the test needs MindSpore's own bits (bit identity, a fault's exact "
        "margins); PARITY_TEST_PERTURB_ULPS leaves it alone",
    )
    here = config.invocation_params.dir
    if all(framework_free((here / arg.split("::")[0]).resolve()) for arg in config.args):
        config.pluginmanager.register(FrameworkFree(), GUARD)


def pytest_collection_modifyitems(config, items):
    if config.getoption("--run-slow"):
        return
    skip = pytest.mark.skip(reason="slow: runs with --run-slow (make test-slow, and in CI)")
    for item in items:
        if item.get_closest_marker("slow") is not None:
            item.add_marker(skip)


@pytest.hookimpl(tryfirst=True)
def pytest_collection(session):
    """Before anything is collected (pytest's warning filters apply here): both frameworks, unless
    this session is framework-free. Where one is not installed, the tests that import it fail to
    collect, saying so."""
    if session.config.pluginmanager.has_plugin(GUARD):
        return
    for name in FRAMEWORKS:
        if importlib.util.find_spec(name) is not None:
            importlib.import_module(name)


class FrameworkFree:
    """The guard of a framework-free session. As a meta path finder it finds nothing: it notes each
    attempt to import a framework, and the collection report or test report of the phase in which
    the attempt happened fails, naming it."""

    def __init__(self):
        self.attempts, self.seen = [], set()
        sys.meta_path.insert(0, self)

    def find_spec(self, name, path=None, target=None):
        # Asked by an import (importlib's _find_spec called from _find_and_load_unlocked), not by
        # importlib.util.find_spec: parity scan finds torch's source files without running them.
        if name in FRAMEWORKS and sys._getframe(2).f_code.co_name == "_find_and_load_unlocked":
            self.attempts.append(name)
            self.seen.add(name)
        return None

    def fail(self, report, who):
        """Fail ``report`` if a framework was asked for since the last report."""
        attempts, self.attempts = self.attempts, []
        if attempts and not report.failed:  # a failed import (no framework here) already says which
            names = " and ".join(sorted(set(attempts)))
            folders = " ".join(f"tests/{folder}" for folder in FRAMEWORK_FREE)
            report.outcome = "failed"
            report.longrepr = (
                f"{who} imported {names}: the tests in {folders} run without either framework "
                "(make test-core); a test that needs one belongs in a module at tests/"
            )
        return report

    @pytest.hookimpl(wrapper=True)
    def pytest_make_collect_report(self, collector):
        return self.fail((yield), collector.nodeid or "collection")

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item, call):
        return self.fail((yield), f"{item.nodeid} ({call.when})")

    def pytest_collection_finish(self, session):
        unseen = [name for name in FRAMEWORKS if name in sys.modules and name not in self.seen]
        if unseen:  # imported before this guard was installed: by a plugin or a conftest
            raise pytest.UsageError(f"{' and '.join(unseen)} imported before collecting framework-free tests")

    def pytest_unconfigure(self, config):
        sys.meta_path.remove(self)

    def pytest_terminal_summary(self, terminalreporter):
        if hasattr(terminalreporter.config, "workerinput") or terminalreporter.config.getoption("dist", "no") != "no":
            return  # under xdist each worker guards itself; their summaries are not shown
        present = [name for name in FRAMEWORKS if name in sys.modules]
        folders = " ".join(f"tests/{folder}" for folder in FRAMEWORK_FREE)
        found = f"{' and '.join(present)} imported" if present else "neither mindspore nor torch was imported"
        terminalreporter.write_line(f"framework-free ({folders}): {found}")


# -- PARITY_TEST_PERTURB_ULPS=4: every MindSpore pass parity runs, as on another CPU -----------------

PERTURB_ULPS = float(os.environ.get("PARITY_TEST_PERTURB_ULPS") or 0)
# Half precision moves by half an ulp of its dtype: about two roundings more per layer, what the golden
# judge is measured against (parity.judge.golden); a few ulps of float16 would be a real difference.
_HALF_ULPS = 0.5


def _perturbing(seed: int, ulps: float) -> pytest.MonkeyPatch:
    """Every PYNATIVE MindSpore pass parity runs (a check's forward and VJP, a training step, a
    decoding step) with each leaf sub-Cell's outputs and the gradients flowing into them moved by up
    to ``ulps`` units in the last place (:func:`parity.backends.mindspore.perturbed`), half precision
    by half an ulp: MindSpore as another CPU's kernels may round. Each pass starts from ``seed``, so
    the same pass rounds the same way every time, as on a real CPU. GRAPH mode runs no hooks: its
    passes stay as they are; so does a model the test perturbs itself (its seeds are the point)."""
    import mindspore as ms

    from parity.backends import mindspore as msb

    jitter, perturbed, own = msb._jitter, msb.perturbed, set()

    def half_aware(tensor, rng, amount):
        half = isinstance(tensor, ms.Tensor) and tensor.dtype in (ms.float16, ms.bfloat16)
        return jitter(tensor, rng, min(amount, _HALF_ULPS) if half else amount)

    @contextlib.contextmanager
    def tests_own(model, **kwargs):
        own.add(id(model))
        try:
            with perturbed(model, **kwargs):
                yield
        finally:
            own.discard(id(model))

    def wrap(run, model_of, mode_of):
        @functools.wraps(run)
        def perturbed_run(*args, **kwargs):
            model = model_of(args, kwargs)
            if mode_of(args, kwargs) == "graph" or id(model) in own:
                return run(*args, **kwargs)
            with perturbed(model, seed=seed, ulps=ulps):
                return run(*args, **kwargs)

        return perturbed_run

    patch = pytest.MonkeyPatch()
    patch.setattr(msb, "_jitter", half_aware)
    patch.setattr(msb, "perturbed", tests_own)
    patch.setattr(msb.Pass, "__init__", wrap(msb.Pass.__init__, lambda a, k: a[1], lambda a, k: k.get("mode")))
    patch.setattr(msb.TrainStep, "launch", wrap(msb.TrainStep.launch, lambda a, k: a[0].model, lambda a, k: a[0].mode))
    patch.setattr(msb, "decode", wrap(msb.decode, lambda a, k: a[0], lambda a, k: k.get("mode", "pynative")))
    return patch


@pytest.fixture(autouse=True)
def _perturbed_mindspore(request):
    """With PARITY_TEST_PERTURB_ULPS set, the test's MindSpore passes are perturbed (see
    :func:`_perturbing`), seeded by its node id; ``@pytest.mark.unperturbed("why")`` exempts it."""
    marker = request.node.get_closest_marker("unperturbed")
    if marker is not None and not (marker.args or marker.kwargs.get("reason")):
        pytest.fail("@pytest.mark.unperturbed needs its reason: unperturbed('why MindSpore's own bits')")
    if not PERTURB_ULPS or marker is not None or framework_free(request.node.path):
        yield
        return
    patch = _perturbing(zlib.crc32(request.node.nodeid.encode()), PERTURB_ULPS)
    try:
        yield
    finally:
        patch.undo()


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
    """A headless Chromium for the report page's tests (tests/test_report_page.py, test_report_tree.py,
    nightly/test_tree.py)."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (the `test` extra)")
    with sync_api.sync_playwright() as playwright:
        chromium = _chromium(playwright)
        yield chromium
        chromium.close()
