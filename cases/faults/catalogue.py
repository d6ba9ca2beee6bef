"""Injected faults as catalogue records, each with where the localiser must put it.

Every faulty pair is a ``ParityCase`` with an ``xfail`` reason (it must mismatch, strictly), so
that ``make parity`` runs them with the rest of the catalogue; ``FAULTS`` adds the expectation
that ``tests/test_localize_faults.py`` checks: which layer, in which direction, and which names
the "Divergence" text must carry.  ``CLEAN`` holds the negative controls.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Tuple

from parity import ParityCase, randn

from . import spec

RESNET_INPUT = randn((2, 3, 8, 8))
TRANSFORMER_INPUT = randn((2, spec.SEQ_LEN, spec.D_IN))
DEEP_INPUT = randn((4, spec.DEEP_WIDTH))

_PAIRS = {
    "ResNet": ("cases.faults.models:ms_resnet", "cases.faults.models:torch_resnet", RESNET_INPUT, spec.RESNET_FAULTS),
    "Transformer": (
        "cases.faults.models:ms_transformer",
        "cases.faults.models:torch_transformer",
        TRANSFORMER_INPUT,
        spec.TRANSFORMER_FAULTS,
    ),
    "DeepTanh": (
        "cases.faults.models:ms_deep_tanh",
        "cases.faults.models:torch_deep_tanh",
        DEEP_INPUT,
        spec.DEEP_FAULTS,
    ),
}


@dataclass(frozen=True)
class InjectedFault:
    """One faulty pair and where its divergence must be reported.

    ``direction``: ``"forward"`` or ``"backward"`` (read from ``result.layers.first(direction)``),
    or ``"buffer"`` (the first failing running statistic's ``.layer``).  ``expected``: the layer
    the verdict must name.  ``names``: texts the where-text and the message's Divergence line must
    both contain (the layer itself, or the neighbours of functional code).  ``miss``: the strict
    xfail reason when the localiser is known to miss it (``"LOCALISER MISS: ..."``), else ``""``.
    """

    case: ParityCase
    direction: str
    expected: str
    names: Tuple[str, ...]
    miss: str = ""

    @property
    def name(self) -> str:
        return self.case.name


def _case(pair: str, fault, label: str = "", **check) -> ParityCase:
    """A ParityCase for ``pair`` with ``fault`` injected on the MindSpore side (None: clean)."""
    ms_factory, torch_factory, inputs, known = _PAIRS[pair]
    label = label or ("".join(part.capitalize() for part in fault.split("_")) if fault else "Clean")
    ms_kwargs = {"fault": fault} if fault else {}
    ms_kwargs.update(check.pop("ms_kwargs", {}))
    xfail = check.pop("xfail", f"injected fault: {known[fault]}" if fault else None)
    return ParityCase(
        f"{pair}{label}",
        mindspore=ms_factory,
        torch=torch_factory,
        inputs=inputs,
        ms_kwargs=ms_kwargs,
        xfail=xfail,
        **check,
    )


def _layer(pair, fault, path, direction="forward", miss="", **check) -> InjectedFault:
    return InjectedFault(_case(pair, fault, **check), direction, path, (f"'{path}'",), miss)


FAULTS = [
    _layer("ResNet", "padding", "layer1.conv2"),
    _layer("ResNet", "bn_eps", "layer2.bn2"),
    _layer("ResNet", "bn_swap_gamma_beta", "layer2.bn1"),
    InjectedFault(_case("ResNet", "bn_momentum", train=True), "buffer", "layer1.bn1", ("'layer1.bn1.running_mean'",)),
    _layer("ResNet", "custom_bprop", "clip", direction="backward"),
    InjectedFault(_case("ResNet", "residual_scale"), "forward", "layer2", ("'layer2'", "'layer2.downsample'")),
    _layer("Transformer", "ln_eps", "blocks.1.ln1"),
    _layer("Transformer", "ln_swap_gamma_beta", "blocks.0.ln2"),
    _layer("Transformer", "gelu_tanh", "blocks.0.ffn.act"),
    _layer("Transformer", "transposed_weight", "blocks.1.attn.proj"),
    _layer("Transformer", "dropped_bias", "blocks.0.ffn.fc2"),
    InjectedFault(
        _case("Transformer", "positional_shift"), "forward", "blocks.0.ln1", ("between 'embed' and 'blocks.0.ln1'",)
    ),
    InjectedFault(
        _case("Transformer", "attention_scale"), "forward", "blocks.0.attn", ("'blocks.0.attn'", "'blocks.0.attn.v'")
    ),
    _layer("DeepTanh", "tiny_scale", f"blocks.{spec.DEEP_FAULT_AT}.fc", reference="float64"),
]

FAULT_CASES = [fault.case for fault in FAULTS]  # what the catalogue collects

ResNetClean = _case("ResNet", None, train=(False, True))
TransformerClean = _case("Transformer", None)
DeepTanhClean = _case("DeepTanh", None, reference="float64")
CLEAN = [ResNetClean, TransformerClean, DeepTanhClean]

# Not injected: MindSpore 2.10's own CPU tanh kernel (max abs error 9.4e-5 against float64, PyTorch's
# 3e-8) fails the float32 default at the first tanh of a clean stack; it must be blamed there once.
DeepTanhMindSporeKernel = _case(
    "DeepTanh",
    None,
    "MindSporeKernel",
    ms_kwargs={"native_tanh": True},
    reference="float64",
    xfail="MindSpore 2.10 CPU tanh is accurate to 9.4e-5 only (PyTorch: 3e-8)",
)
