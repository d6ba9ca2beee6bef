"""Known mismatches between MindSpore and PyTorch, as data with a lifecycle.

Owns the entries of ``parity/data/mismatches/*.toml``, one per known difference (a default, a name,
a layout, a formula, a missing feature or kernel, a precision), and what is said with them: loading
and validating (:func:`load`; the schema is docs/registry.md), queries (:meth:`Registry.get`,
:meth:`Registry.for_api`), matching against built models (:func:`diagnose`, :func:`likely_causes`)
and cases (:func:`lint`), the session's ledger of acknowledged entries (:class:`Ledger`), and the
generated docs/known-mismatches.md (``python -m parity.registry docs``). Proving an entry on the
installed frameworks (its self-test) is :mod:`parity.mismatch_checks`, above the engine.

May import: the judge (dtypes), :mod:`parity.errors` and the standard library; never the engine,
the backends, the translation, the self-tests or a framework, not even inside a function (a
model's Cells are read by duck typing).
"""

from __future__ import annotations

from .diagnosis import Diagnosis, diagnose, likely_causes
from .ledger import Ledger
from .lint import LintIssue, lint
from .schema import Argument, Availability, Entry, RegistryError, SelfTestSpec
from .store import Registry, installed_versions, load

__all__ = [
    "load",
    "Registry",
    "Entry",
    "Argument",
    "SelfTestSpec",
    "Availability",
    "RegistryError",
    "diagnose",
    "Diagnosis",
    "likely_causes",
    "lint",
    "LintIssue",
    "Ledger",
    "installed_versions",
]
