"""The engine: one check from a pair of models to a verdict.

Owns :func:`parity.check` (:mod:`.check`: settings, the passes of :mod:`.passes`, the registry's
causes in :mod:`.causes`), inputs (:mod:`.inputs`), layer localisation (:mod:`.localize`), each
layer's own error (:mod:`.own`),
results (:mod:`.result`) and failure messages (:mod:`.messages`), mixed precision (:mod:`.amp`),
what a framework raises (:mod:`.side_errors`), the catalogue's case declarations (:mod:`.case`),
training parity (:mod:`.training`), data parallelism (:mod:`.data_parallel`) and standalone repros
of failed checks (:mod:`.repro`).

May import: the judge, the weights, the backends (lazily: importing the engine imports no
framework), the registry, the translation and :mod:`parity.options`. Never the plugin, the nightly
reports or the tools.
"""
