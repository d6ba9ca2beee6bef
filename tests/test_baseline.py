"""--parity-save-baseline and --parity-baseline: a stored run, and what changed since (new failures,
fixes, drift, new and missing checks, another environment), also under xdist. Real pairs, run
with pytester as in tests/test_plugin.py; the drift is real: PyTorch's GELU switches to its tanh
approximation, which stays inside a loose tolerance and fails the default one. Issue 10's
demonstration runs a small catalogue under xdist with one drift injected on the MindSpore side.
The options' usage errors and the comparison's rules on records written by hand need no
framework: tests/nightly/test_baseline.py."""

import html.parser
import json
from importlib import metadata

import pytest

from parity import cli
from parity import options as opts
from parity.nightly.baseline import BASELINE, DRIFT, DRIFT_FAILS, SAVE_BASELINE
from parity.nightly.records import read_records
from parity.nightly.runs import BASELINE_FILE
from parity.plugin import REPORT

PARITY = opts.PARITY

pytestmark = pytest.mark.usefixtures("collect_inner_cells")  # tests/conftest.py

# INNER_GELU picks PyTorch's GELU ("none": exact, as MindSpore's; "tanh": its approximation);
# INNER_SOMETIMES=1 lets test_sometimes check (otherwise it skips and makes no check).
INNER = """
import os

import pytest

from parity import Tolerance


def gelus():
    import mindspore, torch

    return mindspore.nn.GELU(approximate=False), torch.nn.GELU(approximate=os.environ.get("INNER_GELU", "none"))


def test_dense(parity):
    import mindspore, torch

    torch.manual_seed(0)  # the weights, copied to MindSpore
    parity.check(mindspore.nn.Dense(4, 3), torch.nn.Linear(4, 3), parity.randn((2, 4)))


def test_gelu_loose(parity):
    parity.check(*gelus(), parity.randn((4, 16)), tolerance=Tolerance(0.0, 1e-2))


def test_gelu_tight(parity):
    parity.check(*gelus(), parity.randn((4, 16)))


def test_sometimes(parity):
    import mindspore, torch

    if os.environ.get("INNER_SOMETIMES") != "1":
        pytest.skip("checks only with INNER_SOMETIMES=1")
    parity.check(mindspore.nn.ReLU(), torch.nn.ReLU(), parity.randn((3,)))
"""


@pytest.fixture(scope="module", autouse=True)
def warm_frameworks():
    """Run, in this process, what the in-process runs run (pytester drops modules first imported
    during a run, and lazily imported framework internals must survive that)."""
    import mindspore
    import torch

    import parity
    import parity.plugin.items  # noqa: F401

    parity.check(mindspore.nn.Dense(4, 3), torch.nn.Linear(4, 3), parity.randn((2, 4)))
    with pytest.raises(parity.ParityMismatch):
        parity.check(mindspore.nn.GELU(approximate=False), torch.nn.GELU(approximate="tanh"), parity.randn((4, 16)))


@pytest.fixture
def inner(pytester, monkeypatch):
    pytester.makepyfile(test_inner=INNER)
    monkeypatch.delenv("INNER_GELU", raising=False)
    monkeypatch.delenv("INNER_SOMETIMES", raising=False)

    def run(*args, gelu="none", sometimes=False, subprocess=False):
        monkeypatch.setenv("INNER_GELU", gelu)
        monkeypatch.setenv("INNER_SOMETIMES", "1" if sometimes else "0")
        return (pytester.runpytest_subprocess if subprocess else pytester.runpytest)(
            PARITY, "-p", "no:cacheprovider", *args
        )

    return run


def summary(result):
    """The lines of the 'parity baseline' section."""
    lines = result.stdout.lines
    start = next(i for i, line in enumerate(lines) if "parity baseline" in line)
    return [line for line in lines[start + 1 :] if not line.startswith("=")][:20]


def margins(path):
    """{(nodeid, tensor kind, tensor name): margin} of a report file."""
    _, checks = read_records(path)
    return {(c["nodeid"], t["kind"], t["name"]): t["margin"] for c in checks for t in c["tensors"]}


def test_a_saved_baseline_is_the_run_sorted_and_a_later_run_names_new_failures_drift_and_new_checks(inner, pytester):
    saved = inner(f"{SAVE_BASELINE}=base", f"{REPORT}=before.jsonl")
    saved.assert_outcomes(passed=3, skipped=1)
    saved.stdout.fnmatch_lines(["*parity baseline*", f"baseline saved: *base/{BASELINE_FILE} (3 checks)"])
    environment, checks = read_records(pytester.path / "base" / BASELINE_FILE)
    assert environment == read_records(pytester.path / "before.jsonl")[0]
    assert [c["nodeid"] for c in checks] == [f"test_inner.py::test_{n}" for n in ("dense", "gelu_loose", "gelu_tight")]
    assert checks == sorted(read_records(pytester.path / "before.jsonl")[1], key=lambda c: c["nodeid"])

    result = inner(f"{BASELINE}=base", f"{REPORT}=after.jsonl", gelu="tanh", sometimes=True)
    result.assert_outcomes(passed=3, failed=1)
    assert result.ret == 1
    before, after = margins(pytester.path / "before.jsonl"), margins(pytester.path / "after.jsonl")
    loose = ("test_inner.py::test_gelu_loose", "input grad", "input[0]")
    tight = ("test_inner.py::test_gelu_tight", "input grad", "input[0]")
    assert after[loose] <= 1 and after[loose] > 4 * max(before[loose], 1e-3)  # the drift, as measured
    lines = summary(result)
    assert lines[0] == "environment: the same as the baseline's (versions, device, CPU, seed, mode)"
    assert lines[1].startswith("baseline: ") and "grew more than 4x (margins under 0.001 count as 0.001)" in lines[1]
    assert lines[2] == "new failures 1, fixed 0, drifted 2 tensors in 1 check, new checks 1, missing 0"
    assert (
        f"NEW FAILURE test_inner.py::test_gelu_tight: input grad 'input[0]' [pynative] margin {after[tight]:.3g} "
        f"(baseline {before[tight]:.3g}, pass) (and 1 more tensor)"
    ) in lines
    ratio = after[loose] / max(before[loose], 1e-3)
    drift = [line for line in lines if line.startswith("DRIFT ")]
    assert drift == [
        f"DRIFT test_inner.py::test_gelu_loose: input grad 'input[0]' [pynative] margin {after[loose]:.3g}, "
        f"{ratio:.3g}x the baseline's {before[loose]:.3g}"
        f"{', counted as 0.001' if before[loose] < 1e-3 else ''} (and 1 more tensor)"
    ]
    assert "NEW test_inner.py::test_sometimes: pass" in lines
    assert "worst new failure: test_inner.py::test_gelu_tight: " + lines[3].split(": ", 1)[1] in lines
    assert "the run fails: 1 new failure, 2 drifted tensors against the baseline" in lines
    assert not any(line.startswith(("FIXED", "MISSING")) or "test_dense" in line for line in lines)


def test_drift_alone_fails_the_run_unless_told_not_to_and_the_factor_decides(inner):
    inner("-k", "loose", f"{SAVE_BASELINE}=base").assert_outcomes(passed=1)

    drifted = inner("-k", "loose", f"{BASELINE}=base", gelu="tanh")
    drifted.assert_outcomes(passed=1)
    assert drifted.ret == 1  # every test passed; the drift fails the run
    assert "the run fails: 2 drifted tensors against the baseline" in summary(drifted)

    allowed = inner("-k", "loose", f"{BASELINE}=base", f"{DRIFT_FAILS}=no", gelu="tanh")
    assert allowed.ret == 0
    assert "drift does not fail the run (--parity-drift-fails=no)" in summary(allowed)
    assert summary(allowed)[2].startswith("new failures 0, fixed 0, drifted 2 tensors in 1 check")

    # the input gradient grew about 170x; a factor of 1000 does not call that drift
    wide = inner("-k", "loose", f"{BASELINE}=base", f"{DRIFT}=1000", gelu="tanh")
    assert wide.ret == 0
    assert summary(wide)[2].startswith("new failures 0, fixed 0, drifted 0 tensors in 0 checks")


def test_fixes_missing_and_uncollected_checks_and_a_baseline_from_another_environment(inner, pytester):
    inner(f"{SAVE_BASELINE}=base", gelu="tanh", sometimes=True).assert_outcomes(passed=3, failed=1)
    stored = pytester.path / "base" / BASELINE_FILE
    lines = stored.read_text().splitlines()
    environment = json.loads(lines[0])
    environment["versions"]["mindspore"] = "2.9.0"
    environment["device"] = "GPU"
    stored.write_text("\n".join([json.dumps(environment)] + lines[1:]) + "\n")

    result = inner(f"{BASELINE}=base", "-k", "not dense")  # test_sometimes skips: collected, no check
    result.assert_outcomes(passed=2, skipped=1, deselected=1)
    assert result.ret == 0
    lines = summary(result)
    assert lines[0] == (
        "environment differs from the baseline's: device GPU -> CPU; versions.mindspore 2.9.0 -> "
        f"{metadata.version('mindspore')}"
    )
    assert (
        lines[2] == "new failures 0, fixed 1, drifted 0 tensors in 0 checks, new checks 0, missing 1, "
        "not collected in this run 1"
    )
    assert any(
        line.startswith("FIXED test_inner.py::test_gelu_tight: pass, worst margin ")
        and line.endswith("(baseline: fail)")
        for line in lines
    )
    assert "MISSING test_inner.py::test_sometimes: made no check in this run (baseline: pass)" in lines
    assert any(
        line.startswith("not compared: 1 baseline check of tests this run did not collect")
        and line.endswith(": test_inner.py::test_dense")
        for line in lines
    )


def test_under_xdist_the_controller_compares_and_saves_every_check_once(inner, pytester):
    pytest.importorskip("xdist")
    inner(f"{SAVE_BASELINE}=base", sometimes=True).assert_outcomes(passed=4)
    result = inner(
        "-n",
        "2",
        f"{BASELINE}=base",
        f"{SAVE_BASELINE}=tonight",
        f"{REPORT}=tonight.jsonl",
        gelu="tanh",
        sometimes=True,
        subprocess=True,
    )
    result.assert_outcomes(passed=3, failed=1)
    lines = summary(result)
    assert lines[2] == "new failures 1, fixed 0, drifted 2 tensors in 1 check, new checks 0, missing 0"
    assert any(line.startswith("baseline saved: ") and line.endswith("(4 checks)") for line in lines)
    environment, saved = read_records(pytester.path / "tonight" / BASELINE_FILE)
    _, reported = read_records(pytester.path / "tonight.jsonl")
    assert environment["run"]["xdist_workers"] == 2
    assert [(c["nodeid"], c["index"]) for c in saved] == sorted((c["nodeid"], c["index"]) for c in reported)
    assert len(saved) == 4 and {c["worker"] for c in saved} <= {"gw0", "gw1"}


# A small catalogue of real pairs. INNER_DRIFT scales the MindSpore side of `Drifts` by 1 + INNER_DRIFT:
# 3e-7 keeps every tensor inside the float32 tolerance and grows its margins far beyond 4x.
CATALOGUE = """
import os

from parity import TRANSLATE, ParityCase, randn


def ms_drifts():
    import mindspore

    class Scaled(mindspore.nn.Cell):
        def __init__(self):
            super().__init__()
            self.fc = mindspore.nn.Dense(8, 4)
            self.scale = 1.0 + float(os.environ.get("INNER_DRIFT", "0"))

        def construct(self, x):
            return self.fc(x) * self.scale

    return Scaled()


def torch_drifts():
    import torch

    class Plain(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(8, 4)

        def forward(self, x):
            return self.fc(x)

    return Plain()


Drifts = ParityCase("Drifts", mindspore=ms_drifts, torch=torch_drifts, inputs=randn((4, 8)))
Linear = ParityCase("Linear", mindspore=TRANSLATE, torch="torch.nn:Linear",
                    torch_kwargs={"in_features": 8, "out_features": 4}, inputs=randn((4, 8)))
LayerNorm = ParityCase("LayerNorm", mindspore=TRANSLATE, torch="torch.nn:LayerNorm",
                       torch_kwargs={"normalized_shape": 8}, inputs=randn((4, 8)))
Conv2d = ParityCase("Conv2d", mindspore=TRANSLATE, torch="torch.nn:Conv2d",
                    torch_kwargs={"in_channels": 2, "out_channels": 3, "kernel_size": 3, "padding": 1},
                    inputs=randn((1, 2, 5, 5)))
Softmax = ParityCase("Softmax", mindspore=TRANSLATE, torch="torch.nn:Softmax", torch_kwargs={"dim": -1},
                     inputs=randn((4, 8)))
Sigmoid = ParityCase("Sigmoid", mindspore=TRANSLATE, torch="torch.nn:Sigmoid", inputs=randn((4, 8)))
"""
PAIRS = ("Drifts", "Linear", "LayerNorm", "Conv2d", "Softmax", "Sigmoid")


class _Page(html.parser.HTMLParser):
    """The report page's elements, checked to nest and close; the verdict matrix's rows kept."""

    VOID = {"meta", "br", "hr", "img", "input", "link", "col", "wbr", "circle", "line", "path", "rect", "polyline"}

    def __init__(self):
        super().__init__()
        self.open, self.rows, self.tags, self.changes = [], {}, [], []
        self._row = None

    def handle_data(self, data):
        if any(ident == "changes" for _, ident in self.open):
            self.changes.append(data)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.tags.append(tag)
        if tag not in self.VOID:
            self.open.append((tag, attrs.get("id")))
        in_matrix = any(name == "table" and ident == "matrix" for name, ident in self.open)
        if tag == "tr" and in_matrix and "data-check" in attrs:
            self._row = self.rows.setdefault(attrs["data-check"], [])
        elif tag == "td" and self._row is not None and "data-verdict" in attrs:
            self._row.append(attrs["data-verdict"])

    def handle_startendtag(self, tag, attrs):
        self.tags.append(tag)

    def handle_endtag(self, tag):
        if tag in self.VOID:
            return
        assert self.open and self.open[-1][0] == tag, f"</{tag}> closes {self.open[-1:]}"
        self.open.pop()
        if tag == "tr":
            self._row = None


def test_done_when_a_catalogue_run_under_xdist_reports_exactly_one_injected_drift(pytester, monkeypatch, capsys):
    """Issue 10's demonstration: a catalogue run under ``-n 2`` with ``--parity-report`` and a
    baseline from the same run with one drift injected reports that drift and nothing else, and
    ``parity report`` makes the page of it (loaded in a browser in tests/test_report_page.py). The
    shards' union is the whole run: tests/nightly/test_shards.py::test_shards_are_disjoint_and_their_union_is_the_whole_run."""
    pytest.importorskip("xdist")
    pytester.makefile(".toml", pyproject='[tool.pytest.ini_options]\nparity_cases = ["catalogue"]\n')
    pytester.mkdir("catalogue")
    pytester.path.joinpath("catalogue", "pairs.py").write_text(CATALOGUE)
    monkeypatch.delenv("INNER_DRIFT", raising=False)
    nodeids = [f"catalogue/pairs.py::{name}[eval]" for name in PAIRS]

    def run(*args):
        return pytester.runpytest_subprocess(PARITY, "-n", "2", "-p", "no:cacheprovider", *args)

    night = run(f"{REPORT}=before.jsonl", f"{SAVE_BASELINE}=base")
    night.assert_outcomes(passed=6)
    assert night.ret == 0
    monkeypatch.setenv("INNER_DRIFT", "3e-7")
    result = run(f"{REPORT}=after.jsonl", f"{BASELINE}=base")
    result.assert_outcomes(passed=6)  # every check passes: the drift alone fails the run
    assert result.ret == 1

    environment, checks = read_records(pytester.path / "after.jsonl")
    assert environment["run"]["xdist_workers"] == 2 and sorted(c["nodeid"] for c in checks) == sorted(nodeids)
    assert {c["worker"] for c in checks} == {"gw0", "gw1"} and all(c["verdict"] == "pass" for c in checks)
    before, after = margins(pytester.path / "before.jsonl"), margins(pytester.path / "after.jsonl")
    grew = sorted(key for key in after if after[key] > 4 * max(before[key], 1e-3))
    assert grew and {nodeid for nodeid, _, _ in grew} == {nodeids[0]}
    assert all(after[key] == before[key] for key in after if key[0] != nodeids[0])

    lines = summary(result)
    assert lines[0] == "environment: the same as the baseline's (versions, device, CPU, seed, mode)"
    assert lines[2] == f"new failures 0, fixed 0, drifted {len(grew)} tensors in 1 check, new checks 0, missing 0"
    changes = [line for line in lines if line.split(" ")[0] in ("DRIFT", "NEW", "FIXED", "MISSING")]
    assert len(changes) == 1 and changes[0].startswith(f"DRIFT {nodeids[0]}: ")
    assert f"the run fails: {len(grew)} drifted tensors against the baseline" in lines

    status = cli.main(["report", "after.jsonl", "--baseline", "base", "--html", "page.html", "--markdown", "out.md"])
    assert status == 1  # a drift
    assert f"new failures 0, fixed 0, drifted {len(grew)} tensors in 1 check" in capsys.readouterr().out
    page = _Page()
    page.feed((pytester.path / "page.html").read_text(encoding="utf-8"))
    page.close()
    assert page.open == [] and "svg" in page.tags  # every element closed; the margins over time are plotted
    assert f"drifted {len(grew)} tensors in 1 check" in " ".join(page.changes)
    assert sorted(page.rows) == sorted(nodeids) and all(v == ["pass"] for v in page.rows.values())
    markdown = (pytester.path / "out.md").read_text(encoding="utf-8")
    assert len([line for line in markdown.splitlines() if line.startswith(f"| {nodeids[0]} |")]) == len(grew)
    assert not any(line.startswith(f"| {nodeid} |") for nodeid in nodeids[1:] for line in markdown.splitlines())
