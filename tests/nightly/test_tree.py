"""``parity report --html``: each failing check's model tree, drawn from hand-written records that carry
each layer's own error (nested <details>, coloured by verdict, figures and likely causes on hover and
on expanding), in a real headless browser (skipped only when no browser can be had), and the
verdicts it shows without one. A record of a real failing check: tests/test_report_tree.py."""

from parity.nightly import page as report_page
from parity.nightly import tree
from parity.nightly.runs import Run

RGB = {
    "own": "rgb(214, 39, 40)",
    "inherited": "rgb(255, 127, 14)",
    "ok": "rgb(44, 160, 44)",
    "not compared": "rgb(158, 158, 158)",
}
NODEID = "test_vit.py::test_<b>block</b>[a&b]"
EVIL = "head<script>alert(1)</script>"


def _scaled(value, factor):
    return value * factor if isinstance(value, float) else value


def _layer(path, torch_type, status, out_margin, own_status=None, own_margin=None, call=0):
    entry = {
        "layer": path,
        "ms_layer": path,
        "call": call,
        "ms_type": "Ms" + torch_type,
        "torch_type": torch_type,
        "status": status,
        "in_margin": 0.5,
        "out_margin": out_margin,
        "out_error": _scaled(out_margin, 1e-4),
        "max_abs": _scaled(out_margin, 1e-5),
    }
    if own_status is not None:
        entry.update({"own_status": own_status, "own_margin": own_margin, "own_error": _scaled(own_margin, 1e-4)})
    return entry


def own_error_record():
    """A check whose first divergence (blocks.0.norm) hides a second, independent cause (blocks.0.act)."""
    forward = [
        _layer("embed", "Linear", "ok", 0.1, "ok", 0.1),
        _layer("blocks.0.norm", "LayerNorm", "FAIL", 50.0, "own", 50.0),
        _layer("blocks.0.act", "GELU", "downstream", 60.0, "own", 8.0),
        _layer("blocks.0.fc", "Linear", "downstream", 70.0, "inherited", 0.5),
        _layer("blocks.0", "Block", "contains", 70.0, "", None),
        _layer("blocks.0.fc", "Linear", "downstream", 90.0, "inherited", 0.25, call=1),
        _layer(EVIL, "Linear", "unaligned", float("nan")),
    ]
    backward = [_layer("blocks.0.norm", "LayerNorm", "FAIL", 3.0, "own", 3.0)]
    return {
        "schema": 1,
        "type": "check",
        "nodeid": NODEID,
        "case": "",
        "call": "check",
        "index": 0,
        "verdict": "fail",
        "device": "CPU",
        "modes": ["pynative"],
        "seed": 0,
        "worst_margin": 90.0,
        "pair": {"mindspore": "ViT", "torch": "ViT"},
        "tensors": [],
        "first_divergence": {"forward": {"layer": "blocks.0.norm"}, "backward": None},
        "layers": {"forward": forward, "backward": backward},
        "own_errors": [
            {
                "layer": "blocks.0.norm",
                "direction": "forward",
                "causes": ["layernorm-epsilon: MindSpore 1e-7 vs PyTorch 1e-6 <i>eps</i>"],
            },
            {
                "layer": "blocks.0.act",
                "direction": "forward",
                "causes": [{"name": "gelu-approximate", "reason": "tanh vs exact"}],
            },
        ],
        "first_nonfinite": {"layer": "blocks.0.fc", "direction": "forward"},
        "repro": "repro/test_<vit>/test_repro.py",
        "likely_causes": ["not shown: own_errors says more"],
        "error": {"type": "ParityMismatch", "message": "MindSpore and PyTorch outputs are not close!"},
    }


def _page(tmp_path, records):
    run = Run({"created": "2026-11-26T12:00:00+00:00", "git": {"commit": "abcdef0123"}}, records, ("r.jsonl",))
    path = tmp_path / "page.html"
    path.write_text(report_page.render(run), encoding="utf-8")
    return path


def _open(browser, path):
    page = browser.new_page()
    problems, requests = [], []
    page.on("console", lambda m: problems.append(m.text) if m.type in ("error", "warning") else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.on("request", lambda r: requests.append(r.url))
    page.goto(path.as_uri())
    page.wait_for_load_state("load")
    assert problems == [] and requests == [path.as_uri()]  # nothing but the page itself
    assert page.evaluate("document.scripts.length") == 0 and page.title().startswith("Parity report")
    return page


def _nodes(section):
    return section.locator(".tree details").evaluate_all(
        "ds => ds.map(d => [d.dataset.path, d.dataset.verdict, d.open, "
        "getComputedStyle(d.querySelector(':scope > summary')).borderLeftColor])"
    )


def test_the_tree_shows_own_and_inherited_errors_with_their_causes(tmp_path, browser):
    page = _open(browser, _page(tmp_path, [own_error_record()]))
    section = page.locator("section.failure").first
    assert section.get_attribute("data-check") == NODEID  # escaped, read back whole
    nodes = _nodes(section)
    assert [(p, v, o) for p, v, o, _ in nodes] == [
        ("", "not compared", True),
        ("embed", "ok", False),
        ("blocks", "not compared", True),
        ("blocks.0", "inherited", True),
        ("blocks.0.norm", "own", False),
        ("blocks.0.act", "own", False),
        ("blocks.0.fc", "inherited", False),
        (EVIL, "not compared", False),
    ]
    assert all(color == RGB[v] for _, v, _, color in nodes)
    assert section.locator(".key span").all_inner_texts() == ["own error", "inherited", "agrees", "not compared"]

    assert section.locator('details[data-path=""] > summary').inner_text().startswith("ViT / ViT")  # the pair
    blocks = section.locator('details[data-path="blocks"] > summary')
    assert "(2 own errors inside)" in blocks.inner_text()
    norm = section.locator('details[data-path="blocks.0.norm"]')
    hover = norm.locator(":scope > summary").get_attribute("title")
    assert "forward: own error [FAIL]; own margin 50, own error 0.005, out margin 50" in hover
    assert "backward: own error [FAIL]" in hover
    assert "Likely cause: layernorm-epsilon: MindSpore 1e-7 vs PyTorch 1e-6 <i>eps</i>" in hover
    assert "not shown" not in hover

    # Expanding a closed node shows its figures and causes.
    act = section.locator('details[data-path="blocks.0.act"]')
    table = act.locator(":scope > table.figures")
    assert not table.is_visible()
    act.locator(":scope > summary").click()
    assert table.is_visible()
    assert table.locator("tr[data-direction]").evaluate_all("rs => rs.map(r => r.dataset.verdict)") == ["own"]
    assert act.locator("ul.causes").inner_text() == "Likely cause: gelu-approximate: tanh vs exact"
    assert "own margin" in table.inner_text() and "8" in table.locator("td").all_inner_texts()

    # A layer called twice: both calls in its table; the first NaN is marked where it appeared.
    fc = section.locator('details[data-path="blocks.0.fc"]')
    fc.locator(":scope > summary").click()
    assert fc.locator("tr[data-direction]").count() == 2 and "forward (call 2)" in fc.inner_text()
    assert "first NaN/Inf" in fc.locator(":scope > summary").inner_text()
    # Names with markup are text.
    assert EVIL in section.locator(f'details[data-path="{EVIL}"] > summary').inner_text()
    assert section.locator("p.repro").inner_text() == "Standalone repro: repro/test_<vit>/test_repro.py"

    # Error against depth: every layer coloured by its verdict, the own margins dashed beside.
    chart = section.locator("svg").first
    assert chart.locator("circle").evaluate_all("cs => cs.map(c => c.dataset.verdict)") == [
        "ok",
        "own",
        "own",
        "inherited",
        "inherited",
        "inherited",
    ]  # the unaligned layer's nan is not drawn
    assert chart.locator("polyline.own").get_attribute("data-values").split()[:4] == ["0.1", "50.0", "8.0", "0.5"]
    page.close()


def test_verdicts_without_a_browser():
    assert [tree.verdict(c) for c in own_error_record()["layers"]["forward"]] == [
        "ok",
        "own",
        "own",
        "inherited",
        "inherited",
        "inherited",
        "not compared",
    ]
    assert tree.render_tree({"layers": None}) == ""
    html = tree.render_tree(own_error_record())
    assert "<script>" not in html and "&lt;script&gt;" in html and "&lt;i&gt;eps&lt;/i&gt;" in html
