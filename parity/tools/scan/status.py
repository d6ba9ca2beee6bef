"""What parity knows about one PyTorch API, without importing either framework: whether
``parity.translate`` (or ``translate_optimizer``) handles it, which known mismatches apply to it on a
device, and so its status for ``parity scan``.

The translation tables are read from the source of ``parity/translation`` and its subpackages (its
modules import MindSpore, so they are parsed, not imported): every class named in an
``@translates(...)`` decorator, directly or through a module-level table (``@translates(*_MAX)``),
the containers of ``modules.py``, the optimizers of ``optim.py``, and the functions and Tensor
methods a traced ``forward`` may call (the keys of the module-level ``FUNCTIONS`` and ``METHODS`` of
the call table's topic modules, ``calls/*.py``; an in-place method, ``x.relu_()``, is its
out-of-place name's, as ``method_for`` has it). ``tests/test_scan.py``
checks the parsed tables against the imported ``translated_names()``, ``translated_optimizers()``,
``FUNCTIONS`` and ``METHODS``.

Statuses, from the best to the worst (only the registry's ``nn`` family counts: ``mint`` entries
describe ``mindspore.mint``, which translate does not build):

* ``as-is``: translated, and no known mismatch applies on the device.
* ``fix``: known mismatches apply and each has a fix (for a translated layer, translate applies
  it; for an optimizer parity translates, parity's own formulas are the fix).
* ``no-fix``: a known mismatch without a fix applies, or may apply.
* ``unsupported``: a known mismatch says MindSpore has no kernel for it on the device.
* ``unknown``: parity has no knowledge of it (neither translated nor in the registry).

Whether a mismatch applies at a use is :func:`_applies_at`: ``yes``, ``no`` or ``maybe`` (the
condition reads an argument that is not a literal, or the API is passed around as a value or
subclassed, so its calls are not seen). ``maybe`` counts as applying: the statuses err on the side
of a known mismatch, and the report says where and why it only may apply.
"""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, FrozenSet, List, Optional, Sequence, Set, Tuple

from ...errors import ParityInternalError
from ...registry import rules
from ...registry.schema import DEVICES
from .source import NOT_LITERAL, RUNTIME_CALL, RUNTIME_LAYER, Use
from .torch_source import init_parameters

__all__ = [
    "DEVICES",
    "Tables",
    "translation_tables",
    "Finding",
    "Status",
    "judge",
    "STATUSES",
    "CONVERTIBLE",
    "status_text",
]

TRANSLATION_DIR = Path(__file__).resolve().parents[2] / "translation"
STATUSES = ("as-is", "fix", "no-fix", "unsupported", "unknown")
CONVERTIBLE = ("as-is", "fix")
CUSTOM_MODULE = "torch.nn.Module"


def status_text(code: str, device: str) -> str:
    return {
        "as-is": "translates as is",
        "fix": "known mismatch, with fix",
        "no-fix": "known mismatch, no fix",
        "unsupported": f"unsupported on {device}",
        "unknown": "unknown",
    }[code]


@dataclass(frozen=True)
class Tables:
    """The PyTorch APIs parity translates: ``torch.nn`` layers, containers (and custom Modules,
    ``torch.nn.Module``), ``torch.optim`` optimizers, the functions (``torch.flatten``,
    ``torch.nn.functional.relu``) and Tensor methods (``view``, by name) of a traced ``forward``."""

    layers: FrozenSet[str]
    containers: FrozenSet[str]
    optimizers: FrozenSet[str]
    functions: FrozenSet[str] = frozenset()
    methods: FrozenSet[str] = frozenset()

    def translated(self, api: str) -> bool:
        if api.startswith(_TENSOR):
            return _out_of_place(api[len(_TENSOR) :]) in self.methods
        return api in self.layers or api in self.containers or api in self.optimizers or api in self.functions


_TENSOR = "torch.Tensor."


def _out_of_place(method: str) -> str:
    """``relu_`` -> ``relu``: translate computes an in-place method out of place (``method_for``)."""
    return method[:-1] if method.endswith("_") and not method.endswith("__") else method


@functools.lru_cache(maxsize=None)
def translation_tables(folder: Path = TRANSLATION_DIR) -> Tables:
    layers: Set[str] = set()
    containers = {CUSTOM_MODULE}
    optimizers: Set[str] = set()
    functions: Set[str] = set()
    methods: Set[str] = set()
    for path in sorted(folder.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        tables = _module_tables(tree)
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                for decorator in node.decorator_list:
                    if isinstance(decorator, ast.Call) and getattr(decorator.func, "id", "") == "translates":
                        layers.update(_decorator_classes(decorator, tables, path))
        containers.update(tables.get("_TORCH_CONTAINERS", ()))
        if path.name == "optim.py":
            optimizers.update(f"torch.optim.{name}" for name in _string_keys(tree, "_TRANSLATIONS"))
        functions.update(_string_keys(tree, "FUNCTIONS"))  # the call table's topic modules
        methods.update(_string_keys(tree, "METHODS"))
    if not layers or len(containers) < 2 or not optimizers or not functions or not methods:
        raise ParityInternalError(
            f"parity scan could not read the translation tables in {folder} "
            f"({len(layers)} layers, {len(containers)} containers, {len(optimizers)} optimizers, "
            f"{len(functions)} functions, {len(methods)} Tensor methods)"
        )
    return Tables(
        frozenset(layers), frozenset(containers), frozenset(optimizers), frozenset(functions), frozenset(methods)
    )


def _dotted(node: ast.AST) -> Optional[str]:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return ".".join([node.id, *reversed(parts)])
    return None


def _module_tables(tree: ast.Module) -> Dict[str, Tuple[str, ...]]:
    """Module-level ``_NAME = {torch.nn.X: ..., ...}`` or ``(torch.nn.X, ...)``: name -> the torch paths."""
    found = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            value = node.value
            items = value.keys if isinstance(value, ast.Dict) else getattr(value, "elts", [])
            paths = tuple(p for p in (_dotted(i) for i in items if i is not None) if p and p.startswith("torch."))
            if paths:
                found[node.targets[0].id] = paths
    return found


def _decorator_classes(decorator: ast.Call, tables: Dict[str, Tuple[str, ...]], path: Path) -> List[str]:
    found: List[str] = []
    for arg in decorator.args:
        if isinstance(arg, ast.Starred) and isinstance(arg.value, ast.Name) and arg.value.id in tables:
            found.extend(tables[arg.value.id])
        elif (dotted := _dotted(arg) or "").startswith("torch."):
            found.append(dotted)
        else:
            raise ParityInternalError(f"parity scan cannot read @translates(...) at {path}:{decorator.lineno}")
    return found


def _string_keys(tree: ast.Module, name: str) -> List[str]:
    """The string keys of a module-level ``name = {...}`` or ``name: Dict[...] = {...}``."""
    for node in tree.body:
        target = node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
        value = getattr(node, "value", None)
        if getattr(target, "id", "") == name and isinstance(value, ast.Dict):
            return [k.value for k in value.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)]
    return []


@dataclass(frozen=True)
class Finding:
    """A known mismatch of the API on the device and whether it applies to the uses seen:
    ``applies`` is ``yes``, ``maybe`` (a value the condition reads is not known, or the API is
    passed around or subclassed, so its calls are not seen) or ``no``; ``where`` and ``why`` say
    at which use and what was not known."""

    id: str
    kind: str
    summary: str
    fix: str
    applies: str
    where: str = ""
    why: str = ""
    device_unsupported: bool = False

    @property
    def live(self) -> bool:
        return self.applies != "no"


@dataclass(frozen=True)
class Status:
    code: str
    findings: Tuple[Finding, ...] = ()

    @property
    def certain(self) -> bool:
        """False when the mismatches that make the status only may apply."""
        worst = [
            f
            for f in self.findings
            if f.live
            and (f.device_unsupported if self.code == "unsupported" else not f.fix if self.code == "no-fix" else True)
        ]
        return any(f.applies == "yes" for f in worst) if worst else True


def judge(
    api: str,
    uses: Sequence[Use],
    *,
    registry,
    tables: Tables,
    device: str,
    versions: Tuple[Optional[str], Optional[str]],
) -> Status:
    """The status of ``api`` on ``device``, given its uses (a known mismatch that may apply counts)."""
    # Entries about a half dtype (``dtypes``) or mixed precision (kind ``precision``) hold only where
    # MindSpore computes so: not a use's business.
    findings = tuple(
        _finding(e, api, uses, tables, device)
        for e in registry.entries
        if e.torch == api
        and e.family == "nn"
        and not e.dtypes
        and e.kind != "precision"
        and e.applies(versions[0], versions[1], device)
    )
    live = [f for f in findings if f.live]
    if any(f.device_unsupported for f in live):
        code = "unsupported"
    elif any(not f.fix for f in live):
        code = "no-fix"
    elif live:
        code = "fix"
    else:
        code = "as-is" if tables.translated(api) else "unknown"
    return Status(code, findings)


def _finding(entry, api: str, uses: Sequence[Use], tables: Tables, device: str) -> Finding:
    fix = entry.fix
    if not fix and api in tables.optimizers:
        fix = f"parity translates {api} with PyTorch's own formulas (parity.translation.optim)"
    device_unsupported = entry.kind == "unsupported" and not fix and bool(entry.runs_on) and device not in entry.runs_on
    applies, where, why = "no", "", ""
    for use in uses:
        verdict, reason = _applies_at(entry, use)
        if verdict == "yes" or (verdict == "maybe" and applies == "no"):
            applies, where, why = verdict, use.location, reason
        if verdict == "yes":
            break
    return Finding(entry.id, entry.kind, entry.summary, fix, applies, where, why, device_unsupported)


class _Unknown(Exception):
    """A value the condition needs is not known at this call."""


def _applies_at(entry, use: Use) -> Tuple[str, str]:
    """(``yes``/``maybe``/``no``, why) for one use. The registry's condition (``when``) is written
    for a built pair; one that reads only PyTorch's side is evaluated with the call's literal
    arguments (positional ones placed by the installed torch's ``__init__``) or, at runtime, the
    layer's attributes, and the entry's defaults. One that reads the MindSpore side or the input
    shape (most ``default`` entries: the MindSpore default differs) applies wherever the API is
    used; a use in ``isinstance`` applies nothing."""
    if use.how == "type check":
        return "no", ""
    if not entry.when or rules.referenced(entry.when, "ms") or rules.bare_names(entry.when):
        return "yes", ""  # no condition, or one on the built MindSpore side or the input: a port must see to it
    if use.how not in ("call", RUNTIME_CALL, RUNTIME_LAYER):
        return "maybe", f"{use.how}: its calls are not seen"
    names = (init_parameters(use.api) or ()) if use.args else ()
    passed = dict(use.keywords)
    passed.update(zip(names, use.args))
    if use.spread or len(use.args) > len(names):
        return "maybe", "arguments passed by *args/**kwargs, or positionally where they cannot be placed"
    defaults = {a.torch: a.torch_default for a in entry.arguments if a.torch and a.has_torch_default}

    def torch_arg(name):
        if name in passed and passed[name] is not NOT_LITERAL:
            return passed[name]
        if name in passed or name not in defaults:
            raise _Unknown(name)
        return defaults[name]

    try:
        return ("yes", "") if rules.evaluate(entry.when, {"torch": torch_arg}) else ("no", "")
    except _Unknown as exc:
        return "maybe", f"{exc.args[0]} is not a literal" if exc.args[
            0
        ] in passed else f"{exc.args[0]}'s default unknown"
    except (rules.RuleError, TypeError, ValueError) as exc:  # a literal of another form than the attribute's
        return "maybe", f"cannot evaluate {entry.when!r} here ({exc})"
