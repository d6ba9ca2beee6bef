"""Linear algebra in the call table: products of vectors and matrices (``mm``, ``mv``, ``dot``,
``vdot``, ``inner``, ``addmv``, ``addr``, ``addbmm``, ``kron``, ``tensordot``, ``linalg.vecdot``,
``linalg.multi_dot``), ``cross``, ``trace``, the norms (``torch.norm``, ``linalg.norm``,
``linalg.matrix_norm``, ``dist``, ``cdist``, ``F.pairwise_distance``, ``F.cosine_similarity``) and
``linalg.det``/``inv``/``slogdet``/``pinv``/``solve``/``svdvals``/``cond``/``matrix_rank``/
``solve_triangular`` (and the ``_ex`` forms, their ``info`` 0), ``matrix_power`` (PyTorch's
repeated squaring), ``cholesky`` and ``F.bilinear``.

Real tensors only: ``vdot`` is ``dot``. The ``add*`` products compute ``beta * input + alpha * product``
without multiplying by a factor of 1, and ignore ``input`` for ``beta=0``, as PyTorch does. A matrix
norm that needs singular values (``ord`` 2, -2, ``'nuc'``) is refused.
"""

from __future__ import annotations

import collections
from typing import Dict, Optional, Sequence, Tuple, Union

import mindspore as ms
import numpy as np
from mindspore import Tensor, ops

from .arguments import Adapter, DType, Entry, ms_dtype
from .reductions import vector_norm

__all__ = ["FUNCTIONS", "METHODS"]

Dims = Union[int, Sequence[int], None]


def _scaled_sum(product: Tensor, input: Tensor, beta: float, alpha: float) -> Tensor:
    product = product if alpha == 1 else alpha * product
    if beta == 0:  # PyTorch ignores input then (NaN and Inf included)
        return ops.broadcast_to(product, np.broadcast_shapes(product.shape, input.shape))
    return product + (input if beta == 1 else beta * input)


def mm(input: Tensor, mat2: Tensor) -> Tensor:
    return ops.matmul(input, mat2)


def mv(input: Tensor, vec: Tensor) -> Tensor:
    return ops.matmul(input, vec)


def dot(input: Tensor, tensor: Tensor) -> Tensor:
    return ops.matmul(input, tensor)


def inner(input: Tensor, other: Tensor) -> Tensor:
    if input.ndim == 0 or other.ndim == 0:
        return input * other
    return ops.tensor_dot(input, other, ((input.ndim - 1,), (other.ndim - 1,)))


def addmv(input: Tensor, mat: Tensor, vec: Tensor, *, beta: float = 1, alpha: float = 1) -> Tensor:
    return _scaled_sum(ops.matmul(mat, vec), input, beta, alpha)


def addr(input: Tensor, vec1: Tensor, vec2: Tensor, *, beta: float = 1, alpha: float = 1) -> Tensor:
    return _scaled_sum(ops.outer(vec1, vec2), input, beta, alpha)


def addbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta: float = 1, alpha: float = 1) -> Tensor:
    return _scaled_sum(ops.sum(ops.bmm(batch1, batch2), 0), input, beta, alpha)


def kron(input: Tensor, other: Tensor) -> Tensor:
    return ops.kron(input, other)


def _dims(given: Union[int, Sequence[int]]) -> Tuple[int, ...]:
    return tuple(given) if isinstance(given, (list, tuple)) else (int(given),)  # type: ignore[arg-type]


def tensordot(a: Tensor, b: Tensor, dims: Union[int, Sequence[Sequence[int]]] = 2, out: object = None) -> Tensor:
    if isinstance(dims, int):
        axes: Tuple[Tuple[int, ...], Tuple[int, ...]] = (
            tuple(range(a.ndim - dims, a.ndim)),
            tuple(range(dims)),
        )
    else:
        first, second = dims
        axes = (_dims(first), _dims(second))
    if not axes[0]:
        return ops.reshape(a, a.shape + (1,) * b.ndim) * b
    return ops.tensor_dot(a, b, axes)


def vecdot(x: Tensor, y: Tensor, *, dim: int = -1) -> Tensor:
    return ops.sum(x * y, dim)


def multi_dot(tensors: Sequence[Tensor], *, out: object = None) -> Tensor:
    result = tensors[0]
    for matrix in tensors[1:]:
        result = ops.matmul(result, matrix)
    return result


def cross(input: Tensor, other: Tensor, dim: Optional[int] = None) -> Tensor:
    """``torch.cross``: along ``dim``, or the first dimension of size 3 where it is None."""
    shape = np.broadcast_shapes(input.shape, other.shape)
    input, other = ops.broadcast_to(input, shape), ops.broadcast_to(other, shape)
    if dim is None:
        dim = list(shape).index(3)
    return ops.cross(input, other, dim % len(shape))


def linalg_cross(input: Tensor, other: Tensor, *, dim: int = -1) -> Tensor:
    return cross(input, other, dim)


def trace(input: Tensor) -> Tensor:
    return ops.sum(ops.diagonal(input))


def _matrix_norm(a: Tensor, ord: Union[str, float], dim: Tuple[int, int], keepdim: bool) -> Tensor:
    rows, cols = (d % a.ndim for d in dim)
    size = ops.abs(a)
    if ord == "fro":
        return ops.sqrt(ops.sum(a * a, (rows, cols), keepdim))
    if ord in (1, -1, float("inf"), float("-inf")):
        summed, other = (rows, cols) if ord in (1, -1) else (cols, rows)
        sums = ops.sum(size, summed, True)
        pick = ops.amax if ord in (1, float("inf")) else ops.amin
        found = pick(sums, other, True)
        return found if keepdim else ops.squeeze(found, (rows, cols))
    raise TypeError(f"matrix norm ord={ord!r} needs singular values, which are not translated")


def matrix_norm(
    A: Tensor,
    ord: Union[str, float] = "fro",
    dim: Tuple[int, int] = (-2, -1),
    keepdim: bool = False,
    *,
    dtype: Optional[DType] = None,
) -> Tensor:
    if dtype is not None:
        A = A.astype(ms_dtype(dtype))
    return _matrix_norm(A, ord, tuple(dim), keepdim)  # type: ignore[arg-type]


def linalg_norm(
    A: Tensor,
    ord: Union[str, float, None] = None,
    dim: Dims = None,
    keepdim: bool = False,
    *,
    out: object = None,
    dtype: Optional[DType] = None,
) -> Tensor:
    """``torch.linalg.norm``: a vector norm, or a matrix norm for two dimensions (or a matrix and
    ``ord`` given); the 2-norm of all elements for neither."""
    if dtype is not None:
        A = A.astype(ms_dtype(dtype))
    dims = (dim,) if isinstance(dim, int) else None if dim is None else tuple(dim)
    if ord is None:
        return vector_norm(A, 2, dims, keepdim)
    if dims is None:
        dims = tuple(range(A.ndim))
    if len(dims) == 2:
        return _matrix_norm(A, ord, dims, keepdim)  # type: ignore[arg-type]
    if isinstance(ord, str):
        raise TypeError(f"linalg.norm(ord={ord!r}) of {len(dims)} dimensions: PyTorch takes it of a matrix only")
    return vector_norm(A, ord, dims, keepdim)


def norm(
    input: Tensor,
    p: Union[str, float, None] = "fro",
    dim: Dims = None,
    keepdim: bool = False,
    out: object = None,
    dtype: Optional[DType] = None,
) -> Tensor:
    """``torch.norm``: ``'fro'`` (or None) is the 2-norm of the elements along ``dim``; a number, the
    vector norm; ``'nuc'`` needs singular values and is refused."""
    if dtype is not None:
        input = input.astype(ms_dtype(dtype))
    dims = (dim,) if isinstance(dim, int) else None if dim is None else tuple(dim)
    if p is None or p == "fro":
        return vector_norm(input, 2, dims, keepdim)
    if isinstance(p, str):
        raise TypeError(f"norm(p={p!r}) needs singular values, which are not translated")
    return vector_norm(input, p, dims, keepdim)


def _singular_check(name: str, position: int, keyword: str, default: object):
    """A validator refusing, from its constant arguments, the norms that need singular values."""

    def check(args, kwargs) -> Optional[str]:
        ord = kwargs.get(keyword, args[position] if len(args) > position else default)
        if isinstance(ord, str) and ord != "fro" or name == "matrix_norm" and ord in (2, -2):
            return f"{keyword}={ord!r} needs singular values, which are not translated"
        if (
            name == "linalg.norm"
            and ord in (2, -2)
            and len(kwargs.get("dim", args[2] if len(args) > 2 else ()) or ()) == 2
        ):
            return f"{keyword}={ord!r} of a matrix needs singular values, which are not translated"
        return None

    return check


def dist(input: Tensor, other: Tensor, p: float = 2) -> Tensor:
    return vector_norm(input - other, p)


def cdist(x1: Tensor, x2: Tensor, p: float = 2.0, compute_mode: Optional[str] = None) -> Tensor:
    """The ``p``-norm of every difference of a row of ``x1`` and a row of ``x2``."""
    differences = ops.expand_dims(x1, -2) - ops.expand_dims(x2, -3)
    return vector_norm(differences, p, -1)


def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> Tensor:
    dim = -1 if max(x1.ndim, x2.ndim) > 0 else None
    return vector_norm(x1 - x2 + eps, p, dim, keepdim)


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """Each side divided by its norm (at least ``eps``) first, then the sum of the products."""
    shape = np.broadcast_shapes(x1.shape, x2.shape)
    x1, x2 = ops.broadcast_to(x1, shape), ops.broadcast_to(x2, shape)
    norm1 = ops.clamp(ops.sqrt(ops.sum(x1 * x1, dim, True)), eps, None)
    norm2 = ops.clamp(ops.sqrt(ops.sum(x2 * x2, dim, True)), eps, None)
    return ops.sum((x1 / norm1) * (x2 / norm2), dim)


def det(A: Tensor, *, out: object = None) -> Tensor:
    if A.shape[-1] == 1:  # MindSpore's kernel takes 2x2 matrices and larger
        return ops.reshape(A, tuple(A.shape[:-2]))
    return ops.det(A)


def inv(A: Tensor, *, out: object = None) -> Tensor:
    return ops.inverse(A)


_SignLogDet = collections.namedtuple("_SignLogDet", ["sign", "logabsdet"])


def slogdet(A: Tensor, *, out: object = None) -> _SignLogDet:
    if A.shape[-1] == 1:  # MindSpore's kernel takes 2x2 matrices and larger
        value = ops.reshape(A, tuple(A.shape[:-2]))
        return _SignLogDet(ops.sign(value), ops.log(ops.abs(value)))
    sign, logabsdet = ops.slogdet(A)
    return _SignLogDet(sign, logabsdet)


def logdet(input: Tensor) -> Tensor:
    sign, logabsdet = slogdet(input)
    return ops.where(sign < 0, ops.full_like(logabsdet, float("nan")), logabsdet)


def matrix_power(A: Tensor, n: int, *, out: object = None) -> Tensor:
    """PyTorch's repeated squaring (of the inverse for a negative ``n``), so the products round alike."""
    if n == 0:
        return ops.broadcast_to(ops.eye(A.shape[-1], A.shape[-1], A.dtype), A.shape)
    if n < 0:
        A, n = ops.inverse(A), -n
    result, square = None, None
    while n:
        square = A if square is None else ops.matmul(square, square)
        if n & 1:
            result = square if result is None else ops.matmul(result, square)
        n >>= 1
    return result


def pinv(A: Tensor, *, atol: object = None, rtol: object = None, hermitian: bool = False, out: object = None) -> Tensor:
    return ops.pinv(A)  # the validator lets only the general case through


def _pinv_check(args, kwargs) -> Optional[str]:
    given = [name for name in ("atol", "rtol") if kwargs.get(name) is not None]
    if kwargs.get("hermitian"):
        given.append("hermitian=True")
    return f"{', '.join(given)} is not translated" if given else None


def cholesky(A: Tensor, upper: bool = False, *, out: object = None) -> Tensor:
    return ops.cholesky(A, upper)


def linalg_cholesky(A: Tensor, *, upper: bool = False, out: object = None) -> Tensor:
    return ops.cholesky(A, upper)


def cholesky_inverse(L: Tensor, upper: bool = False, *, out: object = None) -> Tensor:
    """The inverse of ``L L^T`` (``U^T U`` for ``upper``), composed: MindSpore's gradient differs."""
    factor = ops.swapaxes(L, -2, -1)
    product = ops.matmul(factor, L) if upper else ops.matmul(L, factor)
    return ops.inverse(product)


def solve(A: Tensor, B: Tensor, *, left: bool = True, out: object = None) -> Tensor:
    if not left:
        raise TypeError("linalg.solve(left=False) is not translated")
    vector = B.ndim == A.ndim - 1
    found = ops.matrix_solve(A, ops.expand_dims(B, -1) if vector else B)
    return ops.squeeze(found, -1) if vector else found


def svdvals(A: Tensor, *, driver: object = None, out: object = None) -> Tensor:
    return ops.svd(A, compute_uv=False)


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Optional[Tensor] = None) -> Tensor:
    """``x1^T W_o x2 + b_o`` for each output ``o``."""
    left = ops.tensor_dot(input1, weight, ((input1.ndim - 1,), (1,)))  # (..., out, in2)
    out = ops.sum(left * ops.expand_dims(input2, -2), -1)
    return out if bias is None else out + bias


_WithInfo = collections.namedtuple("_WithInfo", ["result", "info"])


def _info(A: Tensor) -> Tensor:
    return ops.zeros(tuple(A.shape[:-2]), ms.int32)  # PyTorch's 0: no error found


def inv_ex(A: Tensor, *, check_errors: bool = False, out: object = None) -> _WithInfo:
    return _WithInfo(ops.inverse(A), _info(A))


def solve_ex(A: Tensor, B: Tensor, *, left: bool = True, check_errors: bool = False, out: object = None):
    return _WithInfo(solve(A, B, left=left), _info(A))


def cholesky_ex(A: Tensor, *, upper: bool = False, check_errors: bool = False, out: object = None):
    return _WithInfo(ops.cholesky(A, upper), _info(A))


def solve_triangular(
    A: Tensor, B: Tensor, *, upper: bool, left: bool = True, unitriangular: bool = False, out: object = None
) -> Tensor:
    """The triangle of ``A`` (its diagonal 1 for ``unitriangular``) solved against ``B``; the rest of
    ``A`` is not read, and gets no gradient, as in PyTorch."""
    triangle = ops.triu(A) if upper else ops.tril(A)
    if unitriangular:
        size = A.shape[-1]
        eye = ops.eye(size, size, A.dtype)
        triangle = triangle * (1 - eye) + eye
    if left:
        return ops.matrix_solve(triangle, B)
    return ops.swapaxes(ops.matrix_solve(ops.swapaxes(triangle, -2, -1), ops.swapaxes(B, -2, -1)), -2, -1)


def cond(A: Tensor, p: Union[str, float, None] = None, *, out: object = None) -> Tensor:
    """The 2-norm condition number (the greatest singular value over the least); other ``p`` refused."""
    if p not in (None, 2):
        raise TypeError(f"linalg.cond(p={p!r}) is not translated (only the 2-norm)")
    values = ops.svd(A, compute_uv=False)
    return ops.amax(values, -1) / ops.amin(values, -1)


def matrix_rank(
    A: Tensor, *, atol: object = None, rtol: object = None, hermitian: bool = False, out: object = None
) -> Tensor:
    """How many singular values exceed PyTorch's default tolerance (the greatest times eps times the
    larger dimension); ``atol``/``rtol`` are refused."""
    if atol is not None or rtol is not None:
        raise TypeError("linalg.matrix_rank(atol=..., rtol=...) is not translated")
    values = ops.svd(A, compute_uv=False)
    eps = float(np.finfo(np.float64 if A.dtype == ms.float64 else np.float32).eps)
    tolerance = ops.amax(values, -1, True) * eps * max(A.shape[-2], A.shape[-1])
    return ops.sum((values > tolerance).astype(ms.int64), -1)


FUNCTIONS: Dict[str, Entry] = {
    "torch.mm": mm,
    "torch.mv": mv,
    "torch.dot": dot,
    "torch.vdot": dot,
    "torch.inner": inner,
    "torch.addmv": addmv,
    "torch.addr": addr,
    "torch.addbmm": addbmm,
    "torch.kron": kron,
    "torch.tensordot": tensordot,
    "torch.linalg.vecdot": vecdot,
    "torch.linalg.multi_dot": multi_dot,
    "torch.chain_matmul": lambda *matrices: multi_dot(matrices),
    "torch.cross": cross,
    "torch.linalg.cross": linalg_cross,
    "torch.trace": trace,
    "torch.norm": (norm, _singular_check("norm", 1, "p", "fro")),
    "torch.linalg.norm": (linalg_norm, _singular_check("linalg.norm", 1, "ord", None)),
    "torch.linalg.matrix_norm": (matrix_norm, _singular_check("matrix_norm", 1, "ord", "fro")),
    "torch.dist": dist,
    "torch.cdist": cdist,
    "torch.nn.functional.pairwise_distance": pairwise_distance,
    "torch.pairwise_distance": pairwise_distance,
    "torch.nn.functional.cosine_similarity": cosine_similarity,
    "torch.cosine_similarity": cosine_similarity,
    "torch.det": det,
    "torch.linalg.det": det,
    "torch.inverse": inv,
    "torch.linalg.inv": inv,
    "torch.slogdet": slogdet,
    "torch.linalg.slogdet": slogdet,
    "torch.logdet": logdet,
    "torch.matrix_power": matrix_power,
    "torch.linalg.matrix_power": matrix_power,
    "torch.linalg.pinv": (pinv, _pinv_check),
    "torch.pinverse": lambda input, rcond=1e-15: pinv(input),
    "torch.cholesky": cholesky,
    "torch.linalg.cholesky": linalg_cholesky,
    "torch.cholesky_inverse": cholesky_inverse,
    "torch.linalg.solve": solve,
    "torch.linalg.svdvals": svdvals,
    "torch.bilinear": bilinear,
    "torch.linalg.inv_ex": inv_ex,
    "torch.linalg.solve_ex": solve_ex,
    "torch.linalg.cholesky_ex": cholesky_ex,
    "torch.linalg.solve_triangular": solve_triangular,
    "torch.linalg.cond": cond,
    "torch.linalg.matrix_rank": matrix_rank,
    "torch.nn.functional.bilinear": bilinear,
}
METHODS: Dict[str, Adapter] = {
    "mm": mm,
    "mv": mv,
    "dot": dot,
    "vdot": dot,
    "inner": inner,
    "addmv": addmv,
    "addr": addr,
    "addbmm": addbmm,
    "kron": kron,
    "cross": cross,
    "trace": trace,
    "norm": norm,
    "dist": dist,
    "det": det,
    "inverse": inv,
    "slogdet": slogdet,
    "logdet": logdet,
    "matrix_power": matrix_power,
    "pinverse": lambda input, rcond=1e-15: pinv(input),
    "cholesky": cholesky,
    "cholesky_inverse": cholesky_inverse,
}
