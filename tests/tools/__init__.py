"""Tests of ``parity.tools`` that need neither framework (``make test-core``): compare-dumps, the
static scan, the converter's usage errors.

A package, so that a module here may share its name with one at ``tests/``."""
