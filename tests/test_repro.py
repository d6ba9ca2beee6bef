"""Standalone repros of real divergences (``Result.write_repro``): each file written is run in a
fresh interpreter where parity cannot be imported, and must fail for the check's reason."""

from __future__ import annotations

import json
import os
import site
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import mindspore
import numpy as np
import pytest
import torch

import parity
from cases.faults.models import ms_resnet, torch_resnet
from parity.engine.diagnosis.repro import render
from parity.options import PARITY, REPRO

ROOT = Path(__file__).resolve().parents[1]
PAGE = "docs/how-to/repro-files.md"
pytestmark = pytest.mark.usefixtures("collect_inner_cells")


def _failed(ms_cell, torch_module, inputs, **kwargs):
    with pytest.raises(parity.ParityMismatch) as caught:
        parity.check(ms_cell, torch_module, inputs, **kwargs)
    return caught.value.result


def _without_parity(tmp_path: Path, *, cases: bool = False) -> dict:
    """An environment with the frameworks, numpy and pytest but no parity: no site processing
    (parity is installed in development mode by a .pth file), the site-packages folder on the
    path, pytest's plugin autoloading off (parity's entry point would fail); with ``cases``, a
    folder holding only the catalogue's package."""
    paths = [p for p in site.getsitepackages() if Path(p).is_dir()]
    if cases:
        holder = tmp_path / "only-cases"
        holder.mkdir()
        (holder / "cases").symlink_to(ROOT / "cases")
        paths.append(str(holder))
    return {
        **{k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTEST_ADDOPTS")},
        "PYTHONPATH": os.pathsep.join(paths),
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
    }


def _run_standalone(path: Path, env: dict) -> subprocess.CompletedProcess:
    blocked = subprocess.run(
        [sys.executable, "-S", "-c", "import parity"], env=env, capture_output=True, text=True, cwd=path.parent
    )
    assert blocked.returncode != 0 and "No module named 'parity'" in blocked.stderr
    return subprocess.run(
        [
            sys.executable,
            "-S",
            "-m",
            "pytest",
            path.name,
            "-q",
            "-p",
            "no:cacheprovider",
            "-c",
            os.devnull,
            f"--rootdir={path.parent}",
        ],
        env=env,
        capture_output=True,
        text=True,
        cwd=path.parent,
        timeout=300,
    )


def _readme_example() -> str:
    """The example of docs/how-to/repro-files.md, as written."""
    text = (ROOT / PAGE).read_text(encoding="utf-8")
    section = text[text.index("# A standalone repro") :]
    return section[
        section.index("```python\n") + len("```python\n") : section.index("```\n", section.index("```python"))
    ]


def test_the_readme_example_turns_the_mindcv_stem_into_a_small_max_pool_pair(tmp_path, monkeypatch):
    # mindcv's ResNet stem (max-pool pad_mode="same") against torchvision's (padding=1)
    monkeypatch.chdir(tmp_path)
    scope = {}
    exec(compile(_readme_example(), PAGE, "exec"), scope)
    path = Path(scope["path"]).resolve()
    assert path == tmp_path / "repros" / "SequentialCell_3" / "test_SequentialCell_3.py"
    assert scope["result"].repro == str(scope["path"])
    assert sorted(p.name for p in path.parent.iterdir()) == sorted([path.name, render.DATA_FILE])
    assert [p.name for p in tmp_path.iterdir()] == ["repros"] and len(list((tmp_path / "repros").iterdir())) == 1
    text = path.read_text()
    assert "mindspore.nn.MaxPool2d(kernel_size=3, stride=2, pad_mode='same')" in text
    assert "torch.nn.MaxPool2d(kernel_size=3, stride=2, padding=1)" in text
    size = (path.parent / render.DATA_FILE).stat().st_size
    with np.load(path.parent / render.DATA_FILE, allow_pickle=False) as data:
        assert data.files == ["input[0]"]  # a max-pool has no weights
        shape = data["input[0]"].shape
    readme = (ROOT / PAGE).read_text(encoding="utf-8")
    lines = len(text.splitlines())
    assert lines < 65 and size < 100_000
    # the figures the page gives are this run's
    assert f"pair of\n{lines} lines with an input of shape `{shape}`, shrunk from `(2, 8, 16, 16)`" in readme
    assert "shrunk from (2, 8, 16, 16)" in text and size < 1000
    run = _run_standalone(path, _without_parity(tmp_path))
    assert run.returncode == 1, run.stdout + run.stderr
    assert "AssertionError: output[0]: values differ" in run.stdout


def test_a_forward_fault_in_a_batch_norm_in_training_carries_its_weights_and_leaves_the_models_be(tmp_path):
    ms_cell, torch_module = ms_resnet("bn_eps"), torch_resnet()
    result = _failed(ms_cell, torch_module, parity.randn((2, 3, 8, 8)), train=True)
    ms_cell.set_train(False)  # flags and statistics as the user holds them after the check
    torch_module.eval().layer2.train(True)
    before = (
        {k: v.clone() for k, v in torch_module.state_dict().items()},
        {k: p.asnumpy().copy() for k, p in ms_cell.parameters_and_names()},
    )
    flags = ([m.training for m in torch_module.modules()], [c.training for c in ms_cell.cells()])
    path = result.write_repro(tmp_path)
    assert ([m.training for m in torch_module.modules()], [c.training for c in ms_cell.cells()]) == flags
    assert all(torch.equal(v, before[0][k]) for k, v in torch_module.state_dict().items())
    assert all(np.array_equal(p.asnumpy(), before[1][k]) for k, p in ms_cell.parameters_and_names())
    text = path.read_text()
    assert "mindspore.nn.BatchNorm2d(num_features=16, eps=0.1)" in text and "TRAIN = True" in text
    assert "torch.nn.BatchNorm2d(num_features=16" in text
    assert "COTANGENTS" not in text  # the outputs already differ: no gradients needed
    with np.load(path.parent / render.DATA_FILE, allow_pickle=False) as data:
        assert {"ms:gamma", "ms:moving_variance", "pt:weight", "pt:running_var"} <= set(data.files)
    run = _run_standalone(path, _without_parity(tmp_path))
    assert run.returncode == 1 and "AssertionError: output[0]: values differ" in run.stdout, run.stdout


def test_a_gradient_fault_feeds_back_the_captured_cotangent(tmp_path):
    # the clamp's custom backward masks its gradient on the MindSpore side only: the outputs agree
    result = _failed(ms_resnet("custom_bprop"), torch_resnet(), parity.randn((2, 3, 8, 8)))
    assert result.layers.first("backward")[0].path == "clip"
    path = result.write_repro(tmp_path)
    text = path.read_text()
    assert "cases.faults.models.MSStraightThrough(masked=True)" in text
    assert "cases.faults.models.TorchStraightThrough()" in text and "and cases.faults.models importable" in text
    assert "COTANGENTS = [DATA['cotangent[0]']]" in text
    run = _run_standalone(path, _without_parity(tmp_path, cases=True))
    assert run.returncode == 1, run.stdout + run.stderr
    assert "AssertionError: grad input[0]: values differ" in run.stdout


def test_a_layer_that_cannot_be_rebuilt_is_refused_with_its_reason_and_nothing_is_left(tmp_path):
    class Doubled(mindspore.nn.Cell):  # defined in a function: no import path
        def construct(self, x):
            return x * 2.0

    class Tripled(torch.nn.Module):
        def forward(self, x):
            return x * 3.0

    result = _failed(
        mindspore.nn.SequentialCell([Doubled()]), torch.nn.Sequential(Tripled()), parity.randn((2, 3)), grads=False
    )
    with pytest.raises(parity.ParityNoRepro) as refused:
        result.write_repro(tmp_path)
    message = str(refused.value)
    assert "'0' cannot be rebuilt standalone: " in message and "is defined in a function, not importable" in message
    assert "'<root>' cannot be rebuilt standalone: SequentialCell() takes *args" in message
    assert list(tmp_path.iterdir()) == [] and result.repro is None


def test_a_file_that_does_not_fail_is_not_offered(tmp_path, monkeypatch):
    # the file written builds MindSpore's GELU as PyTorch's (tanh): it passes, so it is refused
    def agreeing(part, **kwargs):
        return written(part, **kwargs).replace("mindspore.nn.GELU(approximate=False)", "mindspore.nn.GELU()")

    written = render.file_text
    monkeypatch.setattr(render, "file_text", agreeing)
    result = _failed(*_gelus(), parity.randn((4, 8)))
    with pytest.raises(
        parity.ParityNoRepro,
        match=r"the repro of '1' does not reproduce: the standalone file passed "
        r"where the check failed \(output\[0\]: values differ",
    ):
        result.write_repro(tmp_path)
    assert list(tmp_path.iterdir()) == []  # the folder it ran in is gone


def _gelus():
    torch.manual_seed(0)
    return (
        mindspore.nn.SequentialCell(mindspore.nn.Dense(8, 8), mindspore.nn.GELU(approximate=False)),
        torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.GELU(approximate="tanh")),
    )


INNER = """
def test_gelu(parity):
    import mindspore, torch

    # a pair of single layers: the repro is the pair itself
    parity.check(mindspore.nn.GELU(approximate=False), torch.nn.GELU(approximate="tanh"), parity.randn((4, 8)))


def test_agrees(parity):
    import mindspore, torch

    parity.check(mindspore.nn.ReLU(), torch.nn.ReLU(), parity.randn((4, 8)))


def test_local(parity):
    import mindspore, torch

    class Doubled(mindspore.nn.Cell):
        def construct(self, x):
            return x * 2.0

    parity.check(Doubled(), torch.nn.Identity(), parity.randn((4, 8)), grads=False)
"""


def test_the_option_writes_a_folder_per_failing_check_named_in_message_and_records(pytester):
    pytester.makepyfile(test_inner=INNER)
    result = pytester.runpytest(
        PARITY,
        f"{REPRO.flag}=repros",
        "--parity-report=records.jsonl",
        "--junitxml=junit.xml",
        "-p",
        "no:cacheprovider",
    )
    result.assert_outcomes(passed=1, failed=2)
    (folder,) = (pytester.path / "repros").iterdir()
    (test_file,) = folder.glob("test_*.py")
    assert sorted(p.name for p in folder.iterdir()) == sorted([test_file.name, render.DATA_FILE])
    text = test_file.read_text()
    assert "mindspore.nn.GELU(approximate=False)" in text and "torch.nn.GELU(approximate='tanh')" in text
    assert "From test_inner.py::test_gelu (seed 1234)" in text
    result.stdout.fnmatch_lines([f"*Repro:      {test_file}  (standalone: python -m pytest {test_file})*"])
    records = [json.loads(line) for line in (pytester.path / "records.jsonl").read_text().splitlines()]
    by_test = {r["nodeid"]: r for r in records if r["type"] == "check"}
    assert by_test["test_inner.py::test_gelu"]["repro"] == str(test_file)
    assert by_test["test_inner.py::test_agrees"]["repro"] is None
    assert by_test["test_inner.py::test_local"]["repro"] is None
    result.stdout.fnmatch_lines(
        [
            "*Repro:      none written: no part of the pair could be written as a standalone "
            "repro: '<root>' cannot be rebuilt standalone: *Doubled is defined in a function*"
        ]
    )
    junit = {
        case.get("name"): dict((p.get("name"), p.get("value")) for p in case.iter("property"))
        for case in ET.parse(pytester.path / "junit.xml").iter("testcase")
    }
    assert junit["test_gelu"]["parity_repro"] == str(test_file) and "parity_repro" not in junit["test_agrees"]


def test_the_option_refuses_a_file(pytester):
    pytester.makepyfile(test_inner=INNER)
    pytester.path.joinpath("taken").write_text("")
    result = pytester.runpytest(PARITY, f"{REPRO.flag}=taken", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{REPRO.flag}: 'taken' is a file; repros are written into a folder*"])


def test_the_target_is_a_layer_with_its_own_error_where_the_table_tells_them_apart():
    from types import SimpleNamespace

    from parity.engine.diagnosis.repro.cut import choose_target
    from parity.engine.diagnosis.verdicts import LayerTable, LayerVerdict

    def verdict(path, status, **extra):
        found = LayerVerdict("forward", path, path, "T", "T", 0, 0.0, 0.0, 0.0, 2.0, 1.0, status=status)
        for key, value in extra.items():
            setattr(found, key, value)
        return found

    plain = LayerTable([verdict("a", "ok"), verdict("b", "FAIL"), verdict("c", "downstream")], [])
    assert choose_target(plain).path == "b"  # no own errors told apart: the first divergence
    told = LayerTable(
        [
            verdict("a", "ok", own_status="ok"),
            verdict("b", "FAIL", own_status="inherited"),
            verdict("c", "downstream", own_status="own"),
        ],
        [],
    )
    assert choose_target(told).path == "c"
    backward = LayerTable([verdict("a", "ok")], [SimpleNamespace(path="g", own_status="own")])
    assert choose_target(backward).path == "g" and choose_target(None) is None


def test_the_carried_passes_name_gradients_alike_on_both_sides():
    from parity.engine.diagnosis.repro import standalone

    torch.manual_seed(0)
    linear, dense = torch.nn.Linear(3, 2), mindspore.nn.Dense(3, 2)
    dense.weight.set_data(mindspore.Tensor(linear.weight.detach().numpy()))
    dense.bias.set_data(mindspore.Tensor(linear.bias.detach().numpy()))
    x, cot = np.random.default_rng(0).standard_normal((2, 4, 3), dtype=np.float32), np.ones((2, 4, 2), np.float32)
    params = [("weight", "weight"), ("bias", "bias")]
    ms = standalone.ms_pass(dense, [x], [cot], params)
    pt = standalone.torch_pass(linear, [x], [cot], params)
    pt64 = standalone.torch_pass(linear, [x], [cot], params, float64=True)
    assert sorted(ms) == sorted(pt) == sorted(pt64) == ["grad bias", "grad input[0]", "grad weight", "output[0]"]
    for name in pt:
        standalone.judge(name, ms[name], pt[name], pt64[name], 1.3e-6, 1e-5, 2.0)
    np.testing.assert_allclose(pt["grad bias"], cot.sum(axis=(0, 1)))
    with pytest.raises(AssertionError, match=r"grad weight: values differ at 6 of 6 elements"):
        standalone.judge(
            "grad weight", ms["grad weight"] + 1.0, pt["grad weight"], pt64["grad weight"], 1.3e-6, 1e-5, 2.0
        )


@pytest.mark.parametrize(
    "framework, layer, call",
    [
        (
            "torch",
            lambda: torch.nn.Conv2d(3, 4, 3, padding=(1, 2), bias=False),
            "torch.nn.Conv2d(in_channels=3, out_channels=4, kernel_size=(3, 3), padding=(1, 2), bias=False)",
        ),
        ("torch", lambda: torch.nn.Linear(3, 4), "torch.nn.Linear(in_features=3, out_features=4)"),
        (
            "mindspore",
            lambda: mindspore.nn.Conv2d(3, 4, 3, pad_mode="pad", padding=(0, 2, 1, 1)),
            "mindspore.nn.Conv2d(in_channels=3, out_channels=4, kernel_size=(3, 3), pad_mode='pad', padding=(0, 2, 1, 1))",
        ),
        (
            "mindspore",
            lambda: mindspore.nn.BatchNorm2d(4, momentum=0.8),
            "mindspore.nn.BatchNorm2d(num_features=4, momentum=0.8)",
        ),
        ("mindspore", lambda: mindspore.nn.GELU(approximate=False), "mindspore.nn.GELU(approximate=False)"),
        (
            "mindspore",
            lambda: mindspore.nn.MaxPool2d(3, 2, pad_mode="same"),
            "mindspore.nn.MaxPool2d(kernel_size=3, stride=2, pad_mode='same')",
        ),
    ],
)
def test_a_framework_layer_is_written_as_its_class_and_the_arguments_it_keeps(framework, layer, call):
    from parity.engine.diagnosis.repro.constructors import recipe_of

    recipe = recipe_of(layer(), framework)
    assert recipe.call == call and recipe.builtin
    rebuilt = recipe.build()
    assert type(rebuilt) is type(layer()) and recipe_of(rebuilt, framework) == recipe


def test_a_container_or_an_argument_not_kept_cannot_be_rebuilt():
    from parity.engine.diagnosis.repro.constructors import CannotRebuild, recipe_of

    with pytest.raises(CannotRebuild, match=r"Sequential\(\) takes \*args \(a container's layers\)"):
        recipe_of(torch.nn.Sequential(torch.nn.ReLU()), "torch")
    with pytest.raises(CannotRebuild, match="argument 'activation' is kept as a ReLU, which a file cannot write"):
        recipe_of(mindspore.nn.Dense(3, 4, activation="relu"), "mindspore")


SCALED = """
import mindspore
import torch


class MSScaled(mindspore.nn.Cell):
    def __init__(self, factor=1.0):
        super().__init__()
        self.factor = factor
        self.dense = mindspore.nn.Dense(4, 4, activation="relu")  # its activation is no literal argument

    def construct(self, x):
        return self.dense(x) * self.factor


class TorchScaled(torch.nn.Module):
    def __init__(self, factor=1.0):
        super().__init__()
        self.factor = factor
        self.dense = torch.nn.Linear(4, 4)

    def forward(self, x):
        return torch.nn.functional.leaky_relu(self.dense(x), 0.1) * self.factor
"""


def test_a_layer_that_cannot_be_rebuilt_gives_way_to_its_enclosing_module_and_the_file_says_so(tmp_path, monkeypatch):
    (tmp_path / "scaled_pair.py").write_text(SCALED)
    monkeypatch.syspath_prepend(str(tmp_path))
    scaled_pair = __import__("scaled_pair")
    result = _failed(scaled_pair.MSScaled(2.0), scaled_pair.TorchScaled(2.0), parity.randn((3, 4)), grads=False)
    assert result.layers.first("forward")[0].path == "dense"
    path = result.write_repro(tmp_path / "repros")
    text = path.read_text()
    assert "scaled_pair.MSScaled(factor=2.0)" in text and "scaled_pair.TorchScaled(factor=2.0)" in text
    assert (
        "Smaller parts were not used: 'dense' cannot be rebuilt standalone: Dense() argument 'activation' is kept "
        "as a ReLU, which a file cannot write as a literal"
    ) in text
    with np.load(path.parent / render.DATA_FILE, allow_pickle=False) as data:
        assert {"ms:dense.weight", "pt:dense.weight"} <= set(data.files)
