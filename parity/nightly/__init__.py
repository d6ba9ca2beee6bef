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
