"""The generated document, docs/known-mismatches.md: up to date with the data and the measurements."""

from __future__ import annotations

from parity.registry import docs, load


def test_doc_is_up_to_date():
    expected = docs.render(load(), docs.read_measured())
    current = docs.DOC_PATH.read_text(encoding="utf-8") if docs.DOC_PATH.exists() else ""
    assert current == expected, "docs/known-mismatches.md is out of date: run `python -m parity.registry docs`"


def test_measurements_match_the_entries():
    """Like syrupy's unused snapshots: every self-tested entry is measured, nothing else is."""
    measured = set(docs.read_measured()["entries"])
    tested = {e.id for e in load() if e.selftest is not None}
    assert measured == tested, (
        f"unmeasured: {sorted(tested - measured)}; orphaned: {sorted(measured - tested)}; "
        "run `python -m parity.mismatch_checks measure`"
    )


def test_doc_rows_and_family_table():
    text = docs.render(load(), docs.read_measured())
    for entry in load():
        assert f"| [`{entry.id}`](#{entry.id}) |" in text
    assert "| `mindspore.mint.nn.Conv2d` | `torch.nn.Conv2d` | Ascend | no kernel |" in text
    assert "| `mindspore.mint.nn.GroupNorm` | `torch.nn.GroupNorm` | Ascend | runs, agrees |" in text
