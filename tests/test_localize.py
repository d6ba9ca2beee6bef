"""Per-layer localisation on tiny real pairs: both adapters' capture, and
``parity.check(localize=...)``. Fault injection on bigger nets lives in tests/test_localize_faults.py;
layer alignment, verdicts, the recordings and the localiser's arithmetic need no framework:
tests/engine/test_localize.py."""

from __future__ import annotations

import collections
import weakref

import mindspore as ms  # both frameworks before parity, as everywhere in tests/
import numpy as np
import pytest
import torch
from mindspore import nn as msnn

import parity
from parity import ParityMismatch, ParityUsageError
from parity.backends import mindspore as msb
from parity.backends import torch as tb
from parity.engine.diagnosis.recording import Recording

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
