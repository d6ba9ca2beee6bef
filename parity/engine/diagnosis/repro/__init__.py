"""Standalone repros: the smallest part of a failed pair that still fails, written as a test file
and one data file that need only MindSpore, PyTorch, numpy and pytest.

:func:`choose_target` picks the layer (:mod:`.capture` catches its inputs, output gradient and
weights and proves the layers built again from :mod:`.constructors`' recipes compute what the
check's did; :mod:`.standalone` holds the functions the file carries; :mod:`.render` writes and
runs it). The layer itself when it fails on PyTorch's inputs, else its smallest enclosing
sub-module that does; its inputs shrunk while it fails the same way.

Modules: ``cut`` (the target chosen, the repro written and offered), ``capture``,
``constructors``, ``standalone`` and ``render``. Imports nothing here: the repro runs both
frameworks.
"""
