"""The repro on disk: the test file's text, its data file, the folder written whole or not at all,
and the one run that proves it fails before it is offered."""

from __future__ import annotations

import inspect
import io
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Dict, List

import numpy as np

from . import standalone
from .capture import Part

__all__ = ["DATA_FILE", "file_text", "data_arrays", "write_folder", "run_file", "slug"]

DATA_FILE = "data.npz"


def slug(text: str) -> str:
    """A name fit for a folder and a Python module: letters, digits and underscores."""
    return re.sub(r"\W+", "_", text).strip("_")[-60:].lstrip("_") or "repro"


def data_arrays(part: Part) -> Dict[str, np.ndarray]:
    arrays = {f"input[{i}]": a for i, a in enumerate(part.inputs)}
    if part.backward:
        arrays.update({f"cotangent[{i}]": c for i, c in enumerate(part.cotangents or ())})
    arrays.update({f"ms:{k}": v for k, v in part.ms_weights.items()})
    arrays.update({f"pt:{k}": v for k, v in part.torch_weights.items()})
    return arrays


def _builder(name: str, recipe, part: Part, framework: str) -> List[str]:
    weights = part.ms_weights if framework == "mindspore" else part.torch_weights
    flag = "set_train" if framework == "mindspore" else "train"
    if not weights:
        return [f"def {name}():", f"    return {recipe.call}.{flag}(TRAIN)"]
    if framework == "mindspore":
        return [
            f"def {name}():",
            f"    cell = {recipe.call}",
            "    for key, param in cell.parameters_and_names():",
            '        param.set_data(mindspore.Tensor(DATA["ms:" + key]))',
            f"    return cell.{flag}(TRAIN)",
        ]
    return [
        f"def {name}():",
        f"    module = {recipe.call}",
        '    module.load_state_dict({k[3:]: torch.from_numpy(DATA[k]) for k in DATA.files if k.startswith("pt:")})',
        f"    return module.{flag}(TRAIN)",
    ]


def _docstring(part: Part, *, case: str, seed: int, failure: str, test_file: str) -> List[str]:
    direction = "outputs and gradients (PyTorch's output gradient fed back)" if part.backward else "outputs"
    shrunk = f", shrunk from {', '.join(map(str, part.shrunk_from))}" if part.shrunk_from else ""
    user = sorted({r.module for r in (part.ms_recipe, part.torch_recipe) if not r.builtin})
    needs = "mindspore, torch, numpy and pytest" + (f", and {', '.join(user)} importable" if user else "")
    return [
        '"""A MindSpore/PyTorch divergence, standalone: written by pytest-parity, needs no parity.',
        "",
        f"From {case or 'a check'} (seed {seed}): MindSpore '{part.ms_path or '<root>'}' ({part.ms_recipe.label})",
        f"against PyTorch '{part.torch_path or '<root>'}' ({part.torch_recipe.label}), {direction} on PyTorch's "
        f"captured inputs{shrunk}.",
        f"Fails with: {failure}",
        f"Needs {needs}. Run: python -m pytest {test_file}",
        '"""',
    ]


def _carried(function) -> List[str]:
    """A function of :mod:`.standalone` as the file carries it (the file imports ``copy`` and the
    frameworks at its top, as :mod:`.standalone` does); only the judgement keeps its docstring."""
    lines = inspect.getsource(function).rstrip().splitlines()
    if function is not standalone.judge and '"""' in lines[1]:
        del lines[1]
    return lines


def file_text(
    part: Part, *, tol, tol_source: str, noise_factor: float, case: str, seed: int, failure: str, test_file: str
) -> str:
    user = sorted({r.module for r in (part.ms_recipe, part.torch_recipe) if not r.builtin})
    carried = standalone.BACKWARD if part.backward else standalone.FORWARD
    ms_run, torch_run = carried[0].__name__, carried[1].__name__
    lines = _docstring(part, case=case, seed=seed, failure=failure, test_file=test_file)
    lines += ["import copy", "import pathlib", "", "import mindspore", "import numpy as np", "import torch"]
    lines += [f"import {module}" for module in user]
    lines += [
        "",
        f"RTOL, ATOL = {tol.rtol!r}, {tol.atol!r}  # {tol_source}",
        f"NOISE_FACTOR = {noise_factor!r}  # and this many times PyTorch's own distance from float64",
        f"TRAIN = {part.train!r}",
        f'DATA = np.load(pathlib.Path(__file__).with_name("{DATA_FILE}"), allow_pickle=False)',
        f"INPUTS = [{', '.join(f'DATA[{k!r}]' for k in (f'input[{i}]' for i in range(len(part.inputs))))}]",
    ]
    extra = ""
    if part.backward:
        names = (f"cotangent[{i}]" for i in range(len(part.cotangents or ())))
        lines += [
            f"COTANGENTS = [{', '.join(f'DATA[{k!r}]' for k in names)}]",
            f"PARAMS = {part.params!r}  # (MindSpore, PyTorch) names of the weights whose gradients are compared",
        ]
        extra = ", COTANGENTS, PARAMS"
    for builder in (
        _builder("ms_layer", part.ms_recipe, part, "mindspore"),
        _builder("torch_layer", part.torch_recipe, part, "torch"),
    ):
        lines += ["", ""] + builder
    for function in carried:
        lines += ["", ""] + _carried(function)
    lines += [
        "",
        "",
        "def test_repro():",
        f"    ms = {ms_run}(ms_layer(), INPUTS{extra})",
        f"    pt = {torch_run}(torch_layer(), INPUTS{extra})",
        f"    pt64 = {torch_run}(torch_layer(), INPUTS{extra}, float64=True)",
        "    for name in pt:",
        "        judge(name, ms[name], pt[name], pt64[name], RTOL, ATOL, NOISE_FACTOR)",
    ]
    return "\n".join(lines) + "\n"


def write_folder(parent: Path, name: str, files: Dict[str, bytes], check=None) -> Path:
    """Write ``files`` into a new folder ``parent/name`` (``name-2``... where it exists), whole or
    not at all: into a hidden temporary folder beside it, given to ``check`` (which raises to
    refuse it), then renamed."""
    parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f".{name}.", dir=parent))
    try:
        for file, content in files.items():
            (scratch / file).write_bytes(content)
        if check is not None:
            check(scratch)
        for n in range(1, 1000):
            target = parent / (name if n == 1 else f"{name}-{n}")
            try:
                os.rename(scratch, target)  # fails where target exists and is not empty
                return target
            except OSError:
                if not target.exists():
                    raise
        raise OSError(f"no free folder name for {name!r} in {parent}")
    except BaseException:
        shutil.rmtree(scratch, ignore_errors=True)
        raise


def npz_bytes(arrays: Dict[str, np.ndarray]) -> bytes:
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **arrays)
    return buffer.getvalue()


# The run: pytest with the parity package made unimportable and no plugin loaded from entry points,
# so that a pass proves the file needs neither.
_RUN = "import sys; sys.modules['parity'] = None; import pytest; sys.exit(pytest.main(sys.argv[1:]))"


def run_file(folder: Path, test_file: str, timeout: float, paths=()) -> subprocess.CompletedProcess:
    """``pytest test_file`` in ``folder``, on its own: no ini file, conftest or plugin of the
    surrounding project, parity unimportable, on the path only ``paths`` (where the file's user
    modules import from); writing nothing there."""
    folder = folder.resolve()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_ADDOPTS", "PYTHONPATH")}
    env.update(PYTHONDONTWRITEBYTECODE="1", PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")
    if paths:
        env["PYTHONPATH"] = os.pathsep.join(paths)
    command = [
        sys.executable,
        "-c",
        _RUN,
        test_file,
        "-q",
        "-p",
        "no:cacheprovider",
        f"--rootdir={folder}",
        f"--confcutdir={folder}",
        "-c",
        os.devnull,
        "-W",
        "ignore::DeprecationWarning",
    ]
    return subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True, timeout=timeout)
