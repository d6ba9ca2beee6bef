"""``parity.translate`` with example inputs: the inputs drawn as :func:`parity.check` draws them,
handed to the translation as PyTorch tensors to trace on (:mod:`parity.translation.trace.concrete`)."""

from __future__ import annotations

from ..backends import torch as tb
from ..options import parse_seed
from ..translation import translate
from .inputs import materialize, per_side_inputs
from .settings import DEFAULT_SEED

__all__ = ["run_translate"]


def run_translate(torch_module, inputs=None, *, device: str = "CPU", seed=None, default_seed=None):
    """See :func:`parity.translate`. ``inputs`` as :func:`parity.check` takes them, drawn under ``seed``
    (else ``default_seed``, else check's default), so that ``check`` with the same inputs and seed
    runs the very values the trace saw."""
    if inputs is None:
        return translate(torch_module, device=device)
    seed = parse_seed(seed, "translate(seed=...)")
    seed = seed if seed is not None else default_seed if default_seed is not None else DEFAULT_SEED
    data = materialize(inputs, seed)
    _, torch_data, _ = per_side_inputs(data, None, tb.compute_dtype(torch_module))
    place = next((p.device for p in torch_module.parameters()), "cpu")  # where the Module's weights are
    args = tuple(tb.from_numpy(array).to(place) for array in torch_data.args)
    kwargs = {name: tb.from_numpy(array).to(place) for name, array in torch_data.kwargs.items()}
    return translate(torch_module, device=device, example=(args, kwargs))
