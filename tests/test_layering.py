"""The house: packages by capability, the direction of their imports, and the size of their modules.

``docs/architecture.md`` draws the picture; this file checks it. Every import counts, at the top of
a module or inside a function: a lazy import still ties two packages together.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

import pytest

import parity

PACKAGE = Path(parity.__file__).resolve().parent
ROOT = PACKAGE.parent
MAX_TOP_LEVEL = 12
# One concern per module; this ceiling is soft, a module near it is where to look for a second concern.
# Lines as the formatter writes them (one argument a line where a call does not fit).
MAX_LINES = 800
FRAMEWORKS = ("mindspore", "torch")

# Each unit of parity (a package, or a module directly in parity/) and the units it may import.
# The direction runs down the table: the judge knows numbers only, the engine everything below it,
# the plugin, the nightly reports and the tools sit on top.
ALLOWED = {
    "errors": set(),
    "files": {"errors"},
    "options": {"errors"},
    "judge": {"errors"},
    "backends": {"judge", "errors"},
    "registry": {"judge", "errors"},
    "weights": {"judge", "backends", "errors"},
    "translation": {"backends", "weights", "errors"},
    # files: a recorded reference (engine.reference) is a folder the user names, written whole and read bounded.
    "engine": {"judge", "weights", "backends", "registry", "translation", "options", "errors", "files"},
    "catalogue": {"engine", "backends", "registry", "errors"},
    "mismatch_checks": {"engine", "judge", "weights", "backends", "registry", "translation", "errors"},
    "nightly": {"engine", "judge", "options", "errors", "files", "parity"},
    "plugin": {"catalogue", "engine", "nightly", "registry", "translation", "judge", "options", "errors", "files"},
    "tools": {"engine", "weights", "judge", "registry", "backends", "errors", "files"},
    "strategies": {"engine", "errors"},
    "cli": {"catalogue", "engine", "nightly", "tools", "options", "errors", "files", "parity"},
    "parity": {"catalogue", "engine", "judge", "tools", "translation", "weights", "nightly", "errors"},
}
# Where a framework may be imported at the top of a module; everywhere else above the judge only
# inside a function, so that importing parity (and loading the plugin) imports neither. The engine
# runs checks: its modules import the backends (and, where they use one directly, a framework) at
# their top, but for those below, which import no framework at all.
FRAMEWORK_AT_TOP = (
    "parity.backends.mindspore",
    "parity.backends.torch",
    "parity.translation",
    "parity.mismatch_checks.amp_pairs",
    "parity.mismatch_checks.llm_pairs",
    "parity.mismatch_checks.padding_pairs",
    "parity.engine",
)
NO_FRAMEWORK_AT_ALL = ("judge", "registry", "nightly", "plugin", "catalogue", "options", "errors", "files")
# The engine's modules that import no framework, directly or through another module: the plugin,
# the catalogue, the command line, the strategies and the nightly reports import them at their
# top. Every package's __init__ too (see _framework_free_engine).
ENGINE_FRAMEWORK_FREE = (
    "parity.engine.settings",
    "parity.engine.factories",
    "parity.engine.inputs",
    "parity.engine.result",
    "parity.engine.amp",
    "parity.engine.outputs",
    "parity.engine.diagnosis.messages",
    "parity.engine.diagnosis.verdicts",
    "parity.engine.training.result",
    "parity.engine.data_parallel.result",
    "parity.engine.generation.result",
    "parity.engine.shapes.result",
)
MAX_IN_ENGINE = 15  # modules directly in parity/engine/, __init__ counted: the path every check takes


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_names(source: str, module: str, *, is_package: bool = False, top_only: bool = False):
    """Every module ``source`` imports (at the top or, unless ``top_only``, inside a function), as
    absolute names."""
    package = module if is_package else module.rpartition(".")[0]
    tree = ast.parse(source)
    nodes = tree.body if top_only else ast.walk(tree)
    found = []
    for node in nodes:
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package
            for _ in range(node.level - 1):
                base = base.rpartition(".")[0]
            target = node.module or ""
            if node.level:
                target = f"{base}.{target}" if target else base
            # `from . import runner` imports a module too: name both the package and the member.
            found += [target] + [f"{target}.{alias.name}" for alias in node.names]
    return found


def _modules():
    return sorted(PACKAGE.rglob("*.py"))


def _imports(path: Path, *, top_only: bool = False):
    return imported_names(
        path.read_text(encoding="utf-8"), _module_name(path), is_package=path.name == "__init__.py", top_only=top_only
    )


def _framework_free_engine():
    packages = [_module_name(p) for p in sorted((PACKAGE / "engine").rglob("__init__.py"))]
    return packages + list(ENGINE_FRAMEWORK_FREE)


def _unit(module: str) -> str:
    """``parity.engine.check`` -> ``engine``; ``parity.cli`` -> ``cli``; ``parity`` -> ``parity``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "parity"


def _real_module(name: str) -> str:
    """The module an imported name lives in: ``parity.engine.check.run_check`` -> ``parity.engine.check``."""
    while (
        name.count(".")
        and not (ROOT / Path(*name.split("."))).with_suffix(".py").exists()
        and not (ROOT / Path(*name.split(".")) / "__init__.py").exists()
    ):
        name = name.rpartition(".")[0]
    return name


def test_the_scan_sees_relative_and_local_imports():
    source = "def f():\n    from ..engine.check import run_check\n    from .. import backends\n    import torch.nn\n"
    names = imported_names(source, "parity.registry.diagnosis")
    assert names == ["parity.engine.check", "parity.engine.check.run_check", "parity", "parity.backends", "torch.nn"]
    assert imported_names(source, "parity.registry.diagnosis", top_only=True) == []
    assert imported_names("from .store import load\n", "parity.registry", is_package=True)[0] == "parity.registry.store"
    assert _real_module("parity.engine.check.run_check") == "parity.engine.check"
    assert _real_module("parity.backends") == "parity.backends"


def test_every_unit_is_in_the_table():
    units = {_unit(_module_name(p)) for p in _modules()}
    assert units == set(ALLOWED), f"units not in the table: {units - set(ALLOWED)}; gone: {set(ALLOWED) - units}"


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_run_down_the_table(path):
    module = _module_name(path)
    unit = _unit(module)
    wrong = sorted(
        {
            name
            for name in _imports(path)
            if name.startswith("parity.") or name == "parity"
            for target in [_unit(_real_module(name))]
            if target != unit and target not in ALLOWED[unit] and not (name == "parity" and unit in ("parity",))
        }
    )
    # `from .. import backends` names the package `parity` itself: the member decides.
    wrong = [n for n in wrong if n != "parity"]
    assert wrong == [], f"{module} ({unit}) imports {wrong}; {unit} may import {sorted(ALLOWED[unit])}"


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_frameworks_are_imported_where_allowed(path):
    module = _module_name(path)
    frameworks = lambda names: sorted({n for n in names if n.split(".")[0] in FRAMEWORKS})  # noqa: E731
    if _unit(module) in NO_FRAMEWORK_AT_ALL or module in _framework_free_engine():
        assert frameworks(_imports(path)) == [], f"{module} imports a framework"
    elif not module.startswith(FRAMEWORK_AT_TOP):
        assert frameworks(_imports(path, top_only=True)) == [], (
            f"{module} imports a framework at the top: import it inside the function that needs it"
        )


def test_no_import_circle():
    graph = defaultdict(set)
    for path in _modules():
        module = _module_name(path)
        for name in _imports(path, top_only=True):
            if name.startswith("parity."):
                target = _real_module(name)
                if target != module and not module.startswith(target + "."):  # a package's own __init__
                    graph[module].add(target)
    state, circle = {}, []

    def visit(node, trail):
        state[node] = "open"
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                circle.append(trail[trail.index(nxt) :] + [nxt] if nxt in trail else [node, nxt])
            elif nxt not in state:
                visit(nxt, trail + [nxt])
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    assert circle == []


def test_at_most_twelve_modules_directly_in_parity():
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(top) <= MAX_TOP_LEVEL, top


def test_the_engine_holds_at_most_fifteen_modules_directly():
    """The engine's top is the path every check takes; what runs on a failure is in diagnosis/, each
    variant of the check in a package of its own."""
    top = sorted(p.name for p in (PACKAGE / "engine").glob("*.py"))
    assert len(top) <= MAX_IN_ENGINE, top


def _function_imports(tree: ast.AST):
    """Every import statement inside a function (or a method) of ``tree``."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for inner in ast.walk(node):
                if isinstance(inner, (ast.Import, ast.ImportFrom)):
                    yield node.name, inner


@pytest.mark.parametrize("path", sorted((PACKAGE / "engine").rglob("*.py")), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_function_in_the_engine_imports_a_backend_the_translation_or_a_framework(path):
    """The engine's modules import what a check runs on at their top; its framework-free modules
    never import it (see test_frameworks_are_imported_where_allowed)."""
    module, found = _module_name(path), []
    for function, node in _function_imports(ast.parse(path.read_text(encoding="utf-8"))):
        source = ast.unparse(node)
        names = imported_names(source, module, is_package=path.name == "__init__.py")
        heavy = [
            n for n in names if n.startswith(("parity.backends", "parity.translation")) or n.split(".")[0] in FRAMEWORKS
        ]
        if heavy:
            found.append(f"{function}: {source}")
    assert found == [], f"{module} imports inside functions: {found}"


def test_the_function_import_scan_can_fail():
    source = "def f():\n    from ..backends import torch as tb\n    import torch\n"
    assert [name for name, _ in _function_imports(ast.parse(source))] == ["f", "f"]


def _private_imports(source: str, module: str, *, is_package: bool = False):
    """``from parity.x import _name``, and ``alias._name`` where ``alias`` is a parity module the
    source imported: another module's private names."""
    package = module if is_package else module.rpartition(".")[0]
    tree = ast.parse(source)
    found, aliases = [], {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = package
            for _ in range(node.level - 1):
                base = base.rpartition(".")[0]
            target = (f"{base}.{node.module}" if node.module else base) if node.level else (node.module or "")
            if target != "parity" and not target.startswith("parity."):
                continue
            for alias in node.names:
                if alias.name.startswith("_") and not alias.name.startswith("__"):
                    found.append(f"from {target} import {alias.name}")
                if _real_module(f"{target}.{alias.name}") == f"{target}.{alias.name}":
                    aliases[alias.asname or alias.name] = f"{target}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("parity.") and alias.asname:
                    aliases[alias.asname] = alias.name
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in aliases
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
        ):
            found.append(f"{aliases[node.value.id]}.{node.attr}")
    return sorted(set(found))


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_module_imports_another_modules_private_name(path):
    """A name with a leading underscore is its module's own; one another module needs is public."""
    found = _private_imports(
        path.read_text(encoding="utf-8"), _module_name(path), is_package=path.name == "__init__.py"
    )
    assert found == [], f"{_module_name(path)} uses private names of other modules: {found}"


def test_the_private_name_scan_can_fail():
    source = (
        "from .inputs import _normal, seeded_stream\nfrom .diagnosis import messages as report\nreport._metrics(1)\n"
    )
    assert _private_imports(source, "parity.engine.passes") == [
        "from parity.engine.inputs import _normal",
        "parity.engine.diagnosis.messages._metrics",
    ]


@pytest.mark.parametrize(
    "folder", sorted({p.parent for p in PACKAGE.rglob("*.py")}), ids=lambda p: str(p.relative_to(ROOT))
)
def test_no_folder_of_prefixed_names(folder):
    """Three modules sharing a name prefix (``scan_ast``, ``scan_report``, ``scan_status``) are a
    package waiting to happen."""
    stems = [p.stem.lstrip("_") for p in folder.glob("*.py") if p.stem != "__init__"]
    prefixes = Counter(stem.split("_")[0] for stem in stems if stem)
    families = {
        prefix: sorted(s for s in stems if s.split("_")[0] == prefix)
        for prefix, n in prefixes.items()
        if n >= 3 and any("_" in s for s in stems if s.split("_")[0] == prefix)
    }
    assert families == {}


def test_the_prefix_rule_can_fail(tmp_path):
    for name in ("scan.py", "scan_ast.py", "scan_report.py", "runs.py", "runner.py"):
        (tmp_path / name).write_text("")
    stems = [p.stem for p in tmp_path.glob("*.py")]
    prefixes = Counter(stem.split("_")[0] for stem in stems)
    assert [p for p, n in prefixes.items() if n >= 3] == ["scan"]


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_module_over_the_soft_ceiling(path):
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_LINES, f"{path.relative_to(ROOT)} has {lines} lines"


@pytest.mark.parametrize("init", sorted(PACKAGE.rglob("__init__.py")), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_package_says_what_it_owns(init):
    doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8")))
    assert doc and len(doc) > 80, f"{init.relative_to(ROOT)}: a docstring saying what the package owns"


@pytest.mark.parametrize(
    "unit",
    [
        "judge",
        "backends",
        "weights",
        "registry",
        "translation",
        "engine",
        "mismatch_checks",
        "plugin",
        "nightly",
        "tools",
    ],
)
def test_each_capability_says_what_it_may_import(unit):
    doc = ast.get_docstring(ast.parse((PACKAGE / unit / "__init__.py").read_text(encoding="utf-8")))
    assert "may import" in doc.lower(), f"parity/{unit}/__init__.py: say what the package may import"


def test_one_module_owns_the_rounding_envelope():
    """The envelope's rules (the spread, jumps, the whole-tensor route) are defined in the judge only."""
    owners = defaultdict(list)
    for path in _modules():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name in (
                "jumps",
                "_jumps",
                "rms",
                "_rms",
                "envelope_metrics",
                "Envelope",
                "Spread",
                "_widen",
                "golden_verdict",
                "judge_in_envelope",
                "judge_envelope",
                "judge_golden",
            ):
                owners[node.name].append(_module_name(path))
            if isinstance(node, ast.Assign) and any(
                getattr(t, "id", "") in ("NOISE_FACTOR", "ENVELOPE_DRAWS", "ENVELOPE_ULPS", "HEADROOM", "GOLDEN_FACTOR")
                for t in node.targets
            ):
                owners[node.targets[0].id].append(_module_name(path))
    assert {m for found in owners.values() for m in found} == {"parity.judge.envelope", "parity.judge.golden"}, dict(
        owners
    )


def test_self_tests_sit_above_registry_and_engine():
    names = set()
    for path in sorted((PACKAGE / "mismatch_checks").glob("*.py")):
        names.update(_imports(path))
    assert any(n.startswith("parity.engine") for n in names) and any(n.startswith("parity.registry") for n in names)


def test_importing_parity_the_registry_and_the_framework_free_engine_loads_no_framework():
    modules = [_module_name(p) for p in sorted((PACKAGE / "registry").glob("*.py")) if p.name != "__main__.py"]
    modules += [
        "parity",
        "parity.plugin",
        "parity.judge.envelope",
        "parity.judge.golden",
        "parity.nightly.records",
        "parity.nightly.plot",
        "parity.catalogue",
        "parity.cli",
        "parity.tools.scan.scanner",
    ]
    modules += _framework_free_engine()
    code = (
        "import sys\n"
        + "".join(f"import {m}\n" for m in modules)
        + "import parity.registry\nparity.registry.load()\n"
        + "print(sorted(m for m in sys.modules if m.split('.')[0] in ('mindspore', 'torch')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "[]", out.stdout
