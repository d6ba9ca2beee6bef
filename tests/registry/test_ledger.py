"""The ledger: which acknowledged known mismatches showed, and which are stale."""

from __future__ import annotations

from parity.registry import Ledger


def test_ledger_reports_stale_entries():
    ledger = Ledger()
    ledger.record("gelu-approximate-default", "t.py::a", triggered=True)
    ledger.record("conv2d-pad-mode-default", "t.py::b", triggered=False)
    other = Ledger()
    other.record("conv2d-pad-mode-default", "t.py::c", triggered=False)
    ledger.merge(other)
    assert ledger.stale() == {"conv2d-pad-mode-default": ["t.py::b", "t.py::c"]}
    assert ledger.summary_lines(strict=True) == [
        "known mismatches: 2 acknowledged, 1 showed, 1 stale",
        "ERROR stale conv2d-pad-mode-default: did not show in t.py::b and 1 more; the mismatch may be fixed upstream",
    ]
