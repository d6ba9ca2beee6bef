"""Recorded references: ``parity.record`` writes PyTorch's side once, ``parity.check(ms_cell, path)``
checks MindSpore against it, here and in a process where torch cannot be imported, with the live
check's verdicts, margins and first divergence; a reference that no longer matches is refused; and
the catalogue's ``--parity-record`` / ``--parity-reference`` from outside, with pytester."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from dataclasses import replace
from pathlib import Path

import mindspore  # noqa: F401  both frameworks before parity, as everywhere in tests/
import numpy as np
import pytest
import torch

import parity
from parity import options as opts

# The MindSpore side, importable without torch (a subprocess below blocks torch).
MS_NETS = textwrap.dedent(
    """
    from mindspore import nn


    class MSNet(nn.Cell):
        def __init__(self, eps=1e-5, pad_mode="pad", padding=1):
            super().__init__()
            self.conv = nn.Conv2d(3, 8, 3, pad_mode=pad_mode, padding=padding, has_bias=True)
            self.bn = nn.BatchNorm2d(8, eps=eps, momentum=0.9)
            self.relu = nn.ReLU()
            self.fc = nn.Dense(8 * 6 * 6, 5)

        def construct(self, x):
            y = self.relu(self.bn(self.conv(x)))
            return self.fc(y.reshape(y.shape[0], -1))
    """
)
TORCH_NETS = textwrap.dedent(
    """
    import torch


    class TorchNet(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
            self.bn = torch.nn.BatchNorm2d(8)
            self.relu = torch.nn.ReLU()
            self.fc = torch.nn.Linear(8 * 6 * 6, 5)

        def forward(self, x):
            y = self.relu(self.bn(self.conv(x)))
            return self.fc(y.flatten(1))
    """
)
INPUTS = parity.randn((2, 3, 6, 6))
# A fault the check must find, and where: eps 1e-2 against PyTorch's 1e-5 moves every output of
# 'bn' by ~0.5%, thousands of times the float32 tolerance.
FAULTS = {"eps": ({"eps": 1e-2}, "bn")}
BLOCK_TORCH = "import sys\nsys.modules['torch'] = None  # import torch raises ImportError\n"
ROOT = Path(parity.__file__).resolve().parents[1]


def _pythonpath(folder) -> str:
    """torch blocked, the nets, and this checkout's parity."""
    return os.pathsep.join([str(folder / "blocked"), str(folder), str(ROOT)])


@pytest.fixture(scope="module")
def nets(tmp_path_factory):
    folder = tmp_path_factory.mktemp("nets")
    (folder / "ms_nets.py").write_text(MS_NETS)
    (folder / "torch_nets.py").write_text(TORCH_NETS)
    (folder / "blocked").mkdir()
    (folder / "blocked" / "sitecustomize.py").write_text(BLOCK_TORCH)
    sys.path.insert(0, str(folder))
    import ms_nets
    import torch_nets

    yield folder, ms_nets, torch_nets
    sys.path.remove(str(folder))


def _torch_net(torch_nets):
    torch.manual_seed(0)
    return torch_nets.TorchNet()


def _verdicts(result):
    return [(c.kind, c.name, c.passed, c.margin) for c in result.comparisons]


def _outcome(run):
    """(verdicts, first divergent layer or None) of a check that may fail."""
    try:
        result = run()
    except parity.ParityMismatch as exc:
        first = exc.result.layers.first("forward")[0] if exc.result.layers is not None else None
        return _verdicts(exc.result), first.path if first is not None else None
    return _verdicts(result), None


SAME_BITS = pytest.mark.unperturbed("live and recorded checks compared margin for margin")


@SAME_BITS
@pytest.mark.parametrize("train", [False, True], ids=["eval", "train"])
def test_recorded_check_gives_the_live_verdicts(nets, tmp_path, train):
    _, ms_nets, torch_nets = nets
    module = _torch_net(torch_nets)
    path = parity.record(module, INPUTS, tmp_path / "ref", train=train)
    assert (path / "reference.json").is_file() and any(path.glob("part-*.safetensors"))
    live = parity.check(ms_nets.MSNet(), module, INPUTS, train=train)
    replayed = parity.check(ms_nets.MSNet(), str(path))
    assert replayed.passed and live.passed
    assert _verdicts(replayed) == _verdicts(live)
    assert any(c.kind == "param grad" for c in replayed.comparisons)
    assert any(c.kind == "buffer" for c in replayed.comparisons) == train


@SAME_BITS
def test_a_fault_names_the_same_layer_as_live(nets, tmp_path):
    _, ms_nets, torch_nets = nets
    module = _torch_net(torch_nets)
    path = parity.record(module, INPUTS, tmp_path / "ref")
    kwargs, layer = FAULTS["eps"]
    live = _outcome(lambda: parity.check(ms_nets.MSNet(**kwargs), module, INPUTS))
    replayed = _outcome(lambda: parity.check(ms_nets.MSNet(**kwargs), path))
    assert live[1] == layer and replayed == live


SCRIPT = """
import json, sys
import mindspore
import parity
import ms_nets

found = {}
for label, kwargs in [("clean", {}), ("eps", %r)]:
    try:
        result = parity.check(ms_nets.MSNet(**kwargs), sys.argv[1])
        first = None
    except parity.ParityMismatch as exc:
        result = exc.result
        first = result.layers.first("forward")[0].path
    found[label] = [[[c.kind, c.name, c.passed, c.margin] for c in result.comparisons], first]
found["torch"] = sorted(m for m in sys.modules if m == "torch" or m.startswith("torch."))
print(json.dumps(found))
"""


@SAME_BITS
def test_the_recorded_check_runs_where_torch_cannot_be_imported(nets, tmp_path):
    folder, ms_nets, torch_nets = nets
    module = _torch_net(torch_nets)
    path = parity.record(module, INPUTS, tmp_path / "ref")
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT % (FAULTS["eps"][0],), str(path)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": _pythonpath(folder)},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["torch"] == ["torch"]  # the blocked entry only: nothing of torch was imported
    live_clean = _outcome(lambda: parity.check(ms_nets.MSNet(), module, INPUTS))
    live_fault = _outcome(lambda: parity.check(ms_nets.MSNet(**FAULTS["eps"][0]), module, INPUTS))
    as_lists = lambda outcome: [[list(v) for v in outcome[0]], outcome[1]]  # noqa: E731
    assert found["clean"] == as_lists(live_clean)
    assert found["eps"] == as_lists(live_fault) and found["eps"][1] == FAULTS["eps"][1]


def test_a_reference_that_no_longer_matches_is_refused(nets, tmp_path):
    _, ms_nets, torch_nets = nets
    module = _torch_net(torch_nets)
    path = parity.record(module, INPUTS, tmp_path / "ref")
    with pytest.raises(parity.ParityUsageError, match=r"other inputs: input\[0\] is float32\[2, 3, 4, 4\]"):
        parity.check(ms_nets.MSNet(), path, parity.randn((2, 3, 4, 4)))
    with pytest.raises(parity.ParityUsageError, match=r"other inputs: input\[0\] holds other values"):
        parity.check(ms_nets.MSNet(), path, np.zeros((2, 3, 6, 6), np.float32))
    with pytest.raises(parity.ParityUsageError, match="seed=7, but .* was recorded with seed=1234"):
        parity.check(ms_nets.MSNet(), path, INPUTS, seed=7)
    parity.check(ms_nets.MSNet(), parity.recorded(path, module), INPUTS)  # the same module: accepted
    with torch.no_grad():
        module.fc.bias.add_(1.0)
    with pytest.raises(parity.ParityUsageError, match="no longer matches the module: the module's weights changed"):
        parity.check(ms_nets.MSNet(), parity.recorded(path, module))


def test_options_other_than_recorded_are_refused(nets, tmp_path):
    _, ms_nets, torch_nets = nets
    path = parity.record(_torch_net(torch_nets), INPUTS, tmp_path / "ref")
    with pytest.raises(parity.ParityUsageError, match="train=True, but .* was recorded with train=False"):
        parity.check(ms_nets.MSNet(), path, train=True)
    with pytest.raises(parity.ParityUsageError, match="no such folder"):
        parity.check(ms_nets.MSNet(), tmp_path / "missing")
    with pytest.raises(parity.ParityUsageError, match="inputs are required"):
        parity.check(ms_nets.MSNet(), _torch_net(torch_nets))


def test_the_weights_are_copied_as_recorded(nets, tmp_path):
    _, ms_nets, torch_nets = nets
    module = _torch_net(torch_nets)
    path = parity.record(module, INPUTS, tmp_path / "ref")
    cell = ms_nets.MSNet()
    result = parity.check(cell, path)
    assert str(result.weights).startswith("8/8 tensors mapped and verified identical (PyTorch -> MindSpore)")
    np.testing.assert_array_equal(cell.conv.weight.asnumpy(), module.conv.weight.detach().numpy())


CASES = """
from parity import ParityCase, randn

Clean = ParityCase("Clean", mindspore="ms_nets:MSNet", torch="torch_nets:TorchNet", inputs=randn((2, 3, 6, 6)))
Faulty = ParityCase(
    "Faulty",
    mindspore="ms_nets:MSNet",
    ms_kwargs={"eps": 1e-2},
    torch="torch_nets:TorchNet",
    inputs=randn((2, 3, 6, 6)),
    xfail="eps 1e-2 against 1e-5",
)
"""


def test_the_catalogue_records_then_checks_without_torch(nets, pytester, monkeypatch):
    # "refcases", not "cases": this repository's own catalogue package may be imported already
    folder, _, _ = nets
    pytester.makefile(".toml", pyproject='[tool.pytest.ini_options]\nparity_cases = ["refcases"]\n')
    pytester.mkpydir("refcases").joinpath("pairs.py").write_text(CASES)
    pytester.makeconftest(
        "import sys\n\ndef pytest_terminal_summary(terminalreporter):\n"
        "    terminalreporter.write_line(f'torch imported: {sys.modules.get(\"torch\") is not None}')\n"
    )
    refs = pytester.path / "refs"
    recorded = pytester.runpytest(opts.PARITY, f"{opts.RECORD.flag}={refs}", "-p", "no:cacheprovider")
    recorded.assert_outcomes(passed=1, xpassed=1)  # recording is no check: the faulty case records too
    assert (refs / "refcases" / "pairs" / "Clean_eval_" / "reference.json").is_file()
    monkeypatch.setenv("PYTHONPATH", _pythonpath(folder))
    pytester.makepyfile(
        test_fixture=f"""
        import ms_nets


        def test_against_the_reference(parity):
            result = parity.check(ms_nets.MSNet(), {str(refs / "refcases" / "pairs" / "Clean_eval_")!r})
            assert result.passed and parity.results == [result]
        """
    )
    replayed = pytester.runpytest_subprocess(
        opts.PARITY, f"{opts.REFERENCE.flag}={refs}", "-p", "no:cacheprovider", "-rA"
    )
    replayed.assert_outcomes(passed=2, xfailed=1)  # the fixture's check against a reference too
    replayed.stdout.fnmatch_lines(
        ["torch imported: False", "*ok    refcases/pairs.py::Clean[[]eval[]]*", "*xfail refcases/pairs.py::Faulty*"]
    )
    (pytester.path / "refcases" / "more.py").write_text(CASES.replace('"Clean"', '"Unrecorded"').split("Faulty =")[0])
    missing = pytester.runpytest_subprocess(opts.PARITY, f"{opts.REFERENCE.flag}={refs}", "-p", "no:cacheprovider")
    missing.assert_outcomes(passed=2, failed=1, xfailed=1)
    missing.stdout.fnmatch_lines(["*no recorded reference for refcases/more.py::Unrecorded[[]eval[]]*--parity-record*"])


def _message(exc) -> str:
    return "\n".join(line for line in str(exc).splitlines() if not line.startswith("Note:"))


@SAME_BITS
def test_own_errors_and_causes_as_live(tmp_path):
    """A localised fault of the catalogue's ResNet (layer1.conv2 pads (0, 2, 1, 1)): the recorded
    check's message is the live one, own errors and the registry's likely cause included, from
    the recorded layers alone and with the module given."""
    from cases.faults import models
    from cases.faults.catalogue import RESNET_INPUT

    module = models.torch_resnet()
    path = parity.record(module, RESNET_INPUT, tmp_path / "ref")
    found = []
    for target, inputs in ((module, RESNET_INPUT), (parity.recorded(path, module), None), (path, None)):
        with pytest.raises(parity.ParityMismatch) as caught:
            parity.check(models.ms_resnet("padding"), target, inputs)
        found.append(caught.value)
    live = found[0]
    assert live.result.layers.own_errors and any("conv2d-padding-layout" in c for c in live.likely_causes)
    assert all("; confirmed: " in c for c in live.likely_causes)
    # a recorded reference runs none of PyTorch's layers: the same causes, not confirmed by replay
    for recorded in found[1:]:
        assert all(
            "; not confirmed: PyTorch's layers are not run against a recorded reference" in c
            for c in recorded.likely_causes
        )
        assert _unconfirmed(_message(recorded)) == _unconfirmed(_message(live))
        assert [_unconfirmed(c) for c in recorded.likely_causes] == [_unconfirmed(c) for c in live.likely_causes]
        assert [replace(e, causes=()) for e in recorded.result.layers.own_errors] == [
            replace(e, causes=()) for e in live.result.layers.own_errors
        ]


def _unconfirmed(text):
    """``text`` without what a replay of its causes found (or why there was none)."""
    text = text.replace(
        "; not confirmed: PyTorch's layers are not run against a recorded reference (check it live to replay it)", ""
    )
    text = re.sub(r"; confirmed: [^\n]*", "", text)  # last on its line
    return re.sub(r", (not )?confirmed\)", ")", text)


def test_unpaired_weights_name_the_same_cause(tmp_path):
    """MindSpore's Conv2d has no bias by default: the weights cannot be paired, and the usage error
    names the registry's cause from the recorded layers as from the module."""
    torch.manual_seed(0)
    module = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.ReLU())
    inputs = parity.randn((1, 3, 5, 5))
    path = parity.record(module, inputs, tmp_path / "ref")
    found = []
    for target, given in ((module, inputs), (path, None)):
        cell = mindspore.nn.SequentialCell(mindspore.nn.Conv2d(3, 4, 3, pad_mode="pad", padding=1), mindspore.nn.ReLU())
        with pytest.raises(parity.ParityUsageError, match="conv2d-has-bias-default") as caught:
            parity.check(cell, target, given)
        found.append(str(caught.value))
    assert found[0] == found[1]


@SAME_BITS
def test_constant_weights_as_recorded(nets, tmp_path):
    _, ms_nets, torch_nets = nets
    module = _torch_net(torch_nets)
    before = module.fc.weight.detach().clone()
    path = parity.record(module, INPUTS, tmp_path / "ref", weights=parity.constant(0.1))
    assert torch.equal(module.fc.weight, before)  # the module is left as it was
    live = parity.check(ms_nets.MSNet(), module, INPUTS, weights=parity.constant(0.1))
    replayed = parity.check(ms_nets.MSNet(), path)
    assert str(replayed.weights) == str(live.weights) and str(live.weights).startswith("8/8 tensors")
    assert _verdicts(replayed) == _verdicts(live)
    with pytest.raises(parity.ParityUsageError, match="was recorded with weights=Constant"):
        parity.check(ms_nets.MSNet(), path, weights="as_is")


@pytest.mark.parametrize("layers", ["calls", False])
def test_a_reference_with_fewer_layers_says_what_it_left_out(nets, tmp_path, layers):
    _, ms_nets, torch_nets = nets
    path = parity.record(_torch_net(torch_nets), INPUTS, tmp_path / "ref", layers=layers)
    kwargs, layer = FAULTS["eps"]
    with pytest.raises(parity.ParityMismatch) as caught:
        parity.check(ms_nets.MSNet(**kwargs), path)
    result = caught.value.result
    if layers == "calls":
        assert result.layers.first("forward")[0].path == layer
        assert any("judged by its tolerance alone" in note for note in result.notes)
    else:
        assert result.layers is None and any("recorded without them (layers=False)" in n for n in result.notes)
