"""``parity report --html``: each failing check's model tree (nested <details>, coloured by verdict,
figures and likely causes on hover and on expanding) and its per-layer error against depth, in a
real headless browser (as tests/test_report_page.py; skipped only when no browser can be had).
Here one record comes from a real failing check, which has only the first divergence; the
hand-written records, which carry each layer's own error, are drawn in tests/nightly/test_tree.py."""

import json
from pathlib import Path

import mindspore
import pytest
import torch

import parity
from parity.nightly import records
from parity.nightly.records import check_record

from nightly.test_tree import RGB, _nodes, _open, _page  # shared with the tree's framework-free tests

pytestmark = pytest.mark.usefixtures("collect_inner_cells")  # tests/conftest.py


def real_record():
    """The record of a real failing check: GELU exact against tanh, after a Linear."""
    torch.manual_seed(0)
    ms = mindspore.nn.SequentialCell(
        mindspore.nn.Dense(8, 8), mindspore.nn.GELU(approximate=False), mindspore.nn.Dense(8, 4)
    )
    pt = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.GELU(approximate="tanh"), torch.nn.Linear(8, 4))
    with pytest.raises(parity.ParityMismatch) as caught:
        parity.check(ms, pt, parity.randn((4, 8)))
    record = check_record(
        nodeid="test_real.py::test_gelu",
        case="",
        call="check",
        index=0,
        device="CPU",
        seed=0,
        duration=0.1,
        error=caught.value,
    )
    return json.loads(json.dumps(record), object_hook=records._floats)  # as read_records reads a report


def test_a_real_failing_check_is_drawn_from_its_first_divergence(tmp_path, browser):
    record = real_record()
    # Drawn as a record of an older writer is: without the own-error figures and the repro path.
    record.pop("repro", None)
    record.pop("own_errors", None)
    for direction in ("forward", "backward"):
        for layer in record["layers"][direction]:
            for key in ("own_status", "own_margin", "own_error"):
                layer.pop(key, None)
    page = _open(browser, _page(tmp_path, [record]))
    section = page.locator('section.failure[data-check="test_real.py::test_gelu"]')
    nodes = {p: (v, color) for p, v, _, color in _nodes(section)}
    expected = {"FAIL": "own", "downstream": "inherited", "ok": "ok"}
    for direction in ("forward", "backward"):
        for layer in record["layers"][direction]:
            verdict = nodes[layer["layer"]][0]
            assert verdict == max(
                (
                    expected[c["status"]]
                    for d in ("forward", "backward")
                    for c in record["layers"][d]
                    if c["layer"] == layer["layer"]
                ),
                key=["ok", "inherited", "own"].index,
            )
    assert all(color == RGB[v] for v, color in nodes.values())
    assert record["layers"]["forward"][1]["status"] == "FAIL" and nodes["1"][0] == "own"  # the GELU
    first = record["first_divergence"]["forward"]["layer"]
    hover = section.locator(f'details[data-path="{first}"] > summary').get_attribute("title")
    assert record["likely_causes"] and all(f"Likely cause: {cause}" in hover for cause in record["likely_causes"])
    assert "gelu-approximate-default" in hover
    assert section.locator("p.repro").count() == 0
    assert section.locator("polyline.own").count() == 0
    page.close()


def test_the_readme_example_writes_the_tree(pytester, capsys):
    from parity import cli
    from parity import options as opts
    from parity.plugin import REPORT

    readme = (Path(parity.__file__).resolve().parents[1] / "docs" / "tutorials" / "nightly.md").read_text(
        encoding="utf-8"
    )
    section = readme[readme.index("### The model tree of a failing check") :]
    source = section[section.index("```python\n# test_block.py\n") + len("```python\n") :]
    pytester.makepyfile(test_block=source[: source.index("```")])
    commands = section[section.index("```text\n") + len("```text\n") :]
    assert commands[: commands.index("```")].splitlines() == [
        "$ pytest --parity --parity-report=run.jsonl test_block.py",
        "$ parity report run.jsonl --html page.html",
    ]
    pytester.runpytest(opts.PARITY, "-p", "no:cacheprovider", f"{REPORT}=run.jsonl", "test_block.py").assert_outcomes(
        failed=1
    )
    assert cli.main(["report", "run.jsonl", "--html", "page.html"]) == 1
    capsys.readouterr()
    page = (pytester.path / "page.html").read_text(encoding="utf-8")
    assert '<details class="v-own" data-path="1" data-verdict="own">' in page
    assert '<details class="v-inherited" data-path="0" data-verdict="inherited">' in page
    norm = page[page.index('data-path="1"') :]
    assert "gelu-approximate-default" in norm[: norm.index("</summary>")]
