"""The Markdown summary of ``parity report`` with hostile records: every field a record carries,
not only test ids, reaches the Markdown as inert text. GitHub renders raw HTML in a comment, so a
``<script>`` or ``<img onerror>`` in a message, a cause, a version or a tensor's name must never
arrive as a tag."""

import json
import re

import pytest

from parity import cli
from parity.nightly.records import SCHEMA

TAGS = ["<script>alert(1)</script>", '<img src=x onerror="steal()">', "<!-- hidden -->", "<iframe src=x>"]
OPENS_A_TAG = re.compile(r"<[A-Za-z/!?]")


def environment(evil, commit="1a2b3c4d"):
    return {
        "schema": SCHEMA,
        "type": "environment",
        "created": "2026-01-01T00:00:00+00:00",
        "device": f"cpu{evil}",
        "device_name": evil,
        "versions": {"mindspore": f"2.10{evil}", "torch": evil},
        "git": {"commit": commit},
    }


def check(evil, nodeid, verdict, margin):
    return {
        "schema": SCHEMA,
        "type": "check",
        "nodeid": nodeid,
        "index": 0,
        "verdict": verdict,
        "device": evil,
        "modes": [evil, "pynative"],
        "worst_margin": margin,
        "likely_causes": [f"known mismatch {evil}"],
        "error": {"type": evil, "message": evil},
        "first_divergence": {"forward": {"where": f"features.3 {evil}"}},
        "tensors": [
            {"kind": "output", "name": f"out{evil}", "mode": evil, "margin": margin, "passed": margin <= 1},
            {"kind": "grad", "name": evil, "mode": "pynative", "margin": margin / 4, "passed": True},
        ],
    }


def write(path, *records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


@pytest.mark.parametrize("evil", TAGS)
def test_every_field_of_a_hostile_record_reaches_the_markdown_as_text(tmp_path, monkeypatch, evil):
    monkeypatch.chdir(tmp_path)
    # the baseline: one check passing narrowly, one failing, one passing by a wide margin
    write(
        tmp_path / "before.jsonl",
        environment(evil, commit=f"0{evil}"),
        check(evil, "t.py::test_drifts", "pass", 0.01),
        check(evil, "t.py::test_fixed", "fail", 3.0),
        check(evil, "t.py::test_breaks", "pass", 0.01),
    )
    cli.main(["report", "before.jsonl", "--save-baseline", "base"])  # 1: a check fails
    # tonight: the first drifts, the second is fixed, the third fails
    write(
        tmp_path / "after.jsonl",
        environment(evil),
        check(evil, "t.py::test_drifts", "pass", 0.5),
        check(evil, "t.py::test_fixed", "pass", 0.01),
        check(evil, "t.py::test_breaks", "fail", 5.0),
    )
    cli.main(["report", "after.jsonl", "--baseline", "base", "--markdown", "out.md"])
    text = (tmp_path / "out.md").read_text(encoding="utf-8")
    # every section that shows a record's fields is there, so each was escaped, not left out
    for heading in ("### Since the baseline", "#### New failures", "#### Drift", "#### Fixed", "### Failures (1)"):
        assert heading in text
    assert not OPENS_A_TAG.search(text), [line for line in text.splitlines() if OPENS_A_TAG.search(line)]
    shown = "&lt;" + evil[1:].replace("<", "&lt;")
    header = next(line for line in text.splitlines() if line.startswith("**"))
    assert f"MindSpore 2.10{shown}, PyTorch {shown}, cpu{shown} ({shown})" in header
    failure = next(line for line in text.splitlines() if line.startswith("| t.py::test_breaks | fail |"))
    assert f"| forward: features.3 {shown} | known mismatch {shown} |" in failure


def test_a_failure_without_a_cause_shows_its_error_type_escaped(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    failing = dict(check("", "t.py::test_raises", "error", 1.0), likely_causes=[])
    failing["error"] = {"type": "<svg onload=alert(1)>", "message": "<b>boom</b>"}
    write(tmp_path / "run.jsonl", environment(""), failing)
    cli.main(["report", "run.jsonl", "--markdown", "out.md"])
    text = (tmp_path / "out.md").read_text(encoding="utf-8")
    assert "| &lt;svg onload=alert(1)> |" in text and not OPENS_A_TAG.search(text)
