"""``parity.translate`` with example inputs: the inputs drawn as :func:`parity.check` draws them,
handed to the translation as PyTorch tensors to trace on (:mod:`parity.translation.trace.concrete`)."""

from __future__ import annotations

import os
from pathlib import Path

from ..backends import torch as tb
from ..errors import ParityUsageError
from ..files import private_folder, publish
from ..options import parse_seed
from ..translation import translate
from ..translation.emit import package_of, write_package
from ..translation.layers.table import torch_name
from .inputs import materialize, per_side_inputs
from .settings import DEFAULT_SEED

__all__ = ["run_translate"]


def run_translate(torch_module, inputs=None, *, device: str = "CPU", seed=None, default_seed=None, emit=None):
    """See :func:`parity.translate`. ``emit``: the folder to write the translation into as a package. ``inputs`` as :func:`parity.check` takes them, drawn under ``seed``
    (else ``default_seed``, else check's default), so that ``check`` with the same inputs and seed
    runs the very values the trace saw."""
    if inputs is None:
        if emit is not None:
            raise ParityUsageError(
                "translate(emit=...) writes the programs traced on example inputs: give them, "
                "translate(module, inputs, emit=...)"
            )
        return translate(torch_module, device=device)
    seed = parse_seed(seed, "translate(seed=...)")
    seed = seed if seed is not None else default_seed if default_seed is not None else DEFAULT_SEED
    data = materialize(inputs, seed)
    _, torch_data, _ = per_side_inputs(data, None, tb.compute_dtype(torch_module))
    place = next((p.device for p in torch_module.parameters()), "cpu")  # where the Module's weights are
    args = tuple(tb.from_numpy(array).to(place) for array in torch_data.args)
    kwargs = {name: tb.from_numpy(array).to(place) for name, array in torch_data.kwargs.items()}
    cell = translate(torch_module, device=device, example=(args, kwargs))
    if emit is not None:
        emit_package(cell, torch_name(type(torch_module)), emit)
    return cell


def emit_package(cell, torch_class: str, folder) -> Path:
    """Write ``cell`` (translated on example inputs) as a package in ``folder`` (made if absent, its
    parent must exist), each file through a private temporary."""
    folder = Path(folder)
    what = "translate(emit=...)"
    if not folder.name.isidentifier():
        raise ParityUsageError(f"{what} {folder}: a package's folder name must be a Python identifier")
    if folder.exists() and not folder.is_dir():
        raise ParityUsageError(f"{what} {folder}: exists and is not a folder")
    if not folder.parent.is_dir():
        raise ParityUsageError(f"{what} {folder}: folder {folder.parent} does not exist")
    package = package_of(cell, torch_class)
    folder.mkdir(exist_ok=True)
    with private_folder(folder / "model.py", what, force=True) as private:
        for name in write_package(package, os.fspath(private)):
            publish(private / name, folder / name, what)
    return folder
