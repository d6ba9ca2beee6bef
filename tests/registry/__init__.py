"""Tests of ``parity.registry``: the known-mismatch data, without either framework (``make test-core``).

A package, so that a module here may share its name with one at ``tests/``."""
