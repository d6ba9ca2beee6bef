"""The call table's composed rows (``parity.translation.calls``: numerics, transposed, spectral,
decompositions, sampling) in the argument forms PyTorch's OpInfo samples the sweep takes do not
reach: ties for ``mode``, uneven spacing lists and second-order edges for ``gradient``, groups,
dilation and output padding of a transposed convolution, the upper and transposed solves, sizes
given to an n-d transform, counts and inverses of ``unique``. Each module is checked against
PyTorch through ``parity.check``; arguments a row does not handle are refused by name."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import parity
from parity.translation.trace.graph import GraphForward


class Smooth(torch.nn.Module):
    def forward(self, x, w):
        tied = torch.mode((x * 2).round(), dim=0, keepdim=True)
        slopes = torch.gradient(x, spacing=[0.5, 2.0], dim=(0, 1), edge_order=2)
        mantissa, exponent = torch.frexp(x * 40)
        spread = F.conv_transpose1d(x.unsqueeze(0), w, stride=3, padding=1, output_padding=2, groups=2, dilation=2)
        special = torch.special.entr(x.abs()) + torch.special.erfcx(x * 20) + torch.erfinv(x.tanh() * 0.999)
        return tied.values * x[:1], slopes[0] + slopes[1], mantissa * exponent, spread, special


class Solves(torch.nn.Module):
    def forward(self, a, b):
        square = a @ a.T + 4 * torch.eye(4)
        factor = torch.linalg.cholesky(square.detach(), upper=True) + (a - a.detach())
        solved = torch.cholesky_solve(b, factor, upper=True)
        back = torch.triangular_solve(b, square, upper=False, transpose=True)[0]
        values = torch.linalg.eigvalsh(a + a.T, UPLO="U")
        spectrum = (
            torch.real(torch.fft.rfft2(a, s=(4, 6), norm="forward")) + torch.real(torch.fft.ihfftn(b, dim=0)).sum()
        )
        return solved, back, values, spectrum, torch.matrix_exp(a * 0.3)


class NanQuantiles(torch.nn.Module):
    def forward(self, x):
        holed = torch.where(x > 0.6, float("nan"), x)
        holed = torch.cat([holed, torch.full((1, 6), float("nan"))])  # a column of NaN only: NaN out
        q = torch.tensor([0.1, 0.5, 0.9])
        by_row = torch.nanquantile(holed.T, q, dim=1, keepdim=True)
        nearest = torch.nanquantile(holed, 0.3, dim=0, interpolation="nearest")
        whole = torch.nanquantile(holed, q, interpolation="midpoint") + holed.nanquantile(0.7, keepdim=True).sum()
        empty_row = torch.nanquantile(holed, 0.5, dim=1)
        return by_row, nearest, whole, empty_row


class Counting(torch.nn.Module):
    def forward(self, x):
        rounded = (x * 2).round()
        values, inverse, counts = torch.unique(rounded, return_inverse=True, return_counts=True)
        runs, run_counts = torch.unique_consecutive(rounded, return_counts=True)
        hist = torch.histogram(x, 5, range=(-1.0, 1.0), weight=x.abs(), density=True)
        return values, inverse, counts, runs, run_counts, hist[0], torch.nonzero_static(x > 0, size=30, fill_value=-2)


@pytest.mark.parametrize(
    "module, inputs, grads",
    [
        (Smooth(), (parity.randn((4, 6)), parity.randn((4, 3, 3))), True),
        (Solves(), (parity.randn((4, 4)), parity.randn((4, 3))), True),
        (NanQuantiles(), parity.randn((5, 6)), True),
        (Counting(), parity.randn((5, 6)), False),
    ],
    ids=["Smooth", "Solves", "NanQuantiles", "Counting"],
)
@pytest.mark.filterwarnings("ignore:torch.triangular_solve is deprecated")
def test_composed_rows_match_pytorch(module, inputs, grads):
    cell = parity.translate(module.eval())
    assert isinstance(cell, GraphForward)
    result = parity.check(cell, module, inputs, grads=grads)
    assert result.passed, str(result)


class Bicubic(torch.nn.Module):
    def forward(self, x, grid):
        return F.grid_sample(x, grid, mode="bicubic", align_corners=False)


class Coordinates(torch.nn.Module):
    def forward(self, x):
        return torch.gradient(x, spacing=(torch.arange(5.0) ** 2,))[0]


class UniqueRows(torch.nn.Module):
    def forward(self, x):
        return torch.unique(x.round(), dim=0)


@pytest.mark.parametrize(
    "module, inputs, named",
    [
        (
            Bicubic(),
            (parity.randn((1, 2, 4, 4)), parity.randn((1, 3, 3, 2), std=0.5)),
            r"grid_sample\(mode='bicubic'\)",
        ),
        (Coordinates(), parity.randn((5,)), r"gradient\(spacing=<coordinates as tensors>\)"),
        (UniqueRows(), parity.randn((4, 3)), r"unique\(dim=\.\.\.\)"),
    ],
    ids=["grid_sample-bicubic", "gradient-coordinates", "unique-dim"],
)
def test_arguments_a_row_does_not_handle_are_refused_by_name(module, inputs, named):
    with pytest.raises(parity.ParityUnsupported, match=named):
        parity.check(parity.translate(module), module, inputs, grads=False)
