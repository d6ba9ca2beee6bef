"""``parity report``: shard reports merged into one run, the Markdown summary, and the HTML page
loaded in a real headless browser (Chromium through playwright: skipped only when no browser can
be had). The reports are real: pytester runs real pairs, as in tests/test_baseline.py. The command
line's usage errors need no run: tests/nightly/test_cli.py."""

import datetime
import json
import re
import shutil
from pathlib import Path

import pytest

from parity import options as opts
from parity.nightly.page import VERDICT_TEXT, cells
from parity.nightly.records import read_records
from parity.nightly.runs import BASELINE_FILE, check_key, check_label
from parity.plugin import REPORT

from nightly.test_cli import report  # `parity report` in this process

PARITY = opts.PARITY

pytestmark = pytest.mark.usefixtures("collect_inner_cells")  # tests/conftest.py

# INNER_GELU: PyTorch's GELU, "none" (exact, as MindSpore's) or "tanh" (its approximation, which
# stays inside the loose tolerance and fails the default one).
INNER = """
import os

from parity import Tolerance


def gelu():
    import torch

    return torch.nn.GELU(approximate=os.environ.get("INNER_GELU", "none"))


def test_dense(parity):
    import mindspore, torch

    torch.manual_seed(0)  # the weights, copied to MindSpore
    parity.check(mindspore.nn.Dense(4, 3), torch.nn.Linear(4, 3), parity.randn((2, 4)))


def test_loose(parity):
    import mindspore

    parity.check(mindspore.nn.GELU(approximate=False), gelu(), parity.randn((4, 16)), tolerance=Tolerance(0.0, 1e-2))


def test_seq(parity):
    import mindspore, torch

    torch.manual_seed(0)
    ms = mindspore.nn.SequentialCell(mindspore.nn.Dense(8, 8), mindspore.nn.GELU(approximate=False),
                                     mindspore.nn.Dense(8, 4))
    pt = torch.nn.Sequential(torch.nn.Linear(8, 8), gelu(), torch.nn.Linear(8, 4))
    parity.check(ms, pt, parity.randn((4, 8)), ms_mode="both")
"""


@pytest.fixture(scope="module", autouse=True)
def warm_frameworks():
    """Run, in this process, what the in-process runs run (pytester drops modules first imported
    during a run, and lazily imported framework internals must survive that)."""
    import mindspore
    import torch

    import parity
    import parity.plugin.items  # noqa: F401

    parity.check(mindspore.nn.Dense(4, 3), torch.nn.Linear(4, 3), parity.randn((2, 4)), ms_mode="both")
    with pytest.raises(parity.ParityMismatch):
        parity.check(
            mindspore.nn.SequentialCell(mindspore.nn.Dense(8, 8), mindspore.nn.GELU(approximate=False)),
            torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.GELU(approximate="tanh")),
            parity.randn((4, 8)),
        )


@pytest.fixture
def inner(pytester, monkeypatch):
    pytester.makepyfile(test_inner=INNER)

    def run(report, *args, gelu="none"):
        monkeypatch.setenv("INNER_GELU", gelu)
        return pytester.runpytest(PARITY, "-p", "no:cacheprovider", f"{REPORT}={report}", *args)

    return run


def rewrite_environment(path, **changes):
    """Change fields of a report file's environment record (a dotted name reaches inside)."""
    lines = Path(path).read_text().splitlines()
    environment = json.loads(lines[0])
    for dotted, value in changes.items():
        *outer, last = dotted.split("__")
        target = environment
        for name in outer:
            target = target[name]
        target[last] = value
    Path(path).write_text("\n".join([json.dumps(environment)] + lines[1:]) + "\n")


def figures(checks):
    """What a check measured, without what depends on where and when it ran."""
    return {
        check_key(c): (c["verdict"], [(t["kind"], t["name"], t["mode"], t["margin"]) for t in c["tensors"]])
        for c in checks
    }


def test_shard_reports_merge_into_the_whole_run_and_differences_are_said(inner, pytester, capsys):
    inner("whole.jsonl", gelu="tanh").assert_outcomes(passed=2, failed=1)
    inner("s1.jsonl", "-k", "dense or seq", gelu="tanh")
    inner("s2.jsonl", "-k", "loose", gelu="tanh")
    rewrite_environment(pytester.path / "s2.jsonl", host__name="another-runner", host__cores=64)
    status, out = report(pytester, capsys, "s1.jsonl", "s2.jsonl", "--save-baseline", "merged")
    assert status == 1  # test_seq failed
    assert out.out.splitlines()[0] == "parity report: 2 files merged into one run of 3 checks: 2 pass, 1 fail"
    assert "note:" not in out.out  # the runners' own fields may differ
    _, whole = read_records(pytester.path / "whole.jsonl")
    _, merged = read_records(pytester.path / "merged" / BASELINE_FILE)
    assert figures(merged) == figures(whole) and len(merged) == 3

    rewrite_environment(
        pytester.path / "s2.jsonl", versions__torch="9.9.9", device="GPU", created="2100-01-01T00:00:00+00:00"
    )
    shutil.copy(pytester.path / "s1.jsonl", pytester.path / "again.jsonl")  # a shard run twice
    rewrite_environment(pytester.path / "again.jsonl", created="2100-01-01T00:00:05+00:00")
    rewrite_environment(pytester.path / "s1.jsonl", created="2100-01-01T00:00:10+00:00")
    status, out = report(pytester, capsys, "s1.jsonl", "s2.jsonl", "again.jsonl", "--markdown", "out.md")
    torch_version = read_records(pytester.path / "whole.jsonl")[0]["versions"]["torch"]
    assert out.out.splitlines()[0] == "parity report: 3 files merged into one run of 3 checks: 2 pass, 1 fail"
    assert "note: the shards' environments differ: device: s2.jsonl GPU, again.jsonl CPU, s1.jsonl CPU" in out.out
    assert (
        f"note: the shards' environments differ: versions.torch: s2.jsonl 9.9.9, again.jsonl {torch_version}, "
        f"s1.jsonl {torch_version}"
    ) in out.out
    assert (
        "note: 2 checks were in more than one file; kept the latest-started file's: test_inner.py::test_dense, "
        "test_inner.py::test_seq"
    ) in out.out
    assert "> **Note:** the shards' environments differ: device: s2.jsonl GPU" in (pytester.path / "out.md").read_text()


def test_the_markdown_summary_counts_names_the_failures_and_tables_the_drift(inner, pytester, capsys):
    inner("before.jsonl").assert_outcomes(passed=3)
    report(pytester, capsys, "before.jsonl", "--save-baseline", "base")
    inner("after.jsonl", gelu="tanh")
    status, out = report(pytester, capsys, "after.jsonl", "--baseline", "base", "--markdown", "out.md")
    assert status == 1
    text = (pytester.path / "out.md").read_text()
    _, before = read_records(pytester.path / "before.jsonl")
    _, after = read_records(pytester.path / "after.jsonl")
    old = {(c["nodeid"], t["kind"], t["name"], t["mode"]): t["margin"] for c in before for t in c["tensors"]}
    seq = next(c for c in after if c["nodeid"].endswith("test_seq"))
    assert "**3 checks: 2 pass, 1 fail**; MindSpore " in text
    assert "new failures 1, fixed 0, drifted 2 tensors in 1 check, new checks 0, missing 0" in text
    assert seq["modes"] == ["pynative", "graph"]
    assert (
        f"| test_inner.py::test_seq | fail | CPU | pynative, graph | {seq['worst_margin']:.3g} | forward: "
        f"{seq['first_divergence']['forward']['where']} | known mismatch 'gelu-approximate-default'"
    ) in text
    drift_rows = [line for line in text.splitlines() if line.startswith("| test_inner.py::test_loose |")]
    loose = next(c for c in after if c["nodeid"].endswith("test_loose"))
    expected = sorted(
        (
            (t["margin"] / max(old[("test_inner.py::test_loose", t["kind"], t["name"], t["mode"])], 1e-3), t)
            for t in loose["tensors"]
        ),
        key=lambda pair: -pair[0],
    )
    assert drift_rows == [
        f"| test_inner.py::test_loose | {t['kind']} '{t['name']}' [pynative] | "
        f"{old[('test_inner.py::test_loose', t['kind'], t['name'], 'pynative')]:.3g} | "
        f"{t['margin']:.3g} | {ratio:.3g}x |"
        for ratio, t in expected
    ]
    assert "#### New failures" in text and "| test_inner.py::test_seq | pass | fail |" in text

    allowed, _ = report(pytester, capsys, "before.jsonl", "--baseline", "base", "--markdown", "same.md")
    assert allowed == 0
    assert "No check failed." in (pytester.path / "same.md").read_text()


def test_earlier_nights_make_the_margin_over_time_and_the_latest_older_baseline_is_compared(inner, pytester, capsys):
    inner("exact.jsonl").assert_outcomes(passed=3)
    inner("tanh.jsonl", gelu="tanh")
    inner("tonight.jsonl").assert_outcomes(passed=3)
    nights = []
    for name, source in (("n1", "exact.jsonl"), ("n2", "tanh.jsonl")):  # stored nights
        report(pytester, capsys, source, "--save-baseline", f"hist/{name}")
        nights.append(pytester.path / "hist" / name / BASELINE_FILE)
    shutil.copy(pytester.path / "tanh.jsonl", pytester.path / "old.jsonl")  # a night given as a file
    tonight = read_records(pytester.path / "tonight.jsonl")[0]["created"]
    for path, days in ((nights[0], 2), (nights[1], 1), (pytester.path / "old.jsonl", 3)):
        earlier = datetime.datetime.fromisoformat(tonight) - datetime.timedelta(days=days)
        rewrite_environment(path, created=earlier.isoformat())

    status, out = report(pytester, capsys, "old.jsonl", "tonight.jsonl", "--baseline", "hist", "--html", "page.html")
    assert status == 0
    lines = out.out.splitlines()
    assert lines[0] == "parity report: 1 file merged into one run of 3 checks: 3 pass; 1 earlier run given"
    assert lines[2].startswith(f"baseline: {Path('hist', 'n2', BASELINE_FILE)} (created ")
    assert lines[3] == "new failures 0, fixed 1, drifted 0 tensors in 0 checks, new checks 0, missing 0"
    text = (pytester.path / "page.html").read_text()
    history = text[text.index('<table id="history">') :]
    assert "<h2>Worst margin over 4 runs</h2>" in text
    rows = dict(re.findall(r'<tr data-check="([^"]+)">.*?data-values="([^"]+)"', history))
    by_run = [
        {c["nodeid"]: c["worst_margin"] for c in read_records(pytester.path / f)[1]}
        for f in ("old.jsonl", "hist/n1/baseline.jsonl", "hist/n2/baseline.jsonl", "tonight.jsonl")
    ]
    assert sorted(rows) == sorted(by_run[0])
    for nodeid, values in rows.items():
        assert values == " ".join(repr(run[nodeid]) for run in by_run)


# -- the page in a browser ----------------------------------------------------------------------


def test_the_page_loads_offline_with_its_matrix_failures_plots_and_history(inner, pytester, capsys, browser):
    inner("before.jsonl").assert_outcomes(passed=3)
    report(pytester, capsys, "before.jsonl", "--save-baseline", "base")
    inner("s1.jsonl", "-k", "seq", gelu="tanh")
    inner("s2.jsonl", "-k", "not seq", gelu="tanh")
    status, _ = report(pytester, capsys, "s1.jsonl", "s2.jsonl", "--baseline", "base", "--html", "page.html")
    assert status == 1
    _, checks = read_records(pytester.path / "s1.jsonl")
    checks += read_records(pytester.path / "s2.jsonl")[1]
    page_file = pytester.path / "page.html"

    page = browser.new_page()
    problems, requests = [], []
    page.on(
        "console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type in ("error", "warning") else None
    )
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    page.on("requestfailed", lambda r: problems.append(f"request failed: {r.url}"))
    page.on("request", lambda r: requests.append(r.url))
    page.goto(page_file.as_uri())
    page.wait_for_load_state("load")
    assert problems == []
    assert requests == [page_file.as_uri()]  # the page itself, nothing else

    # The matrix: one row per check, one column per (device, mode), each cell the verdict in that mode.
    shown = page.eval_on_selector_all(
        "#matrix tr[data-check]",
        "rows => rows.map(r => [r.dataset.check, Array.from(r.querySelectorAll('td[data-mode]')).map("
        "c => [c.dataset.device, c.dataset.mode, c.dataset.verdict, c.innerText.trim()])])",
    )
    expected = {check_label(check_key(c)): cells(c) for c in checks}
    assert sorted(row[0] for row in shown) == sorted(expected)
    for label, found in shown:
        assert [(d, m) for d, m, _, _ in found] == [("CPU", "graph"), ("CPU", "pynative")]
        for _device, mode, verdict, text in found:
            assert verdict == expected[label].get(mode, "")
            assert text == (VERDICT_TEXT[verdict] if verdict else "-")
    seq = next(c for c in checks if c["nodeid"].endswith("test_seq"))
    assert cells(seq) == {"graph": "fail", "pynative": "fail"}
    assert expected["test_inner.py::test_dense"] == {"pynative": "pass"}

    # The failing check: its message, visible whole, reached from its matrix cell; its per-layer plots.
    page.click('#matrix tr[data-check="test_inner.py::test_seq"] td[data-mode="graph"] a')
    section = page.locator('section.failure[data-check="test_inner.py::test_seq"]')
    message = section.locator("pre.message")
    assert message.is_visible()
    assert message.inner_text() == seq["error"]["message"]
    assert section.locator("pre.message").evaluate("e => e.getBoundingClientRect().height") > 100
    plotted = section.locator("polyline.series").evaluate_all("ls => ls.map(l => l.dataset.values)")
    assert plotted == [
        " ".join(repr(float(layer["out_margin"])) for layer in seq["layers"][d]) for d in ("forward", "backward")
    ]
    assert section.locator("svg circle[fill='#d62728']").count() >= 2  # the first divergence, forward and backward
    labels = section.locator("polyline.series").first.get_attribute("data-labels").split("\n")
    assert labels == [
        f"{layer['layer']} {layer['torch_type']} [{layer['status']}]" for layer in seq["layers"]["forward"]
    ]
    assert "[FAIL]" in labels[1] and section.locator("p.layers").first.is_visible()

    # Since the baseline, and the worst margin over both runs.
    changes = page.inner_text("#changes")
    assert "new failures 1, fixed 0, drifted 2 tensors in 1 check, new checks 0, missing 0" in changes
    assert page.inner_text('#matrix tr[data-check="test_inner.py::test_seq"] td.change') == "new failure"
    history = page.eval_on_selector_all("#history tr[data-check] polyline", "ls => ls.map(l => l.dataset.values)")
    _, stored = read_records(pytester.path / "base" / BASELINE_FILE)
    by_key = {check_key(c): c for c in stored}
    assert history == [
        f"{by_key[check_key(c)]['worst_margin']!r} {c['worst_margin']!r}" for c in sorted(checks, key=check_key)
    ]
    page.close()
