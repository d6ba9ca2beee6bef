"""parity compare-dumps on what a framework saves: checkpoints against the state dict they were
converted from, a perturbed tensor found first in the state dict's order, the command line's exit
codes on checkpoints, msprobe dumps of PyTorch-saved tensors, and numpy files read without importing
a framework. Dumps of numpy arrays, made here: tests/tools/test_compare_dumps.py."""

import json
import subprocess
import sys
from pathlib import Path

import mindspore as ms
import numpy as np
import pytest
import torch
from mindspore import nn as msnn

import parity
from parity import cli

from tools.test_compare_dumps import _rng, _save

ROOT = Path(parity.__file__).resolve().parent.parent


# -- checkpoints -----------------------------------------------------------------------------------


class TorchNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(4)
        self.head = torch.nn.Linear(16, 3)

    def forward(self, x):
        return self.head(torch.relu(self.bn(self.conv(x))).flatten(1))


class MSNet(msnn.Cell):
    def __init__(self):
        super().__init__()
        self.conv = msnn.Conv2d(3, 4, 3, pad_mode="pad", padding=1, has_bias=True)
        self.bn = msnn.BatchNorm2d(4)
        self.head = msnn.Dense(16, 3)

    def construct(self, x):
        return self.head(ms.ops.flatten(ms.ops.relu(self.bn(self.conv(x)))))


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    """A PyTorch state dict, its conversion into a MindSpore checkpoint, and a copy of the state
    dict with two tensors perturbed (a running statistic, and the head's bias after it)."""
    folder = tmp_path_factory.mktemp("ckpt")
    torch.manual_seed(0)
    net = TorchNet()
    with torch.no_grad():
        net.bn.running_mean.uniform_(-1, 1)
        net.bn.running_var.uniform_(0.5, 2)
    torch.save(net.state_dict(), folder / "net.pth")
    report = parity.convert_checkpoint(folder / "net.pth", MSNet(), folder / "net.ckpt")
    assert report.written
    state = net.state_dict()
    state["bn.running_var"] = state["bn.running_var"].clone()
    state["bn.running_var"][1] += 1e-3
    state["head.bias"] = state["head.bias"] + 0.1
    torch.save(state, folder / "perturbed.pth")
    return folder


def test_ckpt_against_the_pth_it_was_converted_from(checkpoints):
    result = parity.compare_dumps(checkpoints / "net.ckpt", checkpoints / "net.pth")
    assert result.passed, str(result)
    assert result.reference == "B" and result.reference_reason == "the PyTorch side"
    assert (result.a.framework, result.a.layout, result.b.layout) == (
        "mindspore",
        "MindSpore checkpoint",
        "PyTorch state dict",
    )
    assert [row.b for row in result.rows] == [
        "conv.weight",
        "conv.bias",
        "bn.weight",
        "bn.bias",
        "bn.running_mean",
        "bn.running_var",
        "head.weight",
        "head.bias",
    ]  # the state dict's order
    assert ("bn.moving_variance", "bn.running_var") in {(row.a, row.b) for row in result.rows}
    assert all(row.comparison.max_abs == 0 for row in result.rows)
    assert ("B", "bn.num_batches_tracked") in {(side, name) for side, name, _ in result.not_compared}


def test_a_perturbed_tensor_is_the_first_mismatch_in_the_state_dicts_order(checkpoints):
    result = parity.compare_dumps(checkpoints / "net.ckpt", checkpoints / "perturbed.pth")
    assert [(row.a, row.b) for row in result.failures] == [
        ("bn.moving_variance", "bn.running_var"),
        ("head.bias", "head.bias"),
    ]
    first = result.first_mismatch.comparison
    assert first.mismatched == 1 and first.max_abs_index == (1,) and first.max_abs == pytest.approx(1e-3, rel=1e-3)
    swapped = parity.compare_dumps(checkpoints / "perturbed.pth", checkpoints / "net.ckpt")
    assert swapped.reference == "A" and swapped.first_mismatch.a == "bn.running_var"
    assert swapped.first_mismatch.b == "bn.moving_variance"


def test_cli_exit_codes_for_checkpoints(checkpoints, capsys):
    assert cli.main(["compare-dumps", str(checkpoints / "net.ckpt"), str(checkpoints / "net.pth")]) == 0
    assert cli.main(["compare-dumps", str(checkpoints / "net.ckpt"), str(checkpoints / "perturbed.pth")]) == 1
    out = capsys.readouterr().out
    assert "FAIL: 2 of 8 paired tensors differ; first mismatch at A 'bn.moving_variance' vs B 'bn.running_var'" in out


# -- msprobe dumps ---------------------------------------------------------------------------------


def test_msprobe_dump_with_torch_saved_tensors(tmp_path):
    rng = _rng(6)
    x, h = rng.standard_normal((2, 3)).astype(np.float32), rng.standard_normal((2, 3)).astype(np.float32)
    names = ["Functional.relu.0.forward.input.0", "Functional.relu.0.forward.output.0", "Tensor.add.0.forward.output.0"]
    values = [x, np.maximum(x, 0), h]
    for root, suffix in ((tmp_path / "ms", ".npy"), (tmp_path / "pt", ".pt")):
        data_dir = root / "step0" / "rank0" / "dump_tensor_data"
        data_dir.mkdir(parents=True)
        for name, value in zip(names, values):
            if suffix == ".npy":
                np.save(data_dir / f"{name}.npy", value)
            else:
                torch.save(torch.from_numpy(value), data_dir / f"{name}.pt")
        # dump.json lists the add before the relu: the execution order, not the names'.
        record = {
            "framework": "mindspore" if suffix == ".npy" else "pytorch",
            "data": {
                "Tensor.add.0.forward": {"output": [{"data_name": names[2] + suffix}]},
                "Functional.relu.0.forward": {
                    "input_args": [{"data_name": names[0] + suffix}],
                    "output": [{"data_name": names[1] + suffix}],
                },
            },
        }
        (root / "step0" / "rank0" / "dump.json").write_text(json.dumps(record))
    result = parity.compare_dumps(tmp_path / "ms", tmp_path / "pt")
    assert (result.a.layout, result.a.framework, result.b.framework) == ("msprobe dump", "mindspore", "torch")
    assert [row.a for row in result.rows] == [names[2], names[0], names[1]] and result.passed


# -- imports ---------------------------------------------------------------------------------------


def test_numpy_files_import_no_framework(tmp_path):
    import safetensors.numpy

    rng = _rng(7)
    a = _save(tmp_path / "a", {"x": rng.standard_normal(3).astype(np.float32)})
    np.savez(tmp_path / "a" / "more.npz", w=np.ones(2, np.float32))
    b = tmp_path / "b"
    b.mkdir()
    safetensors.numpy.save_file(
        {"x": np.load(a / "x.npy"), "more/w": np.ones(2, np.float32)}, str(b / "all.safetensors")
    )
    code = (
        "import sys\nfrom parity import cli\n"
        "code = cli.main(['compare-dumps', sys.argv[1], sys.argv[2]])\n"
        "print(code, sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'mindspore')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(a), str(b)], capture_output=True, text=True, cwd=ROOT, check=True
    )
    assert out.stdout.strip().splitlines()[-1] == "0 []", out.stdout + out.stderr
