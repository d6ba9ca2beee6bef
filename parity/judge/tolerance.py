"""Tolerances as a type: ``Tolerance(rtol, atol)``, dtype defaults, per-layer overrides.

An element passes when ``|mindspore - torch| <= atol + rtol * |torch|``, the rule of
``torch.testing.assert_close``. Every resolved tolerance carries the name of its source, so
a failure can say where the numbers came from.
"""

from __future__ import annotations

import difflib
import fnmatch
import math
from dataclasses import dataclass, field
from typing import Collection, Iterable, List, Mapping, Optional, Tuple, Union

from ..errors import ParityUsageError

__all__ = [
    "Tolerance",
    "ToleranceSpec",
    "DeviceDefaults",
    "DTYPE_DEFAULTS",
    "resolve",
    "dtype_default",
    "check_globs_used",
]


@dataclass(frozen=True)
class Tolerance:
    """Relative and absolute tolerance, given together or not at all."""

    rtol: float
    atol: float

    def __post_init__(self) -> None:
        for label in ("rtol", "atol"):
            value = getattr(self, label)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ParityUsageError(f"Tolerance {label} must be a number, got {value!r}")
            if not math.isfinite(value) or value < 0:
                raise ParityUsageError(f"Tolerance {label} must be finite and >= 0, got {value!r}")

    def __str__(self) -> str:
        return f"rtol={self.rtol:g}, atol={self.atol:g}"


# The defaults of torch.testing.assert_close, by dtype name.
DTYPE_DEFAULTS: Mapping[str, Tolerance] = {
    "float16": Tolerance(1e-3, 1e-5),
    "bfloat16": Tolerance(1.6e-2, 1e-5),
    "float32": Tolerance(1.3e-6, 1e-5),
    "float64": Tolerance(1e-7, 1e-7),
    "complex64": Tolerance(1.3e-6, 1e-5),
    "complex128": Tolerance(1e-7, 1e-7),
}
_EXACT = Tolerance(0.0, 0.0)

ToleranceLike = Union[None, Tolerance, Tuple[float, float], Mapping[str, object]]


def _coerce(value: object, where: str) -> Tolerance:
    if isinstance(value, Tolerance):
        return value
    if isinstance(value, (tuple, list)) and len(value) == 2:
        return Tolerance(*value)
    if isinstance(value, Mapping) and set(value) == {"rtol", "atol"}:
        return Tolerance(value["rtol"], value["atol"])
    raise ParityUsageError(
        f"{where}: expected Tolerance(rtol, atol), an (rtol, atol) pair or {{'rtol': ..., 'atol': ...}}, got {value!r}"
    )


@dataclass(frozen=True)
class ToleranceSpec:
    """What a check was told: one tolerance for everything and/or name-glob overrides.

    ``overrides`` maps a glob over tensor names (parameter names such as ``features.3.*``, or
    ``output*``) to a tolerance; the most specific (longest) matching glob wins.
    """

    default: Optional[Tolerance] = None
    overrides: Tuple[Tuple[str, Tolerance], ...] = ()
    source: str = "check(tolerance=...)"
    _sorted: Tuple[Tuple[str, Tolerance], ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        ordered = tuple(sorted(self.overrides, key=lambda item: -len(item[0])))
        object.__setattr__(self, "_sorted", ordered)

    @classmethod
    def parse(
        cls, value: Union[ToleranceLike, ToleranceSpec], *, source: str = "check(tolerance=...)"
    ) -> ToleranceSpec:
        """Accept a Tolerance, an (rtol, atol) pair, or a mapping of globs to either."""
        if value is None:
            return cls(source=source)
        if isinstance(value, ToleranceSpec):
            return value
        if isinstance(value, Mapping) and set(value) & {"rtol", "atol"} and set(value) != {"rtol", "atol"}:
            raise ParityUsageError(f"{source}: give rtol and atol together, got {dict(value)!r}")
        if isinstance(value, Mapping) and set(value) != {"rtol", "atol"}:
            default = None
            overrides: List[Tuple[str, Tolerance]] = []
            for glob, item in value.items():
                if not isinstance(glob, str):
                    raise ParityUsageError(f"{source}: tolerance keys must be name globs, got {glob!r}")
                tol = _coerce(item, f"{source}[{glob!r}]")
                if glob == "*":
                    default = tol
                else:
                    overrides.append((glob, tol))
            return cls(default, tuple(overrides), source)
        return cls(_coerce(value, source), (), source)

    def lookup(self, names: Collection[str]) -> Optional[Tuple[Tolerance, str]]:
        """This spec's tolerance for a tensor known by ``names``, or None if it says nothing."""
        for glob, tol in self.overrides:  # a key written exactly as a name is no pattern
            if glob in names:
                return tol, f"{self.source}[{glob!r}]"
        for glob, tol in self._sorted:
            if any(fnmatch.fnmatchcase(name, glob) for name in names if name):
                return tol, f"{self.source}[{glob!r}]"
        if self.default is not None:
            return self.default, self.source
        return None

    def unmatched(self, names: Iterable[str]) -> List[str]:
        """The globs (``"*"`` aside) that match none of ``names``, in the order they were given."""
        given = [n for n in names if n]
        return [
            glob
            for glob, _ in self.overrides
            if glob not in given and not any(fnmatch.fnmatchcase(n, glob) for n in given)
        ]


@dataclass(frozen=True)
class DeviceDefaults:
    """The last link of a chain: the dtype defaults on the device a check ran on, where they differ
    from :data:`DTYPE_DEFAULTS` (``by_dtype`` maps a dtype to its tolerance and source). It answers
    only what no spec above it answered (see :func:`parity.judge.devices.profile`)."""

    by_dtype: Mapping[str, Tuple[Tolerance, str]] = field(default_factory=dict)

    def default(self, dtype: str) -> Tuple[Tolerance, str]:
        return self.by_dtype[dtype] if dtype in self.by_dtype else dtype_default(dtype)


def resolve(
    chain: Iterable[Union[ToleranceSpec, DeviceDefaults]], names: Collection[str], dtype: str
) -> Tuple[Tolerance, str]:
    """Walk ``chain`` (most specific spec first); the dtype default when none says anything, the
    device's when the chain ends with :class:`DeviceDefaults`."""
    for spec in chain:
        if isinstance(spec, DeviceDefaults):
            return spec.default(dtype)
        found = spec.lookup(names)
        if found is not None:
            return found
    return dtype_default(dtype)


def dtype_default(dtype: str) -> Tuple[Tolerance, str]:
    """The assert_close default for ``dtype``; exact comparison for integers and booleans."""
    if dtype in DTYPE_DEFAULTS:
        return DTYPE_DEFAULTS[dtype], f"{dtype} default"
    return _EXACT, f"{dtype}: exact"


_NAMES_SHOWN = 40


def check_globs_used(spec: ToleranceSpec, names: Iterable[str]) -> None:
    """A glob of ``spec`` other than ``"*"`` that matches none of the compared tensors' ``names``
    is a usage error: the tolerance meant for some tensors applied to none."""
    known = sorted({n for n in names if n})
    unused = spec.unmatched(known)
    if not unused:
        return
    lines = []
    for glob in unused:
        close = difflib.get_close_matches(glob, known, n=3, cutoff=0.6)
        hint = f" (close names: {', '.join(repr(c) for c in close)})" if close else ""
        lines.append(f"{spec.source}: the glob {glob!r} matches none of the compared tensors' names{hint}")
    shown = ", ".join(repr(n) for n in known[:_NAMES_SHOWN])
    more = f" and {len(known) - _NAMES_SHOWN} more" if len(known) > _NAMES_SHOWN else ""
    lines.append(f"The compared tensors' names ({len(known)}): {shown}{more}")
    lines.append(
        "Correct the glob or remove it. Names are the outputs ('output', 'output[0]'...), the inputs "
        "('input[0]'... or keyword names) and the parameters and buffers, by PyTorch or MindSpore name."
    )
    raise ParityUsageError("\n".join(lines))
