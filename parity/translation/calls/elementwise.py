"""Elementwise functions in the call table that map one to one onto a MindSpore operator of the
same meaning, as functions and as Tensor methods (``torch.floor``, ``x.log1p()``...): the rounding
functions, the inverse and hyperbolic trigonometric functions, the logarithms and exponentials of
other bases, and the special functions MindSpore has on the CPU. Each was checked against PyTorch,
values and gradients, by ``benchmarks/opinfo_sweep.py`` on PyTorch's own samples."""

from __future__ import annotations

from typing import Dict

from mindspore import ops

from .arguments import Adapter, Entry

__all__ = ["FUNCTIONS", "METHODS"]

# Written out as literals: `parity scan` reads these tables without importing them.
METHODS: Dict[str, Adapter] = {
    "floor": ops.floor,
    "ceil": ops.ceil,
    "trunc": ops.trunc,
    "sign": ops.sign,
    "acos": ops.acos,
    "asin": ops.asin,
    "atan": ops.atan,
    "acosh": ops.acosh,
    "asinh": ops.asinh,
    "atanh": ops.atanh,
    "sinh": ops.sinh,
    "cosh": ops.cosh,
    "tan": ops.tan,
    "expm1": ops.expm1,
    "exp2": ops.exp2,
    "log1p": ops.log1p,
    "log2": ops.log2,
    "log10": ops.log10,
    "reciprocal": ops.reciprocal,
    "erfc": ops.erfc,
    "lgamma": ops.lgamma,
    "digamma": ops.digamma,
    "isnan": ops.isnan,
    "isinf": ops.isinf,
    "isfinite": ops.isfinite,
    "atan2": ops.atan2,
    "hypot": ops.hypot,
    "logaddexp": ops.logaddexp,
    "logical_xor": ops.logical_xor,
}
FUNCTIONS: Dict[str, Entry] = {
    "torch.floor": ops.floor,
    "torch.ceil": ops.ceil,
    "torch.trunc": ops.trunc,
    "torch.sign": ops.sign,
    "torch.acos": ops.acos,
    "torch.asin": ops.asin,
    "torch.atan": ops.atan,
    "torch.acosh": ops.acosh,
    "torch.asinh": ops.asinh,
    "torch.atanh": ops.atanh,
    "torch.sinh": ops.sinh,
    "torch.cosh": ops.cosh,
    "torch.tan": ops.tan,
    "torch.expm1": ops.expm1,
    "torch.exp2": ops.exp2,
    "torch.log1p": ops.log1p,
    "torch.log2": ops.log2,
    "torch.log10": ops.log10,
    "torch.reciprocal": ops.reciprocal,
    "torch.erfc": ops.erfc,
    "torch.lgamma": ops.lgamma,
    "torch.digamma": ops.digamma,
    "torch.isnan": ops.isnan,
    "torch.isinf": ops.isinf,
    "torch.isfinite": ops.isfinite,
    "torch.atan2": ops.atan2,
    "torch.hypot": ops.hypot,
    "torch.logaddexp": ops.logaddexp,
    "torch.logical_xor": ops.logical_xor,
}
