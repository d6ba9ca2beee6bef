"""The dependency direction: the engine sits above the known-mismatch data.

``parity.registry`` (loading, schema, rules, diagnosis, lint, ledger, the generated document) never
imports the runner, the backends, the translation, the self-tests or a framework, not even inside
a function; ``parity.mismatch_checks`` (the self-tests) imports the registry and the runner.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import parity

PACKAGE = Path(parity.__file__).resolve().parent
ROOT = PACKAGE.parent
FORBIDDEN = ("parity.runner", "parity.backends", "parity.mismatch_checks", "parity.translation", "mindspore", "torch")


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_names(source: str, module: str, *, is_package: bool = False):
    """Every module ``source`` imports (at the top or inside a function), as absolute names."""
    package = module if is_package else module.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(source)):
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


def _forbidden(names):
    return sorted({n for n in names for f in FORBIDDEN if n == f or n.startswith(f + ".")})


def _registry_modules():
    return sorted((PACKAGE / "registry").glob("*.py"))


def test_the_scan_sees_relative_and_local_imports():
    source = "def f():\n    from ..runner import run_check\n    from .. import backends\n    import torch.nn\n"
    names = imported_names(source, "parity.registry.diagnosis")
    assert _forbidden(names) == ["parity.backends", "parity.runner", "parity.runner.run_check", "torch.nn"]
    assert _forbidden(imported_names("from .schema import Entry\n", "parity.registry.diagnosis")) == []
    assert imported_names("from .store import load\n", "parity.registry", is_package=True)[0] == "parity.registry.store"


@pytest.mark.parametrize("path", _registry_modules(), ids=lambda p: p.name)
def test_registry_module_imports_no_engine(path):
    module = _module_name(path)
    names = imported_names(path.read_text(encoding="utf-8"), module, is_package=path.name == "__init__.py")
    assert _forbidden(names) == [], f"{module} imports {_forbidden(names)}: the registry is data below the engine"


def test_registry_scan_covers_the_package():
    assert {p.stem for p in _registry_modules()} >= {"__init__", "__main__", "diagnosis", "docs", "loader", "store"}


def test_self_tests_sit_above_registry_and_runner():
    names = set()
    for path in sorted((PACKAGE / "mismatch_checks").glob("*.py")):
        names.update(imported_names(path.read_text(encoding="utf-8"), _module_name(path),
                                    is_package=path.name == "__init__.py"))
    assert "parity.runner" in names and any(n.startswith("parity.registry") for n in names)


def test_importing_the_whole_registry_loads_no_framework():
    modules = [_module_name(p) for p in _registry_modules() if p.name != "__main__.py"]
    code = ("import sys\n" + "".join(f"import {m}\n" for m in modules)
            + "import parity.registry\nparity.registry.load()\n"
            + f"print(sorted(m for m in sys.modules if m.split('.')[0] in ('mindspore', 'torch') "
            + f"or m.startswith({FORBIDDEN[:4]!r})))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "[]", out.stdout
