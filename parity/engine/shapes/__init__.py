"""Dynamic shapes: :func:`parity.check_shapes`, one pair checked over several input shapes, each
judged as :func:`parity.check` judges, GRAPH mode compiled once for a dynamic signature.

Modules: ``run`` (the check, the dynamic signature and the failure message) and ``result``
(framework-free: the nightly records read it). May import what the rest of the engine may, and
:mod:`parity.engine.check`.
"""
