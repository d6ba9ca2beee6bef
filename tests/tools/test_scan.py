"""``parity scan``: the PyTorch APIs a codebase uses (from its syntax), their statuses from the
translation tables and the known-mismatch registry, the text and JSON reports and the command line.
What needs the frameworks (the tables against translate's, statuses by installed version, the
runtime capture): tests/test_scan.py."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from parity.cli import main
from parity.tools.scan.report import as_json, text
from parity.tools.scan.scanner import scan
from parity.tools.scan.source import UNSEEN, find_uses

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


LLAMA_LIKE = """import torch


def rms(x, weight):
    dtype = x.dtype
    x = x.to(torch.float32)
    x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)
    return weight * x.to(dtype) * x.cos() + x.sin().reshape(x.shape) + x.geqrf()[0]
"""


def test_translated_methods_no_other_type_has_are_counted_and_shared_ones_reported(tmp_path, capsys):
    path = _write(tmp_path, {"llama.py": LLAMA_LIKE})
    assert main(["scan", str(path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    apis = {a["api"]: a for a in data["apis"]}
    for method in ("pow", "cos", "sin"):  # in the translation table, and no other type's
        assert apis[f"torch.Tensor.{method}"]["inferred"] and apis[f"torch.Tensor.{method}"]["status"] == "as-is"
    assert "torch.Tensor.to" not in apis and "torch.Tensor.geqrf" not in apis
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


# --- statuses ---------------------------------------------------------------------------------


def _statuses(folder: Path, device: str = "CPU"):
    report = scan(folder, device=device)
    return report, {a.api: a for a in report.apis}


FUNCTIONAL = """\
import torch
import torch.nn.functional as F


def forward(x, y):
    x = F.relu(torch.flatten(x, 1)).view(2, -1)
    x.relu_()
    x.fill_(0.0)
    z = torch.geqrf(torch.cat([x, y], 1))
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
    for api in ("torch.geqrf", "torch.frobnicate", "torch.special.erf", "torch.Tensor.fill_"):
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
