"""The tree walk: layers go to their family's builder, containers to their MindSpore containers,
and any other Module whose children all translate to a :class:`~.trace.graph.GraphForward` Cell that runs
the ``torch.fx`` trace of its ``forward`` against the translated children or, where ``forward``
cannot be traced, to a :class:`TorchForward` Cell that runs the PyTorch class's own ``forward``."""

from __future__ import annotations

import inspect
import types
from collections import OrderedDict
from dataclasses import replace
from typing import Any, Dict, List, Tuple, Type

import mindspore as ms
import torch
from mindspore import nn

from ..errors import ParityUnsupported
from .layers.table import Context, builder_for, torch_name
from .trace.graph import TraceFailed, graph_cell

__all__ = ["translate_module", "TorchForward"]

# Plain attribute types copied from a custom Module onto its TorchForward Cell.
_PLAIN = (bool, int, float, str, type(None))
_TORCH_CONTAINERS = (torch.nn.Sequential, torch.nn.ModuleList, torch.nn.ModuleDict)


def translate_module(module: torch.nn.Module, ctx: Context) -> nn.Cell:
    """The MindSpore Cell for ``module`` (recursively), without weights copied yet."""
    found = builder_for(module)
    if found is not None:
        kind, build = found
        return build(module, replace(ctx, kind=kind))
    if isinstance(module, _TORCH_CONTAINERS) and _plain_container(module):
        return _container(module, ctx)
    if type(module).__module__.startswith("torch."):
        raise ctx.no_translation()
    return _custom(module, ctx)


def _children(module: torch.nn.Module) -> Dict[str, torch.nn.Module]:
    return dict(module.named_children())


def _translated_children(module, ctx: Context) -> "OrderedDict[str, object]":
    """Every child translated; where some cannot be, :class:`Blockers` holding every refusal below
    (each child is tried, so that one refusal does not hide the next)."""
    cells, blocked = OrderedDict(), []
    for name, child in _children(module).items():
        where = ctx.child(name, child)
        try:
            cells[name] = translate_module(child, where)
        except Blockers as exc:
            blocked += exc.items
        except ParityUnsupported as exc:
            blocked.append(_refusal_item(where, exc))
    if blocked:
        raise Blockers(blocked)
    return cells


def _refusal_item(ctx: Context, exc: ParityUnsupported) -> Tuple[str, str, str]:
    """(where, why, the whole message) of a refusal: the ``where`` its message starts with, and the rest."""
    text = str(exc)
    for lead in (f"{ctx.where}: ", f"{ctx.where} "):
        if text.startswith(lead):
            return ctx.where, text[len(lead) :], text
    return ctx.where, text, text


_CALLS = "forward calls what has no MindSpore translation:"


class Blockers(ParityUnsupported):
    """Every part of a model that cannot be translated, found in one pass over the whole tree:
    ``items`` is ``[(where, why, message)]``. One refusal reads as it was raised; several are
    grouped by what blocks (a call at its file:line, a layer type, a reason), each with how many
    modules it blocks and which."""

    def __init__(self, items: List[Tuple[str, str, str]]):
        self.items = list(items)
        super().__init__(self._text())

    def groups(self) -> "OrderedDict[str, List[str]]":
        found: "OrderedDict[str, List[str]]" = OrderedDict()
        for where, why, _ in self.items:
            if why.startswith(_CALLS):
                keys = [line.strip() for line in why[len(_CALLS) :].splitlines() if line.strip()]
            elif why.startswith("has no translation"):
                keys = [f"{where.partition(' (')[2].rstrip(')')} has no translation"]
            else:
                keys = [why.splitlines()[0]]
            for key in keys:
                wheres = found.setdefault(key, [])
                if where not in wheres:  # a call written twice on one line blocks its module once
                    wheres.append(where)
        return found

    def _text(self) -> str:
        if len(self.items) == 1:
            return self.items[0][2]
        groups = self.groups()
        modules = len({where for where, _, _ in self.items})
        lines = [
            f"translate() cannot translate {modules} module(s): {len(groups)} blocker(s), every one found "
            "(those blocking most modules first):"
        ]
        for key, wheres in sorted(groups.items(), key=lambda kv: -len(kv[1])):
            shown = ", ".join(wheres[:3]) + (f" and {len(wheres) - 3} more" if len(wheres) > 3 else "")
            lines.append(f"  {key}")
            lines.append(f"      in {len(wheres)} module(s): {shown}")
        return "\n".join(lines)


def _plain_container(module) -> bool:
    """A container, or a subclass that keeps the container's forward (ModuleList/Dict have none)."""
    if isinstance(module, torch.nn.Sequential):
        return type(module).forward is torch.nn.Sequential.forward
    return type(module).forward is torch.nn.Module.forward  # a ModuleDict subclass may define one


def _container(module, ctx: Context):
    cells = _translated_children(module, ctx)
    if isinstance(module, torch.nn.Sequential):
        return nn.SequentialCell(cells)
    if isinstance(module, torch.nn.ModuleList):
        return nn.CellList(list(cells.values()))
    return nn.CellDict(cells)


# --- custom Modules ---------------------------------------------------------------------------


def _user_functions(klass) -> Dict[str, types.FunctionType]:
    """``forward`` and the helper methods the user's classes define (not torch.nn.Module's)."""
    found: Dict[str, types.FunctionType] = {}
    for base in reversed(klass.__mro__):
        if base.__module__.startswith("torch.") or base is object:
            continue
        for name, value in vars(base).items():
            if isinstance(value, types.FunctionType) and name != "__init__":
                found[name] = value
    return found


def _torch_names(function) -> List[str]:
    """Global names that ``function`` (and functions nested in it) uses and that are PyTorch."""
    found, codes = [], [function.__code__]
    while codes:
        code = codes.pop()
        codes += [c for c in code.co_consts if isinstance(c, types.CodeType)]
        for name in code.co_names:
            value = function.__globals__.get(name)
            where = (
                getattr(value, "__name__", "")
                if isinstance(value, types.ModuleType)
                else getattr(value, "__module__", "") or ""
            )
            if value is not None and (where == "torch" or where.startswith("torch.")) and name not in found:
                found.append(name)
        if "super" in code.co_names and "super()" not in found:
            found.append("super()")
    return found


def _reachable(functions: Dict[str, types.FunctionType]) -> Dict[str, types.FunctionType]:
    """``forward`` and the methods it may call (a name it reads that is one of them), transitively:
    a helper that ``forward`` never calls blocks nothing."""
    found, todo = {}, ["forward"]
    while todo:
        name = todo.pop()
        if name in found or name not in functions:
            continue
        found[name] = inspect.unwrap(functions[name])  # a decorated forward: the code it wraps
        codes = [found[name].__code__]
        while codes:
            code = codes.pop()
            codes += [c for c in code.co_consts if isinstance(c, types.CodeType)]
            todo += [n for n in code.co_names if n in functions and n not in found]
    return found


def _refusal(functions: Dict[str, types.FunctionType]) -> str:
    """Why ``forward`` cannot run on MindSpore tensors as it is ("" when it can)."""
    if "forward" not in functions:
        return "has no forward of its own to run"
    for name, function in _reachable(functions).items():
        used = _torch_names(function)
        if used:
            return (
                f"{name}() uses {', '.join(used)}: running forward itself on MindSpore tensors (what is "
                "left when forward cannot be traced) allows only calls to its children, Python operators "
                "and Tensor methods MindSpore shares; write this Cell by hand (or move the PyTorch calls "
                "into a supported layer)"
            )
    return ""


def _plain_attributes(module) -> Dict[str, object]:
    """Numbers, strings and tuples of them that forward may read (``self.scale``, ``self.dim``)."""
    found: Dict[str, object] = {}
    for name, value in vars(module).items():
        if name.startswith("_") or name == "training":
            continue
        if isinstance(value, _PLAIN) or isinstance(value, tuple) and all(isinstance(v, _PLAIN) for v in value):
            found[name] = value
    return found


def _ms_tensor(value: torch.Tensor, name: str, trainable: bool):
    array = value.detach().cpu().numpy().copy()
    return ms.Parameter(ms.Tensor(array), name=name, requires_grad=trainable)


def _own_tensors(module):
    """Gives a Cell the Module's own parameters and buffers, under the same names."""

    def give(cell):
        for name, param in module.named_parameters(recurse=False):
            setattr(cell, name, _ms_tensor(param, name, param.requires_grad))
        for name, buffer in module.named_buffers(recurse=False):
            setattr(cell, name, _ms_tensor(buffer, name, False))

    return give


def _none_defaults(module) -> bool:
    """Whether ``forward`` has an argument that defaults to None (a tensor a caller may give)."""
    try:
        parameters = inspect.signature(type(module).forward).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.default is None for p in parameters)


def _custom(module, ctx: Context):
    children = _translated_children(module, ctx)
    try:
        return graph_cell(module, ctx, children, _own_tensors(module))
    except TraceFailed as failure:
        traced = failure
    functions = _user_functions(type(module))
    refused = _refusal(functions)
    # the trace took forward's defaults: try the real arguments (with example inputs it took them already)
    if refused and ctx.examples is None and _none_defaults(module):
        return graph_cell(module, ctx, children, _own_tensors(module), defer=True)
    if refused:
        raise ctx.unsupported(f"{traced}; and {refused}")
    cell = TorchForward(type(module), str(traced))
    for name, child in children.items():
        cell.insert_child_to_cell(name, child)
    _own_tensors(module)(cell)
    for name, value in _plain_attributes(module).items():
        if hasattr(nn.Cell, name):
            raise ctx.unsupported(f"attribute {name!r} clashes with mindspore.nn.Cell.{name}")
        setattr(cell, name, value)
    for name, function in functions.items():
        if name != "forward":
            object.__setattr__(cell, name, types.MethodType(function, cell))
    return cell


class TorchForward(nn.Cell):
    """A custom PyTorch Module, translated: the same children, parameters and attributes under the
    same names, and ``construct`` = the PyTorch class's ``forward`` with ``self`` bound to this Cell.
    PYNATIVE mode only (``parity_pynative_only``): GRAPH mode would compile ``construct``, which calls
    a Python function it holds (and catches what it raises to explain it), not graph syntax."""

    parity_pynative_only = (
        "runs the PyTorch class's forward as it is, a Python function MindSpore's GRAPH compiler cannot compile"
    )

    def __init__(self, torch_class: Type[torch.nn.Module], why: str = ""):
        super().__init__()
        self.torch_class = torch_name(torch_class)
        self._torch_forward = torch_class.forward
        self._why = why  # why forward was not traced

    def construct(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return self._torch_forward(self, *args, **kwargs)
        except (TypeError, ValueError, AttributeError, IndexError, RuntimeError) as exc:
            if not self._why:
                raise
            raise ParityUnsupported(
                f"{self.torch_class}: its forward runs as it is on MindSpore tensors, since "
                f"{self._why}; and it raised {type(exc).__name__}: {exc}"
            ) from None

    def extend_repr(self) -> str:
        return f"forward of {self.torch_class}"
