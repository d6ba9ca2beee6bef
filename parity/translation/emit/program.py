"""One traced program as the text of a ``construct``: a statement per ``torch.fx`` node, named as
the node, with the file:line of the PyTorch code it came from, and the trace's guards where they
were decided.

A node becomes:

* ``placeholder``: an argument of ``construct``;
* ``get_attr``: ``self.<name>`` (a Parameter, under the translated Cell's name for it) or a constant
  the package keeps (``self.<constant>``);
* ``call_module``: ``self.<child>(...)`` (``self.blocks[0]`` inside a container);
* an operator on two values: the operator (``x + y``); a tensor's ``.shape`` or ``.ndim``: the
  attribute; an index into a Python value (a shape): the index;
* every other call: the call table's adapter, imported from its topic module
  (``reductions.mean(x, dim=(2, 3))``), a Python function as it is (``math.sqrt``).

A guard is written as a comment giving the decision and its place, then, where it reads a number, a
length or a truth value, as an ``assert`` on the node.
"""

from __future__ import annotations

import math
import operator
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Tuple

import mindspore as ms
import numpy as np
import torch
import torch.fx

from ...errors import ParityUnsupported
from .. import calls
from ..calls import table
from ..trace.graph import Program, node_location

__all__ = ["Construct", "construct_of", "AttributeOf"]

# (a get_attr node, the value the translated Cell reads for it) -> (the attribute, the array of a constant)
AttributeOf = Callable[[torch.fx.Node, Any], Tuple[str, Optional[np.ndarray]]]

_INFIX = {
    operator.add: "+",
    operator.sub: "-",
    operator.mul: "*",
    operator.truediv: "/",
    operator.floordiv: "//",
    operator.mod: "%",
    operator.pow: "**",
    operator.matmul: "@",
    operator.eq: "==",
    operator.ne: "!=",
    operator.lt: "<",
    operator.le: "<=",
    operator.gt: ">",
    operator.ge: ">=",
    operator.and_: "&",
    operator.or_: "|",
}
_INFIX.update({inplace: _INFIX[plain] for inplace, plain in calls.python.INPLACE_OPERATORS.items()})
_UNARY = {operator.neg: "-", operator.invert: "~", operator.pos: "+"}
_PLAIN_ATTRIBUTES = ("shape", "ndim")  # a MindSpore tensor's own reads are what the adapter gives
_CHECKED_GUARDS = {"bool": "bool", "int": "int", "float": "float", "len": "len", "ndim": ""}
_DTYPE_NAMES = {
    "float32": "float32",
    "float64": "float64",
    "float16": "float16",
    "bfloat16": "bfloat16",
    "int64": "int64",
    "int32": "int32",
    "int16": "int16",
    "int8": "int8",
    "uint8": "uint8",
    "bool": "bool_",
}


@dataclass
class Construct:
    """The text of a ``construct`` (its lines, indented for a class body), the modules it imports
    (``{alias: module}``), the constants it reads (``{attribute: array}``) and where each statement
    came from."""

    lines: List[str]
    imports: Dict[str, str] = field(default_factory=dict)
    constants: Dict[str, np.ndarray] = field(default_factory=dict)


def _identifier(name: str) -> str:
    return name if name.isidentifier() else "v_" + "".join(c if c.isalnum() else "_" for c in name)


class _Writer:
    def __init__(self, program: Program, attribute_of: "AttributeOf"):
        self.program, self.attribute_of = program, attribute_of
        self.imports: Dict[str, str] = {}
        self.constants: Dict[str, np.ndarray] = {}
        self.problems: List[str] = []
        self.parameters: Dict[str, str] = {}  # get_attr node -> the buffer it reads (self.<path>)

    # --- values --------------------------------------------------------------------------------

    def value(self, arg: Any) -> str:
        if isinstance(arg, torch.fx.Node):
            return _identifier(arg.name)
        if isinstance(arg, tuple):
            inner = ", ".join(self.value(a) for a in arg)
            return f"({inner},)" if len(arg) == 1 else f"({inner})"
        if isinstance(arg, list):
            return "[" + ", ".join(self.value(a) for a in arg) + "]"
        if isinstance(arg, dict):
            return "{" + ", ".join(f"{k!r}: {self.value(v)}" for k, v in arg.items()) + "}"
        if isinstance(arg, slice):
            return f"slice({self.value(arg.start)}, {self.value(arg.stop)}, {self.value(arg.step)})"
        if arg is Ellipsis:
            return "..."
        if isinstance(arg, torch.dtype):
            name = str(arg).replace("torch.", "")
            if name not in _DTYPE_NAMES:
                raise _Unwritable(f"the dtype {arg} has no MindSpore name here")
            self.imports["mindspore"] = "mindspore"
            return f"mindspore.{_DTYPE_NAMES[name]}"
        if isinstance(arg, torch.device):
            return repr(str(arg))
        if isinstance(arg, float) and not math.isfinite(arg):
            self.imports["math"] = "math"
            return f"math.{'inf' if arg > 0 else '-inf'}" if not math.isnan(arg) else "math.nan"
        if arg is None or isinstance(arg, (bool, int, float, str)):
            return repr(arg)
        raise _Unwritable(f"the argument {arg!r} ({type(arg).__qualname__}) cannot be written as Python text")

    def call_args(self, args: tuple, kwargs: dict) -> str:
        shown = [self.value(a) for a in args] + [f"{k}={self.value(v)}" for k, v in kwargs.items()]
        return ", ".join(shown)

    # --- statements ----------------------------------------------------------------------------

    def statement(self, node: torch.fx.Node, run: Optional[Callable]) -> str:
        name = _identifier(node.name)
        if node.op == "get_attr":
            value = run() if run is not None else None
            attribute, constant = self.attribute_of(node, value)
            if constant is not None:
                self.constants[attribute] = constant
            elif isinstance(value, ms.Parameter) and not value.requires_grad:
                self.parameters[node.name] = attribute
            return f"{name} = {attribute}"
        if node.op == "call_module":
            return f"{name} = {_child(str(node.target))}({self.call_args(node.args, node.kwargs)})"
        if node.op == "call_method":
            return f"{name} = {self.method(node)}"
        return f"{name} = {self.function(node, run)}"

    def method(self, node: torch.fx.Node) -> str:
        receiver, rest = node.args[0], node.args[1:]
        method = str(node.target)
        if not _is_tensor(receiver):  # a method of a Python value (a shape's .index, a dict's .get)
            return f"{self.value(receiver)}.{method}({self.call_args(rest, node.kwargs)})"
        plain = method[:-1] if method.endswith("_") and not method.endswith("__") else method
        return f"{self.adapter(table.METHODS[plain])}({self.call_args(node.args, node.kwargs)})"

    def function(self, node: torch.fx.Node, run: Optional[Callable]) -> str:
        target, args, kwargs = node.target, node.args, node.kwargs
        if target in _INFIX and len(args) == 2 and not kwargs:
            return f"{self.value(args[0])} {_INFIX[target]} {self.value(args[1])}"
        if target in _UNARY and len(args) == 1 and not kwargs:
            return f"{_UNARY[target]}{self.value(args[0])}"
        if target is operator.getitem and not _is_tensor(args[0]):
            return f"{self.value(args[0])}[{self.value(args[1])}]"
        if target is getattr and args[1] in _PLAIN_ATTRIBUTES and _is_tensor(args[0]):
            return f"{self.value(args[0])}.{args[1]}"
        if run is None:
            raise _Unwritable("a call without an adapter")
        return f"{self.adapter(run, target)}({self.call_args(args, kwargs)})"

    def adapter(self, function: Callable, target: Any = None) -> str:
        """How the text names ``function``: ``topic.name`` for the call table's adapters, Python's
        own functions by their module."""
        module = getattr(function, "__module__", None) or ""
        qualname = getattr(function, "__qualname__", "")
        if module in ("_operator", "operator", "math", "builtins") and "." not in qualname:
            alias = "operator" if module == "_operator" else module
            if alias == "builtins":
                return qualname
            self.imports[alias] = alias
            return f"{alias}.{qualname}"
        if not module.startswith("parity.") or "<" in qualname or "." in qualname:
            raise _Unwritable(
                f"{calls.api_name('call_function', target)} runs {qualname or function!r}, not importable"
            )
        found: Any = __import__(module, fromlist=["_"])
        if getattr(found, qualname, None) is not function:
            raise _Unwritable(f"{module}.{qualname} is not the adapter the translation runs")
        alias = module.rpartition(".")[2]
        if self.imports.get(alias, module) != module:
            alias = module.replace(".", "_")
        self.imports[alias] = module
        return f"{alias}.{qualname}"

    def guards(self, node: torch.fx.Node) -> List[str]:
        lines = []
        for guard in self.program.guards.get(node.name, ()):
            where = short_place(guard.where.split("  (")[0])
            lines.append(f"# guard ({where}): {guard.describe().split(' (at ')[0]}")
            read = _CHECKED_GUARDS.get(guard.kind)
            if read is not None and isinstance(guard.expected, (bool, int, float)):
                value = f"{read}({_identifier(node.name)})" if read else _identifier(node.name)
                lines.append(
                    f"assert {value} == {guard.expected!r}, {'the trace took another path here (' + where + ')'!r}"
                )
        return lines

    def in_place(self, node: torch.fx.Node, order: Dict[torch.fx.Node, int]) -> List[str]:
        """What PyTorch's in-place call changes: a buffer the Cell holds (``ops.assign``), and the
        name later statements read the modified tensor by."""
        source = node.args[0]
        assert isinstance(source, torch.fx.Node)
        lines = []
        if source.op == "get_attr" and source.name in self.parameters:
            self.imports["ops"] = "mindspore.ops"
            target = self.parameters[source.name]
            lines.append(
                f"ops.assign({target}, {_identifier(node.name)}.astype({target}.dtype))  # in place in PyTorch"
            )
        if any(order[user] > order[node] for user in source.users):
            lines.append(f"{_identifier(source.name)} = {_identifier(node.name)}  # in place in PyTorch")
        return lines

    def output(self, node: torch.fx.Node) -> str:
        return f"return {self.value(node.args[0])}"


class _Unwritable(Exception):
    pass


def _is_tensor(arg: Any) -> bool:
    """Whether a node held a tensor when traced on the example inputs."""
    if not isinstance(arg, torch.fx.Node):
        return False
    meta = arg.meta.get("parity_value", None)
    return isinstance(meta, torch.Tensor) or (meta is None and arg.op in ("placeholder", "get_attr"))


def _child(path: str) -> str:
    """``self.blocks[0].conv`` for the child at ``blocks.0.conv``."""
    shown = "self"
    for part in path.split("."):
        shown += f"[{part}]" if part.isdigit() else f".{part}"
    return shown


def construct_of(program: Program, attribute_of: "AttributeOf", where: str) -> Construct:
    """The ``construct`` of ``program``. ``attribute_of(get_attr node, the value it reads)``: the
    attribute the Cell reads it from, and the array where it is a constant the package keeps. Raises
    :class:`parity.ParityUnsupported` naming each node that cannot be written (and its file:line)."""
    writer = _Writer(program, attribute_of)
    order = {node: i for i, node in enumerate(program.graph.nodes)}
    arguments: List[str] = []
    body: List[str] = []
    for step in program.steps:
        node = step.node
        if node.op == "placeholder":
            arguments.append(_identifier(node.name))
            continue
        try:
            text = writer.output(node) if node.op == "output" else writer.statement(node, step.run)
        except _Unwritable as exc:
            writer.problems.append(f"{node.name}: {exc} (at {node_location(node)})")
            continue
        if node.op in ("call_function", "call_method", "call_module"):
            text += f"  # {_source_place(node)}"
        body.append(text)
        body += writer.guards(node)
        if step.inplace and node.args and isinstance(node.args[0], torch.fx.Node):
            body += writer.in_place(node, order)
    if writer.problems:
        raise ParityUnsupported(f"{where}: cannot write as Python text:\n  " + "\n  ".join(writer.problems))
    head = f"def construct(self{''.join(', ' + a for a in arguments)}):"
    lines = [head] + ["    " + line for line in body]
    return Construct(lines, writer.imports, writer.constants)


def _source_place(node: torch.fx.Node) -> str:
    """``file:line`` of the PyTorch code a node came from (an installed package's from its name)."""
    return short_place(node_location(node).split("  (")[0])


def short_place(place: str) -> str:
    """``timm/layers/norm_act.py:103`` for a place in an installed package."""
    _, marker, rest = place.rpartition("-packages" + os.sep)
    return rest if marker else place
