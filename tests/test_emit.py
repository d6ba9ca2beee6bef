"""parity.translate(module, inputs, emit=folder): the translation written as a Python package of
MindSpore Cells, one class per traced Module, a statement per operation with the PyTorch line it
came from, the guards at their place; imported, built without PyTorch and checked against the
Module in PYNATIVE and GRAPH modes."""

from __future__ import annotations

import importlib
import inspect
import sys

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import parity
from parity import ParityUsageError


class Block(torch.nn.Module):
    """A convolution, a functional activation, a guard on a shape and a residual."""

    def __init__(self, channels: int):
        super().__init__()
        self.conv = torch.nn.Conv2d(channels, channels, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(channels)
        self.scale = torch.nn.Parameter(torch.linspace(0.5, 1.5, channels))

    def forward(self, x):
        y = F.relu(self.bn(self.conv(x)))
        if x.shape[-1] == 8:
            y = y * self.scale.view(1, -1, 1, 1)
        return x + y


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = torch.nn.Conv2d(3, 4, 3, padding=1)
        self.blocks = torch.nn.Sequential(Block(4), Block(4))
        self.head = torch.nn.Linear(4, 5)

    def forward(self, x):
        x = self.blocks(torch.relu(self.stem(x)))
        x = torch.where(torch.gt(x, 0.5), x, x * 0.1)  # torch.gt: an adapter a factory made
        x = x.mean(dim=(2, 3))
        return torch.softmax(self.head(x), dim=-1)


INPUTS = parity.randn((2, 3, 8, 8))


def _import(folder):
    """The package written in ``folder``, imported afresh under its folder's name."""
    sys.path.insert(0, str(folder.parent))
    try:
        sys.modules.pop(folder.name, None)
        sys.modules.pop(f"{folder.name}.model", None)
        return importlib.import_module(folder.name)
    finally:
        sys.path.remove(str(folder.parent))


@pytest.fixture(scope="module")
def emitted(tmp_path_factory):
    torch.manual_seed(0)
    module = Net().eval()
    folder = tmp_path_factory.mktemp("emit") / "small_net"
    parity.translate(module, INPUTS, emit=folder)
    return module, folder


@pytest.mark.parametrize("mode", ["pynative", "graph"])
def test_the_package_matches_the_module_in_both_modes(emitted, mode):
    module, folder = emitted
    result = parity.check(_import(folder).build(), module, INPUTS, ms_mode=mode)
    assert result.passed
    assert mode in str(result)


def test_build_loads_the_translated_weights(emitted):
    module, folder = emitted
    model = _import(folder).build()
    names = {name: p.asnumpy() for name, p in model.parameters_and_names()}
    assert names["blocks.1.scale"] == pytest.approx(module.blocks[1].scale.detach().numpy())
    assert {p.name for p in model.get_parameters()} == set(names)
    np.testing.assert_array_equal(names["stem.weight"], module.stem.weight.detach().numpy())


def test_one_class_per_module_with_statements_named_and_placed(emitted):
    _, folder = emitted
    text = (folder / "model.py").read_text()
    assert text.count("class Block(nn.Cell)") == 1  # two instances, one construct: one class
    assert "class Net(nn.Cell)" in text
    assert "import torch" not in text
    assert "torch_gt_ = adapter(table.FUNCTIONS['torch.gt'])" in text
    line = inspect.getsourcelines(Block.forward)[1]
    here = f"{__file__.rpartition('/')[2]}:{line + 1}"
    assert any(stmt.strip().startswith("relu = ops.relu(bn)") and stmt.endswith(here) for stmt in text.splitlines())
    assert "# guard (" in text and f":{line + 2}): the truth value of eq was True" in text
    compile(text, "model.py", "exec")


def test_the_guard_refuses_inputs_that_take_another_path(emitted):
    module, folder = emitted
    model = _import(folder).build()
    import mindspore

    with pytest.raises(AssertionError, match="the trace took another path here"):
        model(mindspore.Tensor(np.zeros((1, 3, 6, 6), np.float32)))


def test_emit_needs_example_inputs(tmp_path):
    with pytest.raises(ParityUsageError, match="traced on example inputs"):
        parity.translate(Net().eval(), emit=tmp_path / "pkg")


def test_the_folder_must_name_a_package(tmp_path):
    with pytest.raises(ParityUsageError, match="Python identifier"):
        parity.translate(Net().eval(), INPUTS, emit=tmp_path / "not-a-name")


@pytest.mark.slow
@pytest.mark.parametrize("train", [False, True])
def test_timm_efficientnet_emitted_passes_in_both_modes(tmp_path, train):
    """timm's EfficientNet: its BatchNormAct2d written with a construct per mode, the batch counter
    it adds to in place assigned in train mode; checked, buffers too, in GRAPH and PYNATIVE."""
    from cases.models.zoo_translated import timm_efficientnet

    torch.manual_seed(0)
    module = timm_efficientnet().train(train)
    images = parity.randn((2, 3, 32, 32))
    parity.translate(module, images, emit=tmp_path / "efficientnet")
    text = (tmp_path / "efficientnet" / "model.py").read_text()
    assert "class EfficientNet(nn.Cell)" in text and "class InvertedResidual(nn.Cell)" in text
    assert "ops.assign(self.num_batches_tracked" in text
    package = _import(tmp_path / "efficientnet")
    for mode in ("pynative", "graph"):
        model = package.build()
        model.set_train(train)
        assert parity.check(model, module, images, ms_mode=mode, train=train).passed


@pytest.mark.slow
def test_llama_emitted_passes_in_both_modes(tmp_path):
    """A Hugging Face decoder: its layers called by keyword, its model's ModelOutput read as a dict,
    its mask and rotary tables computed in construct (the rotary matmul of buffers and positions
    without a gradient, which MindSpore's GRAPH backward cannot take)."""
    from cases.models.zoo_hf import llama

    torch.manual_seed(0)
    module = llama().eval()
    mask = np.ones((2, 8), np.int64)
    mask[1, :2] = 0
    text = {"input_ids": parity.randint((2, 8), 0, 128), "attention_mask": mask}
    parity.translate(module, text, emit=tmp_path / "llama")
    source = (tmp_path / "llama" / "model.py").read_text()
    assert source.count("class LlamaDecoderLayer(nn.Cell)") == 1
    assert ".get('last_hidden_state')" in source
    package = _import(tmp_path / "llama")
    for mode in ("pynative", "graph"):
        assert parity.check(package.build(), module, text, ms_mode=mode).passed


@pytest.mark.slow
def test_bert_emitted_passes_in_both_modes(tmp_path):
    """BERT: a child named ``self`` (an argument and a variable renamed, the attribute kept), its
    masked-LM head tied to the word embedding."""
    from cases.models.zoo_hf import bert

    torch.manual_seed(0)
    module = bert().eval()
    mask = np.ones((2, 8), np.int64)
    mask[1, :2] = 0
    text = {"input_ids": parity.randint((2, 8), 0, 128), "attention_mask": mask}
    parity.translate(module, text, emit=tmp_path / "bert")
    source = (tmp_path / "bert" / "model.py").read_text()
    assert "def __init__(self, self_, output):" in source
    assert "v_self = self.self(" in source
    package = _import(tmp_path / "bert")
    for mode in ("pynative", "graph"):
        assert parity.check(package.build(), module, text, ms_mode=mode).passed


@pytest.mark.parametrize("mode", ["pynative", "graph"])
def test_a_padded_max_pool_is_written_with_its_two_dimensional_arguments(tmp_path, mode):
    """MindSpore's MaxPool2d keeps a padded pooling's arguments as the 3-d pooling it runs; the
    package writes them back as the 2-d call."""
    torch.manual_seed(0)
    module = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.MaxPool2d(3, stride=2, padding=1)).eval()
    images = parity.randn((2, 3, 9, 9))
    parity.translate(module, images, emit=tmp_path / "pooled")
    source = (tmp_path / "pooled" / "model.py").read_text()
    assert "nn.MaxPool2d(kernel_size=(3, 3), stride=(2, 2), pad_mode='pad', padding=(1, 1), dilation=(1, 1))" in source
    assert parity.check(_import(tmp_path / "pooled").build(), module, images, ms_mode=mode).passed


@pytest.mark.slow
@pytest.mark.parametrize("train", [False, True])
def test_torchvision_resnet18_emitted_passes_in_both_modes(tmp_path, train):
    from cases.models.zoo_translated import resnet18

    torch.manual_seed(0)
    module = resnet18().train(train)
    images = parity.randn((2, 3, 32, 32))
    parity.translate(module, images, emit=tmp_path / "resnet")
    package = _import(tmp_path / "resnet")
    for mode in ("pynative", "graph"):
        model = package.build()
        model.set_train(train)
        assert parity.check(model, module, images, ms_mode=mode, train=train).passed


@pytest.mark.slow
def test_mixtral_emitted_passes_in_pynative_mode(tmp_path):
    """A sparse mixture of experts: its routing (top-k, one-hot, nonzero, index_add) written as
    statements; PYNATIVE mode only (GRAPH mode does not compile routing whose shapes depend on the data)."""
    from cases.models.zoo_hf import mixtral

    torch.manual_seed(0)
    module = mixtral().eval()
    mask = np.ones((2, 8), np.int64)
    mask[1, :2] = 0
    text = {"input_ids": parity.randint((2, 8), 0, 128), "attention_mask": mask}
    parity.translate(module, text, emit=tmp_path / "mixtral")
    source = (tmp_path / "mixtral" / "model.py").read_text()
    assert "routing.index_add(" in source
    assert parity.check(_import(tmp_path / "mixtral").build(), module, text, ms_mode="pynative").passed


_FACTORY = """
import torch


def tiny():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Tanh()).eval()


class Scaled(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.body = tiny()

    def forward(self, x):
        return self.body(x) * x.shape[-1]


def scaled():
    return Scaled().eval()
"""


def test_the_command_line_writes_the_package(tmp_path, monkeypatch, capsys):
    from parity import cli

    (tmp_path / "tiny_factory.py").write_text(_FACTORY)
    monkeypatch.syspath_prepend(str(tmp_path))
    folder = tmp_path / "scaled_pkg"
    status = cli.main(["translate", "tiny_factory:scaled", "--input-shape", "2,4", "--emit", str(folder)])
    assert status == 0, capsys.readouterr().err
    assert "class Scaled(nn.Cell)" in (folder / "model.py").read_text()
    import tiny_factory

    result = parity.check(_import(folder).build(), tiny_factory.scaled(), parity.randn((2, 4)), ms_mode="graph")
    assert result.passed


def test_the_command_line_needs_inputs(capsys):
    from parity import cli

    with pytest.raises(SystemExit):
        cli.main(["translate", "tiny_factory:scaled", "--emit", "pkg"])
    assert "--input-shape" in capsys.readouterr().err


class Tied(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(10, 4)
        self.out = torch.nn.Linear(4, 10, bias=False)
        self.out.weight = self.embed.weight

    def forward(self, ids):
        return self.out(self.embed(ids))


@pytest.mark.parametrize("mode", ["pynative", "graph"])
def test_tied_weights_are_one_parameter_in_the_package(tmp_path, mode):
    """build() builds each layer, then gives the tied place the first place's Parameter: one
    Parameter under the translated Cell's name, loaded once, trained as one."""
    torch.manual_seed(0)
    module, ids = Tied().eval(), parity.randint((2, 3), 0, 10)
    parity.translate(module, ids, emit=tmp_path / "tied")
    assert "tie(model, 'out.weight', 'embed.embedding_table')" in (tmp_path / "tied" / "model.py").read_text()
    model = _import(tmp_path / "tied").build()
    assert [name for name, _ in model.parameters_and_names()] == ["embed.embedding_table"]
    assert model.out.weight is model.embed.embedding_table
    assert parity.check(model, module, ids, ms_mode=mode).passed


@pytest.mark.slow
def test_gpt2_emitted_with_its_tied_head_passes_in_both_modes(tmp_path):
    """GPT-2: its head tied to the token embedding, its model's ModelOutput read by position."""
    from cases.models.zoo_hf import gpt2

    torch.manual_seed(0)
    module = gpt2().eval()
    mask = np.ones((2, 8), np.int64)
    mask[1, :2] = 0
    text = {"input_ids": parity.randint((2, 8), 0, 128), "attention_mask": mask}
    parity.translate(module, text, emit=tmp_path / "gpt2")
    source = (tmp_path / "gpt2" / "model.py").read_text()
    assert "tie(model, 'lm_head.weight', 'transformer.wte.embedding_table')" in source
    assert "transformer.get('last_hidden_state')" in source
    package = _import(tmp_path / "gpt2")
    for mode in ("pynative", "graph"):
        assert parity.check(package.build(), module, text, ms_mode=mode).passed


class Scaled2(torch.nn.Module):
    def forward(self, x, scale):
        return x * scale


class Scaled3(Scaled2):
    pass


class CalledTwoWays(torch.nn.Module):
    """Three children each called with two constant scales: three places, two blockers."""

    def __init__(self):
        super().__init__()
        self.a, self.b, self.c = Scaled2(), Scaled2(), Scaled3()

    def forward(self, x):
        return sum(child(x, 2) + child(x, 3) for child in (self.a, self.b, self.c))


def test_emission_refuses_naming_every_blocker_at_once(tmp_path):
    with pytest.raises(parity.ParityUnsupported) as refused:
        parity.translate(CalledTwoWays().eval(), parity.randn((2, 4)), emit=tmp_path / "twice")
    text = str(refused.value)
    assert text.startswith("the package cannot be written: 2 blocker(s) in 3 place(s), every one found")
    assert text.index("Scaled2: the example inputs called it in 2 ways") < text.index("Scaled3: the example")
    assert "at 2 place(s): a, b" in text
    assert "at 1 place(s): c" in text
    assert not (tmp_path / "twice").exists()


class ModeDependent(torch.nn.Module):
    """forward branches on self.training: one construct per mode in the package."""

    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(6, 6)

    def forward(self, x):
        y = self.linear(x)
        return y * 2 if self.training else y - 1


def test_a_module_translated_in_eval_mode_keeps_its_train_mode_program(tmp_path):
    torch.manual_seed(0)
    module = ModeDependent().eval()
    inputs = parity.randn((3, 6))
    folder = tmp_path / "by_mode"
    parity.translate(module, inputs, emit=folder)
    text = (folder / "model.py").read_text()
    assert "def construct_train(" in text and "def construct_eval(" in text
    for train in (False, True):
        cell = _import(folder).build()
        result = parity.check(cell, module.train(train), inputs, train=train)
        assert result.passed, str(result)
