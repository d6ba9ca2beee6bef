"""``parity.translate(torch_module)``: the MindSpore counterpart of a PyTorch Module, with
equivalent arguments and the same weights.

How it works:

* Every supported ``torch.nn`` layer has a builder (one module per family: ``conv``, ``linear``,
  ``norm``, ``pool``, ``recurrent``, ``attention``, ``activation``, ``shape``, ``loss``) that reads
  the layer's attributes and builds the classic ``mindspore.nn`` Cell with the equivalent
  arguments (``padding=1`` -> ``pad_mode="pad", padding=(1, 1, 1, 1)``; BatchNorm ``momentum=0.1``
  -> ``0.9``; ``negative_slope`` -> ``alpha``...). Where MindSpore has no Cell for a layer, a small
  Cell over a classic ``mindspore.ops`` function stands in (``Softplus``, ``CircularPad``); where
  its Cell falls short of an argument, a thin subclass closes the gap and says so in its
  docstring (``PaddedConv2d`` pads for ``padding_mode``, ``CrossEntropyLossInt64`` casts labels,
  ``EmbeddingPaddingIdx`` stops the padding row's gradient...). Each family module lists the
  MindSpore defaults and gaps it relies on, as read from the installed MindSpore. These Cells are
  also the fixes the known-mismatch registry names (``replacement = "parity.translation.loss:
  CrossEntropyLossInt64"``): one implementation, proven by the registry's self-tests.
* ``Sequential`` -> ``SequentialCell``, ``ModuleList`` -> ``CellList``, ``ModuleDict`` -> ``CellDict``,
  children keeping their names.
* Any other Module whose children all translate becomes a ``TorchForward`` Cell: its children,
  parameters, buffers and plain attributes under the same names, its helper methods bound to it,
  and a ``construct`` that runs the PyTorch class's own ``forward`` with ``self`` bound to that
  Cell. This works in PYNATIVE mode when ``forward`` only calls children, Python operators and
  Tensor methods MindSpore shares; a ``forward`` (or helper) that uses ``torch.*``, ``F.*`` or
  ``super()`` is refused up front, naming them. A user subclass that only configures a layer
  (``class MyConv(nn.Conv2d)`` with nothing but ``__init__``) translates as that layer.
* A layer under weight normalisation (``torch.nn.utils.parametrizations.weight_norm`` or the
  deprecated hook) is built as the plain layer, its ``weight`` computed from ``g`` and ``v`` (held
  under PyTorch's names) at every call (:mod:`.weight_norm`). A function a library keeps out of
  ``torch.fx`` traces with ``torch.fx.wrap`` is traced into when it is called (:mod:`.wrapped`).
* Given example inputs (``translate(module, example=(args, kwargs))``, which ``parity.translate(module,
  inputs)`` draws as ``check`` draws inputs), the Module runs once on them, each submodule's
  arguments are kept, and each custom Module is traced on the values it received
  (:mod:`.concrete`): control flow on shapes, dtypes and values resolves, each decision a guard the
  Cell checks when it runs; a submodule the run never called is traced only if it is called.
  Tensors made and selected inside ``forward`` (``arange``, ``where``, ``gather``...) are in
  :mod:`.tensors`, the rest of what transformers compute (``F.embedding``, ``x[i] = y``) in
  :mod:`.creation`.
* Translation refuses (``ParityUnsupported``) what MindSpore cannot be configured to do: a missing
  argument (``proj_size``, ``log_target``), an argument combination, a kernel missing on the
  device. Where MindSpore can be configured but computes different numbers (a bug, a different
  algorithm), the translation is made and ``parity.check`` reports the mismatch.
* Weights are copied last, through parity's own name mapping (the one ``parity.check`` uses), so
  the translated Cell keeps PyTorch's attribute paths and layouts (MindSpore's known renames
  aside, and the transformer layers' ``dense1/2``, paired in definition order); the copy is verified.
* A Parameter the Module holds at several places (``lm_head.weight`` tied to the embedding's) is
  one Parameter in the Cell too, so both sides train one tensor and the weights pair one to one.
* Every ``Parameter.name`` is then set to its attribute path in the Cell (``layer1.0.conv1.weight``,
  ``bn1.moving_mean``): the name MindSpore's ``ParameterTuple``, optimizers, ``save_checkpoint`` and
  ``load_param_into_net`` go by. The builders' Cells are joined with ``insert_child_to_cell``, which
  (unlike attribute assignment in a Cell's ``__init__``) prefixes nothing, so without this step the
  names were the layers' own (``weight``, ``0.conv1.weight``) and repeated across the tree.

Anything without a counterpart raises :class:`parity.ParityUnsupported` naming the attribute path,
the PyTorch type and the reason. Only this package, ``parity.backends`` and the self-tests import
the frameworks at the top of a module. May import: the backends, the weights and :mod:`parity.errors`.
"""

from __future__ import annotations

from ..errors import ParityInternalError, ParityUsageError
from . import layers  # noqa: F401  (registers the layer builders)
from .layers.table import Context, translated_names
from .modules import translate_module
from .trace import wrapped  # noqa: F401  (registers its fallback in the call table)
from .trace.concrete import record_calls

__all__ = ["translate", "translated_names"]

DEVICES = ("CPU", "GPU", "Ascend")


def translate(torch_module, *, device: str = "CPU", example=None):
    """Build the MindSpore Cell equivalent to ``torch_module`` for ``device``, with its weights,
    in the module's train/eval mode. ``example``: ``(args, kwargs)`` of PyTorch tensors to trace
    on (see :mod:`.concrete`); without it, each ``forward`` is traced symbolically."""
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
