"""Find the PyTorch APIs one Python file uses, from its syntax tree alone (nothing is imported).

A use is a reference whose name resolves, through the file's imports, to a dotted path under
``torch``: ``import torch as t``, ``from torch import nn``, ``import torch.nn.functional as F``,
``from torch.nn import Conv2d as C`` and a module-level ``Conv = nn.Conv2d`` all bind names; an
attribute chain on a bound name (``nn.init.xavier_uniform_``) is one use of its full path, and a
base class (``class Net(nn.Module)``) is a use of kind ``subclass``. Type annotations are not
uses. Bindings are per file, wherever the import is written; a later rebinding of the same name
is not followed.

Tensor methods cannot be resolved without running the code, so they are inferred: a call
``<expr>.name(...)`` whose ``name`` is in :data:`TENSOR_METHODS` and whose receiver is not an
imported name counts as a use of ``torch.Tensor.name``, marked ``inferred``. The list holds only
methods of ``torch.Tensor`` that ``torch.nn.Module``, the built-in containers and strings and
``numpy.ndarray`` lack, ``view`` aside (``ndarray.view(dtype)`` is rare in model code;
``tests/test_scan.py`` checks all this against the installed packages), so ``x.view(...)`` and
``x.permute(...)`` count and ``x.reshape(...)``, ``x.sum()``, ``m.cuda()``, ``s.split()`` do not; the
scanner adds the names of parity's translation table that no other type has (``x.pow()``,
``x.cos()``). A call of a name in :data:`SHARED_METHODS` (``x.to()``, ``x.reshape()``) is recorded as
:data:`UNSEEN`: the scan cannot tell whose method it is, and says so rather than guess.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any, Dict, FrozenSet, List, Optional, Set, Tuple, Union

__all__ = [
    "Use",
    "find_uses",
    "TENSOR_METHODS",
    "SHARED_METHODS",
    "NAMESPACES",
    "NOT_LITERAL",
    "INFERRED",
    "UNSEEN",
    "RUNTIME_CALL",
    "RUNTIME_LAYER",
    "canonical",
]

TENSOR_METHODS = frozenset(
    """
    view view_as permute contiguous unsqueeze unsqueeze_ squeeze_ expand expand_as repeat_interleave
    masked_fill masked_fill_ masked_select masked_scatter index_select index_add_ index_copy_ index_fill_
    scatter scatter_ scatter_add scatter_add_ gather narrow chunk unbind unflatten t mm bmm matmul addmm
    baddbmm clamp clamp_ clamp_min clamp_max sigmoid sigmoid_ relu relu_ softmax log_softmax tanh detach
    detach_ numpy type_as new_zeros new_ones new_full new_empty new_tensor zero_ fill_ normal_ uniform_
    copy_ add_ mul_ sub_ div_ addcmul_ addcdiv_ pow_ sqrt_ dim numel nelement element_size is_contiguous
    data_ptr topk flip norm backward
""".split()
)

# Tensor methods that other types have too (nn.Module.to, ndarray.reshape, str.split, list.sort...): a
# call x.name(...) of one cannot be told apart without running the code. Such calls are recorded as
# UNSEEN, left out of the statuses, and the report says how many there were.
SHARED_METHODS = frozenset(
    """
    to reshape sum mean max min float half double transpose type split repeat flatten squeeze size item
    tolist all any std var round clip cumsum argmax argmin sort prod cpu cuda add swapaxes nonzero
    argsort cumprod diagonal ravel trace dot conj bfloat16
""".split()
)

# Dotted paths that name a torch namespace, not an API: a bare reference to one is not a use.
NAMESPACES = frozenset(
    """
    torch torch.nn torch.nn.functional torch.nn.init torch.nn.utils torch.nn.modules torch.nn.parameter
    torch.optim torch.optim.lr_scheduler torch.utils torch.utils.data torch.cuda torch.backends torch.autograd
    torch.distributed torch.jit torch.fx torch.linalg torch.fft torch.special torch.amp torch.testing torch.hub
    torch.onnx torch.overrides
""".split()
)


class _NotLiteral:
    def __repr__(self) -> str:
        return "<not a literal>"


NOT_LITERAL = _NotLiteral()


@dataclass(frozen=True)
class Use:
    """One use of ``api`` at ``file:line``. ``how``: ``call``, ``reference``, ``subclass``,
    ``type check`` (in ``isinstance``/``issubclass``) or ``tensor method (inferred)``. A call keeps its arguments, as far as they are literals
    (:data:`NOT_LITERAL` otherwise), which tell whether an argument-bound known mismatch applies:
    ``args`` the positional ones, ``keywords`` ``(name, value)`` pairs, ``spread`` whether it
    passes ``*args`` or ``**kwargs``."""

    api: str
    file: str
    line: int
    how: str
    args: Tuple[Any, ...] = field(default=(), compare=False)
    keywords: Tuple[Tuple[str, Any], ...] = field(default=(), compare=False)
    spread: bool = False

    @property
    def location(self) -> str:
        return f"{self.file}:{self.line}"

    @property
    def inferred(self) -> bool:
        return self.how == INFERRED


INFERRED = "tensor method (inferred)"
UNSEEN = "method call, receiver unknown"  # x.name(...) of a SHARED_METHODS name: maybe a tensor's, maybe not
RUNTIME_CALL = "runtime call"  # recorded by parity.tools.scan.runtime; ``keywords``: the call's plain keyword values
RUNTIME_LAYER = "runtime layer"  # ``keywords``: the layer's plain attributes (momentum, padding_mode...)


def find_uses(
    source: Union[str, bytes], filename: str, methods: FrozenSet[str] = frozenset()
) -> Tuple[List[Use], List[str]]:
    """The uses in ``source`` and notes on what could not be followed (``from torch import *``).
    ``methods``: more Tensor method names to infer as :data:`TENSOR_METHODS` are (the scanner gives
    those of parity's translation table that no other type has: ``pow``, ``cos``, ``exp``...).
    Raises ``SyntaxError`` (or ``ValueError`` for a null byte) as ``ast.parse`` does."""
    tree = ast.parse(source, filename)
    torch_names, other_names, notes = _bindings(tree, filename)
    finder = _Finder(filename, torch_names, other_names, TENSOR_METHODS | (frozenset(methods) - SHARED_METHODS))
    finder.visit(tree)
    return finder.uses, notes


def _is_torch(module: str) -> bool:
    return module == "torch" or module.startswith("torch.")


def _bindings(tree: ast.Module, filename: str) -> Tuple[Dict[str, str], Set[str], List[str]]:
    """Names bound to torch paths (name -> dotted path), names bound by other imports, notes."""
    torch_names: Dict[str, str] = {}
    other: Set[str] = set()
    notes: List[str] = []
    for node in _statements(tree.body):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if _is_torch(alias.name):
                    torch_names[alias.asname or "torch"] = alias.name if alias.asname else "torch"
                else:
                    other.add(alias.asname or alias.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            for alias in node.names:
                if node.level == 0 and _is_torch(module):
                    if alias.name == "*":
                        notes.append(
                            f"{filename}:{node.lineno}: 'from {module} import *' is not followed; "
                            "names it binds are not counted"
                        )
                    else:
                        torch_names[alias.asname or alias.name] = f"{module}.{alias.name}"
                else:
                    other.add(alias.asname or alias.name)
    for node in tree.body:  # module-level `Conv = nn.Conv2d`
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            path = _resolve(node.value, torch_names)
            if path is not None:
                torch_names[node.targets[0].id] = path
    return torch_names, other - set(torch_names), notes


def _statements(body):
    """Every statement, nested ones included (imports are statements: no need to walk expressions)."""
    for node in body:
        yield node
        for name in ("body", "orelse", "finalbody", "handlers", "cases"):
            inner = getattr(node, name, None)
            if isinstance(inner, list):
                yield from _statements(inner)


def _resolve(node: ast.AST, names: Dict[str, str]) -> Optional[str]:
    """``nn.init.xavier_uniform_`` -> ``torch.nn.init.xavier_uniform_`` when ``nn`` is bound to torch."""
    parts: List[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name) or node.id not in names:
        return None
    return ".".join([names[node.id], *reversed(parts)])


def canonical(api: str) -> str:
    """``torch.nn.modules.conv.Conv2d`` -> ``torch.nn.Conv2d``: torch.nn re-exports its public layers."""
    parts = api.split(".")
    if len(parts) >= 4 and parts[:3] == ["torch", "nn", "modules"] and parts[-1][:1].isupper():
        return f"torch.nn.{parts[-1]}"
    return api


def _literal(node: ast.AST) -> Any:
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return NOT_LITERAL


def _root(node: ast.AST) -> Optional[str]:
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


class _Finder(ast.NodeVisitor):
    def __init__(
        self,
        filename: str,
        torch_names: Dict[str, str],
        other_names: Set[str],
        methods: FrozenSet[str] = TENSOR_METHODS,
    ):
        self.filename = filename
        self.names = torch_names
        self.other = other_names
        self.methods = methods
        self.uses: List[Use] = []

    def _add(self, api: str, node: ast.expr, how: str, call: Optional[ast.Call] = None) -> None:
        if api in NAMESPACES:
            return
        api = canonical(api)
        if call is None:
            self.uses.append(Use(api, self.filename, node.lineno, how))
            return
        spread = any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords)
        args = tuple(_literal(a) for a in call.args if not isinstance(a, ast.Starred))
        keywords = tuple((k.arg, _literal(k.value)) for k in call.keywords if k.arg is not None)
        self.uses.append(Use(api, self.filename, node.lineno, how, args, keywords, spread))

    # Imports bind names; they are not uses.
    def visit_Import(self, node: Union[ast.Import, ast.ImportFrom]) -> None:
        pass

    visit_ImportFrom = visit_Import

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Load) and node.id in self.names:
            self._add(self.names[node.id], node, "reference")

    def visit_Attribute(self, node: ast.Attribute) -> None:
        path = _resolve(node, self.names)
        if path is None:
            self.generic_visit(node)
        elif isinstance(node.ctx, ast.Load):
            self._add(path, node, "reference")

    def visit_Call(self, node: ast.Call) -> None:
        path = _resolve(node.func, self.names)
        if path is not None:
            self._add(path, node, "call", node)
        elif (
            isinstance(node.func, ast.Attribute)
            and node.func.attr in self.methods | SHARED_METHODS
            and _root(node.func.value) not in self.other
        ):
            how = INFERRED if node.func.attr in self.methods else UNSEEN
            self._add(f"torch.Tensor.{node.func.attr}", node, how, node)
            self.visit(node.func.value)
        else:
            self.visit(node.func)
        if isinstance(node.func, ast.Name) and node.func.id in ("isinstance", "issubclass") and len(node.args) == 2:
            self.visit(node.args[0])
            self._type_check(node.args[1])
            return
        for child in (*node.args, *node.keywords):
            self.visit(child)

    def _type_check(self, node: ast.expr) -> None:
        """``isinstance(m, (nn.Conv2d, nn.Linear))``: uses that construct nothing."""
        for item in node.elts if isinstance(node, ast.Tuple) else [node]:
            path = _resolve(item, self.names)
            if path is not None:
                self._add(path, item, "type check")
            else:
                self.visit(item)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for base in node.bases:
            path = _resolve(base, self.names)
            if path is not None:
                self._add(path, base, "subclass")
            else:
                self.visit(base)
        for child in (*node.keywords, *node.decorator_list, *node.body):
            self.visit(child)

    # Annotations are not uses: visit a function's decorators, defaults and body only.
    def visit_FunctionDef(self, node: Union[ast.FunctionDef, ast.AsyncFunctionDef]) -> None:
        defaults = [d for d in (*node.args.defaults, *node.args.kw_defaults) if d is not None]
        for child in (*node.decorator_list, *defaults, *node.body):
            self.visit(child)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self.visit(node.value)
