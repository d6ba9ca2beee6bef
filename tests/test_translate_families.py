"""What model families need of the translation, each in a small Module against PyTorch through
``parity.check`` (forward, input and parameter gradients): DeepSeek's group mask (``scatter``),
CodeGen's captured sinusoid table (``Tensor.__getitem__``), DeBERTa's ``@torch.jit.script`` helpers
traced as Python, DeepSeek-V2's complex rotary embedding, Longformer's windows (``as_strided`` by
PyTorch's layout) and its other calls; and the refusals where those stop."""

from __future__ import annotations

import pytest
import torch

import parity
from parity.translation.calls import table


@torch.jit.script
def _scaled_sqrt(query: torch.Tensor, factor: int):
    return torch.sqrt(torch.tensor(query.size(-1), dtype=torch.float) * factor)


@torch.jit.script
def _expanded(positions, query):
    if query.size(0) > 1:  # a decision inside the script: a guard once traced as Python
        return positions.expand([query.size(0), positions.size(-1)])
    return positions


class Scripted(torch.nn.Module):
    """``@torch.jit.script`` helpers, as DeBERTa-v2 calls them from ``forward``."""

    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(6, 6)

    def forward(self, x):
        scores = self.proj(x) / _scaled_sqrt(x, 2)
        return scores * _expanded(torch.arange(6.0).unsqueeze(0), x)


class GroupLimitedRouting(torch.nn.Module):
    """DeepSeek-V3's router: the best 2 of 4 groups kept by a ``scatter_`` of ones into a mask, the
    top 2 experts among them; beside it ``scatter`` of a tensor (gradient to both sides) and
    ``scatter_add``; rows written over ``empty_like``."""

    def __init__(self):
        super().__init__()
        self.router = torch.nn.Linear(8, 8)

    def forward(self, x):
        scores = self.router(x).sigmoid()
        groups = scores.view(-1, 4, 2).topk(2, dim=-1)[0].sum(dim=-1)
        kept = torch.topk(groups, k=2, dim=-1, sorted=False)[1]
        mask = torch.zeros_like(groups)
        mask.scatter_(1, kept, 1)
        expanded = mask.unsqueeze(-1).expand(-1, 4, 2).reshape(-1, 8)
        chosen = torch.topk(scores.masked_fill(~expanded.bool(), 0.0), k=2, dim=-1)[1]
        weights = scores.gather(1, chosen)
        index = torch.tensor([[0, 3], [5, 1]]).repeat(x.shape[0] // 2, 1)
        written = torch.scatter(x, 1, index, scores[:, :2]) + x.scatter(1, index, value=-1.0)
        added = (
            torch.scatter_add(x, 1, index.repeat(1, 2), scores[:, :4])[:, :6]
            + x.scatter_add(0, torch.tensor([[1], [0], [3], [1]]).expand(-1, 8), x)[:, 2:]
        )
        back = torch.empty_like(x)  # every row written, as DeepSeek-V2 puts its sorted tokens back
        back[torch.arange(x.shape[0]).flip(0)] = x * scores
        fresh = x.new_empty(4, 8)
        fresh[:, :] = 1.0
        return weights / weights.sum(-1, keepdim=True), written, added, back + fresh


class CapturedTable(torch.nn.Module):
    """A plain tensor attribute (not a buffer) indexed by a tensor computed in ``forward``, as
    CodeGen reads its rotary table: ``self.table[positions]`` is ``Tensor.__getitem__`` in the trace."""

    def __init__(self):
        super().__init__()
        self.table = torch.randn(16, 4)
        self.proj = torch.nn.Linear(4, 4)

    def forward(self, x):
        positions = torch.arange(x.shape[1]).unsqueeze(0).expand(x.shape[0], -1)
        sin, cos = torch.split(self.table[positions], 2, dim=-1)
        return self.proj(x) * torch.cat([sin, cos], -1)


class LongformerPieces(torch.nn.Module):
    """What else Longformer's attention calls: ``x.where(condition, y)`` (the receiver the value where
    the condition holds), a size that is a tensor (``torch.div(n, w, rounding_mode="trunc")``),
    ``new_ones(size=...)`` and a decision on ``.item()``."""

    def forward(self, x):
        n = torch.div(x.size(1), 2, rounding_mode="trunc")
        halves = x.view(x.size(0), n, 2)
        masked = torch.full_like(x, -1.0).where(x > 0, x) + x.where(x < 0.5, 0.25)
        ones = x.new_ones(size=x.size()) + x.new_zeros(size=(1, x.size(1)))
        if (x > 10).any().item():  # a guard on the value
            masked = masked * 0
        return halves.sum(-1), masked * ones


@pytest.mark.parametrize(
    "module, inputs",
    [
        (GroupLimitedRouting(), parity.randn((4, 8))),
        (CapturedTable(), parity.randn((2, 5, 4))),
        (Scripted(), parity.randn((3, 6))),
        (LongformerPieces(), parity.randn((2, 6))),
    ],
    ids=lambda v: type(v).__name__ if isinstance(v, torch.nn.Module) else "",
)
def test_family_rows_translate_with_gradients(module, inputs):
    torch.manual_seed(0)
    result = parity.check(parity.translate(module, inputs), module, inputs)
    assert result.passed, str(result)
    weighted = {"param grad"} if any(True for _ in module.parameters()) else set()
    assert {c.kind for c in result.comparisons} >= {"output", "input grad"} | weighted


def test_scatter_with_a_reduction_is_refused_by_name():
    class Reduced(torch.nn.Module):
        def forward(self, x):
            return torch.scatter(x, 1, torch.tensor([[0, 1]]), 2.0, reduce="multiply")

    with pytest.raises(parity.ParityUnsupported, match=r"torch\.scatter: reduce='multiply'.*test_translate_families"):
        parity.translate(Reduced(), parity.randn((1, 3)))


def test_the_family_rows_are_in_the_table():
    assert {"torch.scatter", "torch.scatter_add"} <= set(table.FUNCTIONS)
    assert {"scatter", "scatter_add", "__getitem__", "new_empty", "stride", "as_strided"} <= set(table.METHODS)
    assert {"torch.view_as_complex", "torch.view_as_real", "torch.polar", "torch.empty_like"} <= set(table.FUNCTIONS)


class ComplexRotary(torch.nn.Module):
    """DeepSeek-V2's rotary embedding: angles to unit complex numbers (``torch.polar``), scaled, the
    query's pairs as complex numbers times them, back to pairs; and ``torch.complex``."""

    def __init__(self):
        super().__init__()
        self.q = torch.nn.Linear(8, 8)
        self.angles = torch.nn.Parameter(torch.randn(5, 4))

    def forward(self, x):
        turns = torch.polar(torch.ones_like(self.angles), self.angles) * 0.5
        pairs = torch.view_as_complex(self.q(x).float().reshape(*x.shape[:-1], -1, 2))
        rotated = torch.view_as_real(pairs * turns.unsqueeze(0).to(x.device)).flatten(2).type_as(x)
        made = torch.view_as_real(torch.complex(x[..., :4], x[..., 4:]) * pairs)
        return rotated, made.sum(-1)


def test_complex_numbers_translate_as_pairs_of_real_tensors_with_gradients():
    module, inputs = ComplexRotary(), parity.randn((2, 5, 8))
    result = parity.check(parity.translate(module, inputs), module, inputs)
    assert result.passed, str(result)
    assert {c.name for c in result.comparisons if c.kind == "param grad"} >= {"angles", "q.weight"}


def test_what_a_complex_tensor_is_asked_beyond_the_pairs_is_refused_by_name():
    class Magnitude(torch.nn.Module):
        def forward(self, x):
            return torch.view_as_complex(x).abs()

    inputs = parity.randn((3, 2))
    cell = parity.translate(Magnitude(), inputs)
    with pytest.raises(
        parity.ParityUnsupported, match=r"Tensor\.abs at .*: TypeError: Tensor\.abs of a complex tensor"
    ):
        parity.check(cell, Magnitude(), inputs)


class Windows(torch.nn.Module):
    """Overlapping windows as Longformer's ``_chunk`` makes them: ``as_strided`` over the tensor's
    own ``stride()``, the window dimension's stride halved (each element read twice: its gradient
    adds up)."""

    def __init__(self, transposed: bool = False):
        super().__init__()
        self.proj = torch.nn.Linear(4, 4)
        self.transposed = transposed

    def forward(self, x):
        h = self.proj(x)
        if self.transposed:  # Longformer's (sequence, batch) to (batch, sequence): a strided view
            h = h.transpose(0, 1)
        h = h.view(h.size(0), h.size(1) // 4, 4, h.size(2))
        size, stride = list(h.size()), list(h.stride())
        size[1], stride[1] = size[1] * 2 - 1, stride[1] // 2
        return h.as_strided(size=size, stride=stride) * 2 + torch.as_strided(h, (2, 3), (1, 2)).sum()


@pytest.mark.parametrize("transposed", [False, True], ids=["contiguous", "strided-view"])
def test_overlapping_windows_translate_with_gradients_by_pytorchs_layout(transposed):
    module = Windows(transposed)
    inputs = parity.randn((8, 2, 4) if transposed else (2, 8, 4))
    result = parity.check(parity.translate(module, inputs), module, inputs)
    assert result.passed, str(result)
    assert any(c.kind == "param grad" for c in result.comparisons)


def test_strides_without_example_inputs_and_reads_past_the_tensor_are_refused():
    class Strided(torch.nn.Module):
        def forward(self, x):
            return x.as_strided((2, 2), (1, 2))

    with pytest.raises(parity.ParityUnsupported, match=r"Tensor\.as_strided: its tensor's layout in PyTorch is known"):
        parity.translate(Strided())  # a symbolic trace: no example inputs

    class PastTheEnd(torch.nn.Module):
        def forward(self, x):
            return x[:, :2].as_strided((2, 3), (4, 1))  # a slice's strides reach past its own elements

    inputs = parity.randn((2, 4))
    torch_out = PastTheEnd()(torch.ones(2, 4))
    assert torch_out.shape == (2, 3)  # PyTorch reads on into the storage behind the view
    cell = parity.translate(PastTheEnd(), inputs)
    with pytest.raises(parity.ParityUnsupported, match=r"Tensor\.as_strided at .*reads storage that holds no element"):
        parity.check(cell, PastTheEnd(), inputs)
