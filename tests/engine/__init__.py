"""Tests of ``parity.engine`` that need neither framework (``make test-core``): inputs, results,
messages, catalogue cases and the localiser's arithmetic. A check run on real pairs is tested at
``tests/``.

A package, so that a module here may share its name with one at ``tests/``."""
