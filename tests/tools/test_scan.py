"""``parity scan``: the PyTorch APIs a codebase uses (from its syntax), their statuses from the
translation tables and the known-mismatch registry, the text and JSON reports, the command line,
and the optional runtime capture."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch

from parity.cli import main
from parity.tools.scan.report import as_json, text
from parity.tools.scan.scanner import scan
from parity.tools.scan.source import SHARED_METHODS, TENSOR_METHODS, UNSEEN, find_uses
from parity.tools.scan.status import translation_tables
from parity.translation.functions import METHODS

ROOT = Path(__file__).resolve().parent.parent

NET = """\
import numpy as np
import torch as t
from torch import nn
from torch.nn import functional as F
import torch.nn.functional as G
from torch.nn import Conv2d as C, TripletMarginLoss
from torch.nn.modules.batchnorm import BatchNorm2d as BN
import torch.nn.init

Act = nn.ReLU


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = C(3, 8, 3, padding=1)
        self.bn = BN(8, 1e-5, None)
        self.act = Act()
        torch.nn.init.xavier_uniform_(self.conv.weight)

    def forward(self, x: t.Tensor) -> t.Tensor:
        x = F.relu(self.act(self.bn(self.conv(x))))
        x = G.gelu(x).permute(0, 2, 3, 1).contiguous()
        y = np.linalg.norm(np.ones(3))
        parts = "a,b".split(",")
        if isinstance(self.conv, nn.Linear):
            pass
        return t.cat([x.view(x.size(0), -1), x.flatten(1)], dim=1)


def loss():
    return TripletMarginLoss(margin=1.0)
"""


def _write(folder: Path, files: dict) -> Path:
    for name, source in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(source), encoding="utf-8")
    return folder


def _by_api(uses):
    found = {}
    for use in uses:
        found.setdefault(use.api, []).append(use)
    return found


# --- finding the uses -------------------------------------------------------------------------


def test_every_alias_form_resolves_to_the_full_path():
    uses = _by_api(find_uses(NET, "net.py")[0])
    assert [u.line for u in uses["torch.nn.Conv2d"]] == [16]  # from torch.nn import Conv2d as C
    assert [u.how for u in uses["torch.nn.BatchNorm2d"]] == ["call"]  # torch.nn.modules.batchnorm -> torch.nn
    assert [(u.line, u.how) for u in uses["torch.nn.ReLU"]] == [(10, "reference"), (18, "call")]  # Act = nn.ReLU
    assert uses["torch.nn.Module"][0].how == "subclass"
    assert uses["torch.nn.init.xavier_uniform_"][0].line == 19  # a chain through `import torch.nn.init`
    assert uses["torch.nn.functional.relu"][0].line == 22  # from torch.nn import functional as F
    assert uses["torch.nn.functional.gelu"][0].line == 23  # import torch.nn.functional as G
    assert uses["torch.cat"][0].keywords == (("dim", 1),)  # import torch as t
    assert uses["torch.nn.TripletMarginLoss"][0].line == 32
    assert uses["torch.nn.Linear"][0].how == "type check"


def test_annotations_and_namespaces_are_not_uses():
    uses = _by_api(find_uses(NET, "net.py")[0])
    assert "torch.Tensor" not in uses  # only in annotations
    assert not {"torch", "torch.nn", "torch.nn.functional"} & set(uses)


def test_tensor_methods_are_inferred_by_name_only_where_unambiguous():
    uses = _by_api(find_uses(NET, "net.py")[0])
    for method in ("permute", "contiguous", "view"):
        assert uses[f"torch.Tensor.{method}"][0].how == "tensor method (inferred)"
    for method in ("size", "flatten", "split"):  # ambiguous: other types have them; recorded as not seen
        assert {u.how for u in uses.get(f"torch.Tensor.{method}", [])} <= {UNSEEN}, method
    assert "torch.Tensor.norm" not in uses  # np.linalg.norm: the receiver is an imported module


def test_the_shared_method_list_is_what_it_claims():
    """Every name is a Tensor method some other type has too, and every such name of the
    translation table is on it (so the table adds only names no other type has)."""
    others = (torch.nn.Module, list, dict, str, set, bytes, tuple, np.ndarray)
    assert all(callable(getattr(torch.Tensor, m, None)) for m in SHARED_METHODS)
    assert not SHARED_METHODS & TENSOR_METHODS
    assert all(any(hasattr(o, m) for o in others) for m in SHARED_METHODS)
    named = {m for m in METHODS if not m.startswith("__")}  # operators' dunders: never written as x.__and__(y)
    assert {m for m in named if any(hasattr(o, m) for o in others)} <= SHARED_METHODS | TENSOR_METHODS


LLAMA_LIKE = """import torch


def rms(x, weight):
    dtype = x.dtype
    x = x.to(torch.float32)
    x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)
    return weight * x.to(dtype) * x.cos() + x.sin().reshape(x.shape) + x.erfinv()
"""


def test_translated_methods_no_other_type_has_are_counted_and_shared_ones_reported(tmp_path, capsys):
    path = _write(tmp_path, {"llama.py": LLAMA_LIKE})
    assert main(["scan", str(path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    apis = {a["api"]: a for a in data["apis"]}
    for method in ("pow", "cos", "sin"):  # in the translation table, and no other type's
        assert apis[f"torch.Tensor.{method}"]["inferred"] and apis[f"torch.Tensor.{method}"]["status"] == "as-is"
    assert "torch.Tensor.to" not in apis and "torch.Tensor.erfinv" not in apis
    assert data["summary"]["not_seen"] == {
        "calls": 4,
        "methods": {"to": 2, "mean": 1, "reshape": 1},
        "untranslated": [],
    }
    assert main(["scan", str(path)]) == 0
    assert (
        "Not seen: 4 calls x.name(...) of Tensor methods other types share (to 2, mean 1, reshape 1): a static "
        "scan cannot tell their receivers, so the figure leaves them out; --module records those that run"
    ) in capsys.readouterr().out


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
    from parity.translation.functions import FUNCTIONS, METHODS, method_for

    tables = translation_tables()
    assert tables.functions == set(FUNCTIONS) and tables.methods == set(METHODS)
    # every method name the scan can meet, in place or not: translated for the scan iff method_for has an adapter
    for name in sorted(TENSOR_METHODS | set(METHODS) | {f"{m}_" for m in METHODS} | {"fill_", "__add__"}):
        assert tables.translated(f"torch.Tensor.{name}") == (method_for(name) is not None), name


# --- statuses ---------------------------------------------------------------------------------


def _statuses(folder: Path, device: str = "CPU"):
    report = scan(folder, device=device)
    return report, {a.api: a for a in report.apis}


def test_statuses_from_translation_and_registry(tmp_path):
    report, apis = _statuses(_write(tmp_path, {"net.py": NET}))
    assert apis["torch.nn.ReLU"].status.code == "as-is"
    assert apis["torch.nn.Module"].status.code == "as-is"
    assert apis["torch.nn.Conv2d"].status.code == "fix"
    assert "conv2d-has-bias-default" in {f.id for f in apis["torch.nn.Conv2d"].status.findings if f.live}
    assert apis["torch.nn.TripletMarginLoss"].status.code == "unsupported"
    assert report.status_text("unsupported") == "unsupported on CPU"
    assert apis["torch.cat"].status.code == "as-is"  # parity.translation.functions
    assert apis["torch.Tensor.view"].status.code == "as-is" and apis["torch.Tensor.view"].inferred
    # BN(8, 1e-5, None): momentum=None passed positionally, placed through torch's own __init__
    bn = apis["torch.nn.BatchNorm2d"].status
    assert bn.code == "no-fix" and bn.certain
    assert {f.id: f.applies for f in bn.findings}["batchnorm2d-momentum-none-unsupported"] == "yes"


FUNCTIONAL = """\
import torch
import torch.nn.functional as F


def forward(x, y):
    x = F.relu(torch.flatten(x, 1)).view(2, -1)
    x.relu_()
    x.fill_(0.0)
    z = torch.fft.fft(torch.cat([x, y], 1))
    return torch.frobnicate(z), F.relu6(x), torch.special.erf(x)
"""


def test_functions_and_tensor_methods_translate_tells_what_translate_can(tmp_path):
    _, apis = _statuses(_write(tmp_path, {"f.py": FUNCTIONAL}))
    for api in (
        "torch.flatten",
        "torch.nn.functional.relu",
        "torch.Tensor.view",
        "torch.cat",
        "torch.nn.functional.relu6",
        "torch.Tensor.relu_",
    ):  # relu_: computed out of place
        assert apis[api].status.code == "as-is", api
    for api in ("torch.fft.fft", "torch.frobnicate", "torch.special.erf", "torch.Tensor.fill_"):
        assert apis[api].status.code == "unknown", api


def test_a_known_mismatch_of_a_function_takes_precedence_over_its_translation(tmp_path):
    from parity.registry import load

    entry = """\
        schema = 1
        [[mismatch]]
        id = "{id}"
        kind = "{kind}"
        torch = "{torch}"
        mindspore = "mindspore.ops.{name}"
        family = "nn"
        summary = "made up for the test"
        reason = "made up for the test"
        reference = "https://example.org"
        devices = ["CPU", "GPU", "Ascend"]
        selftest_skip = "made up"
        {extra}
        """
    data = _write(
        tmp_path / "registry",
        {
            "a.toml": entry.format(
                id="cat-made-up", kind="formula", torch="torch.cat", name="cat", extra='fix = "pass axis"'
            ),
            "b.toml": entry.format(
                id="relu-made-up",
                kind="unsupported",
                torch="torch.nn.functional.relu",
                name="relu",
                extra='runs_on = ["Ascend"]',
            ),
        },
    )
    registry = load(sorted(data.glob("*.toml")))
    report = scan(_write(tmp_path / "code", {"f.py": FUNCTIONAL}), registry=registry)
    apis = {a.api: a.status.code for a in report.apis}
    assert (apis["torch.cat"], apis["torch.nn.functional.relu"], apis["torch.flatten"]) == (
        "fix",
        "unsupported",
        "as-is",
    )


def test_the_device_changes_the_status(tmp_path):
    _, apis = _statuses(_write(tmp_path, {"net.py": NET}), device="GPU")
    assert apis["torch.nn.TripletMarginLoss"].status.code == "as-is"  # the missing kernel is CPU's


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


def test_a_layer_passed_by_reference_may_apply_and_says_where(tmp_path):
    source = "from torch import nn\ndef block(norm_layer=nn.BatchNorm2d):\n    return norm_layer(8)\n"
    report, apis = _statuses(_write(tmp_path, {"m.py": source}))
    status = apis["torch.nn.BatchNorm2d"].status
    assert status.code == "no-fix" and not status.certain
    finding = {f.id: f for f in status.findings}["batchnorm2d-momentum-none-unsupported"]
    assert (finding.applies, finding.where) == ("maybe", f"{tmp_path / 'm.py'}:2")
    assert "known mismatch, no fix (may apply)" in text(report)


def test_an_optimizer_parity_translates_is_fixed_by_its_own_formulas(tmp_path):
    _, apis = _statuses(_write(tmp_path, {"m.py": "import torch\nopt = torch.optim.RMSprop([], lr=0.1)\n"}))
    status = apis["torch.optim.RMSprop"].status
    assert status.code == "fix"
    assert "parity.translation.optim" in {f.id: f.fix for f in status.findings}["rmsprop-formula"]


# --- reports and the command line -------------------------------------------------------------


def test_summary_counts_and_convertible_share(tmp_path):
    report, apis = _statuses(_write(tmp_path, {"net.py": NET}))
    assert sum(report.counts.values()) == len(report.apis) == len(apis)
    convertible = sum(1 for a in report.apis if a.status.code in ("as-is", "fix"))
    assert report.convertible == convertible
    assert report.convertible_percent == round(100 * convertible / len(report.apis), 1)
    shown = text(report)
    assert f"Convertible: {convertible} of {len(report.apis)} distinct APIs ({report.convertible_percent}%)" in shown
    conv = next(line for line in shown.splitlines() if line.startswith("torch.nn.Conv2d "))
    assert conv.split()[1:] == ["known", "mismatch,", "with", "fix", "1", f"{tmp_path / 'net.py'}:16"]
    assert any(line.startswith("torch.Tensor.view *") for line in shown.splitlines())


def test_json_report(tmp_path, capsys):
    folder = _write(tmp_path, {"net.py": NET, "pkg/other.py": "import torch\nx = torch.bernoulli(y)\n"})
    assert main(["scan", str(folder), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["schema"] == 1 and data["device"] == "CPU" and data["files"] == 2
    assert set(data["summary"]["statuses"]) == {"as-is", "fix", "no-fix", "unsupported", "unknown"}
    assert sum(data["summary"]["statuses"].values()) == data["summary"]["apis"] == len(data["apis"])
    conv = next(a for a in data["apis"] if a["api"] == "torch.nn.Conv2d")
    assert conv["first"] == f"{folder / 'net.py'}:16" and conv["locations"][0]["how"] == "call"
    assert conv["family"] == "nn" and conv["status"] == "fix"
    assert any(m["id"] == "conv2d-has-bias-default" and m["applies"] == "yes" and m["fix"] for m in conv["mismatches"])
    unknown = next(a for a in data["apis"] if a["api"] == "torch.bernoulli")
    assert unknown["first"] == f"{folder / 'pkg' / 'other.py'}:2" and unknown["status"] == "unknown"
    assert data == as_json(scan(folder))


def test_missing_path_is_a_usage_error(tmp_path, capsys):
    assert main(["scan", str(tmp_path / "nowhere")]) == 2
    assert f"parity: error: parity scan: no such file or folder: {tmp_path / 'nowhere'}" in capsys.readouterr().err


def test_folder_without_python_files_is_a_usage_error(tmp_path, capsys):
    assert main(["scan", str(tmp_path)]) == 2
    assert "no Python files under" in capsys.readouterr().err


def test_unknown_device_is_refused_by_the_parser(tmp_path, capsys):
    with pytest.raises(SystemExit) as info:
        main(["scan", str(tmp_path), "--device", "TPU"])
    assert info.value.code == 2
    assert "invalid choice: 'TPU'" in capsys.readouterr().err


def test_a_file_that_does_not_parse_is_skipped_and_named(tmp_path, capsys):
    folder = _write(tmp_path, {"good.py": "import torch\ntorch.cat([])\n", "broken.py": "def f(:\n    pass\n"})
    assert main(["scan", str(folder)]) == 0
    out = capsys.readouterr().out
    assert f"Skipped {folder / 'broken.py'}: SyntaxError: " in out and "(line 1)" in out
    assert "2 Python files, 1 use of 1 distinct PyTorch API" in out
    report = scan(folder)
    assert [f for f, _ in report.skipped] == [str(folder / "broken.py")]


def test_hidden_and_environment_folders_are_not_entered(tmp_path):
    folder = _write(
        tmp_path,
        {
            "a.py": "import torch\ntorch.cat([])\n",
            ".venv/x.py": "import torch\ntorch.stack([])\n",
            "venv/y.py": "import torch\ntorch.stack([])\n",
            "__pycache__/z.py": "import torch\ntorch.stack([])\n",
        },
    )
    assert [a.api for a in scan(folder).apis] == ["torch.cat"]


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
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("### `parity scan`") :]
    source = section[section.index("For this `net.py`:\n\n```python\n") + len("For this `net.py`:\n\n```python\n") :]
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


def test_star_imports_and_unreadable_files_are_reported(tmp_path):
    folder = _write(tmp_path, {"star.py": "from torch.nn import *\nlayer = Conv2d(3, 4, 3)\n"})
    (folder / "nul.py").write_bytes(b"import torch\x00\n")
    report = scan(folder)
    assert report.notes == (
        f"{folder / 'star.py'}:1: 'from torch.nn import *' is not followed; names it binds are not counted",
    )
    assert [(f, why.split(":")[0]) for f, why in report.skipped] == [(str(folder / "nul.py"), "SyntaxError")]
    shown = text(report)
    assert f"Skipped {folder / 'nul.py'}: SyntaxError" in shown and "Note: " in shown
