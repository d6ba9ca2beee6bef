"""The engine: one check from a pair of models to a verdict, laid out by when the code runs.

At the top, the path every check takes: :mod:`.check` (``run_check``), :mod:`.settings`,
:mod:`.pairing` (the weights), :mod:`.inputs`, :mod:`.passes`, :mod:`.outputs`,
:mod:`.side_errors`, :mod:`.amp`, :mod:`.result`, :mod:`.translating` and :mod:`.factories`.
:mod:`.diagnosis` runs only on a failure (layers, own errors, causes, the message, repros); the
variants of the check have a package each: :mod:`.training`, :mod:`.data_parallel`,
:mod:`.generation`, :mod:`.shapes`.

May import: the judge, the weights, the backends, the registry, the translation and
:mod:`parity.options`; never the plugin, the nightly reports, the tools or the catalogue. The
modules that run a check import the backends at their top; ``settings``, ``factories``,
``inputs``, ``result``, ``amp``, ``outputs``, the result types and messages, and every package's
``__init__`` import no framework (the plugin, the catalogue and the nightly reports import them).
"""
