"""Triangular and symmetric solves in the call table, composed from MindSpore's CPU operators:
``triangular_solve`` (the older form of ``linalg.solve_triangular``, with the coefficient back),
``cholesky_solve`` (two triangular solves) and ``linalg.eigvalsh`` (MindSpore's ``eigh`` of the
triangle PyTorch reads, with PyTorch's gradient ``V diag(g) V^T``).

``linalg.eigh``'s eigenvectors are each defined up to their sign, so two frameworks' need not
agree: it is not translated.
"""

from __future__ import annotations

import collections
from typing import Dict

from mindspore import Tensor, nn, ops

from .arguments import Adapter, Entry
from .linalg import solve_triangular

__all__ = ["FUNCTIONS", "METHODS"]

_Solved = collections.namedtuple("_Solved", ["solution", "cloned_coefficient"])


def triangular_solve(
    b: Tensor, A: Tensor, upper: bool = True, transpose: bool = False, unitriangular: bool = False
) -> _Solved:
    """``X`` with ``op(A) X = b``, ``op(A)`` the triangle of ``A`` (transposed for ``transpose``)."""
    if transpose:
        turned = ops.swapaxes(ops.triu(A) if upper else ops.tril(A), -2, -1)
        solution = solve_triangular(turned, b, upper=not upper, unitriangular=unitriangular)
    else:
        solution = solve_triangular(A, b, upper=upper, unitriangular=unitriangular)
    return _Solved(solution, A * 1)


def _cholesky_solved(B: Tensor, L: Tensor, upper: bool) -> Tensor:
    turned = ops.swapaxes(ops.triu(L) if upper else ops.tril(L), -2, -1)
    if upper:
        return solve_triangular(L, solve_triangular(turned, B, upper=False), upper=True)
    return solve_triangular(turned, solve_triangular(L, B, upper=False), upper=True)


class _CholeskySolve(nn.Cell):
    """PyTorch's gradient: ``B``'s the solve of the output's, the factor's ``-(G X^T + X G^T) L``
    (``-U (...)`` for ``upper``), over the whole factor as PyTorch gives it."""

    def __init__(self, upper: bool):
        super().__init__()
        self.upper = upper

    def construct(self, B, L):
        return _cholesky_solved(B, L, self.upper)

    def bprop(self, B, L, out, dout):
        grad_b = _cholesky_solved(dout, L, self.upper)
        common = ops.matmul(grad_b, ops.swapaxes(out, -2, -1))
        common = common + ops.swapaxes(common, -2, -1)
        grad_l = -ops.matmul(L, common) if self.upper else -ops.matmul(common, L)
        return grad_b, grad_l


def cholesky_solve(B: Tensor, L: Tensor, upper: bool = False) -> Tensor:
    """``X`` with ``L L^T X = B`` (``U^T U X = B`` for ``upper``), read from ``L``'s triangle."""
    return _CholeskySolve(upper)(B, L)


def _symmetric(A: Tensor, lower: bool) -> Tensor:
    """The symmetric matrix PyTorch reads from one triangle of ``A``."""
    triangle = ops.tril(A) if lower else ops.triu(A)
    strict = ops.tril(A, -1) if lower else ops.triu(A, 1)
    return triangle + ops.swapaxes(strict, -2, -1)


def _eigh(S: Tensor):
    from mindspore.scipy.linalg import eigh

    if S.ndim == 2:
        return eigh(S)
    flat = S.reshape((-1,) + tuple(S.shape[-2:]))
    pairs = [eigh(flat[i]) for i in range(flat.shape[0])]
    values = ops.stack([p[0] for p in pairs]).reshape(tuple(S.shape[:-1]))
    vectors = ops.stack([p[1] for p in pairs]).reshape(tuple(S.shape))
    return values, vectors


class _Eigvalsh(nn.Cell):
    def __init__(self, lower: bool):
        super().__init__()
        self.lower = lower

    def construct(self, A):
        return _eigh(_symmetric(A, self.lower))[0]

    def bprop(self, A, out, dout):
        vectors = _eigh(_symmetric(A, self.lower))[1]
        return (ops.matmul(vectors * ops.expand_dims(dout, -2), ops.swapaxes(vectors, -2, -1)),)


def eigvalsh(A: Tensor, UPLO: str = "L", *, out: object = None) -> Tensor:
    """The eigenvalues, ascending, of the symmetric matrix in ``A``'s ``UPLO`` triangle."""
    if UPLO not in ("L", "U"):
        raise TypeError(f"linalg.eigvalsh(UPLO={UPLO!r}): PyTorch knows 'L' and 'U'")
    if out is not None:
        raise TypeError("linalg.eigvalsh(out=...) is not translated")
    return _Eigvalsh(UPLO == "L")(A)


FUNCTIONS: Dict[str, Entry] = {
    "torch.triangular_solve": triangular_solve,
    "torch.cholesky_solve": cholesky_solve,
    "torch.linalg.eigvalsh": eigvalsh,
}
METHODS: Dict[str, Adapter] = {
    "triangular_solve": triangular_solve,
    "cholesky_solve": cholesky_solve,
}
