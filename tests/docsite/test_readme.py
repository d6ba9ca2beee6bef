"""The README is the front page: short, every example in it also on the documentation site (where
tests/docsite/test_examples.py runs it), its failure message the one parity prints, its links alive.
And every section the README had before the site took its content over is still somewhere."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"

# Every section of the README as it was before the documentation site (`##` and `###` headings),
# the page that holds it now, and words of its first paragraph there.
SECTIONS = [
    ("Quick start", "install.md", "Both need only Python 3.11; the versions installed are pinned in"),
    ("A per-Cell unit test", "tutorials/per-cell-unit-test.md", "Run it with `pytest --parity`. The fixture's `check`"),
    ("Options", "reference/options.md", "The command line decides how a run behaves: `--parity-mode` wins"),
    ("Devices", "how-to/devices.md", "`--parity-device` sets MindSpore's `device_target` and place"),
    ("Reports for machines", "tutorials/nightly.md", "`pytest --parity --parity-report=run.jsonl` writes JSON line"),
    ("Shards and quarantine", "tutorials/nightly.md", "For a fleet of runners, one shard per runner (these apply to"),
    ("Version matrix", "reference/versions.md", "`tox.ini` runs the registry's self-tests and the catalogue o"),
    (
        "Baselines, drift and the report page",
        "tutorials/nightly.md",
        "A nightly run says what changed since the last one:",
    ),
    (
        "The model tree of a failing check",
        "tutorials/nightly.md",
        "On the page, each failing check whose layers were captured g",
    ),
    ("Weights and name maps", "how-to/name-maps.md", "Before anything runs, every MindSpore parameter is paired wi"),
    (
        "Translating with example inputs",
        "how-to/translate.md",
        '`parity.translate(torch_module, inputs, *, device="CPU", see',
    ),
    (
        "How a tensor is judged",
        "explanation/judging.md",
        "MindSpore's CPU kernels round differently on every instructi",
    ),
    ("Half precision", "how-to/half-precision.md", "A half-precision pair is checked as written: `Cell.to_float("),
    (
        "Mixed precision (AMP)",
        "how-to/half-precision.md",
        '`parity.check(cell, model, inputs, amp="O1")` runs a deep co',
    ),
    ("Training parity", "how-to/training.md", "`parity.check_training(ms_cell, torch_module, batches, *, lo"),
    ("Loss scaling", "how-to/training.md", '`loss_scale=lambda: torch.amp.GradScaler("cpu", ...)` trains'),
    ("Data parallelism", "how-to/data-parallel.md", "`parity.check_data_parallel(ms_factory, torch_factory, batch"),
    ("Generation parity", "how-to/generation.md", "`parity.check_generation(ms_model, torch_model, prompt, *, m"),
    ("Dynamic shapes", "how-to/dynamic-shapes.md", "`parity.check_shapes(ms_cell, torch_module, [inputs, inputs,"),
    ("Known mismatches", "explanation/registry.md", "`parity/data/mismatches/*.toml` holds the API differences ev"),
    ("The `parity` command", "reference/cli.md", "`parity list [PATH ...]` lists the catalogue's items; `parit"),
    (
        "`parity scan`: what a PyTorch codebase uses, and what that means here",
        "how-to/scan.md",
        "`parity scan PATH [--json] [--device CPU|GPU|Ascend]` lists ",
    ),
    ("Converting checkpoints", "how-to/convert.md", "`parity convert` turns a PyTorch state dict into a MindSpore"),
    (
        "Comparing saved tensors",
        "how-to/compare-dumps.md",
        "`parity compare-dumps A B` compares two sets of saved tensor",
    ),
    (
        "msprobe's statistics and md5 dumps",
        "how-to/compare-dumps.md",
        "msprobe's `statistics` task saves no tensors: its `dump.json",
    ),
    ("Benchmarks", "reference/benchmarks.md", "`make bench` runs `benchmarks/bench_check.py`: a hand-writte"),
    ("The catalogue", "reference/catalogue.md", "`cases/` holds `ParityCase` records, collected by `pytest --"),
    ("Model-zoo pairs", "reference/catalogue.md", "`cases/zoo/` compares the packages' own models, built small,"),
    (
        "Which layer diverged first",
        "explanation/localisation.md",
        "On failure, `parity.check` names the first sub-Cell whose in",
    ),
    (
        "Each layer's own error",
        "explanation/localisation.md",
        "After the first divergence every later layer is fed differin",
    ),
    (
        "The first non-finite value",
        "explanation/localisation.md",
        "Where NaN or Inf appears on one side and not the other, `Res",
    ),
    ("A standalone repro", "how-to/repro-files.md", "A failed check can be handed on as a test that needs only Mi"),
    (
        "Property-based checks",
        "how-to/property-based.md",
        "`parity.strategies` holds [Hypothesis](https://hypothesis.re",
    ),
]


def _blocks(text, language):
    return re.findall(rf"^```{language}\n(.*?)^```", text, re.S | re.M)


@pytest.mark.parametrize("title, page, words", SECTIONS, ids=[s[0] for s in SECTIONS])
def test_every_section_the_readme_had_is_on_the_site(title, page, words):
    text = (DOCS / page).read_text(encoding="utf-8")
    assert re.search(rf"^#{{1,4}} {re.escape(title)}$", text, re.M), f"no heading {title!r} in docs/{page}"
    assert words in text, f"docs/{page} lost the start of {title!r}"


def test_the_readme_is_short_and_its_links_lead_somewhere():
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 250
    for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text):
        if not target.startswith("http"):
            assert (ROOT / target).exists(), f"README links to {target}, which does not exist"


def test_every_readme_example_runs_on_the_site():
    """Each Python example of the README is the start of one on the site (run there)."""
    site = [
        code
        for page in DOCS.rglob("*.md")
        if "_build" not in page.parts
        for code in _blocks(page.read_text(encoding="utf-8"), "python")
    ]
    examples = _blocks(README.read_text(encoding="utf-8"), "python")
    assert examples
    for example in examples:
        assert any(code.startswith(example) for code in site), f"not on the site:\n{example}"


def test_the_readme_failure_message_is_what_parity_prints():
    import parity

    text = README.read_text(encoding="utf-8")
    example = next(code for code in _blocks(text, "python") if "has_bias=True" in code)
    shown = text[text.index(example) :]
    shown = shown[shown.index("```\n", len(example) + 3) + 4 :]
    shown = shown[: shown.index("```")]
    with pytest.raises(parity.ParityMismatch) as info:
        exec(compile(example, "README.md", "exec"), {})
    assert f"ParityMismatch: {info.value}".strip() == shown.strip()
