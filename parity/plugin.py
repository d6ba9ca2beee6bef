"""pytest hooks, options, the ``parity`` marker and fixture, and catalogue collection.

Loading this plugin imports neither framework: everything heavy is imported when a parity test
runs, and parity tests are skipped unless ``--parity`` is given.
"""

from __future__ import annotations

from pathlib import Path
import pytest

from . import options as opts
from .errors import ParityUsageError

SKIP_REASON = "parity test: run with `pytest --parity` (MindSpore and PyTorch are imported only then)"


def pytest_addoption(parser):
    group = parser.getgroup("parity", "MindSpore <-> PyTorch parity")
    group.addoption(opts.PARITY, action="store_true", default=False,
                    help="run parity tests and the catalogue (without it they are skipped)")
    for option in opts.OPTIONS:
        group.addoption(option.flag, dest=option.dest, choices=option.choices, default=option.default,
                        metavar=option.metavar, help=option.help)
    parser.addini("parity_cases", "folders holding the parity catalogue (ParityCase modules)",
                  type="paths", default=[])


def pytest_configure(config):
    config.addinivalue_line("markers", "parity(**check_kwargs): a parity test; its keyword arguments are "
                                       "defaults for parity.check (tolerance=, train=, ms_mode=, reference=...)")
    if config.getoption(opts.SEED.dest) is not None:
        try:
            opts.parse_seed(config.getoption(opts.SEED.dest), opts.SEED.flag)
        except ParityUsageError as exc:
            raise pytest.UsageError(str(exc)) from None


def pytest_collect_file(file_path: Path, parent):
    from .case import looks_like_case_file

    if file_path.suffix != ".py" or file_path.name == "conftest.py":
        return None
    roots = parent.config.getini("parity_cases")
    if any(root == file_path or root in file_path.parents for root in roots) and looks_like_case_file(file_path):
        from .items import CaseFile

        return CaseFile.from_parent(parent, path=file_path)
    return None


def pytest_collection_modifyitems(config, items):
    if config.getoption(opts.PARITY):
        return
    skip = pytest.mark.skip(reason=SKIP_REASON)
    for item in items:
        if item.get_closest_marker("parity") or "parity" in getattr(item, "fixturenames", ()):
            item.add_marker(skip)


@pytest.fixture
def parity(request):
    """``parity.check(ms_cell, torch_module, inputs, **kwargs)`` bound to this session's settings
    (seed, mode, device) and to the test's ``@pytest.mark.parity(...)`` defaults."""
    from .items import FixtureChecker

    if not request.config.getoption(opts.PARITY):
        pytest.skip(SKIP_REASON)
    return FixtureChecker(request)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    line = getattr(item, "_parity_summary", None)
    if line is not None and report.when == "call":
        report.user_properties.append(("parity", line))
    return report


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    lines = []
    for report in (r for kind in ("passed", "failed", "xfailed", "xpassed") for r in terminalreporter.stats.get(kind, [])):
        for key, line in getattr(report, "user_properties", ()):
            if key == "parity":
                lines.append(line)
    if lines:
        terminalreporter.write_sep("=", "parity summary")
        for line in lines:
            terminalreporter.write_line(line)
