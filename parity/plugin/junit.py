"""What parity adds to pytest's JUnit XML (``--junitxml``): scalar properties per test, and a
parity failure's message attribute whole.

pytest's JUnit writer reads properties from the teardown report only, so the per-test properties
go there, while the check records (:data:`parity.nightly.records.RECORD_KEY`, large dicts) travel on the
phase that made them and never become ``<property>`` elements.
"""

from __future__ import annotations

from typing import Dict, Iterable, List, Tuple

from ..nightly.records import CHECKS_KEY

__all__ = ["PROPERTIES", "properties", "whole_failure_message"]

PROPERTIES = (
    "parity_seed",
    "parity_worst_margin",
    "parity_mode",
    "parity_device",
    "parity_first_divergent_layer",
    "parity_likely_cause",
    "parity_repro",
)


def _unique(values: Iterable) -> List:
    seen: List = []
    for value in values:
        if value is not None and value not in seen:
            seen.append(value)
    return seen


def _first_layer(record: Dict) -> str:
    divergence = record.get("first_divergence") or {}
    for direction in ("forward", "backward"):
        layer = divergence.get(direction)
        if layer:
            return f"{direction}: {layer['where']}"
    return ""


def properties(records: List[Dict]) -> List[Tuple[str, str]]:
    """One test's JUnit properties from its check records: its seeds, modes and devices, the
    worst margin over its checks, the first divergent layer and likely causes of its first
    failing check (where those exist; one property per likely cause), and each failing check's
    standalone repro (``--parity-repro``)."""
    if not records:
        return []
    margins = [r["worst_margin"] for r in records if r["worst_margin"] is not None]
    columns = {
        "parity_seed": _unique(r["seed"] for r in records),
        "parity_mode": _unique(m for r in records for m in r["modes"]),
        "parity_device": _unique(r["device"] for r in records),
    }
    found = [(name, ",".join(str(v) for v in values)) for name, values in columns.items() if values]
    if margins:
        worst = max(float(m) for m in margins)
        found.append(("parity_worst_margin", f"{worst:.6g}"))
    failing = [r for r in records if r["verdict"] != "pass"]
    if failing:
        layer = _first_layer(failing[0])
        if layer:
            found.append(("parity_first_divergent_layer", layer))
        found += [("parity_likely_cause", cause) for cause in failing[0]["likely_causes"]]
        found += [("parity_repro", r["repro"]) for r in failing if r.get("repro")]
    return found


def whole_failure_message(config, report) -> None:
    """Put back the whole message of a failed parity check in the ``message`` attribute of its
    ``<failure>`` element: pytest (9.2 and later) keeps whole lines up to 500 characters there,
    which cuts the "Likely cause" and "Reproduce" lines of a parity message. Only a report whose
    phase made parity checks is touched, only the element pytest wrote for it, found by its
    text; where pytest's JUnit writer is not as expected, nothing changes."""
    if not (report.failed and any(key == CHECKS_KEY for key, _ in report.user_properties)):
        return
    try:
        from _pytest.junitxml import bin_xml_escape, xml_key
    except ImportError:
        return
    xml = config.stash.get(xml_key, None)
    if xml is None:
        return
    crash = getattr(report.longrepr, "reprcrash", None)
    whole = bin_xml_escape(crash.message if crash is not None else str(report.longrepr))
    text = bin_xml_escape(str(report.longrepr))
    for reporter in reversed(getattr(xml, "node_reporters_ordered", ())):
        for node in getattr(reporter, "nodes", ()):
            if node.tag == "failure" and node.text == text:
                node.set("message", whole)
                return
