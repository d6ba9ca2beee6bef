"""Hostile inputs to ``parity.check``: inputs changed in place, inputs and outputs with nothing to
compare, outputs in another structure, half precision given in ways the engine used to misread.

Each test runs the real frameworks on tiny nets (milliseconds each)."""

import numpy as np
import pytest
import torch
from mindspore import nn as mnn
from mindspore import ops
from mindspore.amp import auto_mixed_precision

import parity
from parity import ParityMismatch, ParityUsageError


def _cell(fn):
    class Fn(mnn.Cell):
        def construct(self, *args, **kwargs):
            return fn(*args, **kwargs)

    return Fn()


def _module(fn):
    class Fn(torch.nn.Module):
        def forward(self, *args, **kwargs):
            return fn(*args, **kwargs)

    return Fn()


def _ones(*shape):
    return np.linspace(0.5, 1.5, int(np.prod(shape)), dtype=np.float32).reshape(shape)


# -- each side gets its own copy; an input changed in place is reported ------------------------


def _double_in_place(x):
    x.mul_(2)
    return x + 1


@pytest.mark.parametrize("grads", [False, True])
def test_an_input_doubled_in_place_by_pytorch_no_longer_changes_what_mindspore_gets(grads):
    given = _ones(2, 3)
    kept = given.copy()
    with pytest.raises(ParityMismatch, match="outputs are not close"):
        parity.check(_cell(lambda x: x + 1), _module(_double_in_place), given, grads=grads)
    np.testing.assert_array_equal(given, kept)  # the caller's array is left as it was


@pytest.mark.parametrize("grads", [False, True])
def test_the_same_function_with_an_in_place_forward_passes_with_a_note_naming_side_and_input(grads):
    given = _ones(2, 3)
    result = parity.check(_cell(lambda x: x * 2), _module(lambda x: x.mul_(2)), given, grads=grads)
    note = next(n for n in result.notes if "in place" in n)
    assert note.startswith("PyTorch's forward changed input 'input[0]' in place")
    assert "not with MindSpore" in note
    np.testing.assert_array_equal(given, _ones(2, 3))
    if grads:
        assert any(c.kind == "input grad" and c.passed for c in result.comparisons)


def test_relu_inplace_on_the_input_is_checked_and_noted():
    result = parity.check(mnn.ReLU(), torch.nn.ReLU(inplace=True), parity.randn((3, 4)))
    assert any("PyTorch's forward changed input 'input[0]'" in n for n in result.notes)


def _set_first_row(x):
    x[0] = 5.0
    return x * 2


def test_mindspore_changing_its_input_in_place_is_noted_too():
    torch_side = _module(lambda x: torch.cat([torch.full_like(x[:1], 5.0), x[1:]]) * 2)
    result = parity.check(_cell(_set_first_row), torch_side, _ones(2, 3), grads=False)
    note = next(n for n in result.notes if "in place" in n)
    assert note.startswith("MindSpore's forward changed input 'input[0]' in place")


def test_keyword_and_integer_inputs_changed_in_place_are_named():
    def torch_fn(x, mask):
        mask.zero_()
        return x * 2

    given = {"x": _ones(2, 3), "mask": np.ones((2, 3), np.int64)}
    result = parity.check(_cell(lambda x, mask: x * 2), _module(torch_fn), given)
    assert any("changed input 'mask' in place" in n for n in result.notes)
    assert given["mask"].sum() == 6


def test_an_untouched_input_gives_no_note():
    result = parity.check(mnn.ReLU(), torch.nn.ReLU(), _ones(2, 3))
    assert not any("in place" in n for n in result.notes)


# -- nothing to compare: a zero batch, outputs all NaN or Inf ------------------------------------


@pytest.mark.parametrize("grads", [False, True])
def test_tanh_against_relu_on_a_zero_batch_is_refused(grads):
    with pytest.raises(
        ParityUsageError,
        match=r"nothing was compared: every output holds no element .*"
        r"input 'input\[0\]' holds no element",
    ):
        parity.check(mnn.Tanh(), torch.nn.ReLU(), parity.randn((0, 4)), grads=grads)


def test_a_dense_layer_on_a_zero_batch_given_as_a_keyword_is_refused():
    ms_dense, torch_dense = mnn.Dense(4, 3), torch.nn.Linear(4, 3)
    with pytest.raises(ParityUsageError, match="nothing was compared"):
        parity.check(
            _cell(lambda x: ms_dense(x)), _module(lambda x: torch_dense(x)), {"x": np.zeros((0, 4), np.float32)}
        )


def test_an_empty_output_beside_a_full_one_is_compared():
    # grads=False: MindSpore 2.10's StridedSliceGrad cannot take an empty slice on CPU
    result = parity.check(_cell(lambda x: (x * 2, x[:0])), _module(lambda x: (x * 2, x[:0])), _ones(2, 3), grads=False)
    assert [c.name for c in result.comparisons] == ["output[0]", "output[1]"] and result.passed


@pytest.mark.parametrize("value", [float("inf"), float("nan"), -float("inf")])
def test_outputs_that_are_all_non_finite_on_both_sides_are_refused(value):
    with pytest.raises(ParityUsageError, match="every output element is NaN or Inf on both sides"):
        parity.check(_cell(lambda x: x * 0 + value), _module(lambda x: x * 0 + value), _ones(2, 3), grads=False)


def test_two_different_functions_that_both_overflow_do_not_pass():
    with pytest.raises(ParityUsageError, match="nothing was compared"):
        parity.check(_cell(lambda x: ops.exp(x * 1000)), _module(lambda x: torch.exp(x * 2000)), _ones(2, 3))


def test_a_partly_masked_output_passes_with_a_note_counting_the_infinities():
    keep = np.array([[1, 0, 1], [0, 1, 1]], np.float32)
    ms_mask, torch_mask = keep == 0, torch.from_numpy(keep == 0)
    result = parity.check(
        _cell(lambda x: ops.masked_fill(x, __import__("mindspore").Tensor(ms_mask), -float("inf"))),
        _module(lambda x: x.masked_fill(torch_mask, -float("inf"))),
        _ones(2, 3),
        grads=False,
    )
    note = next(n for n in result.notes if n.startswith("non-finite values"))
    assert "output 'output' (pynative) of 6 elements: MindSpore 2 Inf; PyTorch 2 Inf" in note


def test_inf_on_one_side_only_is_a_disagreement_not_a_refusal():
    with pytest.raises(ParityMismatch):
        parity.check(_cell(lambda x: x * float("inf")), _module(lambda x: x * 2), _ones(2, 3), grads=False)


# -- output structures matched by key; Python numbers beside tensors ------------------------------


def test_dict_outputs_with_the_same_keys_in_another_order_agree():
    result = parity.check(
        _cell(lambda x: {"b": x * 2, "a": x + 1}), _module(lambda x: {"a": x + 1, "b": x * 2}), parity.randn((2, 3))
    )
    assert sorted(c.name for c in result.comparisons if c.kind == "output") == ["output['a']", "output['b']"]
    assert any("matched by key" in n for n in result.notes)


def test_a_nested_dict_in_another_order_agrees_and_a_wrong_value_is_still_found():
    ms_fn = lambda x: ({"b": x * 2, "a": x + 1}, x)  # noqa: E731
    parity.check(_cell(ms_fn), _module(lambda x: ({"a": x + 1, "b": x * 2}, x)), parity.randn((2, 3)))
    with pytest.raises(ParityMismatch, match=r"output\[0\]\['b'\]"):
        parity.check(_cell(ms_fn), _module(lambda x: ({"a": x + 1, "b": x * 3}, x)), parity.randn((2, 3)))


def test_dict_outputs_with_other_keys_are_a_structure_failure():
    with pytest.raises(ParityMismatch, match="Output structures differ"):
        parity.check(_cell(lambda x: {"a": x, "c": x}), _module(lambda x: {"a": x, "b": x}), parity.randn((2, 3)))


@pytest.mark.parametrize("grads", [True, False])
def test_a_tensor_and_an_int_output_compares_the_int(grads):
    result = parity.check(_cell(lambda x: (x + 1, 3)), _module(lambda x: (x + 1, 3)), parity.randn((2, 3)), grads=grads)
    assert [c.name for c in result.comparisons if c.kind == "output"] == ["output[0]", "output[1]"]
    with pytest.raises(ParityMismatch, match=r"first at forward output 'output\[1\]'"):
        parity.check(_cell(lambda x: (x + 1, 4)), _module(lambda x: (x + 1, 3)), parity.randn((2, 3)), grads=grads)


class _WithFloat(mnn.Cell):
    def construct(self, x):
        return x * 2, 0.5


def test_a_tensor_and_a_float_output_in_graph_mode():
    result = parity.check(_WithFloat(), _module(lambda x: (x * 2, 0.5)), parity.randn((2, 3)), ms_mode="graph")
    assert [c.name for c in result.comparisons if c.kind == "output"] == ["output[0]", "output[1]"]


# -- half precision: O3 against a .half() Module, bfloat16 specs -----------------------------------


class _HalfMLP(torch.nn.Module):
    """A Module made for ``.half()`` that takes float32 and returns float32, as O3 does."""

    def __init__(self, act):
        super().__init__()
        self.fc1, self.act, self.fc2 = torch.nn.Linear(8, 16), act, torch.nn.Linear(16, 4)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x.to(self.fc1.weight.dtype)))).float()


class _MLP(mnn.Cell):
    def __init__(self, act):
        super().__init__()
        self.fc1, self.act, self.fc2 = mnn.Dense(8, 16), act, mnn.Dense(16, 4)

    def construct(self, x):
        return self.fc2(self.act(self.fc1(x)))


@pytest.mark.parametrize("grads", [True, False])
def test_o3_against_a_half_module_taking_float32_agrees(grads):
    result = parity.check(
        auto_mixed_precision(_MLP(mnn.ReLU()), "O3"),
        _HalfMLP(torch.nn.ReLU()).half(),
        parity.randn((4, 8)),
        grads=grads,
    )
    assert not any("MindSpore computes in float32" in n for n in result.notes)
    if grads:
        grad = next(c for c in result.comparisons if c.kind == "input grad")
        assert (grad.ms_dtype, grad.torch_dtype) == ("float16", "float16") and grad.passed


class _HalfNormed(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc, self.bn = torch.nn.Linear(8, 4), torch.nn.BatchNorm1d(4)

    def forward(self, x):
        return self.bn(self.fc(x.to(self.fc.weight.dtype))).float()


class _Normed(mnn.Cell):
    def __init__(self):
        super().__init__()
        self.fc, self.bn = mnn.Dense(8, 4), mnn.BatchNorm1d(4)

    def construct(self, x):
        return self.bn(self.fc(x))


def test_o2_keeping_batchnorm_in_float32_compares_the_input_gradient_in_float16():
    # O2 leaves a mix of precisions: MindSpore is given float32, the .half() Module float16
    result = parity.check(auto_mixed_precision(_Normed(), "O2"), _HalfNormed().half().eval(), parity.randn((4, 8)))
    grad = next(c for c in result.comparisons if c.kind == "input grad")
    assert (grad.ms_dtype, grad.torch_dtype) == ("float16", "float16") and grad.passed
    assert any(
        n.startswith(
            "the gradient of input[0] is compared in float16: parity gave that input to MindSpore "
            "as float32 and to PyTorch as float16"
        )
        for n in result.notes
    )


def test_o3_against_a_half_module_of_another_activation_still_fails():
    with pytest.raises(ParityMismatch):
        parity.check(
            auto_mixed_precision(_MLP(mnn.Tanh()), "O3"), _HalfMLP(torch.nn.ReLU()).half(), parity.randn((4, 8))
        )


def test_to_float_on_the_parameter_holding_cells_only_counts_as_half_precision():
    import mindspore

    from parity.judge.dtypes import cell_dtype

    cell = _MLP(mnn.ReLU())
    cell.fc1.to_float(mindspore.float16)
    assert cell_dtype(cell) is None  # fc2 computes in float32: mixed
    cell.fc2.to_float(mindspore.float16)
    assert cell_dtype(cell) == "float16"
    assert cell_dtype(auto_mixed_precision(_MLP(mnn.ReLU()), "O2")) == "float16"  # no BatchNorm to keep in float32


def _affine(x):
    return x * 2 + 1


@pytest.mark.parametrize(
    "spec",
    [
        pytest.param(lambda: parity.randn((4, 5), dtype="bfloat16"), id="randn"),
        pytest.param(lambda: parity.uniform((4, 5), -2.0, 2.0, dtype="bfloat16"), id="uniform"),
        pytest.param(lambda: {"x": parity.randn((4, 5), dtype="bfloat16", std=3.0)}, id="keyword"),
    ],
)
def test_bfloat16_specs_run_like_float16_ones(spec):
    result = parity.check(_cell(_affine), _module(_affine), spec())
    assert {c.torch_dtype for c in result.comparisons} == {"bfloat16"}
    with pytest.raises(ParityMismatch):
        parity.check(_cell(_affine), _module(lambda x: x * 3 + 1), spec())


def test_a_bfloat16_spec_gives_what_the_same_array_given_gives():
    spec = parity.randn((4, 5), dtype="bfloat16")
    from parity.engine.inputs import materialize

    array = materialize(spec, 7).args[0]
    by_spec = parity.check(_cell(_affine), _module(_affine), spec, seed=7)
    by_array = parity.check(_cell(_affine), _module(_affine), array.copy(), seed=7)
    assert [c.max_abs for c in by_spec.comparisons] == [c.max_abs for c in by_array.comparisons]


def test_mindspore_changing_a_differentiated_input_in_place_says_so():
    torch_side = _module(lambda x: torch.cat([torch.full_like(x[:1], 5.0), x[1:]]) * 2)
    with pytest.raises(ParityUsageError, match="changes an input in place, which mindspore.vjp refuses.*grads=False"):
        parity.check(_cell(_set_first_row), torch_side, _ones(2, 3))


class _ScaledDense(mnn.Cell):
    def __init__(self):
        super().__init__()
        self.fc = mnn.Dense(4, 3)

    def construct(self, x):
        return self.fc(x * 2)


class _ScaledLinearInPlace(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 3)

    def forward(self, x):
        return self.fc(x.mul_(2))


def test_check_training_leaves_the_given_batches_as_they_were():
    given = _ones(3, 4)
    result = parity.check_training(
        _ScaledDense(),
        _ScaledLinearInPlace(),
        [(given, _ones(3, 3))],
        steps=2,
        loss=torch.nn.MSELoss(),
        optimizer=lambda p: torch.optim.SGD(p, lr=0.1),
    )
    assert result.passed  # every step fed x, not x doubled again by the step before
    np.testing.assert_array_equal(given, _ones(3, 4))
