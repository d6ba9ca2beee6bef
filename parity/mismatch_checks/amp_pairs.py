"""The pair of a ``precision`` entry's self-test: each layer inside a one-layer container (so that
the check's layer capture sees it as a sub-layer, and O1 rewrites it as it rewrites a model's
layers), checked with ``parity.check(amp=<level>)``; observed is the precision the entry states.

Imports MindSpore and PyTorch: imported by a self-test that runs, never by the registry.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, List, cast

import torch
from mindspore import nn

from parity.errors import ParityMismatch, ParityUsageError
from parity.mismatch_checks.pairs import Measurement, flush_mindspore, input_specs, raised_measurement, resolve
from parity.registry.schema import Entry, SelfTestSpec

if TYPE_CHECKING:
    from parity.engine.diagnosis.verdicts import LayerTable

__all__ = ["amp_pair"]


class _Cell1(nn.Cell):
    def __init__(self, layer):
        super().__init__()
        self.layer = layer

    def construct(self, x):
        return self.layer(x)


class _Cell2(_Cell1):
    def construct(self, x, h):
        return self.layer(x, h)


class _Module1(torch.nn.Module):
    def __init__(self, layer):
        super().__init__()
        self.layer = layer

    def forward(self, x):
        return self.layer(x)


class _Module2(_Module1):
    def forward(self, x, h):
        return self.layer(x, h)


def amp_pair(entry: Entry, api: str, ms_kwargs, spec: SelfTestSpec, inputs, *, device: str, seed: int) -> Measurement:
    """ "precision" where the layer ran in the precisions ``entry.amp`` states (with ``after``: its
    output's dtype, what the next layer runs in), "agrees" where both sides ran it alike (stale),
    "raises" where the level cannot convert the Cell."""
    from parity.engine.check import run_check
    from parity.engine.settings import Settings

    two = len(inputs) == 2
    torch_module = (_Module2 if two else _Module1)(resolve(entry.torch)(**spec.torch_kwargs))
    ms_cell = (_Cell2 if two else _Cell1)(resolve(api)(**ms_kwargs))
    try:
        result = run_check(
            ms_cell,
            torch_module,
            input_specs(inputs),
            grads=spec.grads,
            localize=True,
            amp=spec.amp,
            settings=Settings(seed=seed, device=device),
        )
    except ParityMismatch as exc:
        result = exc.result
    except ParityUsageError as exc:  # ParityUnsupported: the level's rewrite fails on this Cell
        flush_mindspore()
        raised = raised_measurement(exc)
        error = next(
            (line.strip() for line in str(exc).splitlines() if re.match(r"\s*\w+(Error|Exception): ", line)), ""
        )
        return Measurement("raises", None, error[:100], raised.text) if error else raised
    # localize=True and amp=...: the check captured the layers and a precision row for each
    layers, precisions = cast("LayerTable", result.layers), cast(List[Any], result.precisions)
    verdicts = [v for v in layers.forward if v.path == "layer" and not v.call]
    rows = [r for r in precisions if r.path == "layer"]
    if not verdicts or not rows:
        return Measurement("usage", None, "the check recorded no precision for the layer")
    pattern = entry.amp
    if pattern is not None and pattern.after:
        what = "output"
        seen = (_floating(verdicts[0].ms_out_dtypes), _floating(verdicts[0].out_dtypes))
    else:
        what = "ran in"
        seen = (rows[0].ms, rows[0].torch)
    detail = f"{rows[0].ms_type} {what} {seen[0]} (MindSpore {spec.amp}), {seen[1]} (torch.autocast)"
    if seen[0] == seen[1]:
        return Measurement("agrees", None, "agrees")
    stated = pattern.precisions("float16") if pattern is not None and pattern.mindspore else seen
    return Measurement("precision" if seen == stated else "precision, not as stated", None, detail)


def _floating(dtypes) -> str:
    return next((d for d in dtypes if "float" in d), "")
