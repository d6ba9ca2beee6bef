"""Tests of ``parity.plugin`` without ``--parity`` and of its options: loading the plugin imports
no framework (``make test-core``). The plugin running real checks is tested at ``tests/``.

A package, so that a module here may share its name with one at ``tests/``."""
