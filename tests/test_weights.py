"""Weight mapping and transfer between real MindSpore Cells and PyTorch Modules."""

import re

import mindspore as ms
import numpy as np
import pytest
import torch
from mindspore import nn as msnn

import parity
from parity import ParityUsageError


def ms_value(cell, name):
    return dict(cell.parameters_and_names())[name].asnumpy()


def torch_value(module, name):
    return module.state_dict()[name].detach().numpy()


def randomise_torch(module, seed=0):
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for tensor in list(module.parameters()) + list(module.buffers()):
            if tensor.is_floating_point():
                tensor.copy_(torch.rand(tensor.shape, generator=gen) + 0.5)


def randomise_ms(cell, seed=0):
    rng = np.random.default_rng(seed)
    for _, param in cell.parameters_and_names():
        param.set_data(ms.Tensor((rng.random(param.shape) + 0.5).astype(np.float32)))


# -- nets --------------------------------------------------------------------------------------


class MSConvBN(msnn.Cell):
    def __init__(self):
        super().__init__()
        self.conv = msnn.Conv2d(3, 4, 3, pad_mode="pad", padding=1)
        self.bn = msnn.BatchNorm2d(4)

    def construct(self, x):
        return self.bn(self.conv(x))


class TorchConvBN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1, bias=False)
        self.bn = torch.nn.BatchNorm2d(4)

    def forward(self, x):
        return self.bn(self.conv(x))


class MSTwo(msnn.Cell):
    def __init__(self, first="a", second="b", hidden=4):
        super().__init__()
        setattr(self, first, msnn.Dense(4, hidden))
        setattr(self, second, msnn.Dense(hidden, 4))
        self.names = (first, second)

    def construct(self, x):
        return getattr(self, self.names[1])(getattr(self, self.names[0])(x))


class TorchTwo(torch.nn.Module):
    def __init__(self, first="a", second="b"):
        super().__init__()
        setattr(self, first, torch.nn.Linear(4, 4))
        setattr(self, second, torch.nn.Linear(4, 4))
        self.names = (first, second)

    def forward(self, x):
        return getattr(self, self.names[1])(getattr(self, self.names[0])(x))


BN_RENAMES = {
    "conv.weight": "conv.weight",
    "bn.weight": "bn.gamma",
    "bn.bias": "bn.beta",
    "bn.running_mean": "bn.moving_mean",
    "bn.running_var": "bn.moving_variance",
}


# -- automatic mapping -------------------------------------------------------------------------


def test_batchnorm_renames_torch_to_mindspore():
    cell, module = MSConvBN(), TorchConvBN()
    randomise_torch(module)
    assert not np.array_equal(ms_value(cell, "bn.gamma"), torch_value(module, "bn.weight"))

    report = parity.transfer_weights(module, cell)

    assert {p.torch: p.ms for p in report.map.pairs} == BN_RENAMES
    assert {p.torch: p.how for p in report.map.pairs}["bn.weight"] == "renamed"
    for torch_name, ms_name in BN_RENAMES.items():
        assert np.array_equal(ms_value(cell, ms_name), torch_value(module, torch_name)), torch_name
    assert report.verified == report.total == 5
    assert str(report).startswith("5/5 tensors mapped and verified identical (PyTorch -> MindSpore)")


def test_batchnorm_renames_mindspore_to_torch():
    cell, module = MSConvBN(), TorchConvBN()
    randomise_ms(cell)
    report = parity.transfer_weights(cell, module)
    for torch_name, ms_name in BN_RENAMES.items():
        assert np.array_equal(torch_value(module, torch_name), ms_value(cell, ms_name)), torch_name
    assert "(MindSpore -> PyTorch)" in str(report)


def test_trainability_follows_both_sides():
    report = parity.transfer_weights(TorchConvBN(), MSConvBN())
    trainable = {p.torch for p in report.map.trainable_pairs()}
    assert trainable == {"conv.weight", "bn.weight", "bn.bias"}


def test_num_batches_tracked_is_ignored_with_a_reason():
    report = parity.transfer_weights(TorchConvBN(), MSConvBN())
    assert report.map.ignored == [("bn.num_batches_tracked", "BatchNorm step counter; MindSpore keeps none")]
    assert "1 PyTorch-only buffers ignored (BatchNorm step counter; MindSpore keeps none)" in str(report)


def test_embedding_table_maps_to_weight_both_ways():
    cell, module = msnn.Embedding(10, 4), torch.nn.Embedding(10, 4)
    report = parity.transfer_weights(module, cell)
    assert [(p.torch, p.ms, p.how) for p in report.map.pairs] == [("weight", "embedding_table", "renamed")]
    assert np.array_equal(ms_value(cell, "embedding_table"), torch_value(module, "weight"))
    randomise_ms(cell, seed=5)
    parity.transfer_weights(cell, module)
    assert np.array_equal(torch_value(module, "weight"), ms_value(cell, "embedding_table"))


def test_definition_order_aligns_differently_named_children_and_says_so():
    cell, module = MSTwo("first", "second"), TorchTwo("l1", "l2")
    report = parity.transfer_weights(module, cell)
    pairs = {p.torch: (p.ms, p.how) for p in report.map.pairs}
    assert pairs == {
        "l1.weight": ("first.weight", "definition order"),
        "l1.bias": ("first.bias", "definition order"),
        "l2.weight": ("second.weight", "definition order"),
        "l2.bias": ("second.bias", "definition order"),
    }
    assert np.array_equal(ms_value(cell, "second.weight"), torch_value(module, "l2.weight"))
    assert (
        "4 aligned by definition order: l1.weight -> first.weight, l1.bias -> first.bias, "
        "l2.weight -> second.weight and 1 more"
    ) in str(report)


def test_unit_dims_are_reshaped_and_reported():
    class MSScale(msnn.Cell):
        def __init__(self):
            super().__init__()
            self.scale = ms.Parameter(ms.Tensor(np.zeros((1, 4), np.float32)), name="scale")

        def construct(self, x):
            return x * self.scale

    class TorchScale(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = torch.nn.Parameter(torch.arange(4.0))

        def forward(self, x):
            return x * self.scale

    cell = MSScale()
    report = parity.transfer_weights(TorchScale(), cell)
    assert ms_value(cell, "scale").tolist() == [[0.0, 1.0, 2.0, 3.0]]
    assert "1 reshaped across unit dims, e.g. scale (4,) -> scale (1, 4)" in str(report)


# -- explicit name maps ------------------------------------------------------------------------

SWAP = {"a.weight": "b.weight", "a.bias": "b.bias", "b.weight": "a.weight", "b.bias": "a.bias"}


@pytest.mark.parametrize(
    "name_map",
    [
        pytest.param(SWAP, id="dict"),
        pytest.param([(r"^a\.", "b."), (r"^b\.", "a.")], id="regex-rules"),
        pytest.param(lambda name: {"a": "b", "b": "a"}[name[0]] + name[1:], id="callable"),
    ],
)
def test_explicit_name_map_wins_over_same_names(name_map):
    cell, module = MSTwo(), TorchTwo()
    report = parity.transfer_weights(module, cell, name_map=name_map)
    assert {p.torch: (p.ms, p.how) for p in report.map.pairs} == {t: (m, "name_map") for t, m in SWAP.items()}
    assert np.array_equal(ms_value(cell, "b.weight"), torch_value(module, "a.weight"))
    assert np.array_equal(ms_value(cell, "a.bias"), torch_value(module, "b.bias"))


def test_callable_name_map_returning_nothing_leaves_the_name_to_the_automatic_rules():
    report = parity.transfer_weights(TorchConvBN(), MSConvBN(), name_map=lambda name: None)
    assert {p.torch: p.ms for p in report.map.pairs} == BN_RENAMES


def test_a_partial_name_map_wins_over_automatic_matches():
    cell, module = MSTwo(), TorchTwo()
    report = parity.transfer_weights(module, cell, name_map={"b.weight": "a.weight", "b.bias": "a.bias"})
    pairs = {p.torch: (p.ms, p.how) for p in report.map.pairs}
    assert pairs["b.weight"] == ("a.weight", "name_map")
    assert pairs["a.weight"] == ("b.weight", "definition order")


def test_name_map_keyed_by_mindspore_names_says_so():
    with pytest.raises(ParityUsageError) as info:
        parity.transfer_weights(TorchConvBN(), MSConvBN(), name_map={"bn.gamma": "bn.weight"})
    message = str(info.value)
    assert "name_map names PyTorch tensors that do not exist: ['bn.gamma']" in message
    assert "They look like MindSpore names: keys are PyTorch names, values MindSpore names." in message


def test_name_map_to_a_missing_mindspore_name_lists_the_real_ones():
    with pytest.raises(
        ParityUsageError,
        match=re.escape(
            "name_map maps PyTorch 'a.weight' to 'zzz', which is no MindSpore parameter. "
            "MindSpore has: ['a.bias', 'a.weight', 'b.bias', 'b.weight']"
        ),
    ):
        parity.transfer_weights(TorchTwo(), MSTwo(), name_map={"a.weight": "zzz"})


def test_name_map_mapping_two_tensors_to_one_is_refused():
    with pytest.raises(ParityUsageError, match="name_map maps both 'a.weight' and 'b.weight' to 'a.weight'"):
        parity.transfer_weights(TorchTwo(), MSTwo(), name_map={"a.weight": "a.weight", "b.weight": "a.weight"})


def test_name_map_of_another_type_is_refused():
    with pytest.raises(ParityUsageError, match="name_map must be a dict .*got int"):
        parity.transfer_weights(TorchTwo(), MSTwo(), name_map=42)


# -- what cannot be mapped ---------------------------------------------------------------------


def table_rows(message):
    """(side, name, shape) rows of the table in a mapping error."""
    rows = re.findall(r"^  (MindSpore|PyTorch)\s+(\S+)\s+(\(.*?\))\s+(\S+)$", message, re.M)
    return {(side, name, shape) for side, name, shape, _ in rows}


def test_unmapped_parameters_list_both_sides_in_a_table():
    class MSThree(msnn.Cell):
        def __init__(self):
            super().__init__()
            self.x = msnn.Dense(4, 4)
            self.z = msnn.Dense(4, 2)

        def construct(self, v):
            return self.z(self.x(v))

    with pytest.raises(ParityUsageError) as info:
        parity.transfer_weights(TorchTwo(), MSThree())
    message = str(info.value)
    assert message.startswith(
        "Unmapped parameters: in MindSpore only ['x.weight', 'x.bias', 'z.weight', 'z.bias']; "
        "in PyTorch only ['a.weight', 'a.bias', 'b.weight', 'b.bias']"
    )
    assert re.search(r"^  side\s+name\s+shape\s+dtype$", message, re.M)
    assert table_rows(message) == {
        ("MindSpore", "x.weight", "(4, 4)"),
        ("MindSpore", "x.bias", "(4,)"),
        ("MindSpore", "z.weight", "(2, 4)"),
        ("MindSpore", "z.bias", "(2,)"),
        ("PyTorch", "a.weight", "(4, 4)"),
        ("PyTorch", "a.bias", "(4,)"),
        ("PyTorch", "b.weight", "(4, 4)"),
        ("PyTorch", "b.bias", "(4,)"),
    }
    assert "name_map={pytorch_name: mindspore_name}" in message


def test_same_name_with_another_shape_is_an_error_with_a_table():
    with pytest.raises(ParityUsageError) as info:
        parity.transfer_weights(TorchTwo(), MSTwo(hidden=5))
    message = str(info.value)
    assert message.startswith("Parameter shapes differ between paired names:")
    assert {
        ("MindSpore", "a.weight", "(5, 4)"),
        ("PyTorch", "a.weight", "(4, 4)"),
        ("MindSpore", "b.weight", "(4, 5)"),
        ("PyTorch", "b.weight", "(4, 4)"),
    } <= table_rows(message)


def test_transfer_needs_one_of_each_framework():
    with pytest.raises(
        ParityUsageError,
        match=r"needs one mindspore\.nn\.Cell and one torch\.nn\.Module, "
        r"got TorchTwo \(torch\) and TorchTwo \(torch\)",
    ):
        parity.transfer_weights(TorchTwo(), TorchTwo())


# -- tied parameters ---------------------------------------------------------------------------


class TorchTied(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(4, 4)
        self.b = torch.nn.Linear(4, 4, bias=False)
        self.b.weight = self.a.weight

    def forward(self, x):
        return self.b(torch.tanh(self.a(x)))


class MSTied(msnn.Cell):
    def __init__(self):
        super().__init__()
        self.a = msnn.Dense(4, 4)
        self.b = msnn.Dense(4, 4, has_bias=False)
        self.b.weight = self.a.weight

    def construct(self, x):
        return self.b(ms.ops.tanh(self.a(x)))


class MSUntied(MSTied):
    def __init__(self):
        super().__init__()
        self.b = msnn.Dense(4, 4, has_bias=False)


def test_tied_torch_parameters_map_once():
    cell, module = MSTied(), TorchTied()
    report = parity.transfer_weights(module, cell)
    assert [p.torch for p in report.map.pairs] == ["a.weight", "a.bias"]
    assert np.array_equal(cell.b.weight.asnumpy(), module.a.weight.detach().numpy())


def test_tied_parameters_pass_a_check_with_one_gradient_each():
    result = parity.check(MSTied(), TorchTied(), parity.randn((3, 4)))
    assert sorted(c.name for c in result.comparisons if c.kind == "param grad") == ["a.bias", "a.weight"]


def test_name_map_may_use_a_tied_alias():
    report = parity.transfer_weights(TorchTied(), MSTied(), name_map={"b.weight": "a.weight"})
    assert ("a.weight", "a.weight", "name_map") in [(p.torch, p.ms, p.how) for p in report.map.pairs]


def test_tied_torch_against_untied_mindspore_is_unmapped():
    with pytest.raises(ParityUsageError, match=r"in MindSpore only \['b\.weight'\]; in PyTorch only \[\]"):
        parity.transfer_weights(TorchTied(), MSUntied())


class _WithConstant(ms.nn.Cell):
    """mindcv's Swin keeps a one-hot matrix as a non-trainable MindSpore-only Parameter."""

    def __init__(self, trainable=False):
        super().__init__()
        self.fc = ms.nn.Dense(4, 4)
        self.onehot = ms.Parameter(ms.Tensor(np.eye(4, dtype=np.float32)), requires_grad=trainable)

    def construct(self, x):
        return ms.ops.matmul(self.fc(x), self.onehot)


class _Plain(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 4)

    def forward(self, x):
        return self.fc(x)


def test_a_constant_of_one_side_only_is_left_as_built_and_named():
    result = parity.check(_WithConstant(), _Plain(), parity.randn((2, 4)))
    assert result.passed and result.weights.map.constants == [("MindSpore", "onehot")]
    assert "1 MindSpore-only constants left as built (not trainable, no counterpart): onehot" in str(result.weights)


def test_a_trainable_parameter_of_one_side_only_is_still_refused():
    with pytest.raises(parity.ParityUsageError, match=r"Unmapped parameters: in MindSpore only \['onehot'\]"):
        parity.check(_WithConstant(trainable=True), _Plain(), parity.randn((2, 4)))


def test_a_conversion_leaves_no_constant_behind():
    """Checkpoints convert every tensor or say which did not pair: the rule is the check's only."""
    from parity.backends import mindspore as msb
    from parity.backends import torch as tb
    from parity.weights.pairing import Unmapped
    from parity.weights.transfer import map_weights

    with pytest.raises(Unmapped):
        map_weights(msb.slots(_WithConstant()), tb.slots(_Plain()))
