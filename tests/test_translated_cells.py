"""What a translated Cell is to MindSpore beyond its numbers: every Parameter named by its attribute
path (the name ``ParameterTuple``, optimizers, ``save_checkpoint`` and ``load_param_into_net`` go
by), ``MultiheadAttention`` returning what PyTorch's returns, and GRAPH mode refused before anything
runs where a translated Cell runs a Python program. Real frameworks; the model-zoo classes
(torchvision, timm) built small, with random weights."""

from __future__ import annotations

import collections
import importlib.util
import itertools

import mindspore as ms
import numpy as np
import pytest
import torch

import parity
from parity import ParityUnsupported
from parity.backends import mindspore as msb
from parity.engine.check import run_check
from parity.engine.settings import Settings

_ZOO = [p for p in ("torchvision", "timm") if importlib.util.find_spec(p) is None]
needs_zoo = pytest.mark.skipif(bool(_ZOO), reason=f"the zoo packages are not installed: {_ZOO}")

# PyTorch's BatchNorm attributes under MindSpore's names (the translation keeps MindSpore's Cell)
_BN_RENAMES = {"weight": "gamma", "bias": "beta", "running_mean": "moving_mean", "running_var": "moving_variance"}


def torchvision():
    from cases.models.zoo_compat import import_torchvision

    return import_torchvision()


def timm():
    from cases.models.zoo_compat import import_quietly

    return import_quietly("timm")


def names_and_paths(cell):
    return [(param.name, path) for path, param in cell.parameters_and_names()]


def expected_names(module) -> set:
    """The PyTorch Module's state-dict paths as the translated Cell holds them: the same paths, with
    BatchNorm's four tensors under MindSpore's names and its step counter dropped."""
    norms = {path for path, sub in module.named_modules() if isinstance(sub, torch.nn.modules.batchnorm._BatchNorm)}
    found = set()
    for path in module.state_dict():
        owner, _, leaf = path.rpartition(".")
        if owner in norms and leaf == "num_batches_tracked":
            continue
        found.add(f"{owner}.{_BN_RENAMES[leaf]}" if owner in norms else path)
    return found


# --- nets -------------------------------------------------------------------------------------


class Block(torch.nn.Module):
    """conv -> BatchNorm -> ReLU, scaled by a parameter of its own, plus a buffer, plus the input."""

    def __init__(self, channels=4):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(channels, channels, 3, padding=1)
        self.bn1 = torch.nn.BatchNorm2d(channels)
        self.scale = torch.nn.Parameter(torch.full((channels, 1, 1), 0.5))
        self.register_buffer("shift", torch.full((channels, 1, 1), 0.1))

    def forward(self, x):
        return torch.relu(self.bn1(self.conv1(x))) * self.scale + self.shift + x


class UntracedBlock(Block):
    """The same block, with control flow on a tensor value: torch.fx cannot trace it (TorchForward)."""

    def forward(self, x):
        y = self.bn1(self.conv1(x)).relu()
        if y.sum() > -1e9:
            y = y * self.scale
        return y + x


class SmallCNN(torch.nn.Module):
    """The names every level repeats: ``conv1``/``bn1`` at the root and in each block, ``weight``."""

    def __init__(self, classes=5, block=Block):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 4, 3, padding=1)
        self.bn1 = torch.nn.BatchNorm2d(4)
        self.layer1 = torch.nn.Sequential(block(), block())
        self.fc = torch.nn.Linear(4, classes)

    def forward(self, x):
        x = self.layer1(torch.relu(self.bn1(self.conv1(x))))
        return self.fc(x.mean((2, 3)))


def small_cnn(block=Block):
    torch.manual_seed(0)
    return SmallCNN(block=block)


# --- 1. every Parameter named by its attribute path ---------------------------------------------


@pytest.mark.parametrize("block", [Block, UntracedBlock], ids=["GraphForward", "TorchForward"])
def test_every_parameter_is_named_by_its_attribute_path(block):
    model = small_cnn(block)
    cell = parity.translate(model)
    pairs = names_and_paths(cell)
    assert [name for name, _ in pairs] == [path for _, path in pairs]
    assert {name for name, _ in pairs} == expected_names(model)
    assert {"layer1.0.scale", "layer1.1.shift", "layer1.1.bn1.moving_mean", "fc.weight"} <= {n for n, _ in pairs}
    assert len(ms.ParameterTuple(cell.get_parameters())) == len(pairs)  # raised on repeated names before


@needs_zoo
@pytest.mark.parametrize(
    "build",
    [lambda: torchvision().models.resnet18(num_classes=10), lambda: timm().create_model("seresnet18", num_classes=10)],
    ids=["torchvision-resnet18", "timm-seresnet18"],
)
def test_zoo_models_have_unique_names_equal_to_their_paths(build):
    # Measured before the fix: resnet18's 102 Parameters had 31 distinct names (26 repeated, e.g.
    # 'weight', '0.conv1.weight'); seresnet18's 134 had 39 (34 repeated).
    model = build().eval()
    cell = parity.translate(model)
    pairs = names_and_paths(cell)
    repeated = [name for name, count in collections.Counter(n for n, _ in pairs).items() if count > 1]
    assert repeated == []
    assert [name for name, path in pairs if name != path] == []
    assert {name for name, _ in pairs} == expected_names(model)


def test_check_training_runs_on_a_translated_cnn():
    model = small_cnn()
    batches = [(parity.randn((2, 3, 8, 8)), parity.randint((2,), 0, 5))]
    result = parity.check_training(
        parity.translate(model),
        model,
        batches,
        loss=torch.nn.CrossEntropyLoss(),
        optimizer=lambda params: torch.optim.SGD(params, lr=0.1),
        steps=2,
    )
    assert result.passed and len(result.steps) == 2


def test_convert_checkpoint_into_a_translated_cell_writes_the_paths_and_reloads(tmp_path):
    model = small_cnn()
    with torch.no_grad():  # statistics of their own, so that a stale reload would show
        for sub in model.modules():
            if isinstance(sub, torch.nn.BatchNorm2d):
                sub.running_mean.uniform_(-1, 1)
                sub.running_var.uniform_(0.5, 2)
    torch.save(model.state_dict(), tmp_path / "model.pth")
    report = parity.convert_checkpoint(tmp_path / "model.pth", parity.translate(small_cnn()), tmp_path / "model.ckpt")
    assert report.written and report.complete and report.verified == report.converted == len(expected_names(model))
    stored = ms.load_checkpoint(str(tmp_path / "model.ckpt"))
    assert set(stored) == expected_names(model)
    assert {"conv1.weight", "layer1.0.conv1.weight", "layer1.1.scale", "fc.bias"} <= set(stored) & set(
        model.state_dict()
    )
    fresh = parity.translate(SmallCNN())  # other random weights
    assert ms.load_param_into_net(fresh, stored) == ([], [])
    state = model.state_dict()
    torch_leaf = {ms_leaf: leaf for leaf, ms_leaf in _BN_RENAMES.items()}
    for name, param in fresh.parameters_and_names():
        owner, _, leaf = name.rpartition(".")
        assert np.array_equal(param.asnumpy(), state[f"{owner}.{torch_leaf.get(leaf, leaf)}"].numpy()), name


# --- 2. MultiheadAttention returns what PyTorch returns ---------------------------------------


@pytest.mark.parametrize("batch_first", [False, True])
def test_multihead_attention_returns_pytorchs_tuple_for_every_combination(batch_first):
    torch.manual_seed(0)
    module = torch.nn.MultiheadAttention(8, 2, batch_first=batch_first).eval()
    cell = parity.translate(module)
    query, key = torch.randn(3, 2, 8), torch.randn(4, 2, 8)
    if batch_first:
        query, key = query.transpose(0, 1), key.transpose(0, 1)
    causal = torch.cat([torch.nn.Transformer.generate_square_subsequent_mask(3), torch.zeros(3, 1)], 1)
    other = torch.triu(torch.full((3, 4), float("-inf")), diagonal=2)  # not causal: PyTorch may replace it
    for need, average, is_causal, mask in itertools.product(
        [True, False], [True, False], [False, True], [causal, other]
    ):
        kwargs = dict(need_weights=need, average_attn_weights=average, is_causal=is_causal)
        expected = module(query, key, key, attn_mask=mask, **kwargs)
        found = cell(*(ms.Tensor(t.numpy()) for t in (query, key, key)), attn_mask=ms.Tensor(mask.numpy()), **kwargs)
        assert isinstance(found, tuple) and len(found) == len(expected) == 2, kwargs
        assert (found[1] is None) == (expected[1] is None), kwargs
        for ours, theirs in zip(found, expected):
            if theirs is not None:
                np.testing.assert_allclose(
                    ours.asnumpy(), theirs.detach().numpy(), rtol=1.3e-6, atol=1e-5, err_msg=str(kwargs)
                )


def test_the_translated_multihead_attention_compiles_in_graph_mode():
    torch.manual_seed(0)
    module = torch.nn.MultiheadAttention(8, 2).eval()
    inputs = (parity.randn((3, 2, 8)), parity.randn((4, 2, 8)), parity.randn((4, 2, 8)))
    assert parity.check(parity.translate(module), module, inputs, ms_mode="both").passed


@needs_zoo
def test_torchvision_vit_translates_and_checks():
    # Before: IndexError at vision_transformer.py:113 (x, _ = self.self_attention(..., need_weights=False)).
    torch.manual_seed(0)
    model = torchvision().models.VisionTransformer(
        image_size=32, patch_size=8, num_layers=2, num_heads=2, hidden_dim=32, mlp_dim=64, num_classes=10
    )
    result = parity.check(parity.translate(model), model.eval(), parity.randn((2, 3, 32, 32)))
    assert result.passed


# --- 3. GRAPH mode refused up front -----------------------------------------------------------


@pytest.fixture
def nothing_runs(monkeypatch):
    """Fails the test if a MindSpore pass or training step starts."""

    def ran(*args, **kwargs):
        raise AssertionError("MindSpore ran: the refusal must come before anything runs")

    monkeypatch.setattr(msb, "Pass", ran)
    monkeypatch.setattr(msb, "TrainStep", ran)


def _refusal_text(excinfo) -> str:
    text = str(excinfo.value)
    assert "Check that the net accepts these inputs" not in text
    assert "PYNATIVE mode only" in text
    return text


@needs_zoo
def test_graph_mode_is_refused_for_translated_mnasnet_before_running(nothing_runs):
    model = torchvision().models.mnasnet0_5(num_classes=10).eval()
    with pytest.raises(ParityUnsupported) as excinfo:
        parity.check(parity.translate(model), model, parity.randn((2, 3, 32, 32)), ms_mode="graph")
    text = _refusal_text(excinfo)
    assert text.startswith("check(): ms_mode='graph' asks for MindSpore's GRAPH mode")
    assert "<root> (GraphForward of torchvision.models.mnasnet.MNASNet)" in text
    assert "GraphForward runs the torch.fx program of its forward node by node in Python" in text


@needs_zoo
def test_check_training_in_both_modes_is_refused_for_translated_deit(nothing_runs):
    model = timm().create_model(
        "deit_tiny_patch16_224", img_size=32, patch_size=8, embed_dim=32, depth=2, num_heads=2, num_classes=10
    )
    batches = [(parity.randn((2, 3, 32, 32)), parity.randint((2,), 0, 10))]
    with pytest.raises(ParityUnsupported) as excinfo:
        parity.check_training(
            parity.translate(model),
            model,
            batches,
            loss=torch.nn.CrossEntropyLoss(),
            optimizer=lambda params: torch.optim.SGD(params, lr=0.1),
            steps=2,
            ms_mode="both",
        )
    text = _refusal_text(excinfo)
    assert "check_training(): ms_mode='both'" in text and "VisionTransformer" in text


def test_a_torch_forward_cell_is_named_and_the_session_flag_is_said(nothing_runs):
    model = UntracedBlock()
    with pytest.raises(ParityUnsupported) as excinfo:
        run_check(parity.translate(model), model, parity.randn((2, 4, 8, 8)), settings=Settings(mode="graph"))
    text = _refusal_text(excinfo)
    assert text.startswith("check(): the session's --parity-mode=graph asks for MindSpore's GRAPH mode")
    assert "<root> (TorchForward of test_translated_cells.UntracedBlock)" in text
    assert "TorchForward runs the PyTorch class's forward as it is" in text


def test_translated_layers_and_containers_still_run_in_graph_mode():
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.BatchNorm2d(4), torch.nn.ReLU())
    assert msb.pynative_only(parity.translate(model)) == []
    assert parity.check(parity.translate(model), model, parity.randn((2, 3, 8, 8)), ms_mode="graph").passed
