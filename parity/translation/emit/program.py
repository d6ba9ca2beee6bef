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

import ast
import copy
import functools
import inspect
import keyword
import math
import operator
import os
import textwrap
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Set, Tuple

import mindspore as ms
import numpy as np
import torch
import torch.fx

from ...errors import ParityUnsupported
from .. import calls
from ..calls import table
from ..trace.graph import Program, node_location

__all__ = ["Arguments", "Construct", "arguments_of", "construct_of", "AttributeOf"]

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
# a MindSpore tensor's own reads: the adapter's (a dtype as MindSpore's: the text writes torch's as MindSpore's)
_PLAIN_ATTRIBUTES = ("shape", "ndim", "dtype")
_CHECKED_GUARDS = {"bool": "bool", "int": "int", "float": "float", "len": "len", "ndim": "", "dtype": ""}
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
    bindings: Dict[str, Tuple[str, str]] = field(default_factory=dict)
    constants: Dict[str, np.ndarray] = field(default_factory=dict)


# Names construct's statements must not rebind: the Cell, and what model.py imports or defines.
_TAKEN = {"self", "math", "operator", "os", "mindspore", "np", "Parameter", "Tensor", "nn", "ops", "table", "adapter"}


def _identifier(name: str) -> str:
    """The variable a node's value is held in (``v_self`` for the node BERT's ``self`` child made)."""
    if name.isidentifier() and not keyword.iskeyword(name) and name not in _TAKEN:
        return name
    return "v_" + "".join(c if c.isalnum() else "_" for c in name)


class _Writer:
    def __init__(self, program: Program, attribute_of: "AttributeOf"):
        self.program, self.attribute_of = program, attribute_of
        self.imports: Dict[str, str] = {}
        self.constants: Dict[str, np.ndarray] = {}
        self.problems: List[str] = []
        self.parameters: Dict[str, str] = {}  # get_attr node -> the buffer it reads (self.<path>)
        self.bindings: Dict[str, Tuple[str, str]] = {}  # module-level name -> (table, key)
        self.constant_nodes: Set[str] = set()

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

    def index(self, index: Any) -> str:
        """``x[:, 0:, None]``: an index as Python writes it."""
        items = index if isinstance(index, tuple) and index else (index,)
        shown = []
        for item in items:
            if isinstance(item, slice):
                parts = [("" if v is None else self.value(v)) for v in (item.start, item.stop, item.step)]
                shown.append(":".join(parts[:2]) + (f":{parts[2]}" if parts[2] else ""))
            else:
                shown.append(self.value(item))
        return ", ".join(shown) + ("," if isinstance(index, tuple) and len(index) == 1 else "")

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
                self.constant_nodes.add(node.name)
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
        function = table.METHODS[plain]
        inline = self.inline(function, node.args, node.kwargs)
        if inline is not None:
            return inline
        adapter = self.adapter(function, key=("METHODS", plain))
        return f"{adapter}({self.call_args(node.args, node.kwargs)})"

    def function(self, node: torch.fx.Node, run: Optional[Callable]) -> str:
        target, args, kwargs = node.target, node.args, node.kwargs
        if target in _INFIX and len(args) == 2 and not kwargs:
            return f"{self.value(args[0])} {_INFIX[target]} {self.value(args[1])}"
        if target in _UNARY and len(args) == 1 and not kwargs:
            return f"{_UNARY[target]}{self.value(args[0])}"
        if target is operator.getitem and isinstance(_traced(args[0]), dict) and isinstance(args[1], int):
            fields = [key for key, value in _traced(args[0]).items() if value is not None]
            return f"{self.value(args[0])}.get({fields[args[1]]!r})"  # a ModelOutput's field by position
        if target is operator.getitem and (not _is_tensor(args[0]) or _plain_index(args[1])):
            return f"{self.value(args[0])}[{self.index(args[1])}]"
        if target is getattr and args[1] in _PLAIN_ATTRIBUTES and _is_tensor(args[0]):
            return f"{self.value(args[0])}.{args[1]}"
        if target is getattr and isinstance(_traced(args[0]), dict) and len(args) == 2:
            return f"{self.value(args[0])}.get({args[1]!r})"  # a ModelOutput, written as a dict
        if run is None:
            raise _Unwritable("a call without an adapter")
        name = calls.api_name("call_function", target)
        key = ("FUNCTIONS", name) if name in table.FUNCTIONS else None
        inline = self.inline(run, args, kwargs)
        if inline is not None:
            return inline
        return f"{self.adapter(run, key=key)}({self.call_args(args, kwargs)})"

    def inline(self, function: Callable, args: tuple, kwargs: dict) -> Optional[str]:
        """The adapter's one expression with the call's arguments in place (``ops.relu(bn)``), where
        its body is ``return <expression>`` over its parameters and MindSpore's ``ops``; else None."""
        expression = _one_expression(function)
        if expression is None:
            return None
        try:
            bound = inspect.signature(function).bind(*args, **kwargs)
        except TypeError:
            return None
        bound.apply_defaults()
        texts = {}
        for name, value in bound.arguments.items():
            try:
                texts[name] = self.value(value)
            except _Unwritable:
                return None
        tree = _Substituted(texts).visit(copy.deepcopy(expression))
        self.imports["ops"] = "mindspore.ops"
        return ast.unparse(tree)

    def adapter(self, function: Callable, key: Optional[Tuple[str, str]] = None) -> str:
        """How the text names ``function``: ``topic.name`` for the call table's adapters, MindSpore's
        functions as ``ops.name``, Python's own functions by their module; an adapter a factory made,
        by the table's key (``key``: the table and the name it is held under)."""
        module = getattr(function, "__module__", None) or ""
        qualname = getattr(function, "__qualname__", "")
        if module in ("_operator", "operator", "math", "builtins") and "." not in qualname:
            alias = "operator" if module == "_operator" else module
            if alias == "builtins":
                return qualname
            self.imports[alias] = alias
            return f"{alias}.{qualname}"
        name = getattr(function, "__name__", "")
        if module.startswith("mindspore") and getattr(ms.ops, name, None) is function:
            self.imports["ops"] = "mindspore.ops"
            return f"ops.{name}"
        found: Any = __import__(module, fromlist=["_"]) if module.startswith("parity.") else None
        if found is None or "<" in qualname or "." in qualname or getattr(found, qualname, None) is not function:
            return self.bound(function, key)
        alias = module.rpartition(".")[2]
        if self.imports.get(alias, module) != module:
            alias = module.replace(".", "_")
        self.imports[alias] = module
        return f"{alias}.{qualname}"

    def bound(self, function: Callable, key: Optional[Tuple[str, str]]) -> str:
        """A module-level name for an adapter the table holds but no module names (a factory's)."""
        if key is None:
            raise _Unwritable(f"{getattr(function, '__qualname__', function)!r} is not importable by name")
        entry = getattr(table, key[0])[key[1]]
        if (entry[0] if isinstance(entry, tuple) else entry) is not function and key[0] == "FUNCTIONS":
            raise _Unwritable(f"{key[1]} is not the call table's adapter")
        alias = _identifier(key[1].replace(".", "_")) + "_"
        self.bindings[alias] = key
        self.imports["table"] = "parity.translation.calls.table"
        return alias

    def guards(self, node: torch.fx.Node) -> List[str]:
        lines = []
        for guard in self.program.guards.get(node.name, ()):
            where = short_place(guard.where.split("  (")[0])
            lines.append(f"# guard ({where}): {guard.describe().split(' (at ')[0]}")
            read = _CHECKED_GUARDS.get(guard.kind)
            if read is not None and isinstance(guard.expected, (bool, int, float, torch.dtype)):
                value = f"{read}({_identifier(node.name)})" if read else _identifier(node.name)
                lines.append(
                    f"assert {value} == {self.value(guard.expected)}, "
                    f"{'the trace took another path here (' + where + ')'!r}"
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
        result = node.args[0]
        if isinstance(result, dict):  # a ModelOutput holds no field that is None
            result = {k: v for k, v in result.items() if v is not None and _traced(v, ...) is not None}
        return f"return {self.value(result)}"


class _Unwritable(Exception):
    pass


def _needs_no_gradient(node: torch.fx.Node, writer: "_Writer", no_gradient: Set[torch.fx.Node]) -> bool:
    """Whether ``node`` computes from buffers, constants and integer tensors only."""
    if node.op == "placeholder":
        value = _traced(node)
        return isinstance(value, torch.Tensor) and not value.is_floating_point()
    if node.op == "get_attr":
        return node.name in writer.parameters or node.name in writer.constant_nodes
    if node.op == "call_module":
        return False
    inputs: List[torch.fx.Node] = []
    torch.fx.node.map_arg((node.args, node.kwargs), inputs.append)
    return all(arg in no_gradient for arg in inputs)


def _is_matmul(node: torch.fx.Node) -> bool:
    if node.op == "call_method":
        return node.target in ("matmul", "bmm")
    return node.target in (operator.matmul, torch.matmul, torch.bmm)


class _Substituted(ast.NodeTransformer):
    def __init__(self, texts: Dict[str, str]):
        self.texts = texts

    def visit_Name(self, node: ast.Name) -> Any:
        if node.id in self.texts:
            return ast.parse(f"({self.texts[node.id]})", mode="eval").body
        return node


@functools.lru_cache(maxsize=None)
def _one_expression(function: Callable) -> Optional[ast.expr]:
    """The expression of an adapter whose body is one ``return`` of its parameters, constants and
    ``ops`` (MindSpore's) calls, without ``*args``; None for any other."""
    try:
        source = textwrap.dedent(inspect.getsource(function))
        parameters = inspect.signature(function).parameters.values()
    except (OSError, TypeError, ValueError):
        return None
    if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in parameters):
        return None
    tree = ast.parse(source).body[0]
    if not isinstance(tree, ast.FunctionDef) or tree.decorator_list:
        return None
    body = [n for n in tree.body if not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))]
    if len(body) != 1 or not isinstance(body[0], ast.Return) or body[0].value is None:
        return None
    names = {p.name for p in parameters}
    if getattr(function, "__globals__", {}).get("ops") is not ms.ops:
        return None
    for node in ast.walk(body[0].value):
        if isinstance(node, ast.Name) and node.id not in names and node.id != "ops":
            return None
        if isinstance(node, (ast.Lambda, ast.NamedExpr, ast.comprehension)):
            return None
    return body[0].value


def _plain_index(index: Any) -> bool:
    """An index a MindSpore tensor takes as it is: no slice with a step (which the call table's
    ``getitem`` gathers, for MindSpore's backward of it fails on CPU)."""
    items = index if isinstance(index, tuple) else (index,)
    return not any(isinstance(i, slice) and i.step not in (None, 1) for i in items)


def _traced(arg: Any, missing: Any = None) -> Any:
    """The value a node held when traced on the example inputs (``missing`` where none is known)."""
    return arg.meta.get("parity_value", missing) if isinstance(arg, torch.fx.Node) else arg


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


@dataclass(frozen=True)
class Arguments:
    """``construct``'s parameters as written (``forward``'s names, so callers' keywords bind; a
    constant the trace baked in defaults to its example value) and the name of each tensor slot,
    in the order of the program's placeholders."""

    written: List[str]
    slots: List[str]


def arguments_of(signature: inspect.Signature, call: tuple) -> Arguments:
    """The :class:`Arguments` of the example call ``call`` (its key from :func:`call_slots`) of a
    ``forward`` with ``signature``; a ``*args`` or ``**kwargs`` that received values is refused."""
    written: List[str] = []
    named: List[str] = []  # keyword-only: forward's own, and what its **kwargs received
    slots: List[str] = []
    defaulted = False
    for name, param in signature.parameters.items():
        for entry in (entry for entry in call if entry[0] == name):
            slot = entry[1]
            if not slot.isidentifier() or keyword.iskeyword(slot) or slot == "self":
                raise ParityUnsupported(f"forward's argument {slot!r} cannot be written as a parameter")
            keyword_only = param.kind in (param.KEYWORD_ONLY, param.VAR_KEYWORD)
            if len(entry) == 4:  # a constant the trace baked in: its example value by default
                (named if keyword_only else written).append(f"{slot}={_value_of(entry[3])}")
                defaulted = defaulted or not keyword_only
                continue
            slots.append(slot)
            if keyword_only:
                named.append(f"{slot}=None")
            elif param.default is not param.empty or defaulted:
                written.append(f"{slot}=None")
                defaulted = True
            else:
                written.append(slot)
    return Arguments(written + (["*"] + named if named else []), slots)


def _value_of(key: Any) -> str:
    """The text of a constant from its key (``("int", 3)``, or a tuple of keys)."""
    if isinstance(key, tuple) and len(key) == 2 and isinstance(key[0], str):
        return repr(key[1])
    if isinstance(key, tuple):
        inner = ", ".join(_value_of(k) for k in key)
        return f"({inner},)" if len(key) == 1 else f"({inner})"
    return repr(key)


def construct_of(program: Program, attribute_of: "AttributeOf", where: str, arguments: Arguments) -> Construct:
    """The ``construct`` of ``program``. ``attribute_of(get_attr node, the value it reads)``: the
    attribute the Cell reads it from, and the array where it is a constant the package keeps. Raises
    :class:`parity.ParityUnsupported` naming each node that cannot be written (and its file:line)."""
    writer = _Writer(program, attribute_of)
    order = {node: i for i, node in enumerate(program.graph.nodes)}
    body: List[str] = []
    no_gradient: Set[torch.fx.Node] = set()  # what computes from buffers, constants and integers only
    slots = iter(arguments.slots)
    for step in program.steps:
        node = step.node
        if node.op == "placeholder":
            if _needs_no_gradient(node, writer, no_gradient):
                no_gradient.add(node)
            slot = next(slots, None)
            if slot is None:
                writer.problems.append(f"{node.name}: a placeholder with no argument of forward")
            elif slot != _identifier(node.name):
                body.append(f"{_identifier(node.name)} = {slot}")
            continue
        try:
            text = writer.output(node) if node.op == "output" else writer.statement(node, step.run)
        except _Unwritable as exc:
            writer.problems.append(f"{node.name}: {exc} (at {node_location(node)})")
            continue
        if node.op != "output" and _needs_no_gradient(node, writer, no_gradient):
            no_gradient.add(node)
            if _is_matmul(node):  # MindSpore's GRAPH-mode backward of a batched matmul of buffers fails
                name = _identifier(node.name)
                text = text.replace(f"{name} = ", f"{name} = ops.stop_gradient(", 1) + ")"
                writer.imports["ops"] = "mindspore.ops"
        place = _source_place(node)
        if node.op in ("call_function", "call_method", "call_module") and place != "an unknown place":
            text += f"  # {place}"
        body.append(text)
        body += writer.guards(node)
        if step.inplace and node.args and isinstance(node.args[0], torch.fx.Node):
            body += writer.in_place(node, order)
    if writer.problems:
        raise ParityUnsupported(f"{where}: cannot write as Python text:\n  " + "\n  ".join(writer.problems))
    head = f"def construct(self{''.join(', ' + a for a in arguments.written)}):"
    lines = [head] + ["    " + line for line in body]
    return Construct(lines, writer.imports, writer.bindings, writer.constants)


def _source_place(node: torch.fx.Node) -> str:
    """``file:line`` of the PyTorch code a node came from (an installed package's from its name)."""
    return short_place(node_location(node).split("  (")[0])


def short_place(place: str) -> str:
    """``timm/layers/norm_act.py:103`` for a place in an installed package."""
    _, marker, rest = place.rpartition("-packages" + os.sep)
    return rest if marker else place
