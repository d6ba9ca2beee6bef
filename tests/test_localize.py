"""Per-layer localisation: layer alignment, verdicts, the recordings, both adapters' capture, and
``parity.check(localize=...)`` on tiny real pairs. Fault injection on bigger nets lives in
tests/test_localize_faults.py."""

from __future__ import annotations

import collections
import weakref

import mindspore as ms  # both frameworks before parity, as everywhere in tests/
import numpy as np
import pytest
import torch
from mindspore import nn as msnn

import parity
from parity import ParityMismatch, ParityUsageError, Tolerance
from parity.backends import mindspore as msb
from parity.backends import torch as tb
from parity.engine.diagnosis.alignment import align_layers
from parity.engine.diagnosis.recording import Localizer, Recording
from parity.engine.diagnosis.verdicts import AMPLIFICATION, LayerVerdict, first_divergence, settle
from parity.engine.diagnosis.verdicts import compare_call as judge

FAULT = 1.01  # a 1% error: hundreds of times the float32 tolerance on these tiny nets


# -- nets --------------------------------------------------------------------------------------
# Attribute names differ between the sides where the layer has no parameters (``act``/``relu``):
# only the structural alignment can pair those.


class MSScaledDense(msnn.Dense):
    """Fault: a Dense whose output is 1% too large."""

    def construct(self, x):
        return super().construct(x) * FAULT


class MSGradScale(msnn.Cell):
    """Identity forward; its hand-written backward scales the gradient by ``scale``."""

    def __init__(self, scale=FAULT):
        super().__init__()
        self.scale = scale

    def construct(self, x):
        return x * 1.0

    def bprop(self, x, out, dout):
        return (dout * self.scale,)


class MSMLP(msnn.Cell):
    """fc1 -> act -> fc2; ``act`` may be another Cell (a fault, a custom bprop)."""

    def __init__(self, fc1=None, act=None):
        super().__init__()
        self.fc1 = fc1 if fc1 is not None else msnn.Dense(4, 4)
        self.act = act if act is not None else msnn.ReLU()
        self.fc2 = msnn.Dense(4, 3)

    def construct(self, x):
        return self.fc2(self.act(self.fc1(x)))


class TorchIdentity(torch.nn.Module):
    def forward(self, x):
        return x * 1.0


class TorchMLP(torch.nn.Module):
    def __init__(self, relu=None):
        super().__init__()
        self.fc1 = torch.nn.Linear(4, 4)
        self.relu = relu if relu is not None else torch.nn.ReLU()
        self.fc2 = torch.nn.Linear(4, 3)

    def forward(self, x):
        return self.fc2(self.relu(self.fc1(x)))


class MSTanhTwice(msnn.Cell):
    def __init__(self):
        super().__init__()
        self.fc1 = msnn.Dense(4, 4)
        self.act = msnn.Tanh()
        self.fc2 = msnn.Dense(4, 3)

    def construct(self, x):
        return self.fc2(self.act(self.act(self.fc1(x))))


class TorchTanhTwice(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(4, 4)
        self.tanh = torch.nn.Tanh()
        self.fc2 = torch.nn.Linear(4, 3)

    def forward(self, x):
        return self.fc2(self.tanh(self.tanh(self.fc1(x))))


class MSBlockNet(msnn.Cell):
    """block (fc, grad-scaling custom bprop) -> head: a custom bprop inside a container."""

    def __init__(self):
        super().__init__()
        self.block = msnn.SequentialCell([msnn.Dense(4, 4), MSGradScale()])
        self.head = msnn.Dense(4, 3)

    def construct(self, x):
        return self.head(self.block(x))


class TorchBlockNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.block = torch.nn.Sequential(torch.nn.Linear(4, 4), TorchIdentity())
        self.head = torch.nn.Linear(4, 3)

    def forward(self, x):
        return self.head(self.block(x))


class MSResidual(msnn.Cell):
    def __init__(self):
        super().__init__()
        self.fc1 = msnn.Dense(4, 4)
        self.fc2 = msnn.Dense(4, 4)

    def construct(self, x):
        return self.fc2(self.fc1(x) + x)


class TorchInPlaceResidual(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(4, 4)
        self.fc2 = torch.nn.Linear(4, 4)

    def forward(self, x):
        out = self.fc1(x)
        out += x  # modifies fc1's output after its forward hook has seen it
        return self.fc2(out)


class MSFirstSecond(msnn.Cell):
    def __init__(self):
        super().__init__()
        self.first = msnn.Dense(4, 5)
        self.second = msnn.Dense(5, 3)

    def construct(self, x):
        return self.second(self.first(x))


class TorchDefinedBackwards(torch.nn.Module):
    """The same computation with other names, defined in the other order: structure alone would
    pair ``first`` with ``out``."""

    def __init__(self):
        super().__init__()
        self.out = torch.nn.Linear(5, 3)
        self.inp = torch.nn.Linear(4, 5)

    def forward(self, x):
        return self.out(self.inp(x))


class MSWrapped(msnn.Cell):
    """The whole MLP one level down, under ``net``."""

    def __init__(self):
        super().__init__()
        self.net = MSMLP()

    def construct(self, x):
        return self.net(x)


X = parity.randn((2, 4))


def labels(verdicts):
    return [v.label for v in verdicts]


def not_ok(verdicts):
    return [(v.label, v.status) for v in verdicts if v.status != "ok"]


# -- align_layers ------------------------------------------------------------------------------


def kinds(*entries, root="Net"):
    """{path: (class name, built-in)} in definition order, the root first as the adapters give it."""
    return {"": (root, False), **{path: (name, builtin) for path, name, builtin in entries}}


def test_align_keeps_known_pairs_and_pairs_their_parent():
    ms_kinds = kinds(("blk", "MSBlock", False), ("blk.dense", "Dense", True))
    torch_kinds = kinds(("layer", "Block", False), ("layer.proj", "Linear", True))
    assert align_layers(ms_kinds, torch_kinds, {"blk.dense": "layer.proj"}) == {
        "blk.dense": "layer.proj",
        "blk": "layer",
    }


def test_align_drops_known_pairs_naming_missing_layers():
    ms_kinds = kinds(("fc", "Dense", True))
    torch_kinds = kinds(("fc", "Linear", True))
    assert align_layers(ms_kinds, torch_kinds, {"fc": "gone", "gone": "fc"}) == {"fc": "fc"}


def test_align_leaves_a_parent_whose_children_disagree_unpaired():
    ms_kinds = kinds(("blk", "MSBlock", False), ("blk.a", "Dense", True), ("blk.b", "Dense", True))
    torch_kinds = kinds(("x", "Block", False), ("x.a", "Linear", True), ("y", "Block", False), ("y.b", "Linear", True))
    mapping = align_layers(ms_kinds, torch_kinds, {"blk.a": "x.a", "blk.b": "y.b"})
    assert "blk" not in mapping
    assert mapping == {"blk.a": "x.a", "blk.b": "y.b"}


def test_align_pairs_differently_named_siblings_by_structure():
    ms_kinds = kinds(("fc1", "Dense", True), ("act", "ReLU", True), ("fc2", "Dense", True))
    torch_kinds = kinds(("fc1", "Linear", True), ("relu", "ReLU", True), ("fc2", "Linear", True))
    mapping = align_layers(ms_kinds, torch_kinds, {"fc1": "fc1", "fc2": "fc2"})
    assert mapping == {"fc1": "fc1", "fc2": "fc2", "act": "relu"}


def test_align_pairs_sequential_cell_indices_with_ordered_dict_names():
    ms_kinds = kinds(("body", "SequentialCell", True), ("body.0", "Conv2d", True), ("body.1", "ReLU", True))
    torch_kinds = kinds(
        ("features", "Sequential", True), ("features.conv", "Conv2d", True), ("features.relu", "ReLU", True)
    )
    assert align_layers(ms_kinds, torch_kinds, {}) == {
        "body": "features",
        "body.0": "features.conv",
        "body.1": "features.relu",
    }


def test_align_counts_dense_and_linear_as_one_kind():
    # Unequal counts: only layers of the same kind are paired, so Dense must meet Linear.
    ms_kinds = kinds(("dense", "Dense", True))
    torch_kinds = kinds(("drop", "Dropout", True), ("proj", "Linear", True))
    assert align_layers(ms_kinds, torch_kinds, {}) == {"dense": "proj"}


def test_align_refuses_to_zip_built_in_layers_of_different_kinds():
    ms_kinds = kinds(("a", "ReLU", True), ("b", "Tanh", True))
    torch_kinds = kinds(("x", "Tanh", True), ("y", "Tanh", True))
    # Zipping would pair ReLU with Tanh: only the same-kind pairs, in order, remain.
    assert align_layers(ms_kinds, torch_kinds, {}) == {"b": "x"}


def test_align_zips_a_custom_layer_with_anything():
    ms_kinds = kinds(("a", "MyAct", False), ("b", "Tanh", True))
    torch_kinds = kinds(("x", "ReLU", True), ("y", "Tanh", True))
    assert align_layers(ms_kinds, torch_kinds, {}) == {"a": "x", "b": "y"}


def test_align_pairs_nothing_twice():
    ms_kinds = kinds(
        ("a", "MSBlock", False),
        ("a.fc", "Dense", True),
        ("b", "MSBlock", False),
        ("b.fc", "Dense", True),
        ("head", "Dense", True),
    )
    torch_kinds = kinds(
        ("x", "Block", False), ("x.fc", "Linear", True), ("x.fc2", "Linear", True), ("head", "Linear", True)
    )
    mapping = align_layers(ms_kinds, torch_kinds, {"a.fc": "x.fc", "b.fc": "x.fc2", "head": "head"})
    assert len(set(mapping.values())) == len(mapping)
    assert mapping["a"] == "x"  # both parents vote for x: the first takes it ...
    assert "b" not in mapping  # ... and the second finds it taken


# -- judge -------------------------------------------------------------------------------------

TOL = Tolerance(0.0, 1e-3)
REF = np.array([3.0, 4.0])  # norm 5: an error of d on one element is a relative error of d / 5


def judged(in_diff, out_diff, noise=0.0, tol=TOL):
    ms_in, ms_out = REF + [in_diff, 0.0], REF + [out_diff, 0.0]
    return judge("forward", "fc", "fc", "Dense", "Linear", 0, [ms_in], [ms_out], [REF], [REF], tol, noise=noise)


def test_judge_agreeing_outputs_are_ok_up_to_a_margin_of_one():
    at_limit = judged(0.0, 0.5, tol=Tolerance(0.0, 0.5))
    assert at_limit.out_margin == 1.0 and at_limit.status == "ok"
    assert judged(0.0, 0.5000001, tol=Tolerance(0.0, 0.5)).status == "FAIL"


def test_judge_measures_relative_error_margin_and_greatest_difference():
    verdict = judged(0.05, 0.5)
    assert verdict.in_error == pytest.approx(0.05 / 5) and verdict.in_margin == pytest.approx(0.05 / 1e-3)
    assert verdict.out_error == pytest.approx(0.5 / 5) and verdict.out_margin == pytest.approx(0.5 / 1e-3)
    assert verdict.max_abs == pytest.approx(0.5)


def test_judge_blames_a_layer_fed_agreeing_inputs():
    assert judged(0.0, 0.01).status == "FAIL"


def test_judge_blames_a_layer_fed_differing_inputs_only_for_amplification():
    # in_error 0.01; out_error 0.08 is within AMPLIFICATION x 0.01, 0.12 is beyond it.
    assert AMPLIFICATION == 10.0
    assert judged(0.05, 0.4).status == "downstream"
    assert judged(0.05, 0.6).status == "FAIL"


def test_judge_adds_the_noise_floor_to_what_the_inputs_explain():
    verdict = judged(0.05, 0.6, noise=0.05)  # 0.12 <= 10 x 0.01 + 0.05
    assert verdict.status == "downstream" and verdict.noise == 0.05


def test_judge_an_output_of_another_shape_fails_infinitely():
    verdict = judge("forward", "fc", "fc", "Dense", "Linear", 0, [REF], [np.zeros(3)], [REF], [REF], TOL)
    assert verdict.out_margin == float("inf") and verdict.status == "FAIL"


# -- settle and first_divergence ---------------------------------------------------------------


def verdict(path, status="ok", *, call=0, in_margin=0.0, in_error=0.0, in_noise=0.0):
    return LayerVerdict(
        "forward",
        path,
        path,
        "Dense",
        "Linear",
        call,
        in_error,
        in_margin,
        0.0,
        0.0,
        0.0,
        status=status,
        in_noise=in_noise,
    )


def test_settle_a_container_whose_child_failed_only_contains_it():
    verdicts = [verdict("a.b.c", "FAIL"), verdict("a.b", "FAIL"), verdict("a", "FAIL")]
    settle(verdicts)
    assert [v.status for v in verdicts] == ["FAIL", "contains", "contains"]
    assert first_divergence(verdicts)[0] is verdicts[0]


def test_settle_a_sibling_with_a_longer_name_is_not_a_child():
    verdicts = [verdict("blk2.fc", "FAIL"), verdict("blk", "FAIL")]
    settle(verdicts)
    assert [v.status for v in verdicts] == ["FAIL", "FAIL"]


def test_settle_a_container_failing_with_agreeing_children_diverges_in_its_own_code():
    verdicts = [verdict("blk.fc"), verdict("blk.act"), verdict("blk", "FAIL")]
    settle(verdicts)
    assert verdicts[-1].status == "FAIL"
    where = "in the code of 'blk' between its sub-layers (after 'blk.act')"
    assert verdicts[-1].note == where
    assert first_divergence(verdicts) == (verdicts[-1], where)


def test_settle_names_the_first_sub_layer_fed_a_differing_input():
    verdicts = [
        verdict("blk.fc"),
        verdict("blk.act", "downstream", in_margin=5.0, in_error=0.1),
        verdict("blk.out", "downstream", in_margin=5.0, in_error=0.1),
        verdict("blk", "FAIL"),
    ]
    settle(verdicts)
    assert verdicts[-1].note == "in the code of 'blk' between its sub-layers (after 'blk.fc', before 'blk.act')"


def test_first_divergence_names_the_first_fail_with_its_types_and_call():
    verdicts = [verdict("fc"), verdict("fc", "FAIL", call=1), verdict("head", "FAIL")]
    assert first_divergence(verdicts) == (verdicts[1], "'fc (call 2)' (Dense <-> Linear)")


def test_first_divergence_without_a_fail_points_between_two_layers():
    verdicts = [verdict("A"), verdict("B", "downstream", in_margin=3.0, in_error=0.01), verdict("C", "downstream")]
    assert first_divergence(verdicts) == (verdicts[1], "between 'A' and 'B' (functional code, no sub-layer)")


def test_first_divergence_before_every_layer_is_in_the_inputs():
    verdicts = [verdict("A", in_margin=3.0, in_error=0.01)]
    assert first_divergence(verdicts) == (verdicts[0], "between the inputs and 'A' (functional code, no sub-layer)")


def test_first_divergence_ignores_input_errors_within_their_noise_floor():
    verdicts = [verdict("A"), verdict("B", in_margin=3.0, in_error=0.01, in_noise=0.02)]
    assert first_divergence(verdicts) == (None, "")


# -- Recording ---------------------------------------------------------------------------------


def arrays(*values):
    return [np.asarray(v, np.float32) for v in values]


def test_recording_numbers_the_calls_of_each_path():
    recording = Recording()
    for path in ("act", "fc", "act"):
        recording.forward(path, "ReLU", arrays(1), arrays(2))
    assert [(c.path, c.call) for c in recording.calls] == [("act", 0), ("fc", 0), ("act", 1)]
    assert recording.get("act", 1) is recording.calls[2]
    assert recording.get("act", 2) is None


def test_recording_backward_with_a_call_number_and_unmatched_paths():
    recording = Recording()
    recording.forward("act", "ReLU", arrays(1), arrays(2))
    recording.forward("act", "ReLU", arrays(3), arrays(4))
    recording.backward("act", arrays(10), arrays(20), call=0)
    recording.backward("fc", arrays(30), arrays(40), call=0)
    assert [(c.path, c.call) for c in recording.backward_order] == [("act", 0)]
    assert recording.get("act", 0).grad_inputs == arrays(10)
    assert recording.get("act", 1).grad_inputs is None
    assert recording.unmatched == ["fc"]


def test_recording_drops_the_arrays_once_its_callbacks_have_seen_them():
    seen = []
    recording = Recording(
        on_forward=lambda c: seen.append((c.inputs, c.outputs)),
        on_backward=lambda c: seen.append((c.grad_outputs, c.grad_inputs)),
    )
    recording.forward("fc", "Dense", arrays(1), arrays(2))
    recording.backward("fc", arrays(3), arrays(4), call=0)
    assert seen == [(arrays(1), arrays(2)), (arrays(4), arrays(3))]
    call = recording.calls[0]
    assert (call.inputs, call.outputs, call.grad_inputs, call.grad_outputs) == ([], [], [], [])


def test_recording_without_callbacks_keeps_the_arrays():
    recording = Recording()
    recording.forward("fc", "Dense", arrays(1), arrays(2))
    assert recording.calls[0].outputs == arrays(2)


# -- Localizer ---------------------------------------------------------------------------------


def torch_recorded(*paths):
    recording = Recording()
    for path in paths:
        recording.forward(path, "Linear", [REF.copy()], [REF.copy()])
    return recording


def test_localizer_releases_a_torch_call_once_compared():
    torch_recording = torch_recorded("t")
    asked = []
    localizer = Localizer(
        torch_recording, {"m": "t", "m2": "t"}.get, lambda names, dtype: asked.append((names, dtype)) or TOL
    )
    ms_recording = Recording(localizer.on_forward, localizer.on_backward)
    ms_recording.forward("m", "Dense", [REF.copy()], [REF + [0.1, 0.0]])
    assert torch_recording.get("t", 0).inputs is None and torch_recording.get("t", 0).outputs is None
    assert asked == [(("t", "m"), "float64")]
    ms_recording.forward("m2", "Dense", [REF.copy()], [REF.copy()])  # aligned with the same torch call
    first, second = localizer.forward
    assert (first.path, first.ms_path, first.torch_type, first.status) == ("t", "m", "Linear", "FAIL")
    assert (second.path, second.ms_path, second.status) == ("t", "m2", "unaligned")


def test_localizer_a_layer_with_no_counterpart_is_unaligned_under_its_own_name():
    localizer = Localizer(torch_recorded("t"), {}.get, lambda names, dtype: TOL)
    Recording(localizer.on_forward).forward("extra", "Dropout", [REF], [REF])
    assert [(v.path, v.ms_path, v.status) for v in localizer.forward] == [("extra", "extra", "unaligned")]


def test_localizer_backward_compares_gradients_in_and_out():
    torch_recording = torch_recorded("t")
    torch_recording.backward("t", [REF.copy()], [REF.copy()], call=0)  # grad_inputs, grad_outputs
    localizer = Localizer(torch_recording, {"m": "t"}.get, lambda names, dtype: TOL)
    ms_recording = Recording(localizer.on_forward, localizer.on_backward)
    ms_recording.forward("m", "Dense", [REF.copy()], [REF.copy()])
    ms_recording.backward("m", [REF + [0.5, 0.0]], [REF.copy()], call=0)  # the gradient flowing out differs
    assert [v.status for v in localizer.forward] == ["ok"]
    (back,) = localizer.backward
    assert (back.direction, back.status, back.in_error) == ("backward", "FAIL", 0.0)
    assert back.out_error == pytest.approx(0.5 / 5)
    assert torch_recording.get("t", 0).grad_inputs is None


def test_localizer_records_float64_noise_floors_and_uses_them():
    torch_recording = Recording()
    torch_recording.forward("t", "Linear", [REF + [0.2, 0.0]], [REF + [0.0, 0.5]])  # float32, off float64
    localizer = Localizer(torch_recording, {"m": "t"}.get, lambda names, dtype: TOL)
    recording64 = localizer.float64_recording()
    recording64.forward("t", "Linear", [REF.copy()], [REF.copy()])
    factor = localizer.noise_factor
    assert localizer.noise[("forward", "t", 0)] == pytest.approx((factor * 0.5 / 5, factor * 0.2 / 5))
    assert (recording64.calls[0].inputs, recording64.calls[0].outputs) == ([], [])
    # MindSpore as far off the float32 PyTorch output as the floor allows: downstream, not FAIL.
    Recording(localizer.on_forward).forward("m", "Dense", [REF + [0.2, 0.0]], [REF + [0.0, 0.5] + [0.5, 0.0]])
    (verdict,) = localizer.forward
    assert verdict.noise == pytest.approx(factor * 0.1) and verdict.in_noise == pytest.approx(factor * 0.04)
    assert verdict.status == "downstream"


# -- PyTorch capture ---------------------------------------------------------------------------


def test_copies_share_one_copy_per_piece_of_data():
    copies = tb._Copies()
    tensor = torch.arange(6.0).reshape(2, 3)
    first = copies.array(tensor)
    assert copies.array(tensor.view_as(tensor)) is first
    assert copies.array(tensor.detach()) is first
    assert copies.array(tensor[1]) is not first  # another offset, another piece of data
    np.testing.assert_array_equal(first, tensor.numpy())


def test_copies_an_in_place_update_gives_a_new_copy_and_keeps_the_old():
    copies = tb._Copies()
    tensor = torch.arange(6.0).reshape(2, 3)
    before = copies.array(tensor)
    tensor.add_(1.0)
    after = copies.array(tensor)
    assert after is not before
    np.testing.assert_array_equal(before, np.arange(6.0).reshape(2, 3))
    np.testing.assert_array_equal(after, np.arange(1.0, 7.0).reshape(2, 3))


def test_copies_are_held_weakly():
    copies = tb._Copies()
    tensor = torch.arange(6.0).reshape(2, 3)
    first = copies.array(tensor)
    gone = weakref.ref(first)
    del first
    assert gone() is None  # the cache did not keep it alive
    again = copies.array(tensor)
    np.testing.assert_array_equal(again, tensor.numpy())
    assert copies.array(tensor) is again


def test_torch_capture_records_layers_and_gradients_and_restores_in_place():
    module = TorchMLP(relu=torch.nn.ReLU(inplace=True))
    recording = Recording()
    x = torch.from_numpy(np.linspace(-1.0, 1.0, 8, dtype=np.float32).reshape(2, 4)).requires_grad_(True)
    cot = torch.from_numpy(np.arange(6, dtype=np.float32).reshape(2, 3) - 2.5)
    with tb.capture(module, recording, backward=True):
        assert module.relu.inplace is False
        out = module(x)
        out.backward(cot)
    assert module.relu.inplace is True
    assert [c.path for c in recording.calls] == ["fc1", "relu", "fc2"]
    assert [c.path for c in recording.backward_order] == ["fc2", "relu", "fc1"]
    fc1, relu, fc2 = recording.calls
    assert relu.inputs[0] is fc1.outputs[0]  # one copy of the tensor flowing between them
    assert (relu.inputs[0] < 0).any()  # not clobbered by the ReLU, which ran out of place
    np.testing.assert_array_equal(relu.outputs[0], np.maximum(relu.inputs[0], 0.0))
    np.testing.assert_array_equal(fc2.outputs[0], out.detach().numpy())
    np.testing.assert_array_equal(fc2.grad_outputs[0], cot.numpy())
    np.testing.assert_allclose(fc2.grad_inputs[0], cot.numpy() @ module.fc2.weight.detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(fc1.grad_inputs[0], x.grad.numpy(), rtol=1e-6)
    module(x)  # the hooks are gone
    assert len(recording.calls) == 3


# -- MindSpore capture -------------------------------------------------------------------------


def test_mindspore_capture_records_layers_and_gradients():
    net = MSMLP()
    recording = Recording()
    x = ms.Tensor(np.linspace(-1.0, 1.0, 8, dtype=np.float32).reshape(2, 4))
    cot = np.arange(6, dtype=np.float32).reshape(2, 3) - 2.5
    with msb.capture(net, recording, backward=True) as layers:
        out, vjp = ms.vjp(net, x)
        layers.flush()
        assert [c.path for c in recording.calls] == ["fc1", "act", "fc2"]
        assert recording.backward_order == []
        (dx,) = vjp(ms.Tensor(cot))
    assert [c.path for c in recording.backward_order] == ["fc2", "act", "fc1"]
    fc1, act, fc2 = recording.calls
    np.testing.assert_array_equal(act.outputs[0], np.maximum(act.inputs[0], 0.0))
    np.testing.assert_array_equal(fc2.outputs[0], out.asnumpy())
    np.testing.assert_array_equal(fc2.grad_outputs[0], cot)
    np.testing.assert_allclose(fc2.grad_inputs[0], cot @ net.fc2.weight.asnumpy(), rtol=1e-6)
    np.testing.assert_allclose(fc1.grad_inputs[0], dx.asnumpy(), rtol=1e-6)
    assert recording.unmatched == []


# -- parity.check(localize=...) ----------------------------------------------------------------


def test_localize_false_captures_nothing_even_on_failure():
    assert parity.check(MSMLP(), TorchMLP(), X, localize=False).layers is None
    with pytest.raises(ParityMismatch) as info:
        parity.check(MSMLP(fc1=MSScaledDense(4, 4)), TorchMLP(), X, localize=False)
    assert info.value.result.layers is None


def test_localize_rejects_other_values():
    with pytest.raises(ParityUsageError, match=r"unknown localize 'yes'; expected one of 'auto', True, False"):
        parity.check(MSMLP(), TorchMLP(), X, localize="yes")


def test_localize_true_gives_one_ok_verdict_per_layer_call():
    result = parity.check(MSTanhTwice(), TorchTanhTwice(), X, localize=True)
    forward, backward = result.layers.forward, result.layers.backward
    assert labels(forward) == ["fc1", "tanh", "tanh (call 2)", "fc2"]
    assert [v.ms_path for v in forward] == ["fc1", "act", "act", "fc2"]  # act <-> tanh by structure
    assert labels(backward) == ["fc2", "tanh (call 2)", "tanh", "fc1"]
    assert not_ok(forward) == [] and not_ok(backward) == []


def test_localize_true_pairs_sequential_cell_indices_with_ordered_dict_names():
    ms_cell = msnn.SequentialCell([msnn.Dense(4, 4), msnn.ReLU(), msnn.Dense(4, 3)])
    module = torch.nn.Sequential(
        collections.OrderedDict(
            [("fc", torch.nn.Linear(4, 4)), ("relu", torch.nn.ReLU()), ("out", torch.nn.Linear(4, 3))]
        )
    )
    result = parity.check(ms_cell, module, X, localize=True)
    assert [(v.path, v.ms_path) for v in result.layers.forward] == [("fc", "0"), ("relu", "1"), ("out", "2")]
    assert not_ok(result.layers.forward) == [] and not_ok(result.layers.backward) == []


def test_localize_true_without_grads_localises_the_forward_only():
    result = parity.check(MSMLP(), TorchMLP(), X, grads=False, localize=True)
    assert labels(result.layers.forward) == ["fc1", "relu", "fc2"]
    assert result.layers.backward == []


def test_localize_auto_captures_nothing_on_a_passing_pair():
    result = parity.check(MSMLP(), TorchMLP(), X)
    assert result.passed and result.layers is None
    assert not [note for note in result.notes if "layers were compared" in note]


def test_localize_auto_names_the_faulty_layer_of_a_failing_pair():
    with pytest.raises(ParityMismatch) as info:
        parity.check(MSMLP(fc1=MSScaledDense(4, 4)), TorchMLP(), X)
    result, message = info.value.result, str(info.value)
    verdict, where = result.layers.first("forward")
    assert verdict.path == "fc1" and verdict.ms_type == "MSScaledDense"
    assert where == "'fc1' (MSScaledDense <-> Linear)"
    assert [v.label for v in result.layers.forward if v.status == "FAIL"] == ["fc1"]
    assert {v.status for v in result.layers.forward[1:]} == {"downstream"}
    assert f"Divergence: first at forward output of {where}" in message.splitlines()
    assert "layers were compared in one extra pass per side, with hooks (localize='auto')" in result.notes


def test_a_fault_in_a_custom_bprop_is_found_in_the_backward_only():
    with pytest.raises(ParityMismatch) as info:
        parity.check(MSMLP(act=MSGradScale()), TorchMLP(relu=TorchIdentity()), X)
    layers = info.value.result.layers
    assert layers.first("forward") == (None, "")
    assert not_ok(layers.forward) == []
    verdict, where = layers.first("backward")
    assert (verdict.path, verdict.ms_path, verdict.ms_type) == ("relu", "act", "MSGradScale")
    assert verdict.in_margin <= 1.0 < verdict.out_margin  # the gradient flowing in agrees, out does not
    assert verdict.out_error == pytest.approx(FAULT - 1.0, rel=1e-3)
    assert "Divergence: first at gradient flowing back out of 'relu' (MSGradScale <-> TorchIdentity)" in str(info.value)


def test_a_custom_bprop_layer_is_in_backward_order():
    result = parity.check(MSMLP(act=MSGradScale(1.0)), TorchMLP(relu=TorchIdentity()), X, localize=True)
    assert labels(result.layers.backward) == ["fc2", "relu", "fc1"]


def test_a_fault_in_a_custom_bprop_inside_a_container_is_named():
    with pytest.raises(ParityMismatch) as info:
        parity.check(MSBlockNet(), TorchBlockNet(), X)
    verdict, _ = info.value.result.layers.first("backward")
    assert verdict.path == "block.1"


def test_graph_mode_localises_in_an_extra_pynative_pass():
    result = parity.check(MSMLP(), TorchMLP(), X, ms_mode="graph", localize=True)
    assert {c.mode for c in result.comparisons} == {"graph"}
    assert "GRAPH mode has no layer hooks: layers were compared in an extra PYNATIVE pass" in result.notes
    assert labels(result.layers.forward) == ["fc1", "relu", "fc2"]
    assert labels(result.layers.backward) == ["fc2", "relu", "fc1"]
    assert not_ok(result.layers.forward) == [] and not_ok(result.layers.backward) == []


def test_an_in_place_update_of_a_torch_layer_output_is_localised_both_ways():
    """``out += x`` after fc1: its recorded output must be the value fc1 returned, not the sum."""
    result = parity.check(MSResidual(), TorchInPlaceResidual(), X, localize=True)
    assert labels(result.layers.forward) == ["fc1", "fc2"]
    assert labels(result.layers.backward) == ["fc2", "fc1"]
    assert not_ok(result.layers.forward) == [] and not_ok(result.layers.backward) == []


def test_layers_with_parameters_align_through_the_name_map():
    name_map = {
        "inp.weight": "first.weight",
        "inp.bias": "first.bias",
        "out.weight": "second.weight",
        "out.bias": "second.bias",
    }
    result = parity.check(MSFirstSecond(), TorchDefinedBackwards(), X, name_map=name_map, localize=True)
    assert [(v.path, v.ms_path) for v in result.layers.forward] == [("inp", "first"), ("out", "second")]
    assert [(v.path, v.ms_path) for v in result.layers.backward] == [("out", "second"), ("inp", "first")]
    assert not_ok(result.layers.forward) == [] and not_ok(result.layers.backward) == []


def test_a_mindspore_wrapper_around_the_layers_aligns_without_false_verdicts():
    """The wrapper frames its children: 'net.act' pairs with 'relu'; 'net' itself has no
    counterpart (it is PyTorch's root) and says so, without a verdict."""
    result = parity.check(MSWrapped(), TorchMLP(), X, localize=True)
    assert result.passed
    assert [(v.ms_path, v.path) for v in result.layers.forward] == [
        ("net.fc1", "fc1"),
        ("net.act", "relu"),
        ("net.fc2", "fc2"),
        ("net", "net"),
    ]
    assert not_ok(result.layers.forward) == [("net", "unaligned")]
    assert not_ok(result.layers.backward) == [("net", "unaligned")]
