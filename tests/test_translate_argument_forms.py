"""The call table's rows for element-wise math with arguments, statistics, sorting, linear algebra and
views (``parity.translation.calls``: pointwise, reductions, ordering, linalg, views), in the argument
forms PyTorch's OpInfo samples do not reach: dims as tuples, ``keepdim``, ``correction``, negative
numbers under the rounding divisions, sections that do not divide a length. Each module is checked
against PyTorch through ``parity.check``, outputs and input gradients."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import parity
from parity.translation.trace.graph import GraphForward


class Statistics(torch.nn.Module):
    def forward(self, x):
        var, mean = torch.var_mean(x, dim=(0, 2), correction=0, keepdim=True)
        spread = torch.std(x, 1, True, True) + x.var(False) + torch.std(x, dim=-1, correction=2).sum()
        top = torch.logsumexp(x, dim=(1, 2), keepdim=True) + torch.logsumexp(x * 100, 0)
        counts = torch.count_nonzero(x > 0, dim=1).float().sum() + torch.nanmean(x, dim=1).sum()
        return var * mean + spread, top, counts, torch.prod(x, 2, keepdim=True), torch.cumprod(x, dim=1)


class Rounding(torch.nn.Module):
    def forward(self, x, y):
        quotients = torch.div(x * 7, y, rounding_mode="floor") + torch.div(x * 7, y, rounding_mode="trunc")
        rounded = torch.round(x * 100, decimals=-1) + x.round(decimals=2) + torch.round(x * 4)
        rest = torch.remainder(x * 5, y) + torch.fmod(x * 5, y) + torch.floor_divide(x * 5, -2.0).detach()
        clamped = x.clamp_min(-0.5) + torch.clamp_max(x, 0.25) + torch.addcdiv(x, x, y.abs() + 1, value=0.5)
        return quotients, rounded, rest, clamped + torch.lerp(x, y, 0.3) + torch.logit(x.sigmoid(), eps=1e-3)


class Sorting(torch.nn.Module):
    def forward(self, x):
        values, indices = torch.sort(x, dim=1, descending=True)
        lower, at = torch.median(x, dim=-1, keepdim=True)
        kth = torch.kthvalue(x, 2, dim=0).values
        holed = torch.where(x > 0.8, float("nan"), x)
        middle, where = torch.nanmedian(holed, dim=1, keepdim=True)
        middles = middle + where.float() + holed.nanmedian()
        return values * 2, indices.float(), lower + at.float() + torch.median(x), kth, x.argsort(0).float(), middles


class Products(torch.nn.Module):
    def forward(self, a, b, v):
        products = (
            torch.mm(a[0], b[0])
            + a[0].mv(v).unsqueeze(-1)
            + torch.addmv(v[:4], a[0], v, beta=0.5, alpha=2).unsqueeze(-1)
        )
        contracted = torch.tensordot(a, b, dims=([1, 2], [2, 1])) + torch.tensordot(a, b[0], dims=1).sum()
        crossed = torch.cross(a[..., :3], b[:, :4, :3], dim=2) + torch.linalg.cross(a[..., :3], b[:1, :4, :3])
        norms = (
            torch.linalg.norm(a, ord=float("inf"), dim=(1, 2))
            + torch.linalg.norm(a, ord=1, dim=(2, 1))
            + torch.norm(a, p=3, dim=-1).sum(-1)
            + torch.linalg.norm(a - a)  # a zero norm: a zero gradient, as in PyTorch
        )
        return products, contracted, crossed, norms + torch.trace(a[0, :, :3]) + torch.dot(v, v)


class Views(torch.nn.Module):
    def forward(self, x):
        pieces = torch.tensor_split(x, 3, dim=2)  # 7 into 3, 2, 2
        cut = torch.cat([pieces[0], pieces[1] * 2, pieces[2] * 3], 2) + torch.narrow(x, 2, -3, 3).sum()
        windows = x.unfold(2, 3, 2)  # (2, 4, 3, 3)
        turned = torch.rot90(x, 3, (1, 2)).sum() + torch.diag_embed(x[0, 0], offset=-1, dim1=0, dim2=1).sum(0)
        blocks = torch.block_diag(x[0], x[1, :2, :3], x[1, 0])
        stacked = torch.hstack([x[0, 0], x[1, 1]]).sum() + torch.dstack([x[0], x[1]]).sum(-1)
        columns = torch.column_stack([x[0, :, 0], x[1, :, :2]]) + torch.atleast_3d(x[0, 0]).sum()
        planes = x.mT * 3 + torch.select(x, 1, -1).unsqueeze(-1)
        return cut, windows * 2, turned, blocks, planes, stacked, columns


class Layers(torch.nn.Module):
    """Functional pools, norms and losses with their arguments."""

    def forward(self, x, logits):
        pooled = (
            F.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False).sum()
            + F.avg_pool2d(x, 2, divisor_override=3).sum()
            + F.avg_pool1d(x[0], 4, 3, 2, count_include_pad=False).sum()
            + F.adaptive_avg_pool1d(x[0], 4).sum()
            + F.interpolate(x, scale_factor=0.6, mode="area").sum()
        )
        normed = F.layer_norm(x, x.shape[1:], eps=0.1) + F.rms_norm(x, (9,)) + F.local_response_norm(x, 2)
        normed = normed + F.instance_norm(x, weight=torch.ones(3) * 2) + F.channel_shuffle(x[:, :2], 2).sum()
        classes = torch.tensor([1, 0, 4, -100])
        losses = (
            F.cross_entropy(logits, classes, weight=torch.arange(5.0) + 1)
            + F.cross_entropy(logits, logits.softmax(-1), label_smoothing=0.1, reduction="sum")
            + F.cross_entropy(logits, classes, weight=torch.arange(5.0) + 1, label_smoothing=0.2)
            + F.cross_entropy(logits, classes, label_smoothing=0.1, reduction="none").sum()
            + F.kl_div(logits.log_softmax(-1), logits.softmax(0), reduction="batchmean")
            + F.binary_cross_entropy_with_logits(logits, logits.sigmoid(), pos_weight=torch.ones(5) * 2)
            + F.gaussian_nll_loss(logits, logits * 0.5, logits[:, 0].abs(), full=True)
            + F.smooth_l1_loss(logits, logits.flip(0), beta=0.5)
            + F.triplet_margin_loss(logits, logits.flip(0), logits.flip(1), swap=True)
        )
        return pooled, normed, losses


class Assorted(torch.nn.Module):
    """Quantiles, matrix powers, integrals, covariances and membership, with their arguments."""

    def forward(self, x):
        q = torch.quantile(x, torch.tensor([0.2, 0.9]), dim=1, keepdim=True).sum(0)
        q = q + torch.quantile(x, 0.4, dim=0, interpolation="midpoint").sum() + x.quantile(0.7)
        square = x[:, :4] + 3 * torch.eye(4)
        powers = torch.linalg.matrix_power(square, -2) + torch.linalg.matrix_power(square, 5) * 1e-4
        integrals = torch.trapezoid(x, torch.arange(6.0) ** 2) + torch.cumulative_trapezoid(x, dx=0.5, dim=0).sum()
        spread = torch.cov(x, correction=0) + torch.corrcoef(x.T[:4]).sum()
        member = torch.isin(torch.round(x * 2), torch.tensor([0.0, 1.0])).float() + torch.bucketize(
            x, torch.tensor([-0.5, 0.0, 0.5]), right=True
        )
        shifted = torch.fft.fftshift(x, dim=1) + torch.fft.ifftshift(x)
        return q, powers, integrals, spread, member * x + shifted


class MaxPools(torch.nn.Module):
    """Max pools of 1 to 3 dimensions with their indices, an unbatched input, and a 3-d convolution."""

    def forward(self, x, w):
        values, indices = F.max_pool1d(x[0], 3, 2, 1, return_indices=True)
        adaptive, where = F.adaptive_max_pool1d(x[0], 3, return_indices=True)
        volume = x.reshape(2, 1, 4, 3, 5)
        cube, at = F.max_pool3d(volume[0], 2, 1, 1, ceil_mode=True, return_indices=True)
        pooled = F.adaptive_max_pool3d(volume, (2, None, 3)).sum() + F.max_pool2d(x, 2, ceil_mode=True).sum()
        convolved = F.conv3d(volume, w, torch.ones(2), stride=(1, 2, 1), padding=(1, 0, 2))
        return values, indices.float(), adaptive + where.float(), cube * at.float(), pooled, convolved


class Solvers(torch.nn.Module):
    """Triangular solves on either side, the _ex forms, scatters into slices, combinations."""

    def forward(self, a, b):
        square = a + 4 * torch.eye(4)
        upper = torch.linalg.solve_triangular(square, b, upper=True, unitriangular=True)
        lower = torch.linalg.solve_triangular(square, b.T, upper=False, left=False)
        inverse, info = torch.linalg.inv_ex(square)
        scattered = torch.slice_scatter(b, b[:, 1:5:2] * 3, dim=1, start=1, end=5, step=2)
        scattered = scattered + torch.select_scatter(b, b[:, 0] * 2, 1, -1)
        scattered = scattered + torch.diagonal_scatter(b, b[0, :4] * 5, offset=2)
        scattered = scattered + torch.diagonal_scatter(b.T, b[1, :2] * 3, -2, 1, 0).T
        pairs = torch.combinations(b[0], 2, with_replacement=True).prod(-1).sum()
        return upper, lower, inverse + info.float().sum(), scattered + pairs + torch.linalg.cond(square)


@pytest.mark.parametrize(
    "module, inputs",
    [
        (Statistics(), parity.randn((3, 4, 5))),
        (Rounding(), (parity.randn((3, 4)), parity.randn((3, 4)))),
        (Sorting(), parity.randn((4, 5))),
        (Products(), (parity.randn((2, 4, 5)), parity.randn((2, 5, 4)), parity.randn((5,)))),
        (Views(), parity.randn((2, 4, 7))),
        (Layers(), (parity.randn((2, 3, 7, 9)), parity.randn((4, 5)))),
        (Assorted(), parity.randn((4, 6))),
        (MaxPools(), (parity.randn((2, 6, 10)), parity.randn((2, 1, 2, 2, 3)))),
        (Solvers(), (parity.randn((4, 4)), parity.randn((4, 6)))),
    ],
    ids=lambda v: type(v).__name__ if isinstance(v, torch.nn.Module) else "",
)
def test_argument_forms_match_pytorch(module, inputs):
    cell = parity.translate(module.eval())
    assert isinstance(cell, GraphForward)
    result = parity.check(cell, module, inputs)
    assert result.passed, str(result)


def test_a_norm_needing_singular_values_is_refused_by_name():
    class Nuclear(torch.nn.Module):
        def forward(self, x):
            return torch.linalg.matrix_norm(x, ord="nuc")

    with pytest.raises(parity.ParityUnsupported, match=r"torch\.linalg\.matrix_norm.*singular values"):
        parity.translate(Nuclear(), parity.randn((3, 3)))


def test_rrelu_in_train_mode_is_refused_by_name():
    class Random(torch.nn.Module):
        def forward(self, x):
            return torch.nn.functional.rrelu(x, training=True)

    with pytest.raises(parity.ParityUnsupported, match=r"rrelu.*random"):
        parity.translate(Random(), parity.randn((3,)))
