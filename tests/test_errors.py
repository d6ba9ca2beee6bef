"""Every wrong call is a ParityUsageError that says what to write instead, never a deep framework
traceback; frameworks that disagree are a ParityMismatch."""

import traceback

import mindspore as ms
import numpy as np
import pytest
import torch
from mindspore import nn as msnn

import parity
from parity import ParityMismatch, ParityUsageError
from parity.engine.inputs import materialize

X = parity.randn((2, 4))


def dense():
    return msnn.Dense(4, 3)


def linear():
    return torch.nn.Linear(4, 3)


def assert_short(excinfo):
    """Raised `from None`: no framework exception chained underneath."""
    assert excinfo.value.__cause__ is None
    assert excinfo.value.__suppress_context__ or excinfo.value.__context__ is None
    text = "".join(traceback.format_exception(excinfo.value))
    assert "site-packages/mindspore" not in text and "site-packages/torch" not in text


# -- the wrong objects -------------------------------------------------------------------------


def test_swapped_arguments_say_swapped():
    with pytest.raises(
        ParityUsageError,
        match="the arguments are swapped: check\\(ms_cell, torch_module, ...\\) takes the MindSpore Cell first",
    ):
        parity.check(linear(), dense(), X)


def test_a_torch_module_where_the_cell_is_expected():
    with pytest.raises(
        ParityUsageError,
        match=r"ms_cell must be a mindspore\.nn\.Cell, got "
        r"torch\.nn\.modules\.linear\.Linear",
    ):
        parity.check(linear(), linear(), X)


def test_a_cell_where_the_torch_module_is_expected():
    with pytest.raises(
        ParityUsageError,
        match=r"torch_module must be a torch\.nn\.Module, got "
        r"mindspore\.nn\.layer\.basic\.Dense",
    ):
        parity.check(dense(), dense(), X)


@pytest.mark.parametrize(
    "ms_side, torch_side, label, got",
    [
        (object(), linear(), "ms_cell", "builtins.object"),
        (dense(), lambda x: x, "torch_module", "builtins.function"),
        (None, linear(), "ms_cell", "builtins.NoneType"),
    ],
)
def test_non_modules(ms_side, torch_side, label, got):
    with pytest.raises(ParityUsageError, match=f"{label} must be a .* got {got}"):
        parity.check(ms_side, torch_side, X)


# -- inputs a net rejects ----------------------------------------------------------------------


def test_inputs_both_sides_reject_name_the_side_that_raised():
    with pytest.raises(ParityUsageError) as info:
        parity.check(dense(), linear(), parity.randn((2, 5)))
    message = str(info.value)
    assert message.startswith("The PyTorch side raised during the forward pass:")
    assert "mat1 and mat2 shapes cannot be multiplied (2x5 and 4x3)" in message
    assert message.endswith("Check that the net accepts these inputs (shapes, dtypes, argument names).")
    assert_short(info)


def test_inputs_only_mindspore_rejects_name_mindspore():
    class TorchReshaping(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(4, 3)

        def forward(self, x):
            return self.fc(x.reshape(-1, 4))

    class MSDense(msnn.Cell):
        def __init__(self):
            super().__init__()
            self.fc = msnn.Dense(4, 3)

        def construct(self, x):
            return self.fc(x)

    with pytest.raises(ParityUsageError) as info:
        parity.check(MSDense(), TorchReshaping(), parity.randn((4, 2)))
    message = str(info.value)
    assert message.startswith("The MindSpore side raised during the forward pass:")
    assert "MatMul" in message
    assert len(message.splitlines()) <= 15  # the framework's text is cut short
    assert_short(info)


def test_a_missing_keyword_input_is_a_usage_error():
    class TorchTwoArgs(torch.nn.Module):
        def forward(self, x, y):
            return x + y

    class MSTwoArgs(msnn.Cell):
        def construct(self, x, y):
            return x + y

    with pytest.raises(ParityUsageError, match="The PyTorch side raised during the forward pass") as info:
        parity.check(MSTwoArgs(), TorchTwoArgs(), {"x": X})
    assert_short(info)


def test_inputs_of_the_wrong_type():
    with pytest.raises(ParityUsageError, match="must be a numpy array or a parity input spec"):
        parity.check(dense(), linear(), [[0.0, 1.0, 2.0, 3.0]])


# -- weights that cannot be mapped --------------------------------------------------------------


def test_unmappable_parameter_sets():
    with pytest.raises(ParityUsageError, match=r"^Parameter shapes differ between paired names:\n") as info:
        parity.check(msnn.Dense(4, 5), linear(), X)
    assert "  MindSpore  weight  (5, 4)  float32" in str(info.value)
    assert "  PyTorch    weight  (3, 4)  float32" in str(info.value)


def test_unmappable_names_in_a_check():
    class MSOther(msnn.Cell):
        def __init__(self):
            super().__init__()
            self.head = msnn.Dense(4, 2)

        def construct(self, x):
            return self.head(x)

    class TorchOther(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.classifier = torch.nn.Linear(4, 3)

        def forward(self, x):
            return self.classifier(x)

    with pytest.raises(ParityUsageError) as info:
        parity.check(MSOther(), TorchOther(), X)
    message = str(info.value)
    assert message.startswith(
        "Unmapped parameters: in MindSpore only ['head.weight', 'head.bias']; "
        "in PyTorch only ['classifier.weight', 'classifier.bias']"
    )
    assert "  MindSpore  head.weight" in message and "(2, 4)" in message and "(3, 4)" in message


# -- non-finite values -------------------------------------------------------------------------


class MSLog(msnn.Cell):
    def construct(self, x):
        return ms.ops.log(x)


class TorchLog(torch.nn.Module):
    def forward(self, x):
        return torch.log(x)


class TorchLogAbs(torch.nn.Module):
    def forward(self, x):
        return torch.log(torch.abs(x))


def negatives(spec, seed=1234):
    return [tuple(int(i) for i in row) for row in np.argwhere(materialize(spec, seed).args[0] < 0)]


def test_nan_on_both_sides_at_the_same_positions_passes():
    spec = parity.randn((3, 4))
    where = negatives(spec)
    assert where  # the seed gives some negative inputs: log is NaN there
    result = parity.check(MSLog(), TorchLog(), spec)
    nonfinite = result["output"].nonfinite
    assert nonfinite.agree
    assert nonfinite.ms_count == nonfinite.torch_count == len(where)
    assert list(nonfinite.positions) == where[:5]


def test_nan_on_one_side_only_is_a_mismatch_with_positions():
    spec = parity.randn((3, 4))
    where = negatives(spec)
    with pytest.raises(ParityMismatch) as info:
        parity.check(MSLog(), TorchLogAbs(), spec)
    message = str(info.value)
    assert message.splitlines()[0] == "Non-finite values differ between MindSpore and PyTorch!"
    shown = ", ".join(str(p) for p in where[:5])
    assert (
        f"Non-finite: MindSpore {len(where)}, PyTorch 0 NaN/Inf; {len(where)} positions disagree; at {shown}"
    ) in message
    assert info.value.result["output"].margin == float("inf")


class MSPair(msnn.Cell):
    """Returns two tensors where the PyTorch Linear returns one."""

    def __init__(self):
        super().__init__()
        self.fc = msnn.Dense(4, 3)

    def construct(self, x):
        y = self.fc(x)
        return y, y


def test_output_structures_that_differ():
    with pytest.raises(
        ParityMismatch,
        match=r"Output structures differ: MindSpore returns 2 tensors "
        r"\['output\[0\]', 'output\[1\]'\], PyTorch returns 1 \['output'\]",
    ):
        parity.check(MSPair(), linear(), X)


def test_output_structure_mismatch_says_how_to_reproduce():
    with pytest.raises(ParityMismatch) as info:
        parity.check(MSPair(), linear(), X)
    assert info.value.result is not None
    assert str(info.value).splitlines()[-1] == "Reproduce: parity.check(..., seed=1234)"


# -- unknown option values ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "option, value, valid",
    [
        ("weights", "bogus", "'copy', 'copy_to_torch', 'as_is' or parity.constant(value)"),
        ("ms_mode", "fast", "'pynative', 'graph', 'both'"),
        ("reference", "fp128", "None, 'float64'"),
    ],
)
def test_unknown_option_values_list_the_valid_ones(option, value, valid):
    with pytest.raises(ParityUsageError) as info:
        parity.check(dense(), linear(), X, **{option: value})
    assert str(info.value) == f"check(): unknown {option} {value!r}; expected one of {valid}"


def test_a_bad_tolerance_is_a_usage_error():
    with pytest.raises(ParityUsageError, match=r"check\(tolerance=\.\.\.\): expected Tolerance\(rtol, atol\)"):
        parity.check(dense(), linear(), X, tolerance=0.1)


def test_the_constant_placeholder_string_is_not_a_weights_value():
    cell, module = dense(), linear()
    with torch.no_grad():  # identical weights: 'as_is' would pass
        module.weight.copy_(torch.from_numpy(cell.weight.asnumpy()))
        module.bias.copy_(torch.from_numpy(cell.bias.asnumpy()))
    with pytest.raises(ParityUsageError):
        parity.check(cell, module, X, weights="parity.constant(value)")


@pytest.mark.parametrize("seed", [-1, 2**64, "abc"])
def test_a_bad_seed_is_a_usage_error(seed):
    with pytest.raises(ParityUsageError, match="seed"):
        parity.check(dense(), linear(), X, seed=seed)


# -- tolerance globs that match no compared tensor ---------------------------------------------


def test_a_tolerance_glob_that_matches_no_compared_tensor_is_a_usage_error():
    tolerance = {
        "*": parity.Tolerance(1e-5, 1e-5),
        "features.3.*": parity.Tolerance(1e-3, 1e-3),
        "wieght": parity.Tolerance(1e-3, 1e-3),
        "bias": parity.Tolerance(1e-4, 1e-4),
    }
    with pytest.raises(ParityUsageError) as info:
        parity.check(dense(), linear(), X, tolerance=tolerance)
    assert_short(info)
    lines = str(info.value).splitlines()
    assert lines[:3] == [
        "check(tolerance=...): the glob 'features.3.*' matches none of the compared tensors' names",
        "check(tolerance=...): the glob 'wieght' matches none of the compared tensors' names (close names: 'weight')",
        "The compared tensors' names (4): 'bias', 'input[0]', 'output', 'weight'",
    ]
    assert lines[3].startswith("Correct the glob or remove it.")


def test_globs_match_by_pytorch_or_mindspore_name_and_star_alone_is_never_unused():
    class MSNet(msnn.Cell):
        def __init__(self):
            super().__init__()
            self.conv = msnn.Conv2d(3, 4, 3, pad_mode="pad", padding=1, has_bias=True)
            self.bn = msnn.BatchNorm2d(4)

        def construct(self, x):
            return self.bn(self.conv(x))

    net = torch.nn.Sequential()
    net.add_module("conv", torch.nn.Conv2d(3, 4, 3, padding=1))
    net.add_module("bn", torch.nn.BatchNorm2d(4))
    loose = parity.Tolerance(1e-4, 1e-4)
    result = parity.check(
        MSNet(),
        net,
        parity.randn((2, 3, 5, 5)),
        tolerance={"*": loose, "bn.gamma": loose, "conv.*": loose, "output": loose},
    )
    assert result["bn.weight"].tolerance_source == "check(tolerance=...)['bn.gamma']"  # MindSpore's name
    parity.check(dense(), linear(), X, tolerance={"*": loose})
    with pytest.raises(ParityUsageError, match="the glob 'bn.running_mean' matches none"):
        parity.check(MSNet(), net, parity.randn((2, 3, 5, 5)), tolerance={"bn.running_mean": loose})  # eval mode


def test_a_structural_failure_is_reported_rather_than_the_globs_it_left_uncompared():
    with pytest.raises(ParityMismatch, match="Forward output shapes differ"):
        parity.check(
            msnn.Conv2d(3, 4, 3, has_bias=False),
            torch.nn.Conv2d(3, 4, 3, bias=False),
            parity.randn((1, 3, 6, 6)),
            tolerance={"weight": parity.Tolerance(1e-4, 1e-4)},
        )


def test_a_kernel_missing_on_this_device_names_the_kernel_and_the_registry_entry():
    """mindspore.mint layers have no CPU kernels: the check says which kernel and which known
    mismatch, where it said "Check that the net accepts these inputs"."""
    import mindspore
    import torch
    from mindspore import mint

    with pytest.raises(parity.ParityUnsupported) as raised:
        parity.check(mint.nn.Embedding(10, 4), torch.nn.Embedding(10, 4), parity.randint((2, 3), 0, 10))
    text = str(raised.value)
    assert f"MindSpore {mindspore.__version__} has no kernel Embedding on this device" in text
    assert "mint-embedding-cpu-unsupported" in text and "accepts these inputs" not in text
