"""Pairing by structure: ports whose names share nothing (layers nested otherwise, renamed, a
custom norm class on one side, fused q/k/v, constants of each side's own layout) pair with no
name map and check; a structure that does not line up is refused, suggesting nothing it cannot
vouch for."""

import mindspore as ms
import numpy as np
import pytest
import torch
from mindspore import nn as msnn
from mindspore import ops

import parity
from parity import ParityUsageError

C, T = 4, 6

# -- regnet-style: conv/bn/relu nested in PyTorch, flat in MindSpore, one 1x1 conv twice as wide ---


class TorchXBlock(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = torch.nn.Module()
        self.stem.conv = torch.nn.Conv2d(3, C, 3, padding=1)
        unit = lambda k, groups=1: torch.nn.Sequential(  # noqa: E731
            torch.nn.Conv2d(C, C, k, padding=k // 2, groups=groups, bias=False),
            torch.nn.BatchNorm2d(C),
            torch.nn.ReLU(),
        )
        self.features = torch.nn.Sequential(unit(1), unit(3, groups=2), unit(1))
        self.proj = torch.nn.Sequential(torch.nn.Conv2d(C, 2 * C, 1, bias=False), torch.nn.BatchNorm2d(2 * C))

    def forward(self, x):
        return self.proj(self.features(self.stem.conv(x)))


class MSXBlock(msnn.Cell):
    """The same computation; ``f.a`` and ``f.c`` are siblings whose rows add up to ``proj``'s."""

    def __init__(self):
        super().__init__()
        self.conv_stem = msnn.Conv2d(3, C, 3, pad_mode="pad", padding=1, has_bias=True)
        self.f = msnn.Cell()
        self.f.a = msnn.Conv2d(C, C, 1, has_bias=False)
        self.f.a_bn = msnn.BatchNorm2d(C)
        self.f.b = msnn.Conv2d(C, C, 3, pad_mode="pad", padding=1, group=2, has_bias=False)
        self.f.b_bn = msnn.BatchNorm2d(C)
        self.f.c = msnn.Conv2d(C, C, 1, has_bias=False)
        self.f.c_bn = msnn.BatchNorm2d(C)
        self.expand = msnn.Conv2d(C, 2 * C, 1, has_bias=False)
        self.expand_bn = msnn.BatchNorm2d(2 * C)
        self.relu = msnn.ReLU()

    def construct(self, x):
        x = self.conv_stem(x)
        for conv, bn in ((self.f.a, self.f.a_bn), (self.f.b, self.f.b_bn), (self.f.c, self.f.c_bn)):
            x = self.relu(bn(conv(x)))
        return self.expand_bn(self.expand(x))


def test_nested_and_renamed_convolutions_pair_by_structure_and_check():
    report = parity.transfer_weights(TorchXBlock(), MSXBlock())
    pairs = {p.torch: (p.ms, p.how) for p in report.map.pairs}
    assert pairs["stem.conv.weight"] == ("conv_stem.weight", "structure")
    assert pairs["features.0.0.weight"] == ("f.a.weight", "structure")
    assert pairs["features.2.1.running_var"] == ("f.c_bn.moving_variance", "structure")
    assert pairs["proj.0.weight"] == ("expand.weight", "structure")  # not f.a and f.c joined
    assert not [p for p in report.map.pairs if p.laid_out]
    assert f"{len(pairs)} paired by structure (names differ; definition order, layer kind and shape agree)" in str(
        report
    )
    parity.check(MSXBlock(), TorchXBlock(), parity.randn((2, 3, 5, 5)))


# -- swin/convnext-style: custom norm, fused qkv, layer scale, a constant in each side's layout ---


def _reversal():
    return np.arange(T)[::-1].copy()


class TorchMixer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = torch.nn.LayerNorm(C)
        self.attn = torch.nn.Module()
        self.attn.qkv = torch.nn.Linear(C, 3 * C)
        self.attn.proj = torch.nn.Linear(C, C)
        self.layer_scale = torch.nn.Parameter(torch.full((C,), 0.5))
        self.register_buffer("relative_position_index", torch.from_numpy(_reversal()))

    def forward(self, x):
        h = self.norm(x)[:, self.relative_position_index]
        q, k, v = self.attn.qkv(h).split(C, dim=-1)
        return x + self.layer_scale * self.attn.proj(q * torch.sigmoid(k) + v)


class ChannelNorm(msnn.LayerNorm):
    """A model zoo's own LayerNorm class: a kind PyTorch does not know by this name."""


class MSMixer(msnn.Cell):
    def __init__(self):
        super().__init__()
        self.block = msnn.Cell()
        self.block.norm = ChannelNorm((C,), begin_norm_axis=-1, begin_params_axis=-1, epsilon=1e-5)
        self.block.q = msnn.Dense(C, C)
        self.block.k = msnn.Dense(C, C)
        self.block.v = msnn.Dense(C, C)
        self.block.out = msnn.Dense(C, C)
        self.gamma_ = ms.Parameter(ms.Tensor(np.full((C,), 0.5, np.float32)))
        self.index = ms.Parameter(ms.Tensor(np.eye(T, dtype=np.float32)[_reversal()]), requires_grad=False)

    def construct(self, x):
        h = ops.matmul(self.index, self.block.norm(x))
        q, k, v = self.block.q(h), self.block.k(h), self.block.v(h)
        return x + self.gamma_ * self.block.out(q * ops.sigmoid(k) + v)


def test_custom_norm_fused_qkv_and_own_constants_pair_by_structure_and_check():
    wmap = parity.check(MSMixer(), TorchMixer(), parity.randn((2, T, C))).weights.map
    pairs = {(p.torch, p.torch_part.index if p.torch_part else None): (p.ms, p.how) for p in wmap.pairs}
    assert pairs[("norm.weight", None)] == ("block.norm.gamma", "structure")
    assert pairs[("norm.bias", None)] == ("block.norm.beta", "structure")
    assert [pairs[("attn.qkv.weight", i)] for i in range(3)] == [
        (f"block.{n}.weight", "split by structure") for n in "qkv"
    ]
    assert pairs[("attn.proj.bias", None)] == ("block.out.bias", "structure")
    assert pairs[("layer_scale", None)] == ("gamma_", "structure")
    assert sorted(wmap.constants) == [("MindSpore", "index"), ("PyTorch", "relative_position_index")]


def test_a_transfer_leaves_no_constant_unpaired():
    """Leaving constants as built is a check's choice; a conversion refuses what it cannot pair."""
    with pytest.raises(ParityUsageError, match="Unmapped parameters"):
        parity.transfer_weights(TorchMixer(), MSMixer())


def test_norm_parameters_defined_the_other_way_round_pair_by_role():
    class BetaFirstNorm(msnn.Cell):
        def __init__(self):
            super().__init__()
            self.beta = ms.Parameter(ms.Tensor(np.zeros(C, np.float32)))
            self.gamma = ms.Parameter(ms.Tensor(np.ones(C, np.float32)))
            self.norm = ops.LayerNorm(begin_norm_axis=-1, begin_params_axis=-1, epsilon=1e-5)

        def construct(self, x):
            return self.norm(x, self.gamma, self.beta)[0]

    class MSNormed(msnn.Cell):
        def __init__(self):
            super().__init__()
            self.ln = BetaFirstNorm()
            self.fc = msnn.Dense(C, 2)

        def construct(self, x):
            return self.fc(self.ln(x))

    torch_net = torch.nn.Sequential(torch.nn.LayerNorm(C), torch.nn.Linear(C, 2))
    pairs = {p.torch: p.ms for p in parity.check(MSNormed(), torch_net, parity.randn((3, C))).weights.map.pairs}
    assert pairs["0.weight"] == "ln.gamma" and pairs["0.bias"] == "ln.beta"


# -- refused: an extra layer leaves the order ambiguous -----------------------------------------


class MSThree(msnn.Cell):
    def __init__(self):
        super().__init__()
        self.a, self.b, self.c = msnn.Dense(C, C), msnn.Dense(C, C), msnn.Dense(C, 2)

    def construct(self, x):
        return self.c(self.b(self.a(x)))


class TorchTwo(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.first, self.head = torch.nn.Linear(C, C), torch.nn.Linear(C, 2)

    def forward(self, x):
        return self.head(self.first(x))


def test_a_structure_with_a_layer_more_is_refused_with_no_guess():
    with pytest.raises(ParityUsageError) as info:
        parity.check(MSThree(), TorchTwo(), parity.randn((3, C)))
    message = str(info.value)
    assert "Unmapped parameters: in MindSpore only ['a.weight', 'a.bias', 'b.weight', 'b.bias']" in message
    assert "in PyTorch only ['first.weight', 'first.bias']" in message
    assert "Nearest candidates" not in message  # first could be a or b: nothing to vouch for
    assert info.value.__cause__ is None and info.value.__suppress_context__  # one error, no chain


class MSSwappedNorm(msnn.Cell):
    """A norm whose parameters are plain Parameters named as a norm's, and a layer more."""

    def __init__(self):
        super().__init__()
        self.extra = msnn.Dense(C, C)
        self.scale = msnn.Cell()
        self.scale.gamma = ms.Parameter(ms.Tensor(np.ones(C, np.float32)))
        self.scale.beta = ms.Parameter(ms.Tensor(np.zeros(C, np.float32)))
        self.fc = msnn.Dense(C, 2)

    def construct(self, x):
        return self.fc(self.extra(x) * self.scale.gamma + self.scale.beta)


def test_no_shifted_or_role_swapped_pair_is_suggested():
    """Name likeness would offer '0.bias': 'extra.bias' (a Dense's bias for the norm's, shifted by
    a layer); the alignment cannot tell ``extra`` from the norm by shape, so it offers nothing."""
    torch_net = torch.nn.Sequential(torch.nn.LayerNorm(C), torch.nn.Linear(C, 2))
    with pytest.raises(ParityUsageError) as info:
        parity.transfer_weights(torch_net, MSSwappedNorm())
    entries = [line.strip() for line in str(info.value).splitlines() if line.startswith("    '")]
    assert "'0.bias': 'extra.bias'," not in entries
    assert "'0.bias': 'scale.gamma'," not in entries and "'0.weight': 'scale.beta'," not in entries
    for entry in entries:
        torch_name, ms_name = (s.strip(" ',") for s in entry.split(":"))
        assert torch_name.endswith("weight") == ms_name.endswith(("weight", "gamma"))


# -- swin-style: the same names, a downsampling placed at a stage's end or the next one's start ----


class MSStage(msnn.Cell):
    def __init__(self, dim, down):
        super().__init__()
        self.block = msnn.Dense(dim, dim)
        self.downsample = msnn.Dense(dim, 2 * dim) if down else None

    def construct(self, x):
        x = ops.relu(self.block(x))
        return self.downsample(x) if self.downsample is not None else x


class TorchStage(torch.nn.Module):
    def __init__(self, dim, down):
        super().__init__()
        self.downsample = torch.nn.Linear(dim // 2, dim) if down else None
        self.block = torch.nn.Linear(dim, dim)

    def forward(self, x):
        x = self.downsample(x) if self.downsample is not None else x
        return torch.relu(self.block(x))


def test_a_layer_placed_in_another_stage_pairs_by_structure_despite_its_name():
    ms_net = msnn.SequentialCell([MSStage(C, True), MSStage(2 * C, True), MSStage(4 * C, False)])
    torch_net = torch.nn.Sequential(TorchStage(C, False), TorchStage(2 * C, True), TorchStage(4 * C, True))
    pairs = {p.torch: (p.ms, p.how) for p in parity.check(ms_net, torch_net, parity.randn((3, C))).weights.map.pairs}
    assert pairs["1.block.weight"] == ("1.block.weight", "same name")
    assert pairs["1.downsample.weight"] == ("0.downsample.weight", "structure")
    assert pairs["2.downsample.bias"] == ("1.downsample.bias", "structure")


def test_a_name_map_entry_of_the_wrong_shape_is_still_refused():
    ms_net = msnn.SequentialCell([MSStage(C, True), MSStage(2 * C, True), MSStage(4 * C, False)])
    torch_net = torch.nn.Sequential(TorchStage(C, False), TorchStage(2 * C, True), TorchStage(4 * C, True))
    with pytest.raises(ParityUsageError, match="Parameter shapes differ between paired names"):
        parity.transfer_weights(torch_net, ms_net, name_map={"1.downsample.weight": "1.downsample.weight"})


class MSExtraThenNorm(msnn.Cell):
    def __init__(self):
        super().__init__()
        self.a, self.b, self.head = msnn.Dense(C, C), msnn.Dense(C, C), msnn.Dense(C, 2)
        self.norm = ChannelNorm((2,), begin_norm_axis=-1, begin_params_axis=-1, epsilon=1e-5)

    def construct(self, x):
        return self.norm(self.head(self.b(self.a(x))))


def test_only_the_pairs_the_structure_vouches_for_are_suggested():
    torch_net = torch.nn.Sequential(torch.nn.Linear(C, C), torch.nn.Linear(C, 2), torch.nn.LayerNorm(2))
    with pytest.raises(ParityUsageError) as info:
        parity.transfer_weights(torch_net, MSExtraThenNorm())
    message = str(info.value)
    assert "in PyTorch only ['0.weight', '0.bias', '2.weight', '2.bias']" in message
    entries = [line.strip() for line in message.splitlines() if line.startswith("    '")]
    assert entries == ["'2.weight': 'norm.gamma',", "'2.bias': 'norm.beta',"]  # '0.*': a or b, not said


# -- ignore=[...]: tensors that should pair with nothing ------------------------------------------


class MSWithSpare(msnn.Cell):
    def __init__(self):
        super().__init__()
        self.fc = msnn.Dense(C, 2)
        self.spare = ms.Parameter(ms.Tensor(np.ones((3, 3), np.float32)))  # built, never used

    def construct(self, x):
        return self.fc(x)


class TorchWithSpare(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(C, 2)
        self.extra_scale = torch.nn.Parameter(torch.ones(5))  # built, never used

    def forward(self, x):
        return self.fc(x)


def test_ignore_leaves_named_tensors_of_either_side_as_built():
    with pytest.raises(ParityUsageError, match="Unmapped parameters"):
        parity.check(MSWithSpare(), TorchWithSpare(), parity.randn((3, C)))
    result = parity.check(MSWithSpare(), TorchWithSpare(), parity.randn((3, C)), ignore=["spare", "extra_*"])
    assert result.weights.map.left_out == [("MindSpore", "spare"), ("PyTorch", "extra_scale")]
    assert "2 left as built, as ignore= asks: MindSpore spare, PyTorch extra_scale" in str(result.weights)
    assert {p.torch for p in result.weights.map.pairs} == {"fc.weight", "fc.bias"}


def test_ignore_reaches_check_training():
    result = parity.check_training(
        MSWithSpare(),
        TorchWithSpare(),
        [(parity.randn((3, C)), parity.randint((3,), 0, 2))],
        loss=torch.nn.CrossEntropyLoss(),
        optimizer=lambda p: torch.optim.SGD(p, lr=0.1),
        steps=1,
        ignore=["spare", "extra_scale"],
    )
    assert result.passed
    assert result.weights.map.left_out == [("MindSpore", "spare"), ("PyTorch", "extra_scale")]


def test_ignore_reaches_transfer_weights():
    ms_cell, module = MSWithSpare(), TorchWithSpare()
    with pytest.raises(ParityUsageError, match="Unmapped parameters"):
        parity.transfer_weights(module, ms_cell)
    report = parity.transfer_weights(module, ms_cell, ignore=["spare", "extra_scale"])
    assert report.map.left_out == [("MindSpore", "spare"), ("PyTorch", "extra_scale")]
    np.testing.assert_array_equal(ms_cell.fc.weight.asnumpy(), module.fc.weight.detach().numpy())
    np.testing.assert_array_equal(ms_cell.spare.asnumpy(), np.ones((3, 3), np.float32))  # left as built


@pytest.mark.parametrize(
    "ignore, message",
    [
        (["spare", "fc.wieght"], r"'fc.wieght' names no tensor of either framework"),
        ("spare", r"ignore must be a list of tensor names or patterns, got 'spare'"),
    ],
)
def test_ignore_refuses_what_names_nothing(ignore, message):
    with pytest.raises(ParityUsageError, match=message):
        parity.check(MSWithSpare(), TorchWithSpare(), parity.randn((3, C)), ignore=ignore)


def test_a_tensor_both_ignored_and_name_mapped_is_refused():
    with pytest.raises(ParityUsageError, match=r"name_map pairs \['extra_scale'\], which ignore= leaves out"):
        parity.check(
            MSWithSpare(), TorchWithSpare(), parity.randn((3, C)), name_map={"extra_scale": "spare"}, ignore=["extra_*"]
        )
