"""Dtypes: bfloat16 in numpy, half precision, and the dtype a side computes in.

numpy has no bfloat16; ``ml_dtypes`` gives it one (the type JAX uses), and every bfloat16 array in
parity is of that type, whichever framework made it: a tensor crosses as its 16 raw bits, never
through float32. MindSpore's own ``asnumpy()`` bfloat16 type is viewed as ``ml_dtypes``'. No
framework is imported here: a Cell's dtype is read from its flags and parameters.
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, Optional, Set

import numpy as np
import numpy.typing as npt

__all__ = [
    "HALF",
    "bfloat16",
    "is_floating",
    "is_half",
    "eps",
    "as_bfloat16",
    "narrowest",
    "round_through",
    "cast",
    "dtype_name",
    "cell_dtype",
]

HALF = ("float16", "bfloat16")


def bfloat16() -> np.dtype[Any]:
    """numpy's bfloat16 dtype (``ml_dtypes``), imported when first needed."""
    import ml_dtypes

    return np.dtype(ml_dtypes.bfloat16)


def is_floating(dtype: npt.DTypeLike) -> bool:
    """Floating or complex, bfloat16 included (``ml_dtypes`` types have numpy kind 'V')."""
    resolved = np.dtype(dtype)
    return resolved.kind in "fc" or resolved.name == "bfloat16"


def dtype_name(dtype: npt.DTypeLike) -> str:
    """``"float16"``, ``"bfloat16"``... for a numpy dtype, an array's or a name."""
    return dtype if isinstance(dtype, str) else np.dtype(dtype).name


def is_half(dtype: npt.DTypeLike) -> bool:
    return dtype_name(dtype) in HALF


def eps(dtype: npt.DTypeLike) -> float:
    """Machine epsilon of a floating dtype, bfloat16 included."""
    name = dtype_name(dtype)
    if name == "bfloat16":
        return 2.0**-7
    return float(np.finfo(name).eps)


def as_bfloat16(array: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """``array`` with any 2-byte dtype named bfloat16 (MindSpore's) viewed as ``ml_dtypes``'."""
    if array.dtype.name == "bfloat16" and array.dtype != bfloat16():
        return array.view(np.int16).view(bfloat16())
    return array


def narrowest(dtypes: Iterable[str]) -> Optional[str]:
    """The half dtype among ``dtypes`` (float16 before bfloat16 when both), else None."""
    found = [d for d in HALF if d in set(dtypes)]
    return found[0] if found else None


def round_through(array: npt.NDArray[Any], dtypes: Iterable[str]) -> npt.NDArray[Any]:
    """``array`` rounded to each half dtype of ``dtypes`` in turn and back to its own dtype: values
    that each of those dtypes holds exactly (when they hold the range)."""
    for name in dtypes:
        if name in HALF and array.dtype.name != name:
            array = array.astype(bfloat16() if name == "bfloat16" else name).astype(array.dtype)
    return array


def cast(array: npt.NDArray[Any], name: str) -> npt.NDArray[Any]:
    """``array`` as dtype ``name`` (bfloat16 through ``ml_dtypes``)."""
    return array.astype(bfloat16() if name == "bfloat16" else name)


def cell_dtype(cell: Any) -> Optional[str]:
    """The half dtype a MindSpore Cell computes in, read without importing MindSpore: ``to_float``'s
    (a flag set on the Cell and every sub-Cell), else the one flagged on every sub-Cell that holds
    parameters (``auto_mixed_precision``'s O3 wraps the converted Cell in one of its own, which has
    no flag), else that of all its floating parameters when they share a half one; else None
    (float32, mixed, or nothing to tell by). ``cell``: a ``mindspore.nn.Cell`` (MindSpore has no
    type information), or anything else, which tells nothing."""
    flags = cell.get_flags() if hasattr(cell, "get_flags") else {}
    if any(flags.get(flag) for flag in _FLAGS):
        return _flagged(cell)
    owners: Set[Optional[str]] = (
        {_flagged(sub, "") for _, sub in cell.cells_and_names() if list(sub.get_parameters(expand=False))}
        if hasattr(cell, "cells_and_names")
        else set()
    )
    if len(owners) == 1 and owners <= set(HALF):
        return owners.pop()
    names = {_ms_dtype_name(p.dtype) for p in cell.get_parameters()}
    found = {d for d in names if d.startswith(("float", "bfloat"))}
    return found.pop() if len(found) == 1 and found <= set(HALF) else None


_FLAGS: Dict[str, Optional[str]] = {"bf16": "bfloat16", "fp16": "float16", "fp32": None}


def _flagged(cell: Any, unset: Optional[str] = None) -> Optional[str]:
    """The dtype ``to_float`` flagged ``cell`` with (None for float32), else ``unset``."""
    flags: Dict[str, Any] = cell.get_flags()
    return next((name for flag, name in _FLAGS.items() if flags.get(flag)), unset)


def _ms_dtype_name(dtype: object) -> str:
    name = str(dtype).lower()
    return {"float": "float32"}.get(name, name)
