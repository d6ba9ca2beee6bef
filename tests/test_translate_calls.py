"""The call table's rows for tensors made in ``forward``, selection, scans, ``einsum`` and the functional
norms (``parity.translation.calls``), and attention's masks and grouped heads, row by row against PyTorch through ``parity.check``: forward, input and
parameter gradients, and the running statistics ``F.batch_norm`` updates in train mode."""

from __future__ import annotations

import mindspore
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import parity
from parity.translation.calls import table
from parity.translation.calls.einsum import einsum
from parity.translation.trace.graph import GraphForward


class Made(torch.nn.Module):
    """Tensors made in forward, with PyTorch's default dtypes, and comparisons and casts as methods."""

    def forward(self, x):
        n = 6  # a constant: a symbolic trace cannot size a tensor by a traced shape
        positions = torch.arange(n)  # int64
        scaled = (
            torch.arange(0, n, 2, dtype=torch.float32) / n
            + torch.arange(0.0, n / 2)
            + torch.tensor([1.0, 2, 3]) * torch.tensor([1, 0, 2])
            + torch.tensor(0.5, dtype=torch.float32)
        )
        causal = torch.ones(n, n).triu(1).bool() | torch.zeros(n, n, dtype=torch.bool)
        scores = torch.where(causal, torch.finfo(torch.float32).min, x[..., None] * x[..., None, :])
        count = torch.cumsum((x > 0).long(), dim=-1) + positions.cumsum(0)
        filled = (
            torch.full_like(x, 2.0)
            + torch.zeros_like(x)
            + torch.ones_like(x)
            + x.new_zeros(x.shape)
            + x.new_ones((1, n))
            + x.new_full((1, n), 0.5)
        )
        flags = x.gt(0).float() + x.lt(0.5).float() + x.eq(x).float() + x.ne(0).float() + x.ge(0).double().float()
        picked = (
            torch.where(x > 0, x, 0.0)
            + torch.where(x < 0, 1.0, 0.0)
            + x.tril().sum()
            + x.triu(1).sum()
            + x.clone() * 2
            + x.detach() ** 2
        )  # no gradient through the detached copy, on either side
        steps = torch.diff(x, dim=-1) + x.diff(n=2, prepend=x[:, :1]) + torch.diff((x > 0).long(), dim=1).float()
        flags = flags + torch.all(x > -9).float() + torch.any(x > 0, dim=-1, keepdim=True).float()
        return (
            scores.softmax(-1) * scaled.sum(),
            count.float() * x,
            filled * x + flags,
            picked,
            torch.logical_not(causal).float().sum(-1),
            steps,
        )


class Select(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.table = torch.nn.Parameter(torch.randn(7, 4))

    def forward(self, x, index):
        gathered = torch.gather(x, 1, index) + x.gather(-1, index)
        rows = torch.index_select(self.table, 0, index[0]) + self.table.index_select(0, index[1])
        repeated = torch.repeat_interleave(x, 2, dim=1) + x.repeat_interleave(2, 1)
        rolled = torch.roll(x, shifts=(1, -2), dims=(0, 1)) + x.roll(3, 1) + torch.roll(x, 5)
        flipped = torch.flip(x, [0, 1]) + x.flip(1)
        largest = x.max(dim=1).values + torch.max(x, -1, keepdim=True)[0].squeeze(-1) + x.min(1)[0]
        return (
            gathered,
            rows,
            repeated,
            rolled + flipped,
            largest + torch.max(x) + torch.maximum(x, -x).sum(),
            x.argmax(-1).float() + torch.argmax(x, 1).float(),
            torch.unflatten(x, 1, (2, 3)).neg(),
        )


class Products(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(4, 5) / 2)
        self.heads = torch.nn.Parameter(torch.randn(2, 3, 4) / 2)

    def forward(self, a, b, v):
        return (
            torch.einsum("bij,bjk->bik", a, b),
            torch.einsum("bik,kl", a @ b, self.weight),
            torch.einsum("...ij,...jk->...ik", a, b),
            torch.einsum("hdk,bhqk->bhqd", self.heads, a[:, None]),
            torch.einsum("i,j->ij", v, v),
            torch.einsum("bij->j", a),
            torch.einsum("bij,bij->b", a, a),
            torch.einsum("ij,jk,kl->il", a[0], b[0], self.weight),
            torch.einsum("bij->bji", a),
            torch.baddbmm(a @ b, a, b, beta=0.5, alpha=2) + (a @ b).baddbmm(a, b),
            torch.outer(v, v) + v.outer(v),
        )


class Norms(torch.nn.Module):
    """timm's BatchNormAct2d, GroupNorm and normalize as functions of the Module's parameters."""

    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(1 + torch.randn(6) / 5)
        self.bias = torch.nn.Parameter(torch.randn(6) / 5)
        self.register_buffer("running_mean", torch.randn(6) / 5)
        self.register_buffer("running_var", 1 + torch.rand(6))

    def forward(self, x):
        normed = F.batch_norm(x, self.running_mean, self.running_var, self.weight, self.bias, self.training, 0.1, 1e-5)
        flat = F.batch_norm(x.flatten(2), self.running_mean, self.running_var, None, None, self.training, 0.2)
        grouped = F.group_norm(x, 3, self.weight, self.bias, 1e-5) + F.group_norm(x, 2)
        return normed, flat, grouped + F.normalize(x, dim=1) + F.normalize(x.flatten(1), p=2.0, dim=-1).view(x.shape)


class Attention(torch.nn.Module):
    """Grouped-query attention, boolean and additive masks with rows that may attend to nothing."""

    def forward(self, q, k, v, additive):
        keep = torch.ones(5, 5, dtype=torch.bool).tril()
        keep[0] = False  # the first query attends to nothing: PyTorch gives zeros
        grouped = F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
        masked = F.scaled_dot_product_attention(q, k.repeat_interleave(2, 1), v.repeat_interleave(2, 1), attn_mask=keep)
        added = F.scaled_dot_product_attention(
            q, k.repeat_interleave(2, 1), v.repeat_interleave(2, 1), attn_mask=additive
        )
        causal = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        return grouped, masked, added, causal


def _additive_mask():
    mask = np.zeros((5, 5), np.float32)
    mask[np.triu_indices(5, 1)] = -np.inf
    mask[2] = -np.inf
    return mask


INDEX = np.array([[0, 5, 2, 2, 1, 3], [4, 4, 0, 1, 5, 2]], dtype=np.int64)


@pytest.mark.parametrize(
    "module, inputs",
    [
        (Made(), parity.randn((2, 6))),
        (Select(), (parity.randn((2, 6)), INDEX)),
        (Products(), (parity.randn((2, 3, 4)), parity.randn((2, 4, 4)), parity.randn((4,)))),
        (Norms(), parity.randn((2, 6, 3, 3))),
        (
            Attention(),
            (parity.randn((2, 4, 5, 8)), parity.randn((2, 2, 5, 8)), parity.randn((2, 2, 5, 8)), _additive_mask()),
        ),
    ],
    ids=lambda v: type(v).__name__ if isinstance(v, torch.nn.Module) else "",
)
def test_rows_match_pytorch(module, inputs):
    torch.manual_seed(0)
    cell = parity.translate(module.eval())
    assert isinstance(cell, GraphForward)
    result = parity.check(cell, module, inputs)
    assert result.passed, str(result)


def test_batch_norm_in_train_mode_updates_the_running_statistics_as_pytorch():
    torch.manual_seed(0)
    module = Norms().train()
    cell = parity.translate(module)
    x = np.random.default_rng(0).standard_normal((4, 6, 3, 3)).astype(np.float32)
    expected = [t.detach().numpy() for t in module(torch.from_numpy(x))]
    got = [t.asnumpy() for t in cell(mindspore.Tensor(x))]
    for e, g in zip(expected, got):
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-5)
    moved = module.running_mean.numpy()  # updated twice (two calls in forward), as in PyTorch
    np.testing.assert_allclose(cell.running_mean.asnumpy(), moved, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(cell.running_var.asnumpy(), module.running_var.numpy(), rtol=1e-6, atol=1e-7)
    assert not np.allclose(moved, Norms().running_mean.numpy())  # the statistics did move


@pytest.mark.parametrize(
    "equation, shapes",
    [
        ("ii->i", [(3, 3)]),
        ("ij,jk", [(2, 3)]),
    ],
)
def test_einsum_refuses_what_it_cannot_write_out(equation, shapes):
    operands = [mindspore.Tensor(np.ones(s, np.float32)) for s in shapes]
    with pytest.raises(TypeError, match="einsum"):
        einsum(equation, *operands)


def test_einsum_broadcasts_an_ellipsis_of_size_one():
    a = np.random.default_rng(1).standard_normal((1, 3, 2, 4)).astype(np.float32)
    b = np.random.default_rng(2).standard_normal((5, 1, 4, 2)).astype(np.float32)
    got = einsum("...ij,...jk->...ik", mindspore.Tensor(a), mindspore.Tensor(b)).asnumpy()
    np.testing.assert_allclose(got, np.einsum("...ij,...jk->...ik", a, b), rtol=1e-5, atol=1e-6)


def test_forms_without_a_translation_are_refused_by_name():
    class Counts(torch.nn.Module):
        def forward(self, x):
            return torch.bincount((x > 0).long()).float()

    with pytest.raises(parity.ParityUnsupported, match=r"torch\.bincount"):
        parity.translate(Counts(), parity.randn((3,)))


def test_where_of_a_condition_gives_the_indices_of_the_true_elements():
    class Indices(torch.nn.Module):
        def forward(self, x):
            rows, cols = torch.where(x > 0)
            return x[rows, cols] * 2 + cols.float().sum()

    module, inputs = Indices(), parity.randn((4, 5))
    assert parity.check(parity.translate(module, inputs), module, inputs).passed


def test_the_new_rows_are_in_the_table():
    for name in (
        "torch.einsum",
        "torch.nn.functional.batch_norm",
        "torch.nn.functional.group_norm",
        "torch.roll",
        "torch.arange",
        "torch.where",
        "torch.cumsum",
        "torch.gather",
        "torch.repeat_interleave",
        "torch.baddbmm",
    ):
        assert table._resolve(name) is not None and name in table.FUNCTIONS, name
    for name in ("new_zeros", "cumsum", "gather", "repeat_interleave", "roll", "triu", "tril", "long", "baddbmm"):
        assert name in table.METHODS and hasattr(torch.Tensor, name), name


def test_each_name_is_in_one_topic_of_the_table():
    """The table is gathered from its topic modules: a name in two of them would silently take the
    later one's adapter."""
    for kind in ("FUNCTIONS", "METHODS"):
        names = [name for topic in table.TOPICS for name in getattr(topic, kind)]
        assert len(names) == len(set(names)) == len(getattr(table, kind)), kind


# --- functions kept out of traces with torch.fx.wrap: traced into when called -----------------

torch.fx.wrap("_padded_mask")
torch.fx.wrap("_untranslatable")


def _padded_mask(x, window: int):
    """Branches on the input's shape and assigns items, as torchvision's Swin helpers do."""
    length = x.shape[1]
    pad = (window - length % window) % window
    if pad > 0:
        x = F.pad(x, (0, 0, 0, pad))
    mask = x.new_zeros((x.shape[1],))
    mask[length:] = 1.0
    return x * (1 - mask)[None, :, None], x[:, 1::2] + x[:, 0::2]


def _untranslatable(x):
    return torch.bernoulli(x)


class Windows(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 4)

    def forward(self, x):
        return _padded_mask(self.fc(x), 4)


def test_a_wrapped_function_is_traced_into_for_each_shape_it_gets():
    from parity.translation.trace.wrapped import _CALLS

    torch.manual_seed(0)
    module = Windows()
    cell = parity.translate(module)
    for length in (5, 8):  # padded by 3, and not at all: one trace each
        result = parity.check(cell, module, parity.randn((2, length, 4)))
        assert result.passed, str(result)
    traces = _CALLS[id(_padded_mask)].programs
    assert sorted(key[0][0][1] for key in traces) == [(2, 5, 4), (2, 8, 4)]


def test_an_untranslated_call_inside_a_wrapped_function_is_named_with_its_line():
    class Calls(torch.nn.Module):
        def forward(self, x):
            return _untranslatable(x)

    import inspect

    line = inspect.getsourcelines(_untranslatable)[1] + 1
    cell = parity.translate(Calls())
    with pytest.raises(
        parity.ParityUnsupported,
        match=rf"_untranslatable calls what has no MindSpore translation: torch\.bernoulli at "
        rf".*test_translate_calls\.py:{line}",
    ):
        cell(mindspore.Tensor(np.ones((2, 3), np.float32)))


def test_strided_slices_and_rolls_have_gradients_on_cpu():
    """MindSpore's backward of x[:, 1::2] and of narrow fails on CPU; the adapters avoid both."""

    class Strided(torch.nn.Module):
        def forward(self, x):
            return x[:, 1::2, 0::2] * 2 + x[..., 1::2, :, 1::3].sum(), torch.roll(x, (1, 2), (1, 2))

    torch.manual_seed(0)
    result = parity.check(parity.translate(Strided()), Strided(), parity.randn((2, 4, 6, 3)))
    assert result.passed, str(result)


# --- transformers' own attention helpers, traced -------------------------------------------------


class LlamaAttentionCore(torch.nn.Module):
    """transformers' LLaMA attention from the projections on, with its own functions: rotary
    tables (``inv_freq``, ``cat(freqs, freqs)``), ``apply_rotary_pos_emb`` (``rotate_half``),
    ``repeat_kv`` for grouped heads, a causal mask with a left pad filled with float32's smallest
    value, softmax in float32; and the same through ``F.scaled_dot_product_attention`` with GQA."""

    def __init__(self):
        super().__init__()
        from cases.models.zoo_compat import import_quietly

        self.llama = import_quietly("transformers.models.llama.modeling_llama")
        self.q_proj, self.k_proj = torch.nn.Linear(16, 16, bias=False), torch.nn.Linear(16, 8, bias=False)
        self.v_proj = torch.nn.Linear(16, 8, bias=False)
        self.register_buffer(
            "inv_freq", 1.0 / (10000 ** (torch.arange(0, 4, 2, dtype=torch.int64).float() / 4)), persistent=False
        )

    def forward(self, x, position_ids):
        q = self.q_proj(x).view(2, 5, 4, 4).transpose(1, 2)
        k, v = (p(x).view(2, 5, 2, 4).transpose(1, 2) for p in (self.k_proj, self.v_proj))
        freqs = (self.inv_freq[None, :, None].float().expand(2, -1, 1) @ position_ids[:, None, :].float()).transpose(
            1, 2
        )
        emb = torch.cat((freqs, freqs), dim=-1)
        q, k = self.llama.apply_rotary_pos_emb(q, k, emb.cos(), emb.sin())
        keys, values = self.llama.repeat_kv(k, 2), self.llama.repeat_kv(v, 2)
        allowed = torch.ones(5, 5, dtype=torch.bool).tril()[None, None] & (position_ids >= 0)[:, None, None, :]
        mask = torch.zeros(2, 1, 5, 5).masked_fill(~allowed, torch.finfo(torch.float32).min)
        scores = torch.matmul(q, keys.transpose(2, 3)) * 4**-0.5 + mask
        weights = F.softmax(scores, dim=-1, dtype=torch.float32).to(q.dtype)
        eager = torch.matmul(weights, values)
        fused = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed, enable_gqa=True)
        return eager.transpose(1, 2).reshape(2, 5, 16), fused


def test_transformers_rotary_and_grouped_attention_helpers_translate():
    torch.manual_seed(0)
    module = LlamaAttentionCore().eval()
    positions = np.array([[-1, 0, 1, 2, 3], [0, 1, 2, 3, 4]], dtype=np.int64)  # the first row left-padded
    cell = parity.translate(module)
    result = parity.check(cell, module, (parity.randn((2, 5, 16)), positions))
    assert result.passed, str(result)


class Reductions(torch.nn.Module):
    """amax/amin, linalg.vector_norm of several orders, F.softplus past its threshold, reshape_as and
    view_as (Hiera, ConvNeXtV2, Mamba, LeViT call them)."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, 8)

    def forward(self, x):
        h = self.fc(x)
        extremes = torch.amax(h, dim=-1, keepdim=True) + h.amin(1, keepdim=True) + torch.amax(h)
        norms = (
            torch.linalg.vector_norm(h, dim=-1, keepdim=True)
            + torch.linalg.vector_norm(h, ord=1)
            + torch.linalg.vector_norm(h, ord=float("inf"), dim=0)
            + torch.linalg.vector_norm(h, ord=3, dim=-1, keepdim=True)
        )
        soft = F.softplus(h) + F.softplus(h * 30, beta=2.0, threshold=10.0)
        shaped = h.reshape(4, 2, 4).reshape_as(h) + h.view(2, 16).view_as(x)
        return extremes + norms + soft + shaped


def test_reductions_norms_softplus_and_shapes_as_another_translate_with_gradients():
    module, inputs = Reductions(), parity.randn((4, 8))
    result = parity.check(parity.translate(module, inputs), module, inputs)
    assert result.passed, str(result)
    assert {c.kind for c in result.comparisons} >= {"output", "input grad", "param grad"}


class Routing(torch.nn.Module):
    """A mixture of experts' routing as Mixtral writes it: top-k of the router's softmax, one-hot
    masks, the tokens each expert is given (nonzero, where(condition)), and their outputs added
    back (index_add_, on dim 0 and on dim 1 with alpha)."""

    def __init__(self):
        super().__init__()
        self.router = torch.nn.Linear(8, 4)
        self.experts = torch.nn.ModuleList(torch.nn.Linear(8, 8) for _ in range(4))

    def forward(self, x):
        weights, chosen = torch.topk(self.router(x).softmax(-1), 2, dim=-1)
        low, _ = x.topk(3, dim=0, largest=False)
        mask = F.one_hot(chosen, num_classes=4).permute(2, 1, 0)
        out = torch.zeros_like(x)
        for expert in torch.greater(mask.sum(dim=(-1, -2)), 0).nonzero():
            slot, token = torch.where(mask[expert].squeeze(0))
            out.index_add_(0, token, self.experts[expert](x[token]) * weights[token, slot, None])
        side = torch.zeros(x.shape[0], 3).index_add(1, torch.tensor([0, 2, 0]), x[:, :3], alpha=0.5)
        return out, low.sum() + side, F.one_hot(chosen[:, 0]).float().sum(0)


def test_mixture_of_experts_routing_translates_with_gradients():
    module, inputs = Routing(), parity.randn((6, 8))
    result = parity.check(parity.translate(module, inputs), module, inputs)
    assert result.passed, str(result)
    assert any(c.kind == "param grad" and c.name.startswith("experts.") for c in result.comparisons)


class FunctionalConvolutions(torch.nn.Module):
    """F.conv2d/conv1d with the module's own weights (timm's Conv2dSame, LeViT), with strides,
    padding by sides and "same", dilation and groups, and a layer made in forward."""

    def __init__(self):
        super().__init__()
        self.c2 = torch.nn.Conv2d(4, 6, 3)
        self.c1 = torch.nn.Conv1d(6, 6, 3, groups=2)

    def forward(self, x):
        a = F.conv2d(x, self.c2.weight, self.c2.bias, stride=2, padding=(1, 2))
        b = F.conv2d(x, self.c2.weight, None, padding="same", dilation=2)
        c = torch.conv2d(x, self.c2.weight, self.c2.bias)
        d = F.conv1d(a.flatten(2), self.c1.weight, self.c1.bias, stride=2, padding=1, groups=2)
        e = F.conv1d(a.flatten(2), self.c1.weight, None, padding="same", groups=2)
        return torch.nn.Softmax(dim=-1)(d), e, a.sum() + b.mean() + c.sum()


def test_functional_convolutions_and_a_layer_made_in_forward_translate():
    module, inputs = FunctionalConvolutions(), parity.randn((2, 4, 9, 9))
    result = parity.check(parity.translate(module, inputs), module, inputs)
    assert result.passed, str(result)


def test_a_layer_with_weights_made_in_forward_is_refused_at_its_line():
    class Fresh(torch.nn.Module):
        def forward(self, x):
            return torch.nn.Linear(4, 4)(x)

    with pytest.raises(parity.ParityUnsupported, match=r"builds a Linear with weights at .*test_translate_calls\.py"):
        parity.translate(Fresh(), parity.randn((2, 4)))
