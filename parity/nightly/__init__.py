"""Nightly runs: what a run records and how runs are compared and shown.

Owns the ``--parity-report`` records and the run's environment (:mod:`.records`,
:mod:`.environment`), stored runs, baselines and drift (:mod:`.runs`, :mod:`.drift`,
:mod:`.baseline`), shards and quarantine (:mod:`.shards`, :mod:`.quarantine`), the ``parity report``
command (:mod:`.cli`) with its HTML page, Markdown summary and training plots (:mod:`.page`,
:mod:`.markdown`, :mod:`.plot`).

May import: the judge, the engine's result types (to turn a result into a record), pytest (the
hooks of records, baselines and shards), :mod:`parity.options` and :mod:`parity.errors`. Never a
framework: a report is made on a machine without one.
"""


# The flat layout's parity.nightly module, whose names now live in .baseline (see parity._moved).
_OLD_NAMES = ("BASELINE", "SAVE_BASELINE", "DRIFT", "DRIFT_FAILS", "Baseline", "add_options", "register",
               "wants_records", "parse_factor")


def __getattr__(name):
    """``parity.nightly.X`` of the flat layout, for the old module's public names only (a
    submodule's name must reach the import system untouched)."""
    if name not in _OLD_NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    from .._moved import warn

    warn(f"{__name__}.{name}", f"{__name__}.baseline.{name}")
    return getattr(importlib.import_module(".baseline", __name__), name)
