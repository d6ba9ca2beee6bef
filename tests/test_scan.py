"""``parity scan`` against the frameworks: the method lists and translation tables it parses are the
ones translate imports, statuses that depend on the installed versions, the static scan importing
neither framework, and the optional runtime capture. The scan of source text, its reports and its
command line: tests/tools/test_scan.py."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from parity.cli import main
from parity.tools.scan.source import SHARED_METHODS, TENSOR_METHODS
from parity.tools.scan.status import translation_tables
from parity.translation.calls import METHODS

from tools.test_scan import NET, _statuses, _write

ROOT = Path(__file__).resolve().parent.parent


# --- finding the uses -------------------------------------------------------------------------


def test_the_shared_method_list_is_what_it_claims():
    """Every name is a Tensor method some other type has too, and every such name of the
    translation table is on it (so the table adds only names no other type has)."""
    others = (torch.nn.Module, list, dict, str, set, bytes, tuple, np.ndarray)
    assert all(callable(getattr(torch.Tensor, m, None)) for m in SHARED_METHODS)
    assert not SHARED_METHODS & TENSOR_METHODS
    assert all(any(hasattr(o, m) for o in others) for m in SHARED_METHODS)
    named = {m for m in METHODS if not m.startswith("__")}  # operators' dunders: never written as x.__and__(y)
    assert {m for m in named if any(hasattr(o, m) for o in others)} <= SHARED_METHODS | TENSOR_METHODS


def test_the_tensor_method_list_is_what_it_claims():
    assert all(callable(getattr(torch.Tensor, m, None)) for m in TENSOR_METHODS)
    for other in (torch.nn.Module, list, dict, str, set, bytes, tuple):
        assert not [m for m in TENSOR_METHODS if hasattr(other, m)], other
    assert {m for m in TENSOR_METHODS if hasattr(np.ndarray, m)} == {"view"}  # the one documented overlap


def test_the_parsed_translation_tables_are_the_imported_ones():
    from parity.translation import translated_names
    from parity.translation.optim import translated_optimizers

    tables = translation_tables()
    assert tables.layers == set(translated_names())
    assert tables.optimizers == set(translated_optimizers())
    assert tables.containers == {"torch.nn.Module", "torch.nn.Sequential", "torch.nn.ModuleList", "torch.nn.ModuleDict"}


def test_the_scan_reads_functions_and_tensor_methods_from_the_table_translate_uses():
    from parity.translation.calls import FUNCTIONS, METHODS, method_for

    tables = translation_tables()
    assert tables.functions == set(FUNCTIONS) and tables.methods == set(METHODS)
    # every method name the scan can meet, in place or not: translated for the scan iff method_for has an adapter
    for name in sorted(TENSOR_METHODS | set(METHODS) | {f"{m}_" for m in METHODS} | {"fill_", "__add__"}):
        assert tables.translated(f"torch.Tensor.{name}") == (method_for(name) is not None), name


# --- statuses ---------------------------------------------------------------------------------


def test_statuses_from_translation_and_registry(tmp_path):
    report, apis = _statuses(_write(tmp_path, {"net.py": NET}))
    assert apis["torch.nn.ReLU"].status.code == "as-is"
    assert apis["torch.nn.Module"].status.code == "as-is"
    assert apis["torch.nn.Conv2d"].status.code == "fix"
    assert "conv2d-has-bias-default" in {f.id for f in apis["torch.nn.Conv2d"].status.findings if f.live}
    assert apis["torch.nn.TripletMarginLoss"].status.code == "unsupported"
    assert report.status_text("unsupported") == "unsupported on CPU"
    assert apis["torch.cat"].status.code == "as-is"  # parity.translation.calls
    assert apis["torch.Tensor.view"].status.code == "as-is" and apis["torch.Tensor.view"].inferred
    # BN(8, 1e-5, None): momentum=None passed positionally, placed through torch's own __init__
    bn = apis["torch.nn.BatchNorm2d"].status
    assert bn.code == "no-fix" and bn.certain
    assert {f.id: f.applies for f in bn.findings}["batchnorm2d-momentum-none-unsupported"] == "yes"


@pytest.mark.parametrize(
    "call, status, applies",
    [
        ("nn.Embedding(10, 3, max_norm=1.0)", "no-fix", "yes"),
        ("nn.Embedding(10, 3)", "fix", "no"),
        ("nn.Embedding(10, 3, max_norm=limit)", "no-fix", "maybe"),  # not a literal
        ("nn.Embedding(10, 3, None, 2.0)", "no-fix", "yes"),  # positional max_norm
        ("nn.Embedding(10, 3, **options)", "no-fix", "maybe"),
    ],
)
def test_a_mismatch_bound_to_an_argument_applies_where_the_call_sets_it(tmp_path, call, status, applies):
    _, apis = _statuses(_write(tmp_path, {"m.py": f"from torch import nn\nlayer = {call}\n"}))
    embedding = apis["torch.nn.Embedding"].status
    assert embedding.code == status
    assert {f.id: f.applies for f in embedding.findings}["embedding-max-norm-unsupported"] == applies


def test_the_static_scan_imports_no_framework(tmp_path):
    folder = _write(tmp_path, {"net.py": NET})
    code = (
        "import sys\nfrom parity.cli import main\nmain(['scan', sys.argv[1], '--json'])\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'mindspore', 'numpy')), file=sys.stderr)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(folder)], capture_output=True, text=True, cwd=ROOT, check=True
    )
    assert out.stderr.strip() == "[]"
    assert json.loads(out.stdout)["summary"]["apis"] > 10


# --- runtime capture --------------------------------------------------------------------------

RUNTIME_NET = """\
import torch
from torch import nn


def _layer(name, *args, **kwargs):
    return getattr(nn, name)(*args, **kwargs)  # invisible to the static scan


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.bn = _layer("BatchNorm2d", 4, momentum=None)
        self.head = nn.Sequential(nn.Flatten(), nn.Linear(4 * 6 * 6, 2))

    def forward(self, x):
        x = self.bn(self.conv(x))
        x = getattr(torch, "tanh")(x)
        return self.head(x.view(x.size(0), 4, 6, 6))


def make():
    return Net()
"""


@pytest.fixture
def runtime_module(tmp_path, monkeypatch):
    name = f"scan_runtime_net_{tmp_path.name}"
    (tmp_path / f"{name}.py").write_text(RUNTIME_NET, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name
    sys.modules.pop(name, None)


def test_runtime_capture_finds_what_the_static_scan_misses(runtime_module, capsys):
    assert (
        main(
            ["scan", f"{runtime_module}.py", "--module", f"{runtime_module}:make", "--input-shape", "2,3,6,6", "--json"]
        )
        == 0
    )
    data = json.loads(capsys.readouterr().out)
    apis = {a["api"]: a for a in data["apis"]}
    assert data["runtime_module"] == f"{runtime_module}:make"
    tanh = apis["torch.tanh"]
    assert tanh["uses"] == 0 and tanh["runtime_locations"] == [
        {"file": f"{runtime_module}.py", "line": 18, "how": "runtime call"}
    ]
    bn = apis["torch.nn.BatchNorm2d"]  # built through getattr: only the runtime sees it, with momentum=None
    assert bn["uses"] == 0 and bn["runtime_calls"] == 1 and bn["status"] == "no-fix" and bn["certain"]
    assert apis["torch.nn.Linear"]["runtime_calls"] == 1  # inside nn.Sequential: containers are see-through
    assert apis["torch.Tensor.view"]["uses"] == 1 and apis["torch.Tensor.view"]["runtime_calls"] == 1
    assert "torch.nn.functional.conv2d" not in apis  # nn.Conv2d's own call, not the user's
    assert "torch.Tensor.sum" not in apis and "torch.Tensor.backward" not in apis  # parity's backward pass


TOKEN_NET = """import torch


class Tokens(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(128, 8)

    def forward(self, ids):
        positions = torch.cumsum(torch.ones_like(ids), dim=1)
        return self.embed(ids).sum(-1) * positions.to(torch.float32)


def make():
    return Tokens()
"""


def test_runtime_capture_takes_integer_inputs(tmp_path, monkeypatch, capsys):
    """A token-id model runs on int64 ids in the range given; a float input would fail its Embedding."""
    name = f"scan_token_net_{tmp_path.name}"
    (tmp_path / f"{name}.py").write_text(TOKEN_NET, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        assert main(["scan", f"{name}.py", "--module", f"{name}:make", "--input-int", "2,16:0:128", "--json"]) == 0
        data = json.loads(capsys.readouterr().out)
        apis = {a["api"]: a for a in data["apis"]}
        assert apis["torch.cumsum"]["runtime_calls"] == 1 and apis["torch.Tensor.to"]["runtime_calls"] == 1
        assert data["summary"]["not_seen"]["methods"] == {}  # .to(...) and .sum(-1) ran: seen, not guessed
        assert apis["torch.nn.Embedding"]["runtime_calls"] == 1
        assert main(["scan", f"{name}.py", "--module", f"{name}:make", "--input-shape", "2,16"]) == 2
        assert "on a float32 input of shape (2, 16) raised" in capsys.readouterr().err
    finally:
        sys.modules.pop(name, None)


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--module", "x:make"], "--module and --input-shape (or --input-int) go together"),
        (
            ["--module", "x:make", "--input-shape", "1,3", "--input-int", "1,3:0:4"],
            "--input-shape or --input-int, not both",
        ),
        (["--module", "json:dumps", "--input-int", "2,16:5:5"], "--input-int '2,16:5:5' is not SHAPE:LOW:HIGH"),
        (["--module", "json:dumps", "--input-int", "2,x:0:9"], "'2,x' is not a shape"),
        (["--module", "no_such_module_xyz:make", "--input-shape", "1,3"], "cannot import it (ModuleNotFoundError"),
        (["--module", "json", "--input-shape", "1,3"], "write package.module:factory"),
        (["--module", "json:dumps", "--input-shape", "1,x"], "--input-shape '1,x' is not a shape"),
    ],
)
def test_runtime_usage_errors(tmp_path, capsys, argv, message):
    _write(tmp_path, {"a.py": "import torch\n"})
    assert main(["scan", str(tmp_path), *argv]) == 2
    assert message in capsys.readouterr().err


def test_the_readme_example_is_what_the_command_prints(tmp_path, monkeypatch, capsys):
    readme = (ROOT / "docs" / "how-to" / "scan.md").read_text(encoding="utf-8")
    section = readme[readme.index("# `parity scan`") :]
    opening = "For this `net.py`:\n\n<!-- example: run by tests/test_scan.py -->\n\n```python\n"
    source = section[section.index(opening) + len(opening) :]
    source = source[: source.index("```")]
    shown = section[section.index("```text\n$ parity scan net.py\n") + len("```text\n$ parity scan net.py\n") :]
    shown = shown[: shown.index("```")]
    (tmp_path / "net.py").write_text(source, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert main(["scan", "net.py"]) == 0
    printed = capsys.readouterr().out

    def comparable(text_block):  # the installed versions and the Tensor-method footnote aside
        lines = [line for line in text_block.splitlines() if not line.startswith(("Status on", "* tensor"))]
        return "\n".join(lines).strip().splitlines()

    assert comparable(printed) == comparable(shown)
