"""Import paths of the flat layout that 0.2 moved into packages: ``import parity.runner`` and the
like keep working for one release, as the module's new home, with a :class:`DeprecationWarning`
naming it. The table is the whole list (CHANGELOG.md, "0.2.0"); nothing else is aliased."""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings
from types import FrameType
from typing import Optional

__all__ = ["MOVED", "IN_PACKAGES", "install", "warn", "old_names"]

MOVED = {
    "case": ("engine.case",),
    "localize": ("engine.localize",),
    "result": ("engine.result",),
    "runner": (
        "engine.check",
        "engine.passes",
        "engine.causes",
        "engine.side_errors",
        "judge.metrics",
        "judge.envelope",
    ),
    "report": ("engine.messages",),
    "inputs": ("engine.inputs",),
    "mixed_precision": ("engine.amp",),
    "training": ("engine.training", "engine.training.loop", "engine.training.messages", "engine.training.result"),
    "loss_scale": ("engine.training.loss_scale",),
    "distributed": ("engine.data_parallel.run",),
    "distributed_result": ("engine.data_parallel.result",),
    "launch": ("engine.data_parallel.launch",),
    "_dp_worker": ("engine.data_parallel.worker",),
    "compare": ("judge.metrics", "judge.envelope"),
    "tolerance": ("judge.tolerance",),
    "devices": ("judge.devices",),
    "precision": ("judge.dtypes", "judge.golden", "engine.inputs", "engine.side_errors"),
    "pairing": ("weights.pairing",),
    "layouts": ("weights.layouts",),
    "items": ("plugin.items",),
    "junit": ("plugin.junit",),
    "fleet": ("plugin.fleet",),
    "records": ("nightly.records",),
    "runs": ("nightly.runs",),
    "drift": ("nightly.drift",),
    "environment": ("nightly.environment",),
    "shards": ("nightly.shards",),
    "quarantine": ("nightly.quarantine",),
    "report_page": ("nightly.page",),
    "report_markdown": ("nightly.markdown",),
    "report_cli": ("nightly.cli",),
    "plot": ("nightly.plot",),
    "convert": ("tools.convert.checkpoint",),
    "convert_report": ("tools.convert.report",),
    "scan": ("tools.scan.scanner",),
    "scan_ast": ("tools.scan.source",),
    "scan_report": ("tools.scan.report",),
    "scan_runtime": ("tools.scan.runtime",),
    "scan_status": ("tools.scan.status",),
    "scan_torch_source": ("tools.scan.torch_source",),
    "dumps": ("tools.dumps.compare",),
    "dump_files": ("tools.dumps.files",),
    "dump_names": ("tools.dumps.names",),
    "dumps_cli": ("tools.dumps.cli",),
    "dumps_report": ("tools.dumps.report",),
}
# Two old modules' names are packages now: their old contents are read through the package's
# __getattr__ (parity.weights and parity.nightly), with the same warning.
IN_PACKAGES = {"weights": "weights.transfer", "nightly": "nightly.baseline"}


def old_names(package: str, module: str, names):
    """The ``__getattr__`` of ``package``, whose flat-layout module of the same name now lives in
    ``package.module``: the old module's public ``names`` read from there, with the warning; any
    other name (a submodule's among them) raises AttributeError, so that the import system goes on."""

    def __getattr__(name):
        if name not in names:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        warn(f"{package}.{name}", f"{package}.{module}.{name}")
        return getattr(importlib.import_module(f"{package}.{module}"), name)

    return __getattr__


def warn(old: str, new: str) -> None:
    warnings.warn(
        f"{old} moved to {new}; the old path goes in the next release", DeprecationWarning, stacklevel=_caller_level()
    )


class _Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds ``parity.<old name>`` (after every other finder has not) and loads it as the module at
    its new path, or, where the old module was split, as a module reading each name from the new
    ones in turn."""

    def find_spec(self, fullname, path=None, target=None):
        package, _, name = fullname.partition(".")
        if package != "parity" or name not in MOVED:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        old = module.__name__
        targets = [f"parity.{new}" for new in MOVED[old.partition(".")[2]]]
        warn(old, " and ".join(targets))
        found = [importlib.import_module(name) for name in targets]
        if len(found) == 1:
            sys.modules[old] = found[0]  # the import system takes what sys.modules holds once this returns
            return

        def __getattr__(name):
            for new in found:
                if hasattr(new, name):
                    return getattr(new, name)
            raise AttributeError(f"module {old!r} has no attribute {name!r} (it moved to {', '.join(targets)})")

        module.__getattr__ = __getattr__


def _caller_level() -> int:
    """The warning's stack level: the first frame outside the import machinery and this module."""
    frame: Optional[FrameType] = sys._getframe(1)
    level = 1
    while frame is not None and (
        frame.f_code.co_filename.startswith("<frozen importlib") or frame.f_code.co_filename == __file__
    ):
        frame, level = frame.f_back, level + 1
    return level


def install() -> None:
    if not any(isinstance(finder, _Alias) for finder in sys.meta_path):
        sys.meta_path.append(_Alias())
