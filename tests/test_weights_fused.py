"""Tensors laid out differently across the frameworks: PyTorch-only non-persistent buffers, fused
q/k/v (either side), transposes, and the error that lists what cannot be paired."""

import re

import mindspore as ms
import numpy as np
import pytest
import torch
from mindspore import nn as msnn
from mindspore import ops

import parity
from parity import ParityMismatch, ParityUsageError

HIDDEN, HEADS = 8, 2
QKV = ["attn.self.query.weight", "attn.self.key.weight", "attn.self.value.weight"]
FLAT_QKV = ["attn.query.weight", "attn.key.weight", "attn.value.weight"]


def ms_value(cell, name):
    return dict(cell.parameters_and_names())[name].asnumpy()


def torch_value(module, name):
    return dict(module.named_parameters())[name].detach().numpy()


def randomise_ms(cell, seed=0):
    rng = np.random.default_rng(seed)
    for _, param in cell.parameters_and_names():
        param.set_data(ms.Tensor(rng.standard_normal(param.shape).astype(np.float32)))


def ms_attention(q, k, v, heads):
    """Softmax attention over ``heads`` heads; q, k, v of shape (batch, seq, hidden)."""
    b, n, c = q.shape
    split = lambda t: ops.transpose(ops.reshape(t, (b, n, heads, c // heads)), (0, 2, 1, 3))  # noqa: E731
    q, k, v = split(q), split(k), split(v)
    scores = ops.softmax(ops.matmul(q, ops.transpose(k, (0, 1, 3, 2))) / float(np.sqrt(c // heads)), axis=-1)
    return ops.reshape(ops.transpose(ops.matmul(scores, v), (0, 2, 1, 3)), (b, n, c))


def torch_attention(q, k, v, heads):
    b, n, c = q.shape
    split = lambda t: t.reshape(b, n, heads, c // heads).transpose(1, 2)  # noqa: E731
    q, k, v = split(q), split(k), split(v)
    scores = torch.softmax(q @ k.transpose(-1, -2) / float(np.sqrt(c // heads)), dim=-1)
    return (scores @ v).transpose(1, 2).reshape(b, n, c)


# -- nets: a fused q/k/v projection on one side, three on the other -----------------------------


class MSFusedAttention(msnn.Cell):
    """One ``qkv`` Dense (q, k, v rows in that order), as timm and mindcv write a ViT."""

    def __init__(self, stop_key_grad=False):
        super().__init__()
        self.qkv = msnn.Dense(HIDDEN, 3 * HIDDEN)
        self.proj = msnn.Dense(HIDDEN, HIDDEN)
        self.stop_key_grad = stop_key_grad

    def construct(self, x):
        q, k, v = ops.split(self.qkv(x), HIDDEN, axis=-1)
        if self.stop_key_grad:  # a fault that only gradients see
            k = ops.stop_gradient(k)
        return self.proj(ms_attention(q, k, v, HEADS))


class MSFusedNet(msnn.Cell):
    def __init__(self, **kwargs):
        super().__init__()
        self.attn = MSFusedAttention(**kwargs)

    def construct(self, x):
        return self.attn(x)


class TorchSelf(torch.nn.Module):
    """Separate query/key/value Linears, as Hugging Face writes BERT and ViT."""

    def __init__(self):
        super().__init__()
        self.query = torch.nn.Linear(HIDDEN, HIDDEN)
        self.key = torch.nn.Linear(HIDDEN, HIDDEN)
        self.value = torch.nn.Linear(HIDDEN, HIDDEN)

    def forward(self, x):
        return torch_attention(self.query(x), self.key(x), self.value(x), HEADS)


class TorchSplitAttention(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.self = TorchSelf()
        self.output = torch.nn.Linear(HIDDEN, HIDDEN)

    def forward(self, x):
        return self.output(self.self(x))


class TorchFlatAttention(TorchSelf):
    """query/key/value/out: four siblings of one shape, so which three make qkv is a choice."""

    def __init__(self):
        super().__init__()
        self.out = torch.nn.Linear(HIDDEN, HIDDEN)

    def forward(self, x):
        return self.out(super().forward(x))


class TorchSplitNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = TorchSplitAttention()

    def forward(self, x):
        return self.attn(x)


class MSQKV(msnn.Cell):
    def __init__(self):
        super().__init__()
        self.q = msnn.Dense(HIDDEN, HIDDEN)
        self.k = msnn.Dense(HIDDEN, HIDDEN)
        self.v = msnn.Dense(HIDDEN, HIDDEN)

    def construct(self, x):
        return ms_attention(self.q(x), self.k(x), self.v(x), HEADS)


class MSSplitNet(msnn.Cell):
    """Separate q/k/v Dense layers against PyTorch's ``nn.MultiheadAttention`` (fused ``in_proj``)."""

    def __init__(self):
        super().__init__()
        self.heads = MSQKV()
        self.o = msnn.Dense(HIDDEN, HIDDEN)

    def construct(self, x):
        return self.o(self.heads(x))


class MSFlatSplitNet(MSQKV):
    """q/k/v/o: four siblings of one shape against ``in_proj``: which three is a choice."""

    def __init__(self):
        super().__init__()
        self.o = msnn.Dense(HIDDEN, HIDDEN)

    def construct(self, x):
        return self.o(super().construct(x))


class TorchMultiheadNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.mha = torch.nn.MultiheadAttention(HIDDEN, HEADS, batch_first=True)

    def forward(self, x):
        return self.mha(x, x, x, need_weights=False)[0]


X = parity.randn((2, 5, HIDDEN))


# -- non-persistent buffers --------------------------------------------------------------------


class TorchWithPositions(torch.nn.Module):
    """A buffer kept out of state_dict, as BERT's ``position_ids`` and GPT-2's causal mask are."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 4)
        self.register_buffer("position_ids", torch.arange(4).expand(1, -1), persistent=False)

    def forward(self, x):
        return self.fc(x) + self.position_ids.float()


class MSWithPositions(msnn.Cell):
    def __init__(self):
        super().__init__()
        self.fc = msnn.Dense(4, 4)
        self.positions = ms.Tensor(np.arange(4, dtype=np.float32)[None])

    def construct(self, x):
        return self.fc(x) + self.positions


def test_non_persistent_buffers_are_ignored_with_the_reason():
    report = parity.transfer_weights(TorchWithPositions(), MSWithPositions())
    assert report.map.ignored == [("position_ids", "non-persistent buffers, not in state_dict")]
    assert "1 PyTorch-only buffers ignored (non-persistent buffers, not in state_dict: position_ids)" in str(report)
    result = parity.check(MSWithPositions(), TorchWithPositions(), parity.randn((3, 4)))
    assert "position_ids" in str(result.weights)


def test_a_non_persistent_buffer_is_still_paired_by_name_when_mindspore_has_it():
    class MSKeeps(MSWithPositions):
        def __init__(self):
            super().__init__()
            self.position_ids = ms.Parameter(ms.Tensor(np.zeros((1, 4), np.int64)), requires_grad=False)

    cell = MSKeeps()
    report = parity.transfer_weights(TorchWithPositions(), cell)
    assert report.map.ignored == []
    assert ms_value(cell, "position_ids").tolist() == [[0, 1, 2, 3]]


# -- fused q/k/v in MindSpore ------------------------------------------------------------------


def test_fused_qkv_is_recognised_and_reported():
    cell, module = MSFusedNet(), TorchSplitNet()
    report = parity.transfer_weights(module, cell)
    fused = {p.torch: (p.ms, p.how, p.ms_part.index) for p in report.map.pairs if p.ms_part}
    assert fused == {
        "attn.self.query.weight": ("attn.qkv.weight", "fused automatically", 0),
        "attn.self.key.weight": ("attn.qkv.weight", "fused automatically", 1),
        "attn.self.value.weight": ("attn.qkv.weight", "fused automatically", 2),
        "attn.self.query.bias": ("attn.qkv.bias", "fused automatically", 0),
        "attn.self.key.bias": ("attn.qkv.bias", "fused automatically", 1),
        "attn.self.value.bias": ("attn.qkv.bias", "fused automatically", 2),
    }
    expected = np.concatenate([torch_value(module, n) for n in QKV])
    assert np.array_equal(ms_value(cell, "attn.qkv.weight"), expected)
    assert (
        "2 fused automatically: attn.qkv.weight = [attn.self.query.weight, attn.self.key.weight, "
        "attn.self.value.weight], attn.qkv.bias = [attn.self.query.bias, attn.self.key.bias, attn.self.value.bias]"
    ) in str(report)
    assert report.verified == report.total == 8


def test_fused_qkv_copies_back_to_the_separate_tensors():
    cell, module = MSFusedNet(), TorchSplitNet()
    randomise_ms(cell, seed=3)
    parity.transfer_weights(cell, module)
    qkv = ms_value(cell, "attn.qkv.weight")
    for i, name in enumerate(QKV):
        assert np.array_equal(torch_value(module, name), qkv[i * HIDDEN : (i + 1) * HIDDEN]), name


@pytest.mark.parametrize("weights", ["copy", "copy_to_torch"])
def test_fused_qkv_passes_a_check_with_one_gradient_per_pytorch_tensor(weights):
    result = parity.check(MSFusedNet(), TorchSplitNet(), X, weights=weights)
    grads = {c.name: c.ms_name for c in result.comparisons if c.kind == "param grad"}
    assert grads["attn.self.key.weight"] == "part 1 of fused attn.qkv.weight"
    assert grads["attn.output.bias"] == "attn.proj.bias"
    assert set(grads) == {name for name, _ in TorchSplitNet().named_parameters()}


def test_constant_weights_fill_fused_tensors_and_verify_each_part():
    result = parity.check(MSFusedNet(), TorchSplitNet(), X, weights=parity.constant(0.1))
    assert result.weights.verified == result.weights.total == 8


def test_a_gradient_fault_in_one_part_names_the_pytorch_parameter():
    class MSTokens(msnn.Cell):
        def __init__(self):
            super().__init__()
            self.embed = msnn.Embedding(10, HIDDEN)
            self.attn = MSFusedAttention(stop_key_grad=True)

        def construct(self, ids):
            return self.attn(self.embed(ids))

    class TorchTokens(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = torch.nn.Embedding(10, HIDDEN)
            self.attn = TorchSplitAttention()

        def forward(self, ids):
            return self.attn(self.embed(ids))

    with pytest.raises(ParityMismatch) as info:
        parity.check(MSTokens(), TorchTokens(), parity.randint((2, 5), 0, 10), localize=False)
    failed = {c.name: c.ms_name for c in info.value.result.failures}
    # The key's bias shifts every score of a row alike: softmax leaves it no gradient on either side.
    assert failed == {
        "attn.self.key.weight": "part 1 of fused attn.qkv.weight",
        "embed.weight": "embed.embedding_table",
    }
    assert (
        "Compared:   gradient of parameter 'attn.self.key.weight' (MindSpore 'part 1 of fused attn.qkv.weight')"
        in str(info.value)
    )


def test_four_siblings_of_one_shape_pair_by_structure_or_by_an_explicit_fuse_entry():
    """query/key/value/out against qkv/proj: the order decides which three make qkv."""

    class TorchFour(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.attn = TorchFlatAttention()

        def forward(self, x):
            return self.attn(x)

    report = parity.transfer_weights(TorchFour(), MSFusedNet())
    fused = {p.torch: (p.ms, p.ms_part.index) for p in report.map.pairs if p.ms_part}
    assert fused == {name: ("attn.qkv.weight", i) for i, name in enumerate(FLAT_QKV)} | {
        name.replace("weight", "bias"): ("attn.qkv.bias", i) for i, name in enumerate(FLAT_QKV)
    }
    assert report.map.torch_name("attn.proj.weight") == "attn.out.weight"
    assert "2 fused by structure: attn.qkv.weight = [attn.query.weight, attn.key.weight, attn.value.weight]" in str(
        report
    )
    assert "2 paired by structure (names differ; definition order, layer kind and shape agree)" in str(report)
    parity.check(MSFusedNet(), TorchFour(), X)

    name_map = {
        "attn.qkv.weight": parity.fuse(FLAT_QKV),
        "attn.qkv.bias": parity.fuse([n.replace("weight", "bias") for n in FLAT_QKV]),
        "attn.out.weight": "attn.proj.weight",
        "attn.out.bias": "attn.proj.bias",
    }
    report = parity.transfer_weights(TorchFour(), MSFusedNet(), name_map=name_map)
    assert {p.how for p in report.map.pairs} == {"name_map"}
    parity.check(MSFusedNet(), TorchFour(), X, name_map=name_map)


# -- fused in_proj in PyTorch ------------------------------------------------------------------


def test_multihead_in_proj_is_split_automatically_and_checks():
    report = parity.transfer_weights(TorchMultiheadNet(), MSSplitNet())
    split = [(p.ms, p.torch, p.torch_part.index) for p in report.map.pairs if p.torch_part]
    assert split == [
        ("heads.q.weight", "mha.in_proj_weight", 0),
        ("heads.k.weight", "mha.in_proj_weight", 1),
        ("heads.v.weight", "mha.in_proj_weight", 2),
        ("heads.q.bias", "mha.in_proj_bias", 0),
        ("heads.k.bias", "mha.in_proj_bias", 1),
        ("heads.v.bias", "mha.in_proj_bias", 2),
    ]
    assert "2 split automatically: mha.in_proj_weight = [heads.q.weight, heads.k.weight, heads.v.weight]" in str(report)
    for weights in ("copy", "copy_to_torch"):
        result = parity.check(MSSplitNet(), TorchMultiheadNet(), X, weights=weights)
        grads = {c.name: c.ms_name for c in result.comparisons if c.kind == "param grad"}
        assert grads["mha.in_proj_weight"] == "fused from heads.q.weight, heads.k.weight, heads.v.weight"


def test_four_siblings_against_in_proj_split_by_structure_and_check():
    report = parity.transfer_weights(TorchMultiheadNet(), MSFlatSplitNet())
    split = [(p.ms, p.torch, p.torch_part.index) for p in report.map.pairs if p.torch_part]
    assert split == [
        ("q.weight", "mha.in_proj_weight", 0),
        ("k.weight", "mha.in_proj_weight", 1),
        ("v.weight", "mha.in_proj_weight", 2),
        ("q.bias", "mha.in_proj_bias", 0),
        ("k.bias", "mha.in_proj_bias", 1),
        ("v.bias", "mha.in_proj_bias", 2),
    ]
    assert report.map.torch_name("o.weight") == "mha.out_proj.weight"
    parity.check(MSFlatSplitNet(), TorchMultiheadNet(), X)


# -- transposes --------------------------------------------------------------------------------


class TorchConv1D(torch.nn.Module):
    """GPT-2's Conv1D: ``x @ weight + bias`` with the weight stored (in, out), q/k/v fused."""

    def __init__(self):
        super().__init__()
        self.c_attn_weight = torch.nn.Parameter(torch.randn(HIDDEN, 3 * HIDDEN) * 0.3)
        self.c_attn_bias = torch.nn.Parameter(torch.randn(3 * HIDDEN) * 0.3)

    def forward(self, x):
        q, k, v = (x @ self.c_attn_weight + self.c_attn_bias).split(HIDDEN, dim=-1)
        return torch_attention(q, k, v, HEADS)


CONV1D_MAP = {
    "c_attn_weight": parity.fuse(
        [parity.transpose("q.weight"), parity.transpose("k.weight"), parity.transpose("v.weight")], axis=1
    ),
    "c_attn_bias": parity.fuse(["q.bias", "k.bias", "v.bias"]),
}


def test_fuse_of_transposed_parts_copies_both_ways():
    cell, module = MSQKV(), TorchConv1D()
    parity.transfer_weights(module, cell, name_map=CONV1D_MAP)
    weight = torch_value(module, "c_attn_weight")
    assert np.array_equal(ms_value(cell, "k.weight"), weight[:, HIDDEN : 2 * HIDDEN].T)
    randomise_ms(cell, seed=7)
    report = parity.transfer_weights(cell, module, name_map=CONV1D_MAP)
    assert np.array_equal(torch_value(module, "c_attn_weight")[:, 2 * HIDDEN :], ms_value(cell, "v.weight").T)
    assert report.verified == report.total == 6


@pytest.mark.parametrize("weights", ["copy", "copy_to_torch"])
def test_fuse_of_transposed_parts_passes_a_check(weights):
    result = parity.check(MSQKV(), TorchConv1D(), X, name_map=CONV1D_MAP, weights=weights)
    grads = {c.name: c.ms_name for c in result.comparisons if c.kind == "param grad"}
    assert grads == {
        "c_attn_weight": "fused from q.weight, k.weight, v.weight",
        "c_attn_bias": "fused from q.bias, k.bias, v.bias",
    }


def test_transpose_entry_keyed_by_either_side():
    class TorchXW(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.randn(4, 3))

        def forward(self, x):
            return x @ self.w

    cell = msnn.Dense(4, 3, has_bias=False)
    for name_map in ({"w": parity.transpose("weight")}, {"weight": parity.transpose("w")}):
        result = parity.check(cell, TorchXW(), parity.randn((2, 4)), name_map=name_map)
        assert [c.ms_name for c in result.comparisons if c.kind == "param grad"] == ["weight (transposed)"]


def test_reshape_entry_pairs_any_layout_of_the_same_size():
    class TorchFlat(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.randn(12))

        def forward(self, x):
            return x @ self.w.reshape(3, 4).T

    cell = msnn.Dense(4, 3, has_bias=False)
    with pytest.raises(ParityUsageError, match=r"name_map\['w'\]: 'weight' \(3, 4\) does not fit 'w' \(12,\)"):
        parity.transfer_weights(TorchFlat(), cell, name_map={"w": parity.transpose("weight", (0, 1))})
    parity.check(cell, TorchFlat(), parity.randn((2, 4)), name_map={"w": parity.reshape("weight")})


# -- what cannot be paired ---------------------------------------------------------------------


def test_fuse_parts_that_do_not_add_up_are_refused():
    with pytest.raises(
        ParityUsageError,
        match=re.escape(
            "name_map['attn.qkv.weight']: parts of shapes [(8, 8), (8, 8)] joined along axis 0 do not make "
            "'attn.qkv.weight' (24, 8)"
        ),
    ):
        parity.transfer_weights(TorchSplitNet(), MSFusedNet(), name_map={"attn.qkv.weight": parity.fuse(QKV[:2])})


def test_fuse_naming_a_missing_tensor_offers_the_nearest():
    with pytest.raises(
        ParityUsageError,
        match=re.escape(
            "name_map['attn.qkv.weight'] names 'attn.self.querry.weight', which is no PyTorch tensor. "
            "Nearest: ['attn.self.query.weight'"
        ),
    ):
        parity.transfer_weights(
            TorchSplitNet(),
            MSFusedNet(),
            name_map={"attn.qkv.weight": parity.fuse(["attn.self.querry.weight"] + QKV[1:])},
        )


def test_fuse_with_parts_on_the_same_side_as_the_key_is_refused():
    with pytest.raises(
        ParityUsageError, match="the key must be a tensor of one framework and every part a tensor of the other"
    ):
        parity.transfer_weights(
            TorchSplitNet(), MSFusedNet(), name_map={"attn.self.query.weight": parity.fuse(QKV[1:])}
        )
    with pytest.raises(
        ParityUsageError,
        match="name_map key 'attn.qvk.weight' is no tensor of either framework; nearest: \\['attn.qkv.weight'",
    ):
        parity.transfer_weights(TorchSplitNet(), MSFusedNet(), name_map={"attn.qvk.weight": parity.fuse(QKV)})


def test_fuse_needs_two_names():
    with pytest.raises(ParityUsageError, match="fuse\\(\\) takes a list of two or more tensor names"):
        parity.fuse("attn.query.weight")


def test_unmapped_error_lists_leftovers_only_with_name_map_entries_that_would_pair_them():
    class MSRenamed(msnn.Cell):
        def __init__(self):
            super().__init__()
            self.attn = MSFusedAttention()
            self.head = msnn.Dense(HIDDEN, 2)

        def construct(self, x):
            return self.head(self.attn(x))

    class TorchRenamed(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.attn = TorchSplitAttention()
            self.classifier = torch.nn.Linear(HIDDEN, 3)

        def forward(self, x):
            return self.classifier(self.attn(x))

    with pytest.raises(ParityUsageError) as info:
        parity.transfer_weights(TorchRenamed(), MSRenamed())
    message = str(info.value)
    # The fused q/k/v and attn.out/attn.proj paired; only the heads, of other shapes, are left.
    assert message.startswith(
        "Unmapped parameters: in MindSpore only ['head.weight', 'head.bias']; "
        "in PyTorch only ['classifier.weight', 'classifier.bias']"
    )
    assert "qkv" not in message


def test_a_fused_layer_is_not_blamed_for_a_fault_after_it():
    """qkv (3 x 8 outputs) has no one counterpart among query/key/value: layers are not aligned
    through fused weights, and the divergence is found where it starts."""

    class MSNormed(MSFusedNet):
        def __init__(self):
            super().__init__()
            self.norm = msnn.LayerNorm((HIDDEN,), epsilon=1e-1)

        def construct(self, x):
            return self.norm(self.attn(x))

    class TorchNormed(TorchSplitNet):
        def __init__(self):
            super().__init__()
            self.norm = torch.nn.LayerNorm(HIDDEN)

        def forward(self, x):
            return self.norm(self.attn(x))

    with pytest.raises(ParityMismatch) as info:
        parity.check(MSNormed(), TorchNormed(), X)
    assert "Divergence: first at forward output of 'norm' (LayerNorm <-> LayerNorm)" in str(info.value)
