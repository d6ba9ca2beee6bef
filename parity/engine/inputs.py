"""Seeded input specs that give bit-identical arrays on every run and machine.

Values come from the raw 64-bit stream of PCG64, seeded by ``SeedSequence(seed)`` spawned with
the input's name, and are turned into numbers by fixed arithmetic of our own (not numpy's
distribution samplers, whose algorithms may change between releases). So adding an input does
not change the others, and the same seed gives the same bits everywhere.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Dict, List, Mapping, Optional, Tuple

import numpy as np

from ..errors import ParityUsageError
from ..judge.dtypes import cast, is_floating, round_through

__all__ = [
    "InputSpec",
    "randn",
    "uniform",
    "randint",
    "Inputs",
    "materialize",
    "seeded_stream",
    "unit_floats",
    "normal_floats",
]

_FLOATS = ("float16", "float32", "float64", "bfloat16")
_INTS = ("int8", "int16", "int32", "int64", "uint8", "bool")


def seeded_stream(seed: int, key: str) -> np.random.PCG64:
    """The bit generator for input ``key`` under ``seed``."""
    spawn_key = (zlib.crc32(key.encode("utf-8")),)
    return np.random.PCG64(np.random.SeedSequence(int(seed), spawn_key=spawn_key))


def unit_floats(stream: np.random.PCG64, count: int) -> np.ndarray:
    """``count`` float64 values in [0, 1) from the top 53 bits of each raw draw."""
    raw = stream.random_raw(count).astype(np.uint64)
    return (raw >> np.uint64(11)).astype(np.float64) * (1.0 / 9007199254740992.0)


def normal_floats(stream: np.random.PCG64, count: int) -> np.ndarray:
    """Box-Muller on our own uniforms: a fixed recipe, unlike numpy's ziggurat."""
    half = (count + 1) // 2
    u1 = 1.0 - unit_floats(stream, half)  # (0, 1]: log is finite
    u2 = unit_floats(stream, half)
    radius = np.sqrt(-2.0 * np.log(u1))
    angle = 2.0 * np.pi * u2
    return np.concatenate([radius * np.cos(angle), radius * np.sin(angle)])[:count]


def _check_shape(shape) -> Tuple[int, ...]:
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    if not isinstance(shape, (tuple, list)) or not all(
        isinstance(d, (int, np.integer)) and not isinstance(d, bool) for d in shape
    ):
        raise ParityUsageError(f"input shape must be a tuple of ints, got {shape!r}")
    shape = tuple(int(d) for d in shape)
    if any(d < 0 for d in shape):
        raise ParityUsageError(f"input shape must not have negative sizes, got {shape}")
    return shape


class InputSpec:
    """A recipe for one input array: shape, dtype and distribution."""

    shape: Tuple[int, ...]
    dtype: str

    def generate(self, stream: np.random.PCG64) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def _cast(self, values: np.ndarray) -> np.ndarray:
        """The float64 draws rounded to the spec's dtype (bfloat16 as ``ml_dtypes``', as parity carries it)."""
        return cast(values.reshape(self.shape), self.dtype)


@dataclass(frozen=True)
class _Normal(InputSpec):
    shape: Tuple[int, ...]
    dtype: str = "float32"
    mean: float = 0.0
    std: float = 1.0

    def generate(self, stream):
        count = int(np.prod(self.shape, dtype=np.int64))
        return self._cast(self.mean + self.std * normal_floats(stream, count))

    def __str__(self):
        return f"{self.dtype}{list(self.shape)} ~ N({self.mean:g}, {self.std:g})"


@dataclass(frozen=True)
class _Uniform(InputSpec):
    shape: Tuple[int, ...]
    low: float = 0.0
    high: float = 1.0
    dtype: str = "float32"

    def generate(self, stream):
        count = int(np.prod(self.shape, dtype=np.int64))
        values = self._cast(self.low + (self.high - self.low) * unit_floats(stream, count))
        # Rounding to a narrow dtype can reach ``high``: keep the interval half-open.
        below = np.nextafter(np.asarray(self.high, values.dtype), np.asarray(self.low, values.dtype))
        return np.minimum(values, below)

    def __str__(self):
        return f"{self.dtype}{list(self.shape)} ~ U({self.low:g}, {self.high:g})"


@dataclass(frozen=True)
class _RandInt(InputSpec):
    shape: Tuple[int, ...]
    low: int = 0
    high: int = 2
    dtype: str = "int64"

    def generate(self, stream):
        count = int(np.prod(self.shape, dtype=np.int64))
        span = np.uint64(self.high - self.low)
        raw = stream.random_raw(count).astype(np.uint64) % span
        return (raw.astype(np.int64) + self.low).reshape(self.shape).astype(self.dtype)

    def __str__(self):
        return f"{self.dtype}{list(self.shape)} ~ randint[{self.low}, {self.high})"


def _check_dtype(dtype: str, allowed) -> str:
    try:
        name = str(np.dtype(dtype)) if dtype != "bfloat16" else dtype
    except TypeError:
        raise ParityUsageError(f"unknown dtype {dtype!r}; expected one of {', '.join(allowed)}") from None
    if name not in allowed:
        raise ParityUsageError(f"dtype {dtype!r} is not one of {', '.join(allowed)}")
    return name


def randn(shape, *, dtype: str = "float32", mean: float = 0.0, std: float = 1.0) -> InputSpec:
    """Normal samples ``N(mean, std**2)`` of ``shape``."""
    return _Normal(_check_shape(shape), _check_dtype(dtype, _FLOATS), float(mean), float(std))


def uniform(shape, low: float = 0.0, high: float = 1.0, *, dtype: str = "float32") -> InputSpec:
    """Uniform samples in ``[low, high)`` of ``shape``."""
    if not high > low:
        raise ParityUsageError(f"uniform needs low < high, got low={low!r}, high={high!r}")
    return _Uniform(_check_shape(shape), float(low), float(high), _check_dtype(dtype, _FLOATS))


def randint(shape, low: int, high: int, *, dtype: str = "int64") -> InputSpec:
    """Integers in ``[low, high)``, for labels and indices."""
    if not int(high) > int(low):
        raise ParityUsageError(f"randint needs low < high, got low={low!r}, high={high!r}")
    name = _check_dtype(dtype, _INTS)
    smallest, largest = (0, 1) if name == "bool" else (int(np.iinfo(name).min), int(np.iinfo(name).max))
    if not (smallest <= int(low) and int(high) - 1 <= largest):
        raise ParityUsageError(f"randint range [{low}, {high}) does not fit {name} ([{smallest}, {largest}])")
    return _RandInt(_check_shape(shape), int(low), int(high), name)


@dataclass(frozen=True)
class Inputs:
    """Materialised inputs: positional arrays, keyword arrays, and how each was made."""

    args: Tuple[np.ndarray, ...]
    kwargs: Dict[str, np.ndarray]
    descriptions: Dict[str, str]

    def named(self):
        """(name, array) for every input: ``input[0]``... then keyword names."""
        for i, array in enumerate(self.args):
            yield f"input[{i}]", array
        yield from self.kwargs.items()

    def describe(self, seed: int) -> str:
        parts = [f"{name}: {text}" for name, text in self.descriptions.items()]
        return f"seed {seed} -> " + "; ".join(parts)

    def notes(self) -> List[str]:
        """What a reader of the result must know about the inputs: those holding NaN or Inf."""
        found = []
        for name, array in self.named():
            if array.dtype.kind not in "fc":
                continue
            nan, inf = int(np.count_nonzero(np.isnan(array))), int(np.count_nonzero(np.isinf(array)))
            if nan or inf:
                found.append(f"{name} holds {nan} NaN and {inf} Inf of {array.size} elements")
        if not found:
            return []
        return [
            "non-finite inputs: " + "; ".join(found) + ". Output and gradient elements that are NaN/Inf "
            "at the same positions on both sides count as agreeing: what is computed from them goes unchecked"
        ]


def _one(value, key: str, seed: int):
    if isinstance(value, InputSpec):
        return value.generate(seeded_stream(seed, key)), str(value)
    if isinstance(value, np.ndarray):
        return value, f"{value.dtype}{list(value.shape)} (given array)"
    if isinstance(value, (np.generic, int, float, bool)):
        array = np.asarray(value)
        return array, f"{array.dtype} scalar (given)"
    raise ParityUsageError(
        f"input {key!r} must be a numpy array or a parity input spec (parity.randn, "
        f"parity.uniform, parity.randint), got {type(value).__module__}.{type(value).__qualname__}"
    )


def materialize(inputs, seed: int) -> Inputs:
    """Turn one input, a tuple/list of inputs, or a dict of keyword inputs into arrays."""
    if isinstance(inputs, Mapping):
        kwargs, descriptions = {}, {}
        for key, value in inputs.items():
            if not isinstance(key, str) or not key.isidentifier():
                raise ParityUsageError(f"keyword input names must be identifiers, got {key!r}")
            kwargs[key], descriptions[key] = _one(value, key, seed)
        return Inputs((), kwargs, descriptions)
    items = tuple(inputs) if isinstance(inputs, (tuple, list)) else (inputs,)
    args, descriptions = [], {}
    for i, value in enumerate(items):
        key = f"input[{i}]"
        array, descriptions[key] = _one(value, key, seed)
        args.append(array)
    return Inputs(tuple(args), {}, descriptions)


def per_side_inputs(data, ms_dtype: Optional[str], torch_dtype: Optional[str]):
    """Each side's inputs in its own dtype: ``(ms_data, torch_data, notes)``. Where a side computes
    in a half dtype (see :func:`cell_dtype` and ``backends.torch.compute_dtype``), its floating
    inputs are cast to it, as its first layer expects them. Both sides get the same values: those
    of the spec rounded through every half dtype in play (exactly representable in each)."""
    halves = [d for d in (torch_dtype, ms_dtype) if d]
    if not halves:
        return data, data, []

    def side(own):
        def convert(array):
            if not is_floating(array.dtype) or array.dtype.kind == "c":
                return array
            values = round_through(array, halves)
            return cast(values, own) if own else values

        return Inputs(
            tuple(convert(a) for a in data.args), {k: convert(a) for k, a in data.kwargs.items()}, data.descriptions
        )

    ms_data, torch_data = side(ms_dtype), side(torch_dtype)
    notes = []
    if ms_dtype != torch_dtype:
        notes.append(
            f"MindSpore computes in {ms_dtype or 'float32'}, PyTorch in {torch_dtype or 'float32'}: give both "
            "sides one precision (Cell.to_float(mindspore.float16) and Module.half(), or bfloat16 on both)"
        )
    floats = [name for name, array in data.named() if is_floating(array.dtype) and array.dtype.kind != "c"]
    if floats:
        shown = {
            label: next(a for n, a in inputs.named() if n == floats[0]).dtype.name
            for label, inputs in (("MindSpore", ms_data), ("PyTorch", torch_data))
        }
        notes.append(
            f"half precision: floating inputs given to MindSpore as {shown['MindSpore']}, to PyTorch as "
            f"{shown['PyTorch']} (the dtype each side computes in), the same values on both sides"
        )
    return ms_data, torch_data, notes
