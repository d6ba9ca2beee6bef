"""``isinstance`` on a traced tensor answers as PyTorch's eager run does, and is a guard at its line.

BART, mBART, Marian and Pegasus size their causal mask with ``mask.shape[-1] if isinstance(mask,
torch.Tensor) else ...``: a trace whose proxy answered False took the other branch, and the
translated Cell computed something else without a word. Each variant here translates to a Cell
that passes ``check``, the decision kept as a guard naming its line."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

import parity

INPUTS = (parity.randn((2, 6, 8)), parity.randn((2, 4)))


class _Masked(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x, mask):
        return self.proj(x)[:, : self.length(x, mask)] * 2


class IsTensor(_Masked):
    def length(self, x, mask):
        return mask.shape[-1] if isinstance(mask, torch.Tensor) else x.shape[1] + 1


class IsOneOf(_Masked):
    def length(self, x, mask):
        return mask.shape[-1] if isinstance(mask, (np.ndarray, torch.Tensor)) else x.shape[1] + 1


class TorchIsTensor(_Masked):
    def length(self, x, mask):
        return mask.shape[-1] if torch.is_tensor(mask) else x.shape[1] + 1


class IsParameter(_Masked):
    """False in the eager run: the other branch, taken by the trace as well."""

    def length(self, x, mask):
        return x.shape[1] - 1 if isinstance(mask, nn.Parameter) else mask.shape[-1]


class IsNotTuple(_Masked):
    def length(self, x, mask):
        return 1 if isinstance(mask, (tuple, list)) else mask.shape[-1]


def _guards(cell):
    """The guards of every program the translated Cell traced."""
    holder = next(v for v in vars(cell).values() if hasattr(v, "programs"))
    return [g for program in holder.programs.values() for gs in program.guards.values() for g in gs]


@pytest.mark.parametrize("kind", [IsTensor, IsOneOf, TorchIsTensor, IsParameter, IsNotTuple], ids=lambda k: k.__name__)
def test_isinstance_on_a_traced_tensor_answers_as_the_eager_run(kind):
    module = kind()
    cell = parity.translate(module, INPUTS)
    result = parity.check(cell, module, INPUTS)
    assert result.passed, str(result)
    assert result["output"].torch_shape == (2, 4, 8) or kind is IsParameter


@pytest.mark.parametrize("kind", [IsTensor, TorchIsTensor], ids=lambda k: k.__name__)
def test_the_decision_is_a_guard_at_its_line(kind):
    cell = parity.translate(kind(), INPUTS)
    found = [g for g in _guards(cell) if g.kind == "isinstance"]
    assert found and all(g.node == "mask" and g.expected is True for g in found)
    assert all(
        "test_translate_isinstance.py:" in g.where and "is_tensor" in g.where or "isinstance" in g.where for g in found
    )


def test_the_guard_refuses_a_value_that_is_no_tensor():
    """The program's node is a tensor on every call; were it not, the answer would not hold."""
    cell = parity.translate(IsTensor(), INPUTS)
    guard = next(g for g in _guards(cell) if g.kind == "isinstance")
    guard.check(np.ones(3, np.float32))  # a tensor's stand-in: holds
    with pytest.raises(parity.translation.GuardFailed, match="isinstance"):
        guard.check(3)
