"""A repro cut from a failed check: :func:`choose_target` picks the layer, :func:`write_repro`
captures it (:mod:`.capture`), shrinks its inputs while it fails the same way, writes the test file
and its data (:mod:`.render`) and runs it once before it is offered; :func:`offer` is the
message's ``Repro:`` line for ``--parity-repro``."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import List, Optional, Tuple

from ....errors import ParityNoRepro
from ....judge.envelope import NOISE_FACTOR
from ....judge.tolerance import resolve
from . import render
from .capture import Source, as_found, capture, failure_of, kind_of, shrink
from .constructors import CannotRebuild

__all__ = ["choose_target", "write_repro", "offer", "RUN_TIMEOUT"]

RUN_TIMEOUT = 180.0  # seconds for the one run of the written file: two framework imports and one layer


def choose_target(layers):
    """The layer call a repro is cut from: the first with an error of its own where the layer
    table tells own errors from inherited ones (``own_status``), else the first divergent layer,
    forward before backward; None where no layer was named."""
    if layers is None:
        return None
    for verdicts in (layers.forward, layers.backward):
        for verdict in verdicts:
            if getattr(verdict, "own_status", None) == "own":
                return verdict
    for direction in ("forward", "backward"):
        verdict, _ = layers.first(direction)
        if verdict is not None:
            return verdict
    return None


def _candidates(verdict) -> List[Tuple[str, str, int]]:
    """(PyTorch path, MindSpore path, call) of the layer and of each enclosing sub-module, innermost first."""
    found = [(verdict.path, verdict.ms_path, verdict.call)]
    torch_path, ms_path = verdict.path, verdict.ms_path
    while torch_path and ms_path:
        torch_path, ms_path = torch_path.rpartition(".")[0], ms_path.rpartition(".")[0]
        found.append((torch_path, ms_path, 0))
    if found[-1][:2] != ("", ""):
        found.append(("", "", 0))
    return found


def write_repro(result, directory, *, timeout: float = RUN_TIMEOUT) -> Path:
    """Write the repro of the failed check ``result`` into a new folder under ``directory`` and
    return its test file; :class:`parity.ParityNoRepro` says why where none can be written (then
    nothing is left under ``directory``)."""
    source: Optional[Source] = getattr(result, "repro_source", None)
    if result.passed:
        raise ParityNoRepro("the check passed: there is no divergence to reproduce")
    if source is None:
        raise ParityNoRepro(
            "this result keeps no pair to cut a repro from (only parity.check's failures do, without amp=)"
        )
    with as_found(source):
        return _cut(result, source, Path(directory), timeout)


def _cut(result, source, directory: Path, timeout: float) -> Path:
    verdict = choose_target(result.layers)
    reasons = []  # where no layer was named (a pair of single layers), the pair itself
    for torch_path, ms_path, call in _candidates(verdict) if verdict is not None else [("", "", 0)]:
        label = f"'{torch_path or '<root>'}'"
        try:
            part = capture(source, torch_path, ms_path, call)
        except CannotRebuild as exc:
            reasons.append(f"{label} cannot be rebuilt standalone: {exc}")
            continue
        tol, tol_source = resolve(
            source.chain, (torch_path, ms_path), part.inputs[0].dtype.name if part.inputs else "float32"
        )
        failure = failure_of(part, tol, NOISE_FACTOR, backward=False)
        if not failure and part.cotangents is not None:
            part.backward = True
            failure = failure_of(part, tol, NOISE_FACTOR, backward=True)
        if not failure or failure.startswith("raised "):
            reasons.append(f"{label} {failure or 'agrees with PyTorch on its own, fed PyTorch inputs'}")
            continue
        part = shrink(part, tol, NOISE_FACTOR, failure)
        failure = failure_of(part, tol, NOISE_FACTOR, backward=part.backward)
        return _write(result, source, part, directory, tol, tol_source, failure, reasons, timeout)
    raise ParityNoRepro("no part of the pair could be written as a standalone repro: " + "; ".join(reasons))


def _write(result, source, part, directory: Path, tol, tol_source, failure, reasons, timeout) -> Path:
    name = render.slug(f"{source.case or result.ms_type}_{part.torch_path or 'model'}")
    test_file = f"test_{name}.py"
    text = render.file_text(
        part,
        tol=tol,
        tol_source=tol_source,
        noise_factor=NOISE_FACTOR,
        case=source.case,
        seed=source.seed,
        failure=failure,
        test_file=test_file,
    )
    if reasons:
        text = text.replace('"""\nimport', "Smaller parts were not used: " + "; ".join(reasons) + '\n"""\nimport', 1)
    files = {test_file: text.encode(), render.DATA_FILE: render.npz_bytes(render.data_arrays(part))}

    def reproduces(folder: Path) -> None:
        try:
            run = render.run_file(folder, test_file, timeout, paths=_user_paths(part))
        except Exception as exc:  # noqa: BLE001 - subprocess.TimeoutExpired, OSError
            raise ParityNoRepro(
                f"the repro of {_where(part)} did not run to its end ({type(exc).__name__}: {exc}); none written"
            ) from None
        out = run.stdout + run.stderr
        if run.returncode == 0:
            raise ParityNoRepro(
                f"the repro of {_where(part)} does not reproduce: the standalone file passed "
                f"where the check failed ({failure}); none written"
            )
        if run.returncode != 1 or kind_of(failure) not in out:
            tail = " | ".join(out.strip().splitlines()[-3:])
            raise ParityNoRepro(
                f"the repro of {_where(part)} does not reproduce: the standalone file fails "
                f"otherwise than with '{kind_of(failure)}' (exit {run.returncode}: {tail}); "
                "none written"
            )

    folder = render.write_folder(directory, name, files, check=reproduces)
    result.repro = str(folder / test_file)
    return folder / test_file


def _where(part) -> str:
    return f"'{part.torch_path or '<root>'}'"


def _user_paths(part) -> List[str]:
    """Where the user modules the file imports are found (the path entry above their top package)."""
    paths = []
    for recipe in (part.ms_recipe, part.torch_recipe):
        if not recipe.builtin:
            top = importlib.import_module(recipe.module.split(".")[0])
            location = Path(getattr(top, "__file__", "") or next(iter(getattr(top, "__path__", [])), ""))
            entry = location.parent.parent if location.name == "__init__.py" else location.parent
            paths.append(str(entry))
    return paths


def offer(result, directory) -> str:
    """The message's ``Repro:`` line for ``--parity-repro``: the file written, or why none was."""
    try:
        path = write_repro(result, directory)
    except ParityNoRepro as exc:
        return f"Repro:      none written: {exc}"
    except Exception as exc:  # noqa: BLE001 - the mismatch is reported whatever the repro does
        return f"Repro:      none written: parity failed to write one ({type(exc).__name__}: {exc})"
    return f"Repro:      {path}  (standalone: python -m pytest {path})"
