"""``translate``: the MindSpore counterpart of a PyTorch Module, with equivalent arguments and the
same weights, built from what the Module's layers are and what its ``forward`` executes.

* :mod:`.modules` walks the tree: a ``torch.nn`` layer goes to its builder (:mod:`.layers`), a
  container to MindSpore's, a custom Module to the program its ``forward`` traces to
  (:mod:`.trace`), whose calls the call table computes (:mod:`.calls`).
* :mod:`.optim`: ``torch.optim`` optimizers, with PyTorch's formulas in MindSpore ops.
* ``activation``, ``linear`` and ``loss`` re-export the layer families' Cells at the paths the
  known-mismatch registry's fixes give (``parity.translation.loss:CrossEntropyLossInt64``).

:func:`translate` then ties the Parameters the Module shares, names each Parameter by its path and
copies the weights through parity's own name mapping. What has no counterpart raises
:class:`parity.ParityUnsupported` naming the path, the PyTorch type and the reason
(``docs/architecture.md``, "Translation"). Only this package, the backends and the self-tests import
the frameworks at the top of a module. May import: the backends, the weights and :mod:`parity.errors`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Mapping, Optional, Tuple

from ..errors import ParityInternalError, ParityUsageError
from . import layers  # noqa: F401  (registers the layer builders)
from .layers.table import Context, translated_names
from .modules import translate_module
from .trace import wrapped  # noqa: F401  (registers its fallback in the call table)
from .trace.concrete import GuardFailed, record_calls

if TYPE_CHECKING:
    import torch
    from mindspore import nn

__all__ = ["translate", "translated_names", "GuardFailed"]

DEVICES = ("CPU", "GPU", "Ascend")


def translate(
    torch_module: torch.nn.Module,
    *,
    device: str = "CPU",
    example: Optional[Tuple[Iterable[Any], Mapping[str, Any]]] = None,
) -> nn.Cell:
    """Build the MindSpore Cell equivalent to ``torch_module`` for ``device``, with its weights,
    in the module's train/eval mode. ``example``: ``(args, kwargs)`` of PyTorch tensors to trace
    on (see :mod:`.trace.concrete`); without it, each ``forward`` is traced symbolically."""
    import torch

    from ..backends.mindspore import use_device

    if not isinstance(torch_module, torch.nn.Module):
        raise ParityUsageError(
            f"translate() takes a torch.nn.Module, got {type(torch_module).__module__}."
            f"{type(torch_module).__qualname__}"
        )
    if device not in DEVICES:
        raise ParityUsageError(f"translate(): unknown device {device!r}; expected one of {', '.join(DEVICES)}")
    use_device(device)  # some Cells (the recurrent ones) pick their kernels when built
    examples = None
    if example is not None:
        args, kwargs = example
        try:
            examples = record_calls(torch_module, tuple(args), dict(kwargs))
        except Exception as exc:  # noqa: BLE001  (whatever the Module's forward raises on them)
            raise ParityUsageError(
                f"translate(): the PyTorch module cannot run on the example inputs: {type(exc).__name__}: {exc}"
            ) from None
    cell = translate_module(torch_module, Context("", device, torch_module, examples=examples))
    _tie_shared_parameters(torch_module, cell)
    _name_parameters(cell)
    _copy_weights(torch_module, cell)
    cell.set_train(torch_module.training)  # a fresh Cell is in eval mode, a fresh Module in train mode
    return cell


def _tie_shared_parameters(torch_module, cell) -> None:
    """A Parameter the Module holds at several places (an embedding tied to the output layer) is
    one Parameter in the Cell too: the later places get the first one's. Where a Cell holds no
    single Parameter of its shape, the places stay apart and the weight copy says so."""
    first = {}
    for path, param in torch_module.named_parameters(remove_duplicate=False):
        if id(param) not in first:
            first[id(param)] = path
            continue
        kept, tied = _ms_parameter(cell, first[id(param)], param.shape), _ms_parameter(cell, path, param.shape)
        if kept is not None and tied is not None:
            setattr(tied[0], tied[1], getattr(kept[0], kept[1]))


def _ms_parameter(cell, torch_path: str, param_shape):
    """``(owner Cell, attribute)`` of the Cell's counterpart of a PyTorch parameter: the one own
    Parameter of that shape in the Cell at the owner's path; None where there is no single one."""
    owner_path, _, _ = torch_path.rpartition(".")
    owner = cell
    for part in owner_path.split(".") if owner_path else ():
        owner = owner.name_cells().get(part)
        if owner is None:
            return None
    found = [name for name, p in owner.parameters_and_names(expand=False) if tuple(p.shape) == tuple(param_shape)]
    return (owner, found[0]) if len(found) == 1 else None


def _name_parameters(cell) -> None:
    """Name every Parameter by its attribute path (what a Cell whose children are assigned in its
    ``__init__`` gets from ``auto_prefix``), so that the names are unique across the Cell."""
    for path, param in cell.parameters_and_names():
        param.name = path


def _copy_weights(torch_module, cell) -> None:
    from ..backends import mindspore as msb
    from ..backends import torch as tb
    from ..weights.transfer import copy_weights, map_weights

    try:
        wmap = map_weights(msb.slots(cell), tb.slots(torch_module))
    except ParityUsageError as exc:
        raise ParityInternalError(
            f"translate() built a Cell whose parameters do not line up with the PyTorch Module's:\n{exc}"
        ) from None
    copy_weights(wmap, torch_module, cell, to_torch=False)
