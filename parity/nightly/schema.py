"""What a ``--parity-report`` record must hold before anything reads it: every field the report,
the drift comparison and the baselines use, of the type they use it as. A record written by parity
always passes; a file edited by hand, cut short, or of another tool fails here with its file, line
and field, never later inside a page template. Fields this schema does not name are left alone
(later versions of schema 1 may add some)."""

from __future__ import annotations

import numbers
from typing import Any, Dict, Tuple

from ..errors import ParityUsageError

__all__ = ["check_fields"]

_TEXT, _NUMBER, _INTEGER, _FLAG, _TABLE, _LIST, _TEXTS, _TABLES = (
    "a string",
    "a number",
    "an integer",
    "true or false",
    "an object",
    "a list",
    "a list of strings",
    "a list of objects",
)

_CHECK = {
    "nodeid": _TEXT,
    "index": _INTEGER,
    "verdict": _TEXT,
    "case": _TEXT,
    "call": _TEXT,
    "device": _TEXT,
    "problem": _TEXT,
    "reproduce": _TEXT,
    "worker": _TEXT,
    "seed": _INTEGER,
    "worst_margin": _NUMBER,
    "duration": _NUMBER,
    "modes": _TEXTS,
    "notes": _TEXTS,
    "likely_causes": _TEXTS,
    "tensors": _TABLES,
    "pair": _TABLE,
    "error": _TABLE,
    "first_divergence": _TABLE,
    "layers": _TABLE,
    "training": _TABLE,
    "data_parallel": _TABLE,
    "generation": _TABLE,
    "shapes": _TABLES,
    "blocks": _TABLE,
    "weights": _TABLE,
    "device_setup": _TABLE,
}
_TENSOR = {
    "kind": _TEXT,
    "name": _TEXT,
    "mode": _TEXT,
    "ms_name": _TEXT,
    "torch_name": _TEXT,
    "layer": _TEXT,
    "problem": _TEXT,
    "tolerance_source": _TEXT,
    "ms_dtype": _TEXT,
    "torch_dtype": _TEXT,
    "passed": _FLAG,
    "step": _INTEGER,
    "block": _INTEGER,
    "margin": _NUMBER,
    "max_abs": _NUMBER,
    "max_rel": _NUMBER,
    "cosine": _NUMBER,
    "tolerance": _TABLE,
    "nonfinite": _TABLE,
    "envelope": _TABLE,
    "golden": _TABLE,
}
_ENVIRONMENT = {
    "created": _TEXT,
    "device": _TEXT,
    "device_name": _TEXT,
    "versions": _TABLE,
    "git": _TABLE,
    "host": _TABLE,
    "run": _TABLE,
    "torch_reference": _TABLE,
}
_INNER = {
    "error": {"type": _TEXT, "message": _TEXT},
    "git": {"commit": _TEXT, "dirty": _FLAG},
    "first_divergence": {"forward": _TABLE, "backward": _TABLE},
    "blocks": {
        "count": _INTEGER,
        "prefix": _TEXT,
        "per_block": _TABLES,
        "end_to_end": _TABLE,
        "end_to_end_grad": _TABLE,
    },
}


def _is(value: Any, kind: str) -> bool:
    if kind == _TEXT:
        return isinstance(value, str)
    if kind == _FLAG:
        return isinstance(value, bool)
    if kind == _INTEGER:
        return isinstance(value, numbers.Integral) and not isinstance(value, bool)
    if kind == _NUMBER:
        return isinstance(value, numbers.Real) and not isinstance(value, bool)
    if kind == _TABLE:
        return isinstance(value, dict)
    if kind == _TEXTS:
        return isinstance(value, list) and all(isinstance(v, str) for v in value)
    if kind == _TABLES:
        return isinstance(value, list) and all(isinstance(v, dict) for v in value)
    return isinstance(value, list)


def _fields(record: Dict[str, Any], spec: Dict[str, str], where: str, prefix: str = "") -> None:
    for key, kind in spec.items():
        value = record.get(key)
        if value is not None and not _is(value, kind):
            shown = repr(value) if len(repr(value)) <= 60 else repr(value)[:57] + "..."
            raise ParityUsageError(f"{where}: field '{prefix}{key}' must be {kind} or null, got {shown}")
        if isinstance(value, dict) and key in _INNER:
            _fields(value, _INNER[key], where, f"{prefix}{key}.")


def check_fields(record: Dict[str, Any], where: str, verdicts: Tuple[str, ...]) -> None:
    """Raise a usage error naming ``where`` (``file:line``) and the field when ``record`` (an
    environment or check record) lacks a field the readers need or holds one of another type."""
    if record.get("type") == "environment":
        _fields(record, _ENVIRONMENT, where)
        return
    for key in ("nodeid", "verdict"):
        if key not in record:
            raise ParityUsageError(
                f"{where}: a check record without {key!r}; every check record has nodeid and verdict"
            )
    _fields(record, _CHECK, where)
    if record["verdict"] not in verdicts:
        raise ParityUsageError(f"{where}: verdict {record['verdict']!r} is none of {', '.join(verdicts)}")
    if record.get("index") is not None and record["index"] < 0:
        raise ParityUsageError(f"{where}: field 'index' must not be negative, got {record['index']}")
    for number, tensor in enumerate(record.get("tensors") or (), 1):
        _fields(tensor, _TENSOR, where, f"tensors[{number}].")
