"""Arithmetic and math in the call table: the operators as functions and methods, products
(``matmul``, ``bmm``, ``addmm``, ``baddbmm``, ``outer``, ``einsum``), element-wise math,
comparisons and logical operations.

``addmm`` and ``baddbmm`` compute ``beta * input + alpha * product`` without multiplying by a factor
of 1, so the rounding is PyTorch's. ``ops.einsum`` has no CPU kernel: :mod:`.einsum` writes the
equation out. Comparisons as functions (``torch.eq``) are MindSpore's functions, as methods
(``x.eq(y)``) its operators.
"""

from __future__ import annotations

from typing import Dict, Optional, Union

import mindspore as ms
from mindspore import Tensor, ops

from .arguments import Adapter, Entry
from .einsum import einsum
from .pointwise import divide

__all__ = ["FUNCTIONS", "METHODS"]


def add(input: Tensor, other: Union[Tensor, float], *, alpha: float = 1) -> Tensor:
    return input + other if alpha == 1 else input + alpha * other


def sub(input: Tensor, other: Union[Tensor, float], *, alpha: float = 1) -> Tensor:
    return input - other if alpha == 1 else input - alpha * other


def mul(input: Tensor, other: Union[Tensor, float]) -> Tensor:
    return input * other


def div(input: Tensor, other: Union[Tensor, float], *, rounding_mode: Optional[str] = None) -> Tensor:
    return divide(input, other, rounding_mode)


def matmul(input: Tensor, other: Tensor) -> Tensor:
    return ops.matmul(input, other)


def bmm(input: Tensor, mat2: Tensor) -> Tensor:
    return ops.bmm(input, mat2)


def addmm(input: Tensor, mat1: Tensor, mat2: Tensor, *, beta: float = 1, alpha: float = 1) -> Tensor:
    return _scaled_sum(ops.matmul(mat1, mat2), input, beta, alpha)


def _scaled_sum(product, input, beta=1, alpha=1):
    """``beta * input + alpha * product``, as ``torch.addmm``/``baddbmm`` compute it (a factor of 1 is
    not multiplied, so the rounding is PyTorch's)."""
    product = product if alpha == 1 else alpha * product
    return product + (input if beta == 1 else beta * input)


def baddbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta: float = 1, alpha: float = 1) -> Tensor:
    return _scaled_sum(ops.bmm(batch1, batch2), input, beta, alpha)


def outer(input: Tensor, vec2: Tensor) -> Tensor:
    return ops.outer(input, vec2)


def pow_(input: Tensor, exponent: Union[Tensor, float]) -> Tensor:
    return ops.pow(input, exponent)


def clamp(input: Tensor, min: Union[Tensor, float, None] = None, max: Union[Tensor, float, None] = None) -> Tensor:
    return ops.clamp(input, min, max)


def _compare(op):
    def run(input, other):
        return op(input, other)

    return run


def _binary(name):
    method = getattr(ms.Tensor, f"__{name}__")

    def compute(input, other):
        return method(input, other)

    return compute


FUNCTIONS: Dict[str, Entry] = {
    "torch.add": add,
    "torch.sub": sub,
    "torch.mul": mul,
    "torch.div": div,
    "torch.divide": div,
    "torch.true_divide": div,
    "torch.subtract": sub,
    "torch.matmul": matmul,
    "torch.bmm": bmm,
    "torch.addmm": addmm,
    "torch.baddbmm": baddbmm,
    "torch.outer": outer,
    "torch.einsum": einsum,
    "torch.pow": pow_,
    "torch.exp": ops.exp,
    "torch.sqrt": ops.sqrt,
    "torch.rsqrt": ops.rsqrt,
    "torch.abs": ops.abs,
    "torch.cos": ops.cos,
    "torch.sin": ops.sin,
    "torch.neg": ops.neg,
    "torch.log": ops.log,
    "torch.erf": ops.erf,
    "torch.square": ops.square,
    "torch.maximum": ops.maximum,
    "torch.minimum": ops.minimum,
    "torch.clamp": clamp,
    "torch.clip": clamp,
    "torch.eq": _compare(ops.equal),
    "torch.ne": _compare(ops.ne),
    "torch.gt": _compare(ops.gt),
    "torch.lt": _compare(ops.lt),
    "torch.ge": _compare(ops.ge),
    "torch.le": _compare(ops.le),
    "torch.logical_not": ops.logical_not,
    "torch.logical_and": ops.logical_and,
    "torch.logical_or": ops.logical_or,
}
METHODS: Dict[str, Adapter] = {
    "add": add,
    "sub": sub,
    "mul": mul,
    "div": div,
    "divide": div,
    "true_divide": div,
    "subtract": sub,
    "matmul": matmul,
    "bmm": bmm,
    "baddbmm": baddbmm,
    "outer": outer,
    "pow": pow_,
    "exp": ops.exp,
    "sqrt": ops.sqrt,
    "rsqrt": ops.rsqrt,
    "abs": ops.abs,
    "cos": ops.cos,
    "sin": ops.sin,
    "neg": ops.neg,
    "log": ops.log,
    "erf": ops.erf,
    "square": ops.square,
    "clamp": clamp,
    "clip": clamp,
    "eq": _binary("eq"),
    "ne": _binary("ne"),
    "lt": _binary("lt"),
    "le": _binary("le"),
    "gt": _binary("gt"),
    "ge": _binary("ge"),
    "logical_not": ops.logical_not,
    "__and__": _binary("and"),
    "__or__": _binary("or"),
    "__xor__": _binary("xor"),
}
