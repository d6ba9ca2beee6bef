"""Half precision: bfloat16 in numpy, the dtype each side computes in, and the golden judge.

numpy has no bfloat16; ``ml_dtypes`` gives it one (the type JAX uses), and every bfloat16 array in
parity is of that type, whichever framework made it: a tensor crosses as its 16 raw bits, never
through float32. MindSpore's own ``asnumpy()`` bfloat16 type is viewed as ``ml_dtypes``'.

The golden judge (see the README, "Half precision"): a tensor computed in float16 or bfloat16
above half the dtype's ``assert_close`` tolerance is judged against a float64 run of PyTorch's
module (the golden): MindSpore's error against it may be at most ``GOLDEN_FACTOR`` times PyTorch's
own, as a relative L2 norm and as the greatest element, PyTorch's counted at least the dtype's unit
roundoff. Where PyTorch's own mirrored runs flip a ReLU/max-pool tie, its error counts their jumps
and the tensor is judged by its L2 error alone. No framework is imported here.
"""

from __future__ import annotations

import math
import re
import sys
from dataclasses import dataclass
from typing import Iterable, Optional

import numpy as np

__all__ = ["HALF", "GOLDEN_FACTOR", "HALF_ULPS", "Golden", "bfloat16", "is_floating", "is_half", "eps", "as_bfloat16",
           "narrowest", "round_through", "cast", "dtype_name", "cell_dtype", "golden_verdict",
           "per_side_inputs", "missing_kernel"]

HALF = ("float16", "bfloat16")
# MindSpore's error against the float64 golden may be this many times PyTorch's own (relative L2
# norm, and greatest element over the tensor's greatest magnitude). Measured in float16 (an MLP, a
# CNN and a CNN with BatchNorm, LayerNorm and GELU; 8 seeds each; README, "Half precision"):
# identical networks at most 2.1x (L2) and 2.6x (greatest element); MindSpore moved by half an ulp
# at every layer output and gradient (about two roundings more per layer) at most 5.2x and 5.5x;
# a wrong activation 25x (L2, median over the tensors) and up to 6000x.
GOLDEN_FACTOR = 8.0
# The mirrored pair of PyTorch runs that finds ReLU/max-pool ties within rounding of their threshold
# moves every input, weight, layer output and gradient by this many units in the last place of the
# dtype it is computed in (and as much at the tensor's own scale).
HALF_ULPS = 1.0
FLIP_FLOOR = 4.0  # a jump is more than this many times HALF_ULPS at the element's scale and the tensor's


def bfloat16():
    """numpy's bfloat16 dtype (``ml_dtypes``), imported when first needed."""
    import ml_dtypes

    return np.dtype(ml_dtypes.bfloat16)


def is_floating(dtype) -> bool:
    """Floating or complex, bfloat16 included (``ml_dtypes`` types have numpy kind 'V')."""
    dtype = np.dtype(dtype)
    return dtype.kind in "fc" or dtype.name == "bfloat16"


def dtype_name(dtype) -> str:
    """``"float16"``, ``"bfloat16"``... for a numpy dtype, an array's or a name."""
    return dtype if isinstance(dtype, str) else np.dtype(dtype).name


def is_half(dtype) -> bool:
    return dtype_name(dtype) in HALF


def eps(dtype) -> float:
    """Machine epsilon of a floating dtype, bfloat16 included."""
    name = dtype_name(dtype)
    if name == "bfloat16":
        return 2.0 ** -7
    return float(np.finfo(name).eps)


def as_bfloat16(array: np.ndarray) -> np.ndarray:
    """``array`` with any 2-byte dtype named bfloat16 (MindSpore's) viewed as ``ml_dtypes``'."""
    if array.dtype.name == "bfloat16" and array.dtype != bfloat16():
        return array.view(np.int16).view(bfloat16())
    return array


def narrowest(dtypes: Iterable[str]) -> Optional[str]:
    """The half dtype among ``dtypes`` (float16 before bfloat16 when both), else None."""
    found = [d for d in HALF if d in set(dtypes)]
    return found[0] if found else None


def round_through(array: np.ndarray, dtypes: Iterable[str]) -> np.ndarray:
    """``array`` rounded to each half dtype of ``dtypes`` in turn and back to its own dtype: values
    that each of those dtypes holds exactly (when they hold the range)."""
    for name in dtypes:
        if name in HALF and array.dtype.name != name:
            array = array.astype(bfloat16() if name == "bfloat16" else name).astype(array.dtype)
    return array


def cast(array: np.ndarray, name: str) -> np.ndarray:
    """``array`` as dtype ``name`` (bfloat16 through ``ml_dtypes``)."""
    return array.astype(bfloat16() if name == "bfloat16" else name)


def per_side_inputs(data, ms_dtype: Optional[str], torch_dtype: Optional[str]):
    """Each side's inputs in its own dtype: ``(ms_data, torch_data, notes)``. Where a side computes
    in a half dtype (see :func:`cell_dtype` and ``backends.torch.compute_dtype``), its floating
    inputs are cast to it, as its first layer expects them. Both sides get the same values: those
    of the spec rounded through every half dtype in play (exactly representable in each)."""
    halves = [d for d in (torch_dtype, ms_dtype) if d]
    if not halves:
        return data, data, []
    from .inputs import Inputs

    def side(own):
        def convert(array):
            if not is_floating(array.dtype) or array.dtype.kind == "c":
                return array
            values = round_through(array, halves)
            return cast(values, own) if own else values
        return Inputs(tuple(convert(a) for a in data.args), {k: convert(a) for k, a in data.kwargs.items()},
                      data.descriptions)

    ms_data, torch_data = side(ms_dtype), side(torch_dtype)
    notes = []
    if ms_dtype != torch_dtype:
        notes.append(f"MindSpore computes in {ms_dtype or 'float32'}, PyTorch in {torch_dtype or 'float32'}: give both "
                     "sides one precision (Cell.to_float(mindspore.float16) and Module.half(), or bfloat16 on both)")
    floats = [name for name, array in data.named() if is_floating(array.dtype) and array.dtype.kind != "c"]
    if floats:
        shown = {label: next(a for n, a in inputs.named() if n == floats[0]).dtype.name
                 for label, inputs in (("MindSpore", ms_data), ("PyTorch", torch_data))}
        notes.append(f"half precision: floating inputs given to MindSpore as {shown['MindSpore']}, to PyTorch as "
                     f"{shown['PyTorch']} (the dtype each side computes in), the same values on both sides")
    return ms_data, torch_data, notes


_KERNEL_OP = re.compile(r"operator\[(\w+)\]|primitive\[(\w+)\]|^\s*(\w+) does not support this kernel data type",
                        re.MULTILINE)
_KERNEL_DEVICE = re.compile(r"Select (\w+) operator")


def missing_kernel(label: str, exc: BaseException, what: str):
    """A :class:`ParityUnsupported` for a MindSpore error that says a kernel lacks a half dtype
    ("Select CPU operator[MatMul] fail! Unsupported data type! ... but get input[BFloat16 ...]"),
    naming the dtype and the operator; None for any other error."""
    from .errors import ParityUnsupported

    text = str(exc)
    if label != "MindSpore" or not ("Unsupported data type" in text or "does not support this kernel data type" in text
                                    or "must be a type of" in text):
        return None
    dtype = "bfloat16" if "BFloat16" in text else "float16" if re.search(r"but (got|get)[^\n]*Float16", text) else None
    found = _KERNEL_OP.search(text)
    if dtype is None or found is None:
        return None
    op = next(g for g in found.groups() if g)
    device = _KERNEL_DEVICE.search(text)
    version = getattr(sys.modules.get("mindspore"), "__version__", "")
    lines = [line.strip() for line in text.splitlines()
             if line.strip() and not line.strip().startswith(("--", "- C++", "C++ Call Stack"))]
    shown = "\n    ".join(lines[:4])
    where = f" on {device.group(1)}" if device else ""
    return ParityUnsupported(
        f"MindSpore {version} has no {dtype} kernel for {op}{where} (raised during {what}):\n    {shown}\n"
        f"Check this pair in float32 (or float16) here, or where MindSpore has {dtype} kernels; "
        "docs/known-mismatches.md lists the layers measured to lack them.")


def cell_dtype(cell) -> Optional[str]:
    """The half dtype a MindSpore Cell computes in, read without importing MindSpore: ``to_float``'s
    (a flag set on the Cell and every sub-Cell), else that of all its floating parameters when they
    share a half one; else None (float32, mixed, or no parameters to tell by)."""
    flags = cell.get_flags() if hasattr(cell, "get_flags") else {}
    for flag, name in (("bf16", "bfloat16"), ("fp16", "float16"), ("fp32", None)):
        if flags.get(flag):
            return name
    found = {_ms_dtype_name(p.dtype) for p in cell.get_parameters()}
    found = {d for d in found if d.startswith(("float", "bfloat"))}
    return found.pop() if len(found) == 1 and found <= set(HALF) else None


def _ms_dtype_name(dtype) -> str:
    name = str(dtype).lower()
    return {"float": "float32"}.get(name, name)


@dataclass(frozen=True)
class Golden:
    """The golden verdict of one half-precision tensor: MindSpore's and PyTorch's errors against
    the float64 golden, as relative L2 norms (``*_error``) and as the greatest element over the
    golden's greatest magnitude (``*_max``). ``floor`` is the dtype's unit roundoff: a PyTorch
    error below it counts as it (an exact PyTorch result leaves MindSpore a rounding's room)."""

    dtype: str
    factor: float
    floor: float
    ms_error: float
    torch_error: float
    ms_max: float
    torch_max: float
    tolerance_margin: float = 0.0  # greatest difference / what the tolerance alone allows
    total: int = 0
    flips: int = 0  # elements whose jump in PyTorch's own mirrored runs exceeds its error (ReLU/max-pool ties)

    @property
    def l2_margin(self) -> float:
        return _ratio(self.ms_error, self.factor * max(self.torch_error, self.floor))

    @property
    def max_margin(self) -> float:
        return _ratio(self.ms_max, self.factor * max(self.torch_max, self.floor))

    @property
    def margin(self) -> float:
        """The greater of the two where PyTorch's runs flip no tie; the L2 one alone where they do
        (which elements flip depends on the last bit of each side's rounding)."""
        return self.l2_margin if self.flips else max(self.l2_margin, self.max_margin)

    @property
    def passed(self) -> bool:
        return self.tolerance_margin <= 1.0 or self.margin <= 1.0

    @property
    def final_margin(self) -> float:
        """The nearer to passing of the tolerance alone and the golden judge."""
        return min(self.tolerance_margin, self.margin)


def _ratio(value: float, allowed: float) -> float:
    if value == 0:
        return 0.0
    return value / allowed if allowed > 0 else math.inf


def _errors(value: np.ndarray, golden: np.ndarray, keep: np.ndarray):
    diff = np.abs(value - golden)[keep]
    ref = np.abs(golden[keep])
    norm, top = float(np.linalg.norm(ref)), float(ref.max()) if ref.size else 0.0
    l2 = float(np.linalg.norm(diff))
    worst = float(diff.max()) if diff.size else 0.0
    return (l2 / norm if norm else (0.0 if l2 == 0 else math.inf),
            worst / top if top else (0.0 if worst == 0 else math.inf))


def golden_verdict(ms: np.ndarray, torch: np.ndarray, golden: np.ndarray, dtype: str, tolerance_margin: float,
                   jumps: Optional[np.ndarray] = None, factor: float = GOLDEN_FACTOR) -> Golden:
    """Judge ``ms`` and ``torch`` (same shape, any floating dtypes) against ``golden`` (float64),
    over the elements finite on all three (non-finite ones are judged by the tolerance route).
    ``jumps``: per element, ``|plus + minus|`` of PyTorch's mirrored runs' movements (rounding where
    it moves smoothly, the jump behind a flipped ReLU/max-pool tie): PyTorch's error at an element
    is at least that, since either side of a tie is as right in this precision."""
    a, b, g = (np.asarray(x).astype(np.float64) for x in (ms, torch, golden))
    keep = np.isfinite(a) & np.isfinite(b) & np.isfinite(g)
    own = np.abs(b - g)
    unit, flips = eps(dtype) / 2, 0
    if jumps is not None:
        keep &= np.isfinite(jumps)
        scale = float(np.sqrt(np.mean(np.square(b[keep])))) if keep.any() else 0.0
        flipped = keep & (jumps > FLIP_FLOOR * HALF_ULPS * eps(dtype) * (np.abs(b) + scale))
        flips = int(np.count_nonzero(flipped))
        if flips:  # PyTorch's error at each element counts what its own runs jump there
            own = np.maximum(own, jumps)
    ms_error, ms_max = _errors(a, g, keep)
    torch_error, torch_max = _errors(g + own, g, keep)
    return Golden(dtype, factor, unit, ms_error, torch_error, ms_max, torch_max, tolerance_margin,
                  int(np.asarray(golden).size), flips)
