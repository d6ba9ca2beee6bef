"""Tests of ``parity.nightly``: records, baselines, drift, shards, quarantine and the report page,
without either framework (``make test-core``).

A package, so that a module here may share its name with one at ``tests/``."""
