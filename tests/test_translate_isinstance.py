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


class TypeIsTensor(_Masked):
    def length(self, x, mask):
        return mask.shape[-1] if type(mask) is torch.Tensor else x.shape[1] + 1


class TypeNameIsTensor(_Masked):
    def length(self, x, mask):
        return mask.shape[-1] if type(mask).__name__ == "Tensor" else x.shape[1] + 1


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


KINDS = [IsTensor, IsOneOf, TorchIsTensor, TypeIsTensor, TypeNameIsTensor, IsParameter, IsNotTuple]


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.__name__)
def test_isinstance_on_a_traced_tensor_answers_as_the_eager_run(kind):
    module = kind()
    cell = parity.translate(module, INPUTS)
    result = parity.check(cell, module, INPUTS)
    assert result.passed, str(result)
    assert result["output"].torch_shape == (2, 4, 8) or kind is IsParameter


@pytest.mark.parametrize(
    "kind, asked, answer",
    [(IsTensor, "isinstance", True), (TorchIsTensor, "isinstance", True), (TypeIsTensor, "type", torch.Tensor)],
    ids=lambda k: getattr(k, "__name__", None),
)
def test_the_decision_is_a_guard_at_its_line(kind, asked, answer):
    cell = parity.translate(kind(), INPUTS)
    found = [g for g in _guards(cell) if g.kind == asked]
    assert found and all(g.node == "mask" and g.expected is answer for g in found)
    assert all("test_translate_isinstance.py:" in g.where and "mask" in g.where for g in found)


@pytest.mark.parametrize("kind, asked", [(IsTensor, "isinstance"), (TypeIsTensor, "type")], ids=["isinstance", "type"])
def test_the_guard_refuses_a_value_that_is_no_tensor(kind, asked):
    """The program's node is a tensor on every call; were it not, the answer would not hold."""
    cell = parity.translate(kind(), INPUTS)
    guard = next(g for g in _guards(cell) if g.kind == asked)
    guard.check(np.ones(3, np.float32))  # a tensor's stand-in: holds
    with pytest.raises(parity.translation.GuardFailed, match=r"isinstance|type\(\)"):
        guard.check(3)


def test_type_keeps_answering_for_everything_else_during_a_trace():
    """Classes made, and questions about ``type`` itself, inside a traced forward."""

    class Made(_Masked):
        def length(self, x, mask):
            made = type("Made", (), {"n": 2})
            assert isinstance(made, type) and issubclass(type(made), type) and type(3) is int
            return made.n

    module = Made()
    result = parity.check(parity.translate(module, INPUTS), module, INPUTS)
    assert result.passed and result["output"].torch_shape == (2, 2, 8)


class TypeOfTuple(nn.Module):
    """DistilBERT's pattern, ``type(out) is not tuple``, of a traced tuple (``torch.split``'s)."""

    def forward(self, x, mask):
        out = torch.split(x, 4, -1)
        if type(out) is not tuple:
            raise TypeError(f"expected a tuple, got {type(out)}")
        return out[0] - out[1]


def test_type_of_a_traced_tuple_is_tuple():
    module = TypeOfTuple()
    result = parity.check(parity.translate(module, INPUTS), module, INPUTS)
    assert result.passed and result["output"].torch_shape == (2, 6, 4)
