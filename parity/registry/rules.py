"""A small, safe expression language for translation rules and diagnosis conditions.

Rules map PyTorch constructor arguments to MindSpore ones (``pad_mode = "pad_mode(torch.padding)"``);
``inspect`` expressions read instance attributes (``ms.approximate == 'tanh'``). Expressions are
parsed with :mod:`ast` and walked by hand, never passed to :func:`eval`: only literals, arithmetic,
comparisons, ``and/or/not``, ``x if c else y``, subscripts, attribute reads on the root names of the
context (``torch.<arg>``, ``ms.<attr>``, and attributes of those, ``ms.softmax.axis``) and calls of the helpers in :data:`HELPERS` are allowed.
"""

from __future__ import annotations

import ast
import math
import operator
from typing import Any, Callable, Dict, FrozenSet, List, Mapping, Optional, Tuple, Type, Union, cast

__all__ = [
    "RuleError",
    "MissingArgument",
    "HELPERS",
    "Value",
    "Lookup",
    "check_expression",
    "evaluate",
    "bare_names",
    "referenced",
    "attribute_lookup",
]

# What an expression computes, reads or hands a helper: a TOML literal, a constructor argument or an
# attribute of a built layer, of whatever type its framework gives it (int, tuple, str, a dtype...).
Value = Any


class RuleError(ValueError):
    """An expression is malformed, uses something not allowed, or failed while evaluating."""


class MissingArgument(RuleError):
    """The expression reads ``<root>.<name>`` and the context has no value for it."""

    def __init__(self, root: str, name: str) -> None:
        super().__init__(f"needs {root}.{name}, which was not given")
        self.root, self.name = root, name


def _pad_mode(padding: Value) -> str:
    """PyTorch ``padding`` -> MindSpore ``pad_mode``: 'same'/'valid' stay, numbers need 'pad'."""
    return padding if isinstance(padding, str) else "pad"


def _pad_int(padding: Value) -> int:
    """PyTorch ``padding`` -> one int (MindSpore 1-D ops and pooling): strings mean 0."""
    if isinstance(padding, str):
        return 0
    if isinstance(padding, (tuple, list)):
        if len(set(padding)) != 1:
            raise RuleError(f"padding {tuple(padding)} differs per dimension; MindSpore needs one value here")
        return int(padding[0])
    return int(padding)


def _pad4(padding: Value) -> Union[int, Tuple[int, ...]]:
    """PyTorch ``padding`` -> MindSpore Conv padding: (h, w) -> (top, bottom, left, right)."""
    if isinstance(padding, str):
        return 0
    if isinstance(padding, (tuple, list)):
        values = tuple(int(p) for p in padding)
        if len(set(values)) == 1:
            return values[0]
        return tuple(v for v in values for _ in (0, 1))
    return int(padding)


def _as4(padding: Value) -> Tuple[int, ...]:
    """A MindSpore Conv padding (an int or a 4-tuple) as the 4-tuple it means, for comparisons."""
    if isinstance(padding, (tuple, list)):
        return tuple(int(p) for p in padding)
    return (int(padding),) * 4


def _scaled_size(shape: Value, factor: Value) -> Tuple[int, ...]:
    """Output spatial size of interpolation by ``factor`` for an NC... input of ``shape``."""
    spatial = tuple(shape)[2:]
    factors = tuple(factor) if isinstance(factor, (tuple, list)) else (factor,) * len(spatial)
    return tuple(int(math.floor(d * f)) for d, f in zip(spatial, factors))


def _per_dim(value: Value, n: int) -> Tuple[int, ...]:
    values = tuple(value) if isinstance(value, (tuple, list)) else (value,) * n
    if len(values) != n:
        raise RuleError(f"{values} has {len(values)} values for {n} spatial dimensions")
    return tuple(int(v) for v in values)


def _same_pad(size: int, kernel: int, stride: int, dilation: int) -> Tuple[int, int]:
    """MindSpore's pad_mode='same': ceil(size / stride) outputs, the odd extra at the end."""
    total = max(0, (-(-size // stride) - 1) * stride + (kernel - 1) * dilation + 1 - size)
    return total // 2, total - total // 2


def _torch_pad(padding: Value, kernel: int, dilation: int) -> Tuple[int, int]:
    """PyTorch's padding of one dimension: a number pads both ends, 'same' puts the odd extra at the end."""
    if padding == "valid":
        return 0, 0
    if padding == "same":
        total = (kernel - 1) * dilation
        return total // 2, total - total // 2
    return int(padding), int(padding)


def _same_pads_differ(
    input_shape: Optional[Tuple[int, ...]], kernel_size: Value, stride: Value, dilation: Value, padding: Value
) -> bool:
    """Whether MindSpore's pad_mode='same' pads differently from PyTorch's ``padding`` for an input
    of ``input_shape`` (N, C, *spatial) with these PyTorch arguments; with ``input_shape`` None,
    whether it does for any input size. Equal pads give equal output sizes and values."""
    n = (
        len(kernel_size)
        if isinstance(kernel_size, (tuple, list))
        else len(input_shape) - 2
        if input_shape is not None
        else 1
    )
    paddings = padding if isinstance(padding, (tuple, list)) else (padding,) * n
    dims = zip(_per_dim(kernel_size, n), _per_dim(stride, n), _per_dim(dilation, n), paddings)
    for i, (kernel, step, dilation_, pad) in enumerate(dims):
        span = (kernel - 1) * dilation_ + 1
        torch_pad = _torch_pad(pad, kernel, dilation_)
        # The pads repeat with period ``step`` in the size: these sizes cover every case.
        sizes = [input_shape[len(input_shape) - n + i]] if input_shape is not None else range(1, span + 2 * step + 1)
        for size in sizes:
            if size + sum(torch_pad) >= span and _same_pad(size, kernel, step, dilation_) != torch_pad:
                return True
    return False


def _same_pads(
    input_shape: Optional[Tuple[int, ...]], kernel_size: Value, stride: Value, dilation: Value
) -> Tuple[int, ...]:
    """MindSpore's pad_mode='same' pads of an input of ``input_shape`` (N, C, *spatial), in the
    order ``torch.nn.functional.pad`` takes them: the last dimension's (start, end) first."""
    if input_shape is None:
        raise RuleError("same_pads needs the input's shape")
    n = len(kernel_size) if isinstance(kernel_size, (tuple, list)) else len(input_shape) - 2
    spatial = input_shape[len(input_shape) - n :]
    dims = zip(spatial, _per_dim(kernel_size, n), _per_dim(stride, n), _per_dim(dilation, n))
    pads = [_same_pad(int(size), kernel, step, dilation_) for size, kernel, step, dilation_ in dims]
    return tuple(p for pair in reversed(pads) for p in pair)


def _same_transpose_differs(
    kernel_size: Value, stride: Value, dilation: Value, padding: Value, output_padding: Value
) -> bool:
    """Whether a MindSpore transposed convolution with pad_mode='same' (output = input x stride:
    the full result cropped floor(c/2) at the start and the rest at the end, or padded at the end
    where c < 0) differs from PyTorch's with ``padding``/``output_padding`` (crops p at the start,
    p - output_padding at the end). The same for every input size."""
    n = len(kernel_size) if isinstance(kernel_size, (tuple, list)) else 1
    dims = zip(*(_per_dim(v, n) for v in (kernel_size, stride, dilation, padding, output_padding)))
    for kernel, step, dilation_, pad, extra in dims:
        crop = (kernel - 1) * dilation_ + 1 - step
        same = (crop // 2, crop - crop // 2) if crop >= 0 else (0, crop)
        if same != (pad, pad - extra):
            return True
    return False


def _first(value: Value) -> Value:
    return value[0] if isinstance(value, (tuple, list)) else value


def _as_tuple(value: Value) -> Tuple[Value, ...]:
    return tuple(value) if isinstance(value, (tuple, list)) else (value,)


HELPERS: Dict[str, Callable[..., Any]] = {
    "len": len,
    "int": int,
    "float": float,
    "bool": bool,
    "str": str,
    "tuple": tuple,
    "list": list,
    "min": min,
    "max": max,
    "abs": abs,
    "round": round,
    "pad_mode": _pad_mode,
    "pad_int": _pad_int,
    "pad4": _pad4,
    "scaled_size": _scaled_size,
    "first": _first,
    "as_tuple": _as_tuple,
    "as4": _as4,
    "same_pads_differ": _same_pads_differ,
    "same_pads": _same_pads,
    "same_transpose_differs": _same_transpose_differs,
}

_BINARY: Dict[Type[ast.operator], Callable[[Value, Value], Value]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: Dict[Type[ast.unaryop], Callable[[Value], Value]] = {
    ast.USub: operator.neg,
    ast.UAdd: operator.pos,
    ast.Not: operator.not_,
}
_COMPARE: Dict[Type[ast.cmpop], Callable[[Value, Value], Value]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
    ast.Is: operator.is_,
    ast.IsNot: operator.is_not,
}


def _parse(source: str) -> ast.Expression:
    if not isinstance(source, str):
        raise RuleError(f"an expression must be a string, got {type(source).__name__} {source!r}")
    try:
        return ast.parse(source.strip(), mode="eval")
    except SyntaxError as exc:
        raise RuleError(f"cannot parse {source!r}: {exc.msg}") from None


def check_expression(source: str, roots: FrozenSet[str], names: FrozenSet[str] = frozenset()) -> None:
    """Raise :class:`RuleError` unless ``source`` uses only allowed syntax, the ``roots``
    (as ``root.attr``), the bare ``names`` and the helpers."""
    tree = _parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            if node.id not in roots and node.id not in names and node.id not in HELPERS:
                allowed = sorted(set(HELPERS) | set(names) | {f"{r}.<name>" for r in roots})
                raise RuleError(f"unknown name {node.id!r} in {source!r}; allowed: {', '.join(allowed)}")
        elif isinstance(node, ast.Attribute):
            base = node.value
            while isinstance(base, ast.Attribute):
                base = base.value
            if not (isinstance(base, ast.Name) and base.id in roots) or node.attr.startswith("_"):
                raise RuleError(
                    f"attribute access is only allowed as {'/'.join(sorted(roots))}.<name>[.<name>...] "
                    f"(no _private names) in {source!r}"
                )
        elif isinstance(node, ast.Call):
            if isinstance(node.func, ast.Name) and node.func.id not in HELPERS:
                raise RuleError(
                    f"unknown name {node.func.id!r} in {source!r}; the helpers are {', '.join(sorted(HELPERS))}"
                )
            if not isinstance(node.func, ast.Name) or node.keywords:
                raise RuleError(f"only the helpers {sorted(HELPERS)} may be called (positionally) in {source!r}")
        elif not isinstance(node, _ALLOWED):
            raise RuleError(f"{type(node).__name__} is not allowed in {source!r}")
        if isinstance(node, ast.Name) and node.id in roots and not _is_attribute_root(tree, node):
            raise RuleError(f"{node.id!r} must be followed by .<name> in {source!r}")


_ALLOWED = (
    ast.Expression,
    ast.Constant,
    ast.Tuple,
    ast.List,
    ast.UnaryOp,
    ast.BinOp,
    ast.BoolOp,
    ast.Compare,
    ast.IfExp,
    ast.Subscript,
    ast.Load,
    ast.Name,
    ast.Attribute,
    ast.Call,
    *_BINARY,
    *_UNARY,
    *_COMPARE,
    ast.And,
    ast.Or,
)


def _is_attribute_root(tree: ast.AST, name_node: ast.Name) -> bool:
    return any(isinstance(n, ast.Attribute) and n.value is name_node for n in ast.walk(tree))


def referenced(source: str, root: str) -> FrozenSet[str]:
    """The names read as ``root.<name>`` in ``source``."""
    return frozenset(
        n.attr
        for n in ast.walk(_parse(source))
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == root
    )


def bare_names(source: str) -> FrozenSet[str]:
    """The bare names ``source`` reads (``input_shape``), helpers and roots left out."""
    tree = _parse(source)
    return frozenset(
        n.id
        for n in ast.walk(tree)
        if isinstance(n, ast.Name) and n.id not in HELPERS and not _is_attribute_root(tree, n)
    )


# ``root.name`` -> its value; raises MissingArgument where there is none.
Lookup = Callable[[str], Value]


def attribute_lookup(obj: object) -> Lookup:
    """A :data:`Lookup` of ``obj``'s attributes (a built layer, an optimizer): a missing one is a
    :class:`MissingArgument` naming ``obj``'s type."""

    def read(name: str) -> Value:
        try:
            return getattr(obj, name)
        except AttributeError:
            raise MissingArgument(type(obj).__name__, name) from None

    return read


def evaluate(source: str, roots: Mapping[str, Lookup], names: Optional[Mapping[str, Value]] = None) -> Value:
    """Evaluate ``source``; ``roots[r](name)`` supplies ``r.name`` (raising :class:`MissingArgument`
    when it has none) and ``names`` the bare names."""
    return _Evaluator(roots, dict(names or {})).visit(_parse(source).body)


class _Evaluator:
    def __init__(self, roots: Mapping[str, Lookup], names: Dict[str, Value]) -> None:
        self.roots, self.names = roots, names

    def visit(self, node: ast.AST) -> Value:
        method: Optional[Callable[[ast.AST], Value]] = getattr(self, f"_{type(node).__name__}", None)
        if method is None:
            raise RuleError(f"{type(node).__name__} is not allowed")
        return method(node)

    def _Constant(self, node: ast.Constant) -> Value:
        return node.value

    def _Tuple(self, node: ast.Tuple) -> Tuple[Value, ...]:
        return tuple(self.visit(e) for e in node.elts)

    def _List(self, node: ast.List) -> List[Value]:
        return [self.visit(e) for e in node.elts]

    def _Name(self, node: ast.Name) -> Value:
        if node.id in self.names:
            return self.names[node.id]
        raise RuleError(f"name {node.id!r} has no value here")

    def _Attribute(self, node: ast.Attribute) -> Value:
        if isinstance(node.value, ast.Name) and node.value.id in self.roots:
            return self.roots[node.value.id](node.attr)
        if not isinstance(node.value, ast.Attribute) or node.attr.startswith("_"):
            raise RuleError("attribute access is only allowed on the context roots")
        owner = self.visit(node.value)
        try:
            return getattr(owner, node.attr)
        except AttributeError:
            raise MissingArgument(type(owner).__name__, node.attr) from None

    def _Subscript(self, node: ast.Subscript) -> Value:
        return self.visit(node.value)[self.visit(node.slice)]

    def _UnaryOp(self, node: ast.UnaryOp) -> Value:
        return _UNARY[type(node.op)](self.visit(node.operand))

    def _BinOp(self, node: ast.BinOp) -> Value:
        return _BINARY[type(node.op)](self.visit(node.left), self.visit(node.right))

    def _BoolOp(self, node: ast.BoolOp) -> Value:
        value = None
        for item in node.values:
            value = self.visit(item)
            if isinstance(node.op, ast.And) and not value:
                return value
            if isinstance(node.op, ast.Or) and value:
                return value
        return value

    def _Compare(self, node: ast.Compare) -> bool:
        left = self.visit(node.left)
        for op, right_node in zip(node.ops, node.comparators):
            right = self.visit(right_node)
            if not _COMPARE[type(op)](left, right):
                return False
            left = right
        return True

    def _IfExp(self, node: ast.IfExp) -> Value:
        return self.visit(node.body) if self.visit(node.test) else self.visit(node.orelse)

    def _Call(self, node: ast.Call) -> Value:
        func = cast(ast.Name, node.func)  # check_expression admits a helper's name only
        helper = HELPERS[func.id]
        args = [self.visit(a) for a in node.args]
        try:
            return helper(*args)
        except RuleError:
            raise
        except Exception as exc:  # a helper rejected its arguments
            raise RuleError(f"{func.id}{tuple(args)!r} failed: {exc}") from None
