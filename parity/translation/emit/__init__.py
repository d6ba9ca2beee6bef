"""A translated Cell written as a Python package of MindSpore Cells a user can read, keep and edit.

:func:`package_of` turns the Cell :func:`parity.translation.translate` built on example inputs
into text: one ``nn.Cell`` class per traced custom Module (its ``construct`` a statement per
``torch.fx`` node: :mod:`.program`), containers as MindSpore's, and each of the framework's own
layers as the constructor call that builds it again (:mod:`.layers`). ``build()`` assembles the tree
(every Parameter named by its path, as the translated Cell's are) and loads ``weights.ckpt``.

Custom Modules with the same ``construct`` share one class; the layers and Parameters each instance
holds are given to it in ``build()``. Only the programs traced on example inputs are written
(``parity.translate(module, inputs, emit=...)``), one per mode: where the train and eval programs
differ, ``construct`` picks by ``self.training``.

May import what :mod:`parity.translation` may.
"""

from __future__ import annotations

import keyword
import os
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

import mindspore as ms
import numpy as np
from mindspore import nn

from ...errors import ParityUnsupported
from ..trace.graph import GraphForward, Program
from .layers import layer_call
from .program import Arguments, arguments_of, construct_of

__all__ = ["Package", "package_of", "write_package"]

WEIGHTS = "weights.ckpt"
CONSTANTS = "constants.npz"


@dataclass
class Package:
    """The package's files as text, its constants, and the Cell whose weights it keeps."""

    files: Dict[str, str]
    constants: Dict[str, np.ndarray]
    cell: nn.Cell


@dataclass
class _Class:
    name: str
    torch_class: str
    text: List[str]


@dataclass
class _Writer:
    classes: Dict[str, _Class] = field(default_factory=dict)  # the class's text -> the class
    imports: Dict[str, str] = field(default_factory=dict)
    bindings: Dict[str, Tuple[str, str]] = field(default_factory=dict)
    constants: Dict[str, np.ndarray] = field(default_factory=dict)
    layer_modules: Dict[str, str] = field(default_factory=dict)  # module -> alias
    problems: List[Tuple[str, str]] = field(default_factory=list)  # (place, why it cannot be written)

    def expression(self, cell: nn.Cell, path: str, depth: int) -> str:
        """The text that builds ``cell``; where it cannot be written, ``None`` and the problem kept,
        so that every place is found in one pass."""
        try:
            return self._expression(cell, path, depth)
        except ParityUnsupported as exc:
            self.problems.append((path or "<root>", str(exc)))
            return "None"

    def _expression(self, cell: nn.Cell, path: str, depth: int) -> str:
        if isinstance(cell, GraphForward):
            return self.custom(cell, path, depth)
        if isinstance(cell, (nn.SequentialCell, nn.CellList)):
            kind = "SequentialCell" if isinstance(cell, nn.SequentialCell) else "CellList"
            items = [
                self.expression(child, _joined(path, name), depth + 1) for name, child in cell.name_cells().items()
            ]
            return f"nn.{kind}([{_listed(items, depth)}])"
        if isinstance(cell, nn.CellDict):
            items = [
                f"{name!r}: {self.expression(child, _joined(path, name), depth + 1)}"
                for name, child in cell.name_cells().items()
            ]
            return f"nn.CellDict({{{_listed(items, depth)}}})"
        if cell.name_cells():
            raise ParityUnsupported(
                f"{path or '<root>'} ({type(cell).__qualname__}): a translated layer with layers inside, "
                "which the package cannot write as one call"
            )
        call = layer_call(cell, path or "<root>")
        alias = "nn" if call.module == "mindspore.nn" else self.layer_alias(call.module)
        return call.text(alias)

    def layer_alias(self, module: str) -> str:
        if module not in self.layer_modules:
            alias = module.rpartition(".")[2]
            if alias in self.layer_modules.values() or alias in ("nn", "ms", "mindspore"):
                alias = module.replace(".", "_")
            self.layer_modules[module] = alias
        return self.layer_modules[module]

    def custom(self, cell: GraphForward, path: str, depth: int) -> str:
        where = f"{path or '<root>'} ({cell.torch_class})"
        programs = _programs(cell, where)
        children = cell.name_cells()
        own = [(name, p) for name, p in cell._params.items()]  # noqa: SLF001  (MindSpore's own registry)
        constants: Dict[str, np.ndarray] = {}
        constructs = {}
        for training, call, program in programs:
            found = construct_of(program, _attributes(cell, constants), where, _arguments(cell, call, where))
            constructs[training] = found
            self.imports.update(found.imports)
            self.bindings.update(found.bindings)
        arguments = list(children) + [name for name, _ in own] + sorted(constants)
        text = _class_body(arguments, list(children), own, sorted(constants), constructs)
        klass = self.class_for(cell.torch_class, text)
        for name, array in constants.items():
            self.constants[_joined(path, name)] = array
        given = [
            f"{_argument(name)}={self.expression(child, _joined(path, name), depth + 1)}"
            for name, child in children.items()
        ]
        given += [f"{_argument(name)}={_zeros(p)}" for name, p in own]
        given += [f"{_argument(name)}=constants[{_joined(path, name)!r}]" for name in sorted(constants)]
        return f"{klass}({_listed(given, depth)})"

    def class_for(self, torch_class: str, body: List[str]) -> str:
        key = "\n".join(body)
        if key not in self.classes:
            base = _identifier(torch_class.rpartition(".")[2])
            taken = {c.name for c in self.classes.values()}
            name, n = base, 2
            while name in taken:
                name, n = f"{base}_{n}", n + 1
            self.classes[key] = _Class(name, torch_class, body)
        return self.classes[key].name


def _identifier(name: str) -> str:
    name = "".join(c if c.isalnum() or c == "_" else "_" for c in name) or "Module"
    return name if name.isidentifier() and not keyword.iskeyword(name) else "M_" + name


def _argument(name: str) -> str:
    """The constructor's argument for the attribute ``name`` (``self_`` for BERT's ``self``)."""
    return name + "_" if name == "self" else name


def _joined(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _listed(items: List[str], depth: int) -> str:
    if not items:
        return ""
    pad = "    " * (depth + 1)
    return "\n" + "".join(f"{pad}{item},\n" for item in items) + "    " * depth


def _zeros(param: ms.Parameter) -> str:
    return f"zeros({tuple(param.shape)!r}, mindspore.{_dtype_name(param.dtype)})"


def _dtype_name(dtype: Any) -> str:
    names = {ms.float32: "float32", ms.float16: "float16", ms.bfloat16: "bfloat16", ms.float64: "float64"}
    names.update({ms.int64: "int64", ms.int32: "int32", ms.int8: "int8", ms.uint8: "uint8", ms.bool_: "bool_"})
    if dtype not in names:
        raise ParityUnsupported(f"a Parameter of dtype {dtype} cannot be written")
    return names[dtype]


def _arguments(cell: GraphForward, call: tuple, where: str) -> Arguments:
    try:
        return arguments_of(cell.forward_signature, call)
    except ParityUnsupported as exc:
        raise ParityUnsupported(f"{where}: {exc}") from None


def _programs(cell: GraphForward, where: str) -> List[Tuple[bool, tuple, Program]]:
    if cell.example_calls() != 1:
        raise ParityUnsupported(
            f"{where}: the example inputs called it in {cell.example_calls()} ways; the package writes one "
            "construct per Module, traced on one kind of call (translate with inputs that call it one way)"
        )
    programs = sorted(cell.traced_programs(), key=lambda found: found[0])
    if not programs:
        raise ParityUnsupported(f"{where}: no program was traced on the example inputs")
    return programs


def _attributes(cell: GraphForward, constants: Dict[str, np.ndarray]):
    """What a get_attr node of ``cell``'s programs reads: ``self.<path>`` of the Parameter it is, or a
    constant the package keeps."""
    held = {id(p): name for name, p in _own_paths(cell)}

    def attribute_of(node, value) -> Tuple[str, Optional[np.ndarray]]:
        if isinstance(value, ms.Parameter) and id(value) in held:
            return _self_path(held[id(value)]), None
        name = "c_" + _identifier(node.name)
        array = value.asnumpy() if isinstance(value, ms.Tensor) else np.asarray(value)
        constants[name] = array
        return f"self.{name}", array

    return attribute_of


def _own_paths(cell: nn.Cell) -> List[Tuple[str, ms.Parameter]]:
    """Every Parameter under ``cell`` with its attribute path from it."""
    found = [(name, p) for name, p in cell._params.items()]  # noqa: SLF001  (MindSpore's own registry)
    for child_name, child in cell.name_cells().items():
        found += [(f"{child_name}.{name}", p) for name, p in _own_paths(child)]
    return found


def _self_path(path: str) -> str:
    shown = "self"
    for part in path.split("."):
        shown += f"[{part}]" if part.isdigit() else f".{part}"
    return shown


def _class_body(arguments, children, own, constants, constructs) -> List[str]:
    lines = [f"def __init__(self{''.join(', ' + _argument(a) for a in arguments)}):", "    super().__init__()"]
    lines += [f"    self.{name} = {_argument(name)}" for name in children]
    lines += [
        f"    self.{name} = Parameter({_argument(name)}, name={name!r}, requires_grad={p.requires_grad})"
        for name, p in own
    ]
    lines += [f"    self.{name} = Tensor({_argument(name)})" for name in constants]
    if len(constructs) == 1 or constructs[False].lines == constructs[True].lines:
        only = next(iter(constructs.values()))
        return lines + [""] + only.lines
    head = constructs[False].lines[0]  # both programs were traced on one call: one signature
    names = [a.split("=")[0] for a in head[len("def construct(self") : -len("):")].split(", ") if a and a != "*"]
    passed = ", ".join(f"{name}={name}" for name in names)
    lines += ["", head]
    lines += [
        "    if self.training:",
        f"        return self.construct_train({passed})",
        f"    return self.construct_eval({passed})",
    ]
    for training, name in ((False, "construct_eval"), (True, "construct_train")):
        body = list(constructs[training].lines)
        body[0] = body[0].replace("def construct(", f"def {name}(", 1)
        lines += [""] + body
    return lines


def _tied(cell: nn.Cell) -> List[Tuple[str, str]]:
    """``(path, first path)`` of each place that holds a Parameter held before it (an output layer
    tied to the embedding), in the order MindSpore walks them: ``build()`` builds each layer on its
    own, then gives the later places the first one's Parameter, as the translated Cell holds it."""
    first: Dict[int, str] = {}
    tied = []
    for path, param in _own_paths(cell):
        if id(param) in first:
            tied.append((path, first[id(param)]))
        else:
            first[id(param)] = path
    return tied


def _refusal(problems: List[Tuple[str, str]]) -> str:
    """One problem as it was said; several grouped by what blocks them, those blocking most places first."""
    if len(problems) == 1:
        return problems[0][1]
    groups: Dict[str, List[str]] = {}
    for place, why in problems:
        key = why[len(place) :].lstrip(" :") if why.startswith(place) else why
        if key.startswith("(") and ")" in key:  # "(torch.Class): why" -> "torch.Class: why"
            key = key[1:].replace(")", "", 1)
        groups.setdefault(key, []).append(place)
    lines = [
        f"the package cannot be written: {len(groups)} blocker(s) in {len(problems)} place(s), every one found "
        "(those blocking most places first):"
    ]
    for key, places in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        shown = ", ".join(places[:3]) + (f" and {len(places) - 3} more" if len(places) > 3 else "")
        lines.append("  " + key.replace("\n", "\n  "))
        lines.append(f"      at {len(places)} place(s): {shown}")
    return "\n".join(lines)


def package_of(cell: nn.Cell, torch_class: str) -> Package:
    """The package for ``cell`` (translated with example inputs); :class:`parity.ParityUnsupported`
    names what cannot be written."""
    writer = _Writer()
    tree = writer.expression(cell, "", 1)
    if writer.problems:
        raise ParityUnsupported(_refusal(writer.problems))
    ties = "".join(f"    tie(model, {path!r}, {first!r})\n" for path, first in _tied(cell))
    return Package(
        {"__init__.py": _init_text(torch_class), "model.py": _model_text(writer, tree, ties, torch_class)},
        writer.constants,
        cell,
    )


_HEADER = '''"""MindSpore Cells translated from {torch_class} by parity.translate(..., emit=...).

Each class is one traced PyTorch Module: construct is what its forward ran on the example inputs,
a statement per operation, with the file:line it came from. A "# guard" is a decision the trace took;
the assert after it refuses inputs that would take another path. build() assembles the model and
loads weights.ckpt (the translated weights, under the same Parameter names).
"""

import math
import operator
import os

import mindspore
import numpy as np
from mindspore import Parameter, Tensor, nn
'''

_BINDINGS = """
def adapter(entry):
    \"\"\"A call-table adapter that a factory made (no module names it), as the table holds it.\"\"\"
    return entry[0] if isinstance(entry, tuple) else entry


"""

_FOOTER = '''

def zeros(shape, dtype):
    """A placeholder for a Parameter's value: build() loads the weights over it."""
    return Tensor(np.zeros(shape), dtype)


def configured(cell, **attributes):
    """``cell`` with attributes the translation set after building it."""
    for name, value in attributes.items():
        setattr(cell, name, value)
    return cell


def tie(model, path, first):
    """Hold at ``path`` the Parameter at ``first`` (tied weights: one Parameter, named by ``first``)."""

    def owner(dotted):
        *parts, name = dotted.split(".")
        cell = model
        for part in parts:
            cell = cell.name_cells()[part]
        return cell, name

    holder, name = owner(first)
    setattr(*owner(path), getattr(holder, name))


def build(weights=True):
    """The model, its Parameters named by their paths; ``weights``: load weights.ckpt beside this file."""
    here = os.path.dirname(os.path.abspath(__file__))
    constants = dict(np.load(os.path.join(here, "{constants}"))) if os.path.exists(os.path.join(here, "{constants}")) else {{}}
    model = {tree}
{ties}    for path, param in model.parameters_and_names():
        param.name = path
    model.set_jit_config(mindspore.JitConfig(jit_syntax_level="LAX"))  # GRAPH mode: Python's objects too
    if weights:
        missing, _ = mindspore.load_param_into_net(model, mindspore.load_checkpoint(os.path.join(here, "{weights}")), strict_load=True)
        if missing:
            raise ValueError(f"weights.ckpt holds no value for {{missing}}")
    return model
'''


def _model_text(writer: _Writer, tree: str, ties: str, torch_class: str) -> str:
    parts = [_HEADER.format(torch_class=torch_class).rstrip("\n")]
    standard = {"math", "operator", "mindspore", "os"}
    extra = sorted(
        f"import {module}" for alias, module in writer.imports.items() if alias == module and module not in standard
    )
    extra += sorted(
        f"from {module.rpartition('.')[0]} import {module.rpartition('.')[2]}"
        + ("" if alias == module.rpartition(".")[2] else f" as {alias}")
        for alias, module in writer.imports.items()
        if alias != module
    )
    extra += sorted(
        f"from {module.rpartition('.')[0]} import {module.rpartition('.')[2]}"
        + ("" if alias == module.rpartition(".")[2] else f" as {alias}")
        for module, alias in writer.layer_modules.items()
    )
    if extra:
        parts.append("\n".join(extra))
    if writer.bindings:
        bound = [
            f"{alias} = adapter(table.{kind}[{name!r}])" for alias, (kind, name) in sorted(writer.bindings.items())
        ]
        parts.append(_BINDINGS + "\n".join(bound))
    for klass in writer.classes.values():
        body = "\n".join(("    " + line) if line else "" for line in klass.text)
        parts.append(f'\nclass {klass.name}(nn.Cell):\n    """Translated from {klass.torch_class}."""\n\n{body}')
    text = "\n\n".join(parts)
    return text + _FOOTER.format(constants=CONSTANTS, weights=WEIGHTS, tree=tree, ties=ties)


def _init_text(torch_class: str) -> str:
    return f'"""MindSpore Cells translated from {torch_class}: ``build()`` gives the model."""\n\nfrom .model import build\n\n__all__ = ["build"]\n'


def write_package(package: Package, folder: str) -> List[str]:
    """Write the package's files into ``folder`` (which exists); the names written."""
    names = []
    for name, text in package.files.items():
        with open(os.path.join(folder, name), "w", encoding="utf-8") as handle:
            handle.write(text)
        names.append(name)
    ms.save_checkpoint(package.cell, os.path.join(folder, WEIGHTS))
    names.append(WEIGHTS)
    if package.constants:
        np.savez(os.path.join(folder, CONSTANTS), **package.constants)
        names.append(CONSTANTS)
    return names
