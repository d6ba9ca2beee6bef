"""Python on traced values, in the call table: ``getattr`` of a tensor (``.shape``, ``.ndim``,
``.T``, ``.dtype``, ``.device``), the assertions ``torch.fx`` records (``torch._assert``, its
``_assert_is_none``), and Python's own functions.

Python's own functions (``operator.add``, ``math.sqrt``, ``len``...) run as they are: MindSpore
tensors support Python's operators and indexing, and on plain numbers (a shape's entries) they are
plain Python. An in-place operator (``x += y``) is computed out of place. A traced value's
``.dtype`` reads as the torch dtype of the same name (so ``x.dtype == torch.float32`` and
``torch.full(..., dtype=x.dtype)`` hold as in PyTorch) and its ``.device`` as
:data:`.arguments.DEVICE`.
"""

from __future__ import annotations

import builtins
import operator
from typing import Any, Dict, Optional

from mindspore import ops

from .arguments import DEVICE, Adapter, Entry, is_tensor, torch_dtype

__all__ = ["FUNCTIONS", "METHODS", "INPLACE_OPERATORS", "PYTHON_MODULES", "is_python"]

PYTHON_MODULES = ("_operator", "operator", "math", "builtins")
INPLACE_OPERATORS = {
    operator.iadd: operator.add,
    operator.isub: operator.sub,
    operator.imul: operator.mul,
    operator.itruediv: operator.truediv,
    operator.imatmul: operator.matmul,
}


def is_python(target: object) -> bool:
    """Whether a ``call_function`` target is one of Python's own (``operator``, ``math``, builtins)."""
    return (
        getattr(target, "__module__", None) in PYTHON_MODULES
        or getattr(getattr(target, "__self__", None), "__name__", None) in PYTHON_MODULES
    )


def assert_(condition: object, message: str) -> None:
    if not bool(condition):
        raise AssertionError(message)


def assert_is_none(value: object, message: str) -> None:
    if value is not None:
        raise AssertionError(message)


_ATTRIBUTES = {
    "shape": lambda t: tuple(t.shape),
    "ndim": lambda t: t.ndim,
    "T": lambda t: ops.permute(t, tuple(range(t.ndim - 1, -1, -1))),
    "mT": lambda t: ops.swapaxes(t, -2, -1),
    "H": lambda t: ops.swapaxes(t, 0, 1) if t.ndim == 2 else t,  # real tensors: no conjugate to take
    "mH": lambda t: ops.swapaxes(t, -2, -1),
    "dtype": torch_dtype,
    "device": lambda t: DEVICE,
}


_REDUCED = ("values", "indices")  # of what torch.max(x, dim) returns (a tensor has neither)


def _getattr_check(args, kwargs) -> Optional[str]:
    name = args[1] if len(args) > 1 else None
    if getattr(args[0], "op", None) == "call_module":  # a child's output, a structured one maybe: read at run time
        return None
    if name not in _ATTRIBUTES and name not in _REDUCED:
        return f"reading .{name} is not translated (only {', '.join('.' + a for a in _ATTRIBUTES)})"
    return None


def getattr_(obj: object, name: str, *default: object) -> Any:
    if is_tensor(obj):
        if name not in _ATTRIBUTES:
            raise TypeError(f"reading Tensor.{name} is not translated (only {', '.join(_ATTRIBUTES)})")
        return _ATTRIBUTES[name](obj)
    return builtins.getattr(obj, name, *default)


FUNCTIONS: Dict[str, Entry] = {
    "torch._assert": assert_,
    "torch.fx._symbolic_trace._assert_is_none": assert_is_none,
    "builtins.getattr": (getattr_, _getattr_check),
}
METHODS: Dict[str, Adapter] = {}
