"""The parameter names of a ``torch.nn`` / ``torch.optim`` class's ``__init__``, read from the
installed PyTorch's source files without importing torch, so that ``parity scan`` can tell which
argument a positional value at a call is (``nn.BatchNorm2d(64, 1e-3, None)`` passes ``momentum``).

The class is looked up by name in ``torch/nn/modules/*.py`` (``torch/optim/*.py``); a class with
no ``__init__`` of its own takes its first base's (looked up the same way). ``None`` when torch is
not installed or the class is not found there.
"""

from __future__ import annotations

import ast
import functools
import importlib.util
from pathlib import Path
from typing import Dict, Optional, Tuple

__all__ = ["init_parameters"]

_FOLDERS = {"torch.nn.": ("nn", "modules"), "torch.optim.": ("optim",)}


@functools.lru_cache(maxsize=None)
def _torch_root() -> Optional[Path]:
    spec = importlib.util.find_spec("torch")  # finds the package without running it
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


@functools.lru_cache(maxsize=None)
def _classes(folder: Path) -> Dict[str, ast.ClassDef]:
    """The top-level classes of the folder's files, by name."""
    found: Dict[str, ast.ClassDef] = {}
    for path in sorted(folder.glob("*.py")):
        for node in ast.parse(path.read_bytes(), str(path)).body:
            if isinstance(node, ast.ClassDef):
                found.setdefault(node.name, node)
    return found


@functools.lru_cache(maxsize=None)
def init_parameters(api: str) -> Optional[Tuple[str, ...]]:
    """``("in_channels", "out_channels", ...)``: the parameters a call passes positionally, in
    order (``self`` left out), or None when they cannot be read."""
    root = _torch_root()
    prefix = next((p for p in _FOLDERS if api.startswith(p)), None)
    if root is None or prefix is None or "." in api[len(prefix) :]:
        return None
    classes = _classes(root.joinpath(*_FOLDERS[prefix]))
    name, seen = api[len(prefix) :], set()
    while name in classes and name not in seen:
        seen.add(name)
        node = classes[name]
        init = next((f for f in node.body if isinstance(f, ast.FunctionDef) and f.name == "__init__"), None)
        if init is not None:
            positional = [*init.args.posonlyargs, *init.args.args]
            return tuple(a.arg for a in positional[1:])
        name = node.bases[0].id if node.bases and isinstance(node.bases[0], ast.Name) else ""
    return None
