"""Known mismatches proven on the installed frameworks.

The registry (:mod:`parity.registry`) is data: entries, their rules, diagnosis and lint. This
package runs that data through the engine: each entry's ``[mismatch.selftest]`` pair is built and
checked with :func:`parity.check`'s runner, the naive pair must differ as stated and the fixed pair
must agree (:func:`selftest`); an ``[[available]]`` record must run and agree
(:func:`check_available`). ``python -m parity.mismatch_checks`` runs them from the command line and
``python -m parity.mismatch_checks measure`` stores the numbers the generated document shows.

The dependency runs one way: this package imports the registry and the engine; nothing in
:mod:`parity.registry` imports this package, the engine or the backends. May import: the engine,
the judge, the weights, the backends, the registry, the translation and :mod:`parity.errors`.
"""

from __future__ import annotations

from .pairs import Measurement, check_available, resolve
from .selftests import STATUSES, SelfTestOutcome

__all__ = ["selftest", "SelfTestOutcome", "Measurement", "STATUSES", "check_available", "resolve"]


def selftest(entry, *, device: str = "CPU", seed: int = 1234, check_range: bool = False) -> SelfTestOutcome:
    """Run ``entry``'s self-test (an :class:`~parity.registry.Entry` or an id) on the installed
    frameworks; ``check_range=True`` runs it also where its version range leaves out the installed
    versions, to measure the range (see :mod:`parity.mismatch_checks.selftests`). Imports MindSpore
    and PyTorch."""
    from ..registry import load
    from .selftests import selftest as _selftest

    if isinstance(entry, str):
        entry = load().get(entry)
    return _selftest(entry, device=device, seed=seed, check_range=check_range)
