"""The pytest side: hooks, options, the ``parity`` marker and fixture, and catalogue collection.

This module holds the hooks (the entry point ``parity.plugin``); the catalogue's items and the
fixture are in :mod:`.items`, JUnit properties in :mod:`.junit`, shards and quarantine hooks in
:mod:`.fleet`. Loading this plugin imports neither framework: everything heavy is imported when a
parity test runs, and parity tests are skipped unless ``--parity`` is given.

May import: the engine and the translation (lazily, from a running test: the fixture's checks and
``translate``), the nightly records, baselines, shards and quarantine, the registry's ledger,
:mod:`parity.options` and :mod:`parity.errors`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .. import options as opts
from ..engine.settings import DEFAULT_SEED
from ..errors import ParityUsageError
from ..nightly import baseline as nightly
from ..nightly import records
from . import fleet, junit

STRICT_MISMATCHES = "--parity-strict-mismatches"
REPORT = "--parity-report"
SKIP_REASON = "parity test: run with `pytest --parity` (MindSpore and PyTorch are imported only then)"


def pytest_addoption(parser):
    group = parser.getgroup("parity", "MindSpore <-> PyTorch parity")
    group.addoption(
        opts.PARITY,
        action="store_true",
        default=False,
        help="run parity tests and the catalogue (without it they are skipped)",
    )
    for option in opts.OPTIONS:
        group.addoption(
            option.flag,
            dest=option.dest,
            choices=option.choices,
            default=option.default,
            metavar=option.metavar,
            help=option.help,
        )
    for option in (opts.RECORD, opts.REFERENCE):
        group.addoption(option.flag, dest=option.dest, metavar=option.metavar, help=option.help)
    group.addoption(
        STRICT_MISMATCHES,
        action="store_true",
        default=False,
        help="fail the run when an acknowledged known mismatch did not show (stale)",
    )
    group.addoption(
        REPORT,
        dest="parity_report",
        metavar="PATH",
        help="write one JSON record per check and the run's environment to PATH (JSON lines)",
    )
    parser.addini("parity_cases", "folders holding the parity catalogue (ParityCase modules)", type="paths", default=[])
    group.addoption(
        fleet.SHARD,
        dest="parity_shard",
        metavar="I/N",
        help="run only the I-th of N disjoint shards (1-based); the N shards together are the whole run",
    )
    group.addoption(
        fleet.DURATIONS,
        dest="parity_durations",
        action="append",
        metavar="PATH",
        help="balance the shards on the durations in an earlier --parity-report (repeatable)",
    )
    group.addoption(
        fleet.QUARANTINE,
        dest="parity_quarantine",
        metavar="PATH",
        help="the quarantine file (default: parity-quarantine.toml at the root, when there is one)",
    )
    group.addoption(
        fleet.RERUN_QUARANTINED,
        dest="parity_rerun_quarantined",
        action="store_true",
        default=False,
        help="run only the quarantined tests and list those that now pass (stale quarantine)",
    )
    parser.addini(fleet.QUARANTINE_INI, "the quarantine file, relative to the ini file", default="")
    nightly.add_options(group)


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "parity(**check_kwargs): a parity test; its keyword arguments are "
        "defaults for parity.check (tolerance=, train=, ms_mode=, reference=...)",
    )
    config.addinivalue_line(
        "markers",
        "parity_mismatches(torch_api=None, mindspore_api=None): parametrise the "
        "`parity_mismatch` fixture over the known mismatches of these APIs",
    )
    config.pluginmanager.register(_LedgerKeeper(config), "parity-ledger")
    # before the report writer empties its file, which may also be the one --parity-durations names
    config.pluginmanager.register(fleet.Fleet.from_config(config), "parity-fleet")
    nightly.register(config)  # --parity-baseline, --parity-save-baseline: in the controller only
    if not hasattr(config, "workerinput"):  # xdist's workers hand their records to the controller
        if config.getoption("parity_report"):
            config.pluginmanager.register(_ReportWriter(config), "parity-report")
        if getattr(config.option, "xmlpath", None):
            config.pluginmanager.register(_WholeJunitMessages(config), "parity-junit")
    try:
        opts.parse_seed(config.getoption(opts.SEED.dest), opts.SEED.flag)
        opts.parse_repro_dir(config.getoption(opts.REPRO.dest), opts.REPRO.flag, config.invocation_params.dir)
        opts.parse_reference_dirs(
            config.getoption(opts.RECORD.dest), config.getoption(opts.REFERENCE.dest), config.invocation_params.dir
        )
    except ParityUsageError as exc:
        raise pytest.UsageError(str(exc)) from None


def pytest_collect_file(file_path: Path, parent):
    from ..catalogue import looks_like_case_file

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


class _LedgerKeeper:
    """Fills the known-mismatch ledger from test reports, wherever they arrive (xdist's
    controller too), and fails a ``--parity-strict-mismatches`` run that has stale entries."""

    def __init__(self, config):
        from ..registry.ledger import Ledger

        self.config = config
        self.ledger = Ledger()

    def pytest_runtest_logreport(self, report):
        if report.when == "call":
            for key, value in getattr(report, "user_properties", ()):
                if key == "parity-mismatch":
                    self.ledger.record(value[0], report.nodeid, triggered=bool(value[1]))

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session):
        if self.config.getoption(STRICT_MISMATCHES) and self.ledger.stale():
            session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture(scope="session")
def parity_registry():
    """The known-mismatch registry (``parity.registry.Registry``), loaded and validated once."""
    from ..registry import load

    return load()


@pytest.fixture
def parity_mismatch(request, parity_registry):
    """One known-mismatch entry: parametrise it by id (``indirect=True``) or with
    ``@pytest.mark.parity_mismatches(torch_api=...)``; ``parity.mismatch_checks.selftest(entry)`` proves it."""
    if not hasattr(request, "param"):
        raise ParityUsageError(
            "parity_mismatch needs an entry id: @pytest.mark.parametrize('parity_mismatch', "
            "['conv2d-pad-mode-default'], indirect=True) or @pytest.mark.parity_mismatches(...)"
        )
    return parity_registry.get(request.param)


def pytest_generate_tests(metafunc):
    marker = metafunc.definition.get_closest_marker("parity_mismatches")
    if marker is None or "parity_mismatch" not in metafunc.fixturenames:
        return
    from ..registry import load

    entries = load().for_api(**marker.kwargs)
    if not entries:
        raise ParityUsageError(f"@pytest.mark.parity_mismatches({marker.kwargs}) matches no known mismatch")
    ids = [entry.id for entry in entries]
    metafunc.parametrize("parity_mismatch", ids, indirect=True, ids=ids)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if report.when == "call":
        line = getattr(item, "_parity_summary", None)
        if line is not None:
            report.user_properties.append(("parity", line))
        for entry_id, showed in getattr(item, "_parity_acks", ()):
            report.user_properties.append(("parity-mismatch", (entry_id, showed)))
    carry = bool(item.config.getoption("parity_report")) or nightly.wants_records(item.config)
    records.attach(item, report, records=carry)
    if report.when == "teardown" and getattr(item.config.option, "xmlpath", None):
        report.user_properties.extend(junit.properties(records.item_records(item)))
    return report


class _ReportWriter:
    """Writes ``--parity-report``: the environment first, then each check's record as its report
    arrives (under xdist each report arrives here once, from its worker); a test that never
    finished, because its xdist worker crashed or the run was interrupted while it ran, as one
    ``crashed`` or ``interrupted`` record (see :func:`parity.nightly.records.lost_record`)."""

    def __init__(self, config):
        path = config.invocation_params.dir / config.getoption("parity_report")
        try:
            self.file = records.RecordFile(path, REPORT)
        except ParityUsageError as exc:
            raise pytest.UsageError(str(exc)) from None
        self.config = config
        self.running = {}  # node id -> None: started and not finished, in the order started
        self.written = {}  # node id -> how many records were written for it
        self.down = {}  # xdist worker id -> why it went down
        self.lost = []  # (node id, verdict) of each crashed or interrupted test recorded

    def pytest_sessionstart(self, session):
        self.file.write(nightly.environment(self.config))

    def pytest_runtest_logstart(self, nodeid, location):
        self.running[nodeid] = None

    def pytest_runtest_logfinish(self, nodeid, location):
        self.running.pop(nodeid, None)

    def pytest_runtest_logreport(self, report):
        for record in records.carried(report):
            self.file.write(record)
            self.written[report.nodeid] = self.written.get(report.nodeid, 0) + 1

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node, error):
        if error is not None:
            self.down[node.gateway.id] = error

    @pytest.hookimpl(optionalhook=True, trylast=True)
    def pytest_handlecrashitem(self, crashitem, report, sched):
        if report.outcome == "rerun":  # another plugin runs it again
            return
        worker = getattr(getattr(report, "node", None), "gateway", None)
        worker = getattr(worker, "id", None)
        why = self.down.get(worker)
        verdict = "interrupted" if why == "keyboard-interrupt" else "crashed"
        what = "was interrupted" if verdict == "interrupted" else "crashed"
        self._lost(
            crashitem,
            verdict,
            f"xdist worker {worker} {what} while running this test "
            f"({why or 'no reason given'}); its checks were not recorded",
            worker,
        )

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session, exitstatus):
        if exitstatus != pytest.ExitCode.INTERRUPTED:
            return
        for nodeid in list(self.running) or ([] if self.lost else ["(run)"]):
            self._lost(
                nodeid,
                "interrupted",
                "the run was interrupted while this test ran; its checks were not "
                "recorded, and the tests after it did not run"
                if nodeid != "(run)"
                else "the run was interrupted between tests; the tests after that point did not run",
                None,
            )

    def _lost(self, nodeid, verdict, message, worker):
        self.running.pop(nodeid, None)
        self.lost.append((nodeid, verdict))
        seed = opts.parse_seed(self.config.getoption(opts.SEED.dest), opts.SEED.flag)
        self.file.write(
            records.lost_record(
                nodeid=nodeid,
                verdict=verdict,
                message=message,
                index=self.written.get(nodeid, 0),
                worker=worker,
                device=self.config.getoption(opts.DEVICE.dest),
                seed=DEFAULT_SEED if seed is None else seed,
            )
        )
        self.written[nodeid] = self.written.get(nodeid, 0) + 1

    def pytest_unconfigure(self):
        self.file.close()


class _WholeJunitMessages:
    def __init__(self, config):
        self.config = config

    @pytest.hookimpl(trylast=True)  # after pytest's JUnit writer has made the element
    def pytest_runtest_logreport(self, report):
        junit.whole_failure_message(self.config, report)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    lines = []
    for report in (
        r for kind in ("passed", "failed", "xfailed", "xpassed") for r in terminalreporter.stats.get(kind, [])
    ):
        for key, line in getattr(report, "user_properties", ()):
            if key == "parity":
                lines.append(line)
    keeper = config.pluginmanager.get_plugin("parity-ledger")
    lines += keeper.ledger.summary_lines(strict=config.getoption(STRICT_MISMATCHES))
    lines += config.pluginmanager.get_plugin("parity-fleet").summary_lines()
    writer = config.pluginmanager.get_plugin("parity-report")
    if writer is not None and writer.lost:
        shown = ", ".join(f"{nodeid} ({verdict})" for nodeid, verdict in writer.lost[:5])
        lines.append(
            f"the run was cut short: {len(writer.lost)} test{'' if len(writer.lost) == 1 else 's'} did not "
            f"finish, recorded in {REPORT} as such: {shown}" + (" ..." if len(writer.lost) > 5 else "")
        )
    if lines:
        terminalreporter.write_sep("=", "parity summary")
        for line in lines:
            terminalreporter.write_line(line)
