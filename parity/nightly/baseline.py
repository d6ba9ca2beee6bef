"""The hooks behind ``--parity-baseline`` and ``--parity-save-baseline``: compare this run's check
records with a stored run, store this run (plugin.py adds the options and registers
:class:`Baseline` through :func:`add_options` and :func:`register`).

The records are those ``--parity-report`` writes (parity/nightly/records.py): they travel from xdist's
workers in the test reports, so the controller, where :class:`Baseline` lives, sees every check
once. The baseline is read at configure time (a bad path stops the run there, and a run may save
over the baseline it compares with); the comparison and the saving happen at session finish.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Set, Union

import pytest

from .. import options as opts
from ..errors import ParityUsageError
from . import drift, records, runs

__all__ = [
    "BASELINE",
    "SAVE_BASELINE",
    "DRIFT",
    "DRIFT_FAILS",
    "Baseline",
    "add_options",
    "register",
    "wants_records",
    "parse_factor",
]

BASELINE = "--parity-baseline"
SAVE_BASELINE = "--parity-save-baseline"
DRIFT = "--parity-drift"
DRIFT_FAILS = "--parity-drift-fails"


def add_options(group: pytest.OptionGroup) -> None:
    group.addoption(
        BASELINE,
        dest="parity_baseline",
        metavar="DIR",
        help="compare this run's checks with the run stored in DIR (by --parity-save-baseline; a "
        "--parity-report file works too): new failures, fixes, drift",
    )
    group.addoption(
        SAVE_BASELINE,
        dest="parity_save_baseline",
        metavar="DIR",
        help=f"store this run's check records and environment in DIR/{runs.BASELINE_FILE}",
    )
    group.addoption(
        DRIFT,
        dest="parity_drift",
        metavar="FACTOR",
        default=None,
        help=f"a passing tensor drifts when its margin grows more than FACTOR times over the "
        f"baseline's (default {drift.DEFAULT_FACTOR:g}; margins under {drift.FLOOR:g} count as "
        f"{drift.FLOOR:g})",
    )
    group.addoption(
        DRIFT_FAILS,
        dest="parity_drift_fails",
        choices=("yes", "no"),
        default="yes",
        help="whether drift fails the run (default yes); new failures always do",
    )


def wants_records(config: pytest.Config) -> bool:
    """Whether the tests' reports must carry their check records (to the controller)."""
    return bool(config.getoption("parity_baseline") or config.getoption("parity_save_baseline"))


def register(config: pytest.Config) -> None:
    """Register :class:`Baseline` in the process that sees every report (not in xdist's workers)."""
    if wants_records(config) and not hasattr(config, "workerinput"):
        config.pluginmanager.register(Baseline.from_config(config), "parity-baseline")


def parse_factor(value: object, where: str) -> float:
    """A drift factor: a finite number greater than 1."""
    try:
        factor = float(value)  # type: ignore[arg-type]  # anything given: what float() refuses is reported
    except (TypeError, ValueError):
        raise ParityUsageError(f"{where}: expected a number greater than 1 (for example 4), got {value!r}") from None
    if not (math.isfinite(factor) and factor > 1):
        raise ParityUsageError(f"{where}: the drift factor must be a finite number greater than 1, got {value!r}")
    return factor


class Baseline:
    def __init__(
        self,
        config: pytest.Config,
        baseline: Optional[runs.Run],
        save: Optional[Path],
        factor: float,
        drift_fails: bool,
    ) -> None:
        self.config = config
        self.baseline = baseline
        self.save = save
        self.factor = factor
        self.drift_fails = drift_fails
        self.checks: List[Dict[str, Any]] = []
        self.collected: Optional[Set[str]] = None
        self.environment: Dict[str, Any] = {}
        self.comparison: Optional[drift.Comparison] = None
        self.saved: Optional[Path] = None

    @classmethod
    def from_config(cls, config: pytest.Config) -> Baseline:
        try:
            return cls._from_config(config)
        except ParityUsageError as exc:
            raise pytest.UsageError(str(exc)) from None

    @classmethod
    def _from_config(cls, config: pytest.Config) -> Baseline:
        given = [
            flag
            for flag, dest in ((BASELINE, "parity_baseline"), (SAVE_BASELINE, "parity_save_baseline"))
            if config.getoption(dest)
        ]
        if not config.getoption(opts.PARITY):
            raise ParityUsageError(
                f"{' and '.join(given)} need {opts.PARITY}: without it parity tests are skipped "
                "and make no checks to compare or store"
            )
        here = config.invocation_params.dir
        factor = config.getoption("parity_drift")
        factor = drift.DEFAULT_FACTOR if factor is None else parse_factor(factor, DRIFT)
        baseline = None
        if config.getoption("parity_baseline"):
            stored = runs.load_baselines(here / config.getoption("parity_baseline"), BASELINE)
            if len(stored) > 1:
                raise ParityUsageError(
                    f"{BASELINE}: {config.getoption('parity_baseline')} holds several baselines "
                    f"(a history); give the folder of one night"
                )
            baseline = stored[0]
        save = None
        if config.getoption("parity_save_baseline"):
            save = here / config.getoption("parity_save_baseline")
            if save.exists() and not save.is_dir():
                raise ParityUsageError(
                    f"{SAVE_BASELINE}: {save} is a file; give a folder (it will hold {runs.BASELINE_FILE})"
                )
            try:
                save.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise ParityUsageError(f"{SAVE_BASELINE}: cannot create folder {save}: {exc.strerror}") from None
        return cls(config, baseline, save, factor, config.getoption("parity_drift_fails") == "yes")

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self.environment = environment(self.config)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.collected = (self.collected or set()) | {item.nodeid for item in session.items}

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: object, ids: Sequence[str]) -> None:
        self.collected = (self.collected or set()) | set(ids)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.checks.extend(records.carried(report))

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: Union[int, pytest.ExitCode]) -> None:
        if exitstatus in (pytest.ExitCode.INTERRUPTED, pytest.ExitCode.INTERNAL_ERROR, pytest.ExitCode.USAGE_ERROR):
            return
        if self.baseline is not None:
            self.comparison = drift.compare(
                self.baseline, self.checks, self.environment, factor=self.factor, collected=self.collected
            )
            if self.comparison.regressions(drift_fails=self.drift_fails) and session.exitstatus == pytest.ExitCode.OK:
                session.exitstatus = pytest.ExitCode.TESTS_FAILED
        if self.save is not None:
            self.saved = runs.save_baseline(self.save, self.environment, self.checks)

    def summary_lines(self) -> List[str]:
        lines: List[str] = []
        if self.comparison is not None:
            lines += self.comparison.summary_lines()
            failing = self.comparison.regressions(drift_fails=self.drift_fails)
            if failing:
                lines.append(f"the run fails: {', '.join(failing)} against the baseline")
            if self.comparison.drifted_tensors and not self.drift_fails:
                lines.append(f"drift does not fail the run ({DRIFT_FAILS}=no)")
        if self.saved is not None:
            lines.append(f"baseline saved: {self.saved} ({len(self.checks)} checks)")
        return lines

    @pytest.hookimpl(trylast=True)  # after the parity summary
    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        lines = self.summary_lines()
        if lines:
            terminalreporter.write_sep("=", "parity baseline")
            for line in lines:
                terminalreporter.write_line(line)


def environment(config: pytest.Config) -> Dict[str, Any]:
    """This run's environment record (:func:`parity.nightly.records.fingerprint`), taken once: the
    ``--parity-report`` file and a saved baseline hold the same one."""
    found: Optional[Dict[str, Any]] = getattr(config, "_parity_environment", None)
    if found is None:
        found = records.fingerprint(
            root=config.rootpath,
            device=config.getoption(opts.DEVICE.dest),
            seed=config.getoption(opts.SEED.dest),
            mode=config.getoption(opts.MODE.dest),
            workers=getattr(config.option, "numprocesses", None),
        )
        config._parity_environment = found  # type: ignore[attr-defined]  # kept on the config for the run
    return found
