"""Tests of ``parity.judge``: numbers only, collected without either framework (``make test-core``).

A package, so that a module here may share its name with one at ``tests/``."""
