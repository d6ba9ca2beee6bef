"""parity.translate(module, inputs): each forward traced on the values the example inputs give it.
Control flow on shapes, dtypes and values resolves and is guarded (a call that would branch the
other way is refused, naming the decision); *args and **kwargs bind; a child's tuple is a tuple;
only what runs is translated and blamed; the calls transformers' code makes (creation, selection,
item assignment, masks) are checked against PyTorch, forward and gradients."""

from __future__ import annotations

import inspect

import mindspore
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import parity
from parity import ParityUnsupported, ParityUsageError
from parity import options as opts
from parity.translation.trace.concrete import GuardFailed


def _line_of(function, text: str) -> int:
    lines, start = inspect.getsourcelines(function)
    return start + next(i for i, line in enumerate(lines) if text in line)


def _ms(array):
    return mindspore.Tensor(np.asarray(array))


class Branches(torch.nn.Module):
    """Python control flow that a symbolic trace cannot take: on a rank, a dtype, a size and a value."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 4)

    def forward(self, x, scale=None):
        if x.ndim == 2:
            x = x.unsqueeze(1)
        if x.dtype == torch.float32:
            x = self.fc(x)
        for _ in range(x.shape[1]):  # an int the loop needs
            x = x * 0.5
        if (x > 100).any():
            x = x.clamp(max=100.0)
        return x if scale is None else x * scale


def test_control_flow_on_shapes_dtypes_and_values_translates_and_checks():
    module = Branches()
    with pytest.raises(ParityUnsupported):  # without inputs: the symbolic trace cannot branch
        parity.translate(module)(_ms(np.ones((2, 4), np.float32)))
    cell = parity.translate(module, parity.randn((3, 2, 4)))
    result = parity.check(cell, module, parity.randn((3, 2, 4)))
    assert result.passed, str(result)
    assert parity.check(cell, module, parity.randn((5, 2, 4))).passed  # the guards hold on another batch


def test_a_call_that_would_branch_the_other_way_is_refused_naming_the_decision():
    cell = parity.translate(Branches(), parity.randn((3, 2, 4)))
    line = _line_of(Branches.forward, "x.ndim == 2")
    with pytest.raises(
        GuardFailed,
        match=rf"\.ndim of .* was 3 \(at tests/test_translate_inputs\.py:{line} .*"
        r"this call gives 2",
    ):
        cell(_ms(np.ones((3, 4), np.float32)))  # another rank
    line = _line_of(Branches.forward, "x.dtype == torch.float32")
    with pytest.raises(
        GuardFailed,
        match=rf"\.dtype of .* was torch\.float32 \(at tests/test_translate_inputs\.py:"
        rf"{line}.*this call gives torch\.float64",
    ):
        cell(_ms(np.ones((3, 2, 4), np.float64)))  # another dtype
    line = _line_of(Branches.forward, "range(x.shape[1])")
    with pytest.raises(ParityUsageError, match=rf"the integer of .* was 2 \(at tests/test_translate_inputs\.py:{line}"):
        cell(_ms(np.ones((3, 5, 4), np.float32)))  # the loop would run 5 times
    line = _line_of(Branches.forward, "(x > 100).any()")
    with pytest.raises(GuardFailed, match=rf"truth value of .* was False \(at tests/test_translate_inputs\.py:{line}"):
        cell(_ms(np.full((3, 2, 4), 1e6, np.float32)))  # the clamp branch


class Unpacks(torch.nn.Module):
    """A forward(*args, **kwargs), a tensor through **kwargs, and a child returning a tuple."""

    def __init__(self):
        super().__init__()
        self.pair = Pair()

    def forward(self, *args, **kwargs):
        out = self.pair(args[0], bias=kwargs["bias"])
        if type(out) is not tuple or not isinstance(out, tuple):
            raise TypeError("a tuple was expected")
        first, second = out
        return first * second + args[1]


class Pair(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 4)

    def forward(self, x, **kwargs):
        return self.fc(x) + kwargs["bias"], x.sum(-1, keepdim=True)


def test_star_args_and_tensors_through_kwargs_bind():
    module = Unpacks()
    inputs = (parity.randn((2, 4)), parity.randn((2, 4)))

    class Keywords(torch.nn.Module):  # check passes positional and keyword inputs on as they are
        def __init__(self):
            super().__init__()
            self.inner = module

        def forward(self, a, b, bias):
            return self.inner(a, b, bias=bias)

    wrapped = Keywords()
    data = {"a": inputs[0], "b": inputs[1], "bias": parity.randn((4,))}
    cell = parity.translate(wrapped, data)
    result = parity.check(cell, wrapped, data)
    assert result.passed, str(result)


class Creation(torch.nn.Module):
    """What transformer code computes besides layers, each against PyTorch with gradients."""

    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(10, 4, padding_idx=0)
        self.fc = torch.nn.Linear(4, 4)

    def forward(self, ids, x):
        h = F.embedding(ids, self.embed.weight, padding_idx=0) + self.fc(x)
        positions = torch.arange(ids.shape[1]).unsqueeze(0).expand(ids.shape[0], -1)
        keep = torch.where(ids > 2, h.new_ones(()), torch.zeros_like(h[..., 0]))
        counts = (ids != 0).long().cumsum(-1)
        picked = torch.gather(h, 1, (ids.shape[1] - 1 - positions).unsqueeze(-1).expand(-1, -1, 4))
        mask = h.clone()
        mask[:, 0] = h[:, 1] * 3.0
        batch, length = ids.shape  # traced sizes as varargs: recorded, not taken for one size
        scale = torch.full_like(h, 0.5) + torch.ones(h.shape) - torch.zeros(batch, length, 1)
        flag = (ids >= 0).all() & (ids < 10).any()
        return (picked * keep.unsqueeze(-1) * scale + mask) * flag + counts.unsqueeze(-1).to(h.dtype)


def test_creation_selection_and_item_assignment_match_pytorch_with_gradients():
    module = Creation()
    ids = np.array([[0, 3, 5, 1], [7, 0, 2, 9]], np.int64)
    inputs = (ids, parity.randn((2, 4, 4)))
    result = parity.check(parity.translate(module, inputs), module, inputs)
    assert result.passed, str(result)
    grads = {c.name for c in result.comparisons if c.kind == "param grad"}
    assert "embed.weight" in grads  # the padding row's zero gradient compared too


class Sometimes(torch.nn.Module):
    """A child forward never calls with these inputs, whose code would not translate."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 4)
        self.rare = Untranslatable()

    def forward(self, x, use_rare=False):
        return self.rare(x) if use_rare else self.fc(x)


class Untranslatable(torch.nn.Module):
    def forward(self, x):
        return torch.bernoulli(x.sigmoid())


def test_only_code_that_runs_is_translated_and_blamed():
    module = Sometimes()
    cell = parity.translate(module, parity.randn((2, 4)))
    assert parity.check(cell, module, parity.randn((2, 4))).passed
    line = _line_of(Untranslatable.forward, "torch.bernoulli")
    with pytest.raises(ParityUnsupported, match=rf"torch\.bernoulli at tests/test_translate_inputs\.py:{line}"):
        cell(_ms(np.ones((2, 4), np.float32)), use_rare=True)
    with pytest.raises(
        ParityUnsupported,
        match=rf"rare \(.*Untranslatable\): forward calls what has no MindSpore "
        rf"translation:\n  torch\.bernoulli at .*:{line}",
    ):
        parity.translate(module, {"x": parity.randn((2, 4)), "use_rare": True})


def test_inputs_the_module_cannot_run_are_a_usage_error():
    with pytest.raises(ParityUsageError, match=r"cannot run on the example inputs: RuntimeError"):
        parity.translate(torch.nn.Sequential(torch.nn.Linear(4, 4)), parity.randn((2, 3)))


def test_translation_leaves_the_module_and_pytorch_random_state_as_they_were():
    module = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.BatchNorm1d(4), torch.nn.Dropout(0.5)).train()
    before = {k: v.clone() for k, v in module.state_dict().items()}
    torch.manual_seed(3)
    expected = torch.rand(3)
    torch.manual_seed(3)
    parity.translate(module, parity.randn((8, 4)))
    assert torch.equal(torch.rand(3), expected)
    assert all(torch.equal(before[k], v) for k, v in module.state_dict().items())


def test_the_fixture_translates_with_inputs(pytester):
    pytester.makepyfile("""
        import torch

        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = torch.nn.Linear(4, 4)

            def forward(self, x):
                return self.fc(x) if x.shape[0] > 1 else x

        def test_net(parity):
            net = Net()
            cell = parity.translate(net, parity.randn((2, 4)))
            assert parity.check(cell, net, parity.randn((2, 4))).passed
            one = parity.translate(net, parity.randn((1, 4)))  # the other branch: the identity
            assert type(one).__name__ == "GraphForward" and parity.check(one, net, parity.randn((1, 4))).passed
    """)
    pytester.runpytest(opts.PARITY, f"{opts.SEED.flag}=7", "-p", "no:cacheprovider").assert_outcomes(passed=1)


class TracedOtherwise(torch.nn.Module):
    """Passes its child a mask only under a trace (as transformers' mask builders do: None when the
    run can skip it, a tensor when traced), so the child is called one way when the Module runs and
    another way in its parent's program."""

    def __init__(self):
        super().__init__()
        self.child = MaskedChild()

    def forward(self, x):
        mask = torch.ones(x.shape[0], x.shape[1]) if isinstance(x, torch.fx.Proxy) else None
        return self.child(x, mask=mask)


class MaskedChild(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 4)

    def forward(self, x, mask=None):
        y = self.fc(x)
        if y.shape[1] > 1:  # a branch a symbolic trace cannot take: the child needs its call's values
            y = y * 2.0
        return y if mask is None else y * mask.unsqueeze(-1)


def test_a_child_is_traced_as_its_parent_s_program_calls_it():
    module = TracedOtherwise()
    cell = parity.translate(module, parity.randn((2, 3, 4)))
    result = parity.check(cell, module, parity.randn((2, 3, 4)))
    assert result.passed, str(result)


class FullyMasked(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.q = torch.nn.Linear(4, 4)

    def forward(self, x, allowed):
        return F.scaled_dot_product_attention(self.q(x), x, x, attn_mask=allowed.bool())


def test_attention_rows_with_nothing_allowed_get_zero_weights_as_in_pytorch():
    allowed = np.ones((2, 1, 4, 4), np.int64)
    allowed[1, 0, :2] = 0  # two query rows that may attend to nothing (PyTorch: zeros, not NaN)
    module, inputs = FullyMasked(), (parity.randn((2, 1, 4, 4)), allowed)
    result = parity.check(parity.translate(module, inputs), module, inputs)
    assert result.passed, str(result)
