"""parity.check on real, small MindSpore/PyTorch pairs: what passes, what is caught, and what the
Result holds."""

import mindspore as ms
import numpy as np
import pytest
import torch
from mindspore import nn as msnn

import parity
from parity import ParityMismatch, Tolerance
from parity.engine.inputs import materialize


def param_grads(result, mode="pynative"):
    return {c.name: c for c in result.comparisons if c.kind == "param grad" and c.mode == mode}


# -- nets --------------------------------------------------------------------------------------


class MSConvBN(msnn.Cell):
    def __init__(self, momentum=0.9):
        super().__init__()
        self.conv = msnn.Conv2d(3, 4, 3, pad_mode="pad", padding=1)
        self.bn = msnn.BatchNorm2d(4, momentum=momentum)

    def construct(self, x):
        return self.bn(self.conv(x))


class TorchConvBN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1, bias=False)
        self.bn = torch.nn.BatchNorm2d(4)  # momentum 0.1 here is MindSpore's 0.9

    def forward(self, x):
        return self.bn(self.conv(x))


class MSFlipGrad(msnn.Cell):
    """Identity forward; its hand-written backward reverses the incoming gradient's last axis.
    A VJP with an all-ones cotangent (a `.sum()` loss) cannot see this."""

    def construct(self, x):
        return x * 1.0

    def bprop(self, x, out, dout):
        return (ms.ops.flip(dout, (-1,)),)


class MSDenseFlipGrad(msnn.Cell):
    def __init__(self):
        super().__init__()
        self.fc = msnn.Dense(4, 3)
        self.flip = MSFlipGrad()

    def construct(self, x):
        return self.flip(self.fc(x))


class TorchLinear(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 3)

    def forward(self, x):
        return self.fc(x)


class MSScaled(msnn.Cell):
    def __init__(self):
        super().__init__()
        self.fc = msnn.Dense(4, 3)

    def construct(self, x, scale):
        return self.fc(x) * scale


class TorchScaled(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 3)

    def forward(self, x, scale):
        return self.fc(x) * scale


class MSTwoOutputs(msnn.Cell):
    def __init__(self):
        super().__init__()
        self.fc = msnn.Dense(4, 3)

    def construct(self, x):
        y = self.fc(x)
        return y, ms.ops.tanh(y)


class TorchTwoOutputs(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 3)

    def forward(self, x):
        y = self.fc(x)
        return y, torch.tanh(y)


# -- passing pairs -----------------------------------------------------------------------------


def test_dense_matches_linear():
    cell, module = msnn.Dense(4, 3), torch.nn.Linear(4, 3)
    result = parity.check(cell, module, parity.randn((2, 4)))
    assert result.passed
    assert [c.kind for c in result.comparisons] == ["output", "input grad", "param grad", "param grad"]
    assert result["output"].cosine > 0.9999
    assert result["output"].ms_shape == result["output"].torch_shape == (2, 3)
    assert result.worst_margin <= 1.0
    # the copy went PyTorch -> MindSpore
    assert np.array_equal(cell.weight.asnumpy(), module.weight.detach().numpy())
    assert result.reproduce == "parity.check(..., seed=1234)"
    assert result.inputs == "seed 1234 -> input[0]: float32[2, 4] ~ N(0, 1)"
    with pytest.raises(KeyError, match=r"no compared tensor named 'nope'; known: \['output', 'input\[0\]', "):
        result["nope"]


def test_conv2d_with_explicit_padding_matches():
    result = parity.check(
        msnn.Conv2d(3, 4, 3, pad_mode="pad", padding=1, has_bias=True),
        torch.nn.Conv2d(3, 4, 3, padding=1),
        parity.uniform((2, 3, 8, 8), -1, 1),
    )
    assert result["output"].torch_shape == (2, 4, 8, 8)
    assert set(param_grads(result)) == {"weight", "bias"}


def test_every_trainable_parameter_has_a_gradient_keyed_by_name():
    module = TorchConvBN()
    result = parity.check(MSConvBN(), module, parity.randn((2, 3, 5, 5)))
    grads = param_grads(result)
    assert set(grads) == {name for name, p in module.named_parameters() if p.requires_grad}
    assert result["bn.gamma"] is result["bn.weight"] is grads["bn.weight"]
    assert grads["bn.weight"].ms_name == "bn.gamma"
    assert grads["conv.weight"].torch_shape == (4, 3, 3, 3)
    assert result["input[0]"].kind == "input grad"
    assert not [c for c in result.comparisons if c.kind == "buffer"]  # eval mode: no running stats compared


def test_multiple_outputs_are_compared_each_with_their_path():
    result = parity.check(MSTwoOutputs(), TorchTwoOutputs(), parity.randn((2, 4)))
    assert [c.name for c in result.comparisons if c.kind == "output"] == ["output[0]", "output[1]"]


def test_grads_false_compares_outputs_only():
    result = parity.check(msnn.Dense(4, 3), torch.nn.Linear(4, 3), parity.randn((2, 4)), grads=False)
    assert [c.kind for c in result.comparisons] == ["output"]


def test_the_seed_decides_the_inputs():
    result = parity.check(msnn.Dense(4, 3), torch.nn.Linear(4, 3), parity.randn((2, 4)), seed=7)
    assert result.seed == 7
    assert result.inputs.startswith("seed 7 -> ")
    assert result.reproduce == "parity.check(..., seed=7)"


# -- caught mismatches -------------------------------------------------------------------------


def test_conv2d_default_same_padding_is_a_shape_mismatch():
    with pytest.raises(ParityMismatch) as info:
        parity.check(
            msnn.Conv2d(120, 240, 4, has_bias=False),
            torch.nn.Conv2d(120, 240, 4, bias=False),
            parity.uniform((2, 120, 12, 12), -1, 1),
            weights=parity.constant(0.1),
        )
    message = str(info.value)
    assert message.splitlines()[0] == (
        "Forward output shapes differ: MindSpore (2, 240, 12, 12) vs PyTorch (2, 240, 9, 9)"
    )
    result = info.value.result
    assert result["output"].problem == "shape"
    assert "(constant 0.1)" in message
    assert not param_grads(result)  # no backward through mismatched shapes


def test_gelu_tanh_against_exact_is_caught_with_the_full_anatomy():
    x = parity.randn((4, 8))
    with pytest.raises(ParityMismatch) as info:
        parity.check(msnn.GELU(approximate=False), torch.nn.GELU(approximate="tanh"), x)
    message, result = str(info.value), info.value.result
    data = materialize(x, 1234).args[0].astype(np.float64)
    exact = torch.nn.functional.gelu(torch.from_numpy(data)).numpy()
    tanh = torch.nn.functional.gelu(torch.from_numpy(data), approximate="tanh").numpy()
    expected = int((np.abs(exact - tanh) > 1e-5 + 1.3e-6 * np.abs(tanh)).sum())

    assert not result.passed
    assert result["output"].mismatched == pytest.approx(expected, abs=2)  # float32 vs float64 at the edges
    lines = message.splitlines()
    assert lines[0] == "MindSpore and PyTorch outputs are not close!"
    assert "Divergence: first at forward output 'output'" in message
    assert f"Mismatched elements: {result['output'].mismatched} / 32 " in message
    assert "Greatest absolute difference: " in message and "(up to 1e-05 allowed)" in message
    assert "Tolerance: float32 default (rtol=1.3e-06, atol=1e-05)" in lines
    assert "Inputs: seed 1234 -> input[0]: float32[4, 8] ~ N(0, 1)" in lines
    assert lines[-1] == "Reproduce: parity.check(..., seed=1234)"


def test_a_scaled_weight_is_caught_in_outputs_and_grads():
    class MSScaledWeight(msnn.Cell):
        def __init__(self):
            super().__init__()
            self.fc = msnn.Dense(4, 3)

        def construct(self, x):
            return ms.ops.matmul(x, (self.fc.weight * 1.001).T) + self.fc.bias

    with pytest.raises(ParityMismatch) as info:
        parity.check(MSScaledWeight(), TorchLinear(), parity.randn((8, 4)))
    result = info.value.result
    failing = {(c.kind, c.name) for c in result.failures}
    assert ("output", "output") in failing
    assert ("param grad", "fc.weight") in failing
    assert result["fc.bias"].passed  # the bias gradient does not involve the weight


def test_gradients_use_a_random_cotangent_not_a_sum():
    """Forward outputs agree; only a non-uniform cotangent reveals the reversed gradient."""
    with pytest.raises(ParityMismatch) as info:
        parity.check(MSDenseFlipGrad(), TorchLinear(), parity.randn((2, 4)))
    result = info.value.result
    assert result["output"].passed  # exact here, by a few ulps on another CPU
    assert {c.kind for c in result.failures} == {"input grad", "param grad"}
    assert result.failures[0].name == "input[0]"  # first in execution order
    assert "gradient of input 'input[0]'" in str(info.value)


def test_weights_as_is_with_different_initialisation_is_caught():
    with pytest.raises(ParityMismatch, match=r"values left as built \(weights='as_is'\)"):
        parity.check(msnn.Dense(4, 3), torch.nn.Linear(4, 3), parity.randn((2, 4)), weights="as_is")


# -- modes -------------------------------------------------------------------------------------


def test_graph_mode():
    result = parity.check(msnn.Dense(4, 3), torch.nn.Linear(4, 3), parity.randn((2, 4)), ms_mode="graph")
    assert result.modes == ("graph",)
    assert {c.mode for c in result.comparisons} == {"graph"}


def test_both_modes_compare_everything_twice():
    result = parity.check(msnn.Dense(4, 3), torch.nn.Linear(4, 3), parity.randn((2, 4)), ms_mode="both")
    assert result.modes == ("pynative", "graph")
    per_mode = {mode: [(c.kind, c.name) for c in result.comparisons if c.mode == mode] for mode in result.modes}
    assert per_mode["pynative"] == per_mode["graph"]
    assert len(per_mode["graph"]) == 4
    assert ms.get_context("mode") == ms.PYNATIVE_MODE  # the mode is restored


def test_a_failure_in_graph_mode_names_the_mode():
    with pytest.raises(ParityMismatch, match=r"forward output 'output', graph mode"):
        parity.check(
            msnn.GELU(approximate=False), torch.nn.GELU(approximate="tanh"), parity.randn((4, 8)), ms_mode="graph"
        )


# -- train mode: running statistics ------------------------------------------------------------


def test_train_mode_compares_running_statistics():
    result = parity.check(MSConvBN(), TorchConvBN(), parity.randn((2, 3, 5, 5)), train=True)
    buffers = {c.name: c for c in result.comparisons if c.kind == "buffer"}
    assert set(buffers) == {"bn.running_mean", "bn.running_var"}
    assert buffers["bn.running_mean"].ms_name == "bn.moving_mean"
    assert buffers["bn.running_mean"].max_abs < 1e-5 and buffers["bn.running_mean"].passed
    assert result.train


def test_momentum_convention_mismatch_is_caught_in_running_statistics():
    """MindSpore's momentum keeps the old value (0.9 == PyTorch's 0.1); writing 0.1 on both sides
    gives the same forward and grads in train mode, but different running statistics."""
    with pytest.raises(ParityMismatch) as info:
        parity.check(MSConvBN(momentum=0.1), TorchConvBN(), parity.randn((2, 3, 5, 5)), train=True)
    result = info.value.result
    assert {c.kind for c in result.failures} == {"buffer"}
    message = str(info.value)
    assert "running statistic 'bn.running_mean' (MindSpore 'bn.moving_mean')" in message
    assert "(train mode)" in message


def test_train_mode_running_statistics_in_graph_mode():
    result = parity.check(MSConvBN(), TorchConvBN(), parity.randn((2, 3, 5, 5)), train=True, ms_mode="graph")
    assert result["bn.running_mean"].passed


# -- weights -----------------------------------------------------------------------------------


def test_weights_copy_to_torch():
    cell, module = msnn.Dense(4, 3), torch.nn.Linear(4, 3)
    ms_weight = cell.weight.asnumpy().copy()
    result = parity.check(cell, module, parity.randn((2, 4)), weights="copy_to_torch")
    assert np.array_equal(module.weight.detach().numpy(), ms_weight)
    assert np.array_equal(cell.weight.asnumpy(), ms_weight)
    assert result.weights.direction == "MindSpore -> PyTorch"


def test_weights_as_is_leaves_both_sides_alone():
    cell, module = msnn.Dense(4, 3), torch.nn.Linear(4, 3)
    with torch.no_grad():
        module.weight.copy_(torch.from_numpy(cell.weight.asnumpy()))
        module.bias.copy_(torch.from_numpy(cell.bias.asnumpy()))
    before = module.weight.detach().numpy().copy()
    result = parity.check(cell, module, parity.randn((2, 4)), weights="as_is")
    assert np.array_equal(module.weight.detach().numpy(), before)
    assert "values left as built (weights='as_is')" in str(result.weights)


def test_weights_constant():
    cell, module = msnn.Dense(4, 3), torch.nn.Linear(4, 3)
    result = parity.check(cell, module, parity.randn((2, 4)), weights=parity.constant(0.25))
    assert np.all(cell.weight.asnumpy() == np.float32(0.25))
    assert np.all(module.bias.detach().numpy() == np.float32(0.25))
    assert str(result.weights) == "2/2 tensors mapped and verified identical (constant 0.25)"


# -- inputs ------------------------------------------------------------------------------------


def test_keyword_inputs():
    result = parity.check(
        MSScaled(), TorchScaled(), {"x": parity.randn((2, 4)), "scale": parity.uniform((2, 3), 0.5, 2)}
    )
    assert [c.name for c in result.comparisons if c.kind == "input grad"] == ["x", "scale"]
    assert result.inputs == "seed 1234 -> x: float32[2, 4] ~ N(0, 1); scale: float32[2, 3] ~ U(0.5, 2)"


def test_integer_inputs_feed_an_embedding():
    result = parity.check(msnn.Embedding(10, 4), torch.nn.Embedding(10, 4), parity.randint((2, 5), 0, 10))
    assert [(c.kind, c.name, c.ms_name) for c in result.comparisons] == [
        ("output", "output", "output"),
        ("param grad", "weight", "embedding_table"),
    ]  # no grad of the indices
    assert result["weight"].mismatched == 0


# -- tolerances --------------------------------------------------------------------------------


def test_a_glob_override_passes_one_tensor_and_the_message_names_the_other_s_source():
    gelu = (msnn.GELU(approximate=False), torch.nn.GELU(approximate="tanh"), parity.randn((4, 8)))
    with pytest.raises(ParityMismatch):
        parity.check(*gelu)  # both the output and the input grad fail at the float32 default
    with pytest.raises(ParityMismatch) as info:
        parity.check(*gelu, tolerance={"output": Tolerance(1e-2, 1e-2), "input*": Tolerance(1e-4, 1e-4)})
    result = info.value.result
    assert result["output"].passed
    assert result["output"].tolerance_source == "check(tolerance=...)['output']"
    assert [c.name for c in result.failures] == ["input[0]"]
    assert "Tolerance: check(tolerance=...)['input*'] (rtol=0.0001, atol=0.0001)" in str(info.value).splitlines()


def test_a_tolerance_for_everything_passes():
    result = parity.check(
        msnn.GELU(approximate=False),
        torch.nn.GELU(approximate="tanh"),
        parity.randn((4, 8)),
        tolerance=Tolerance(1e-2, 1e-2),
    )
    assert {c.tolerance_source for c in result.comparisons} == {"check(tolerance=...)"}


# -- the rounding envelope ------------------------------------------------------------------


def test_the_rounding_envelope_on_a_small_resnet():
    """A tolerance far below float32 rounding puts nearly every tensor above half of it:
    each is judged against PyTorch's own spread under mirrored perturbed runs (and float64 where
    they leave it above half of what it is allowed), and a clean pair passes there, the
    noise-judged tensors flagged."""
    from cases.models.resnet import ms_resnet_small, torch_resnet_small

    torch.manual_seed(0)
    module = torch_resnet_small()
    tight = Tolerance(rtol=1e-9, atol=1e-9)
    result = parity.check(ms_resnet_small(), module, parity.randn((2, 3, 32, 32)), tolerance=tight)
    assert set(param_grads(result)) == {name for name, _ in module.named_parameters()}
    judged = [c for c in result.comparisons if c.envelope is not None]
    assert len(judged) > len(result.comparisons) // 2
    assert {c.name for c in result.noise_judged} == {c.name for c in judged if c.envelope.tolerance_margin > 1}
    for c in judged:  # each took the runs its verdict needed: the first pair, or every run
        runs = (c.envelope.draws, c.envelope.float64)
        assert runs in ((2, False), (4, False), (4, True)), c.name
        assert runs == (4, True) or c.margin <= 0.5, c.name
        assert c.margin == c.envelope.final_margin <= 1.0, c.name
        assert 0 < c.envelope.spread < 1e-3, c.name  # a rounding-level spread, not a license
    assert all(c.margin <= 0.5 for c in result.comparisons if c.envelope is None)  # the rest paid nothing


class _ShiftedLinear(torch.nn.Linear):
    def forward(self, x):
        return super().forward(x) + 1e-4


def test_a_real_difference_fails_the_envelope_too():
    """A bias off by 1e-4 is far outside any rounding spread: the envelope does not excuse it."""
    ms_cell, module = msnn.Dense(16, 8), _ShiftedLinear(16, 8)
    with pytest.raises(ParityMismatch) as info:
        parity.check(ms_cell, module, parity.randn((4, 16)))
    output = info.value.result["output"]
    assert output.envelope is not None and not output.envelope.passed
    assert "Rounding envelope: " in str(info.value)


# -- what a check leaves behind and says about itself ------------------------------------------


def _flags(ms_cell, torch_module):
    """Every sub-module's own train/eval flag (MindSpore also its phase)."""
    return (
        [(n, c.training, c.phase) for n, c in ms_cell.cells_and_names()],
        [(n, m.training) for n, m in torch_module.named_modules()],
    )


def _mixed_flags(momentum=0.9):
    ms_net, torch_net = MSConvBN(momentum), TorchConvBN()
    ms_net.set_train(True)
    ms_net.bn.set_train(False)
    torch_net.conv.train(False)  # the root and bn stay in train mode
    return ms_net, torch_net


@pytest.mark.parametrize("train", [False, True])
def test_train_eval_flags_of_every_sub_module_are_restored(train):
    ms_net, torch_net = _mixed_flags()
    before = _flags(ms_net, torch_net)
    assert before == (
        [("", True, "train"), ("conv", True, "train"), ("bn", False, "predict")],
        [("", True), ("conv", False), ("bn", True)],
    )
    parity.check(ms_net, torch_net, parity.randn((2, 3, 5, 5)), train=train, ms_mode="both")
    assert _flags(ms_net, torch_net) == before


def test_train_eval_flags_are_restored_when_the_check_fails():
    ms_net, torch_net = _mixed_flags(momentum=0.1)
    before = _flags(ms_net, torch_net)
    with pytest.raises(ParityMismatch):
        parity.check(ms_net, torch_net, parity.randn((2, 3, 5, 5)), train=True)
    assert _flags(ms_net, torch_net) == before
    with pytest.raises(parity.ParityUsageError, match="raised during the forward pass"):
        parity.check(ms_net, torch_net, parity.randn((2, 5, 5, 5)))  # 5 channels where 3 are expected
    assert _flags(ms_net, torch_net) == before


def test_non_finite_inputs_are_noted_in_the_result_and_the_message():
    x = materialize(parity.randn((4, 8)), 1234).args[0].copy()
    x[0, :3] = np.nan
    x[1, 0] = np.inf
    result = parity.check(msnn.Dense(8, 3), torch.nn.Linear(8, 3), x, grads=False)
    assert result.passed  # NaN/Inf at the same positions on both sides agree...
    note = "non-finite inputs: input[0] holds 3 NaN and 1 Inf of 32 elements"
    assert any(n.startswith(note) for n in result.notes)  # ...which the result says
    with pytest.raises(ParityMismatch, match="Forward output shapes differ") as info:
        parity.check(msnn.Identity(), torch.nn.Flatten(0), x)
    assert f"Note: {note}" in str(info.value)
    assert not any(
        "non-finite" in n for n in parity.check(msnn.Dense(8, 3), torch.nn.Linear(8, 3), parity.randn((4, 8))).notes
    )


def test_str_of_a_result_is_one_line_with_verdict_worst_tensor_and_divergence():
    result = parity.check(msnn.Dense(4, 3), torch.nn.Linear(4, 3), parity.randn((2, 4)))
    text = str(result)
    assert "\n" not in text
    assert text.startswith(
        "ok: mindspore Dense <-> torch Linear (eval, pynative); 4 of 4 tensors within tolerance; worst "
    )
    worst = result.worst
    assert f"worst {worst.kind} '{worst.name}' at {parity.engine.diagnosis.messages.fmt(worst.margin)}x allowed" in text
    assert repr(result).startswith("Result(ms_type='Dense'")  # the full record stays in repr

    with pytest.raises(ParityMismatch) as info:
        parity.check(
            msnn.SequentialCell([msnn.Dense(4, 3), msnn.GELU()]),
            torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.GELU()),
            parity.randn((2, 4)),
        )
    result = info.value.result
    text = str(result)
    assert text.startswith(
        f"FAIL: mindspore SequentialCell <-> torch Sequential (eval, pynative); "
        f"{len(result) - len(result.failures)} of {len(result)} tensors within tolerance; worst "
    )
    assert text.endswith("; divergence first at forward output of '1' (GELU <-> GELU)") and "\n" not in text
    assert "Divergence: first at forward output of '1' (GELU <-> GELU)" in str(info.value)  # as the message says


class FloorAtDtypeMin(torch.nn.Module):
    """A Linear whose output is floored at ``torch.finfo(dtype).min`` made without a dtype, as
    Hugging Face's causal masks are (``torch.full(shape, torch.finfo(dtype).min)``)."""

    def __init__(self):
        super().__init__()
        self.dense = torch.nn.Linear(4, 3)

    def forward(self, x):
        y = self.dense(x)
        return torch.maximum(y, torch.full(y.shape, torch.finfo(y.dtype).min))


def test_the_float64_run_makes_tensors_created_without_a_dtype_in_float64():
    """In float32's default dtype, ``torch.full(shape, finfo(float64).min)`` overflows and raises;
    PyTorch's float64 run makes such tensors in float64, and leaves the default dtype as it was."""
    cell = msnn.SequentialCell([msnn.Dense(4, 3)])
    result = parity.check(
        cell,
        FloorAtDtypeMin(),
        parity.randn((2, 4)),
        reference="float64",
        name_map={"dense.weight": "0.weight", "dense.bias": "0.bias"},
    )
    assert result.passed and torch.get_default_dtype() == torch.float32


class PlusUniformOfMin(torch.nn.Module):
    """A Linear plus the float32 softmax of a row of ``finfo(dtype).min``: a third each in float32;
    NaN in float64, where ``finfo(float64).min`` is ``-inf`` in float32 (CLIP's text attention)."""

    def __init__(self):
        super().__init__()
        self.dense = torch.nn.Linear(4, 3)

    def forward(self, x):
        y = self.dense(x)
        row = torch.full((3,), torch.finfo(y.dtype).min)
        return y + torch.softmax(row, -1, dtype=torch.float32).to(y.dtype)


class PlusThird(msnn.Cell):
    def __init__(self, shift):
        super().__init__()
        self.dense, self.shift = msnn.Dense(4, 3), shift

    def construct(self, x):
        return self.dense(x) + (1 / 3 + self.shift)


def test_a_float64_run_not_finite_where_float32_is_is_left_out_with_a_note():
    with pytest.raises(ParityMismatch) as caught:
        parity.check(PlusThird(1e-3), PlusUniformOfMin(), parity.randn((2, 4)))
    result = caught.value.result
    output = result["output"]
    assert not output.passed and output.envelope.float64 and output.envelope.unused == 6
    assert any(
        "float64 run for the rounding envelope were not finite" in note and "'output' (6 of 6)" in note
        for note in result.notes
    )
    assert parity.check(PlusThird(0.0), PlusUniformOfMin(), parity.randn((2, 4))).passed


class _TupleCell(ms.nn.Cell):
    def __init__(self, swapped=False, extra=False):
        super().__init__()
        self.fc = ms.nn.Dense(4, 4)
        self.swapped, self.extra = swapped, extra

    def construct(self, x):
        h = self.fc(x)
        out = (h * 2, h) if self.swapped else (h, h * 2)
        return out + (h,) if self.extra else out


class _DictModule(torch.nn.Module):
    """A dict, as transformers' ModelOutput flattens, where mindone's port returns a tuple."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 4)

    def forward(self, x):
        h = self.fc(x)
        return {"logits": h, "hidden_states": h * 2}


def test_a_tuple_against_a_dict_of_as_many_tensors_is_compared_by_position():
    result = parity.check(_TupleCell(), _DictModule(), parity.randn((2, 4)))
    assert result.passed and [c.name for c in result.comparisons if c.kind == "output"] == [
        "output['logits']",
        "output['hidden_states']",
    ]
    assert any("paired by position" in note and "output[0] ~ output['logits']" in note for note in result.notes)
    with pytest.raises(ParityMismatch, match="output\\['logits'\\]"):  # by position: the order counts
        parity.check(_TupleCell(swapped=True), _DictModule(), parity.randn((2, 4)))
    with pytest.raises(ParityMismatch, match="Output structures differ"):  # not as many: no pairing
        parity.check(_TupleCell(extra=True), _DictModule(), parity.randn((2, 4)))
