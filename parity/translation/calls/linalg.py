"""Linear algebra in the call table: products of vectors and matrices (``mm``, ``mv``, ``dot``,
``vdot``, ``inner``, ``addmv``, ``addr``, ``addbmm``, ``kron``, ``tensordot``, ``linalg.vecdot``,
``linalg.multi_dot``), ``cross``, ``trace``, the norms (``torch.norm``, ``linalg.norm``,
``linalg.matrix_norm``, ``dist``, ``cdist``, ``F.pairwise_distance``, ``F.cosine_similarity``) and
``linalg.det``/``inv``.

Real tensors only: ``vdot`` is ``dot``. The ``add*`` products compute ``beta * input + alpha * product``
without multiplying by a factor of 1, and ignore ``input`` for ``beta=0``, as PyTorch does. A matrix
norm that needs singular values (``ord`` 2, -2, ``'nuc'``) is refused.
"""

from __future__ import annotations

from typing import Dict, Optional, Sequence, Tuple, Union

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
}
