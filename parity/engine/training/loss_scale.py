"""Loss scaling under :func:`parity.check_training`: PyTorch's ``GradScaler`` and MindSpore's
``mindspore.amp`` loss scalers, step by step.

Each side scales the loss before the backward pass, unscales the gradients, skips the optimizer
step when a gradient is not finite and adjusts its scale. Compared per step (stage ``scale``):
whether the update was skipped, which must agree; the scale each side used is recorded beside it
(``TrainingStep.scales``), since a difference of powers of two changes no number until one side
overflows where the other does not.

A ``GradScaler`` factory is translated to ``mindspore.amp.DynamicLossScaler``: ``init_scale`` ->
``scale_value``, ``growth_interval`` -> ``scale_window``, ``growth_factor`` -> ``scale_factor``.
MindSpore divides by ``scale_factor`` on an overflow, so only ``backoff_factor == 1 /
growth_factor`` with an integer ``growth_factor`` translates; and it never lets the scale fall
below 1, which PyTorch does (the scales then differ from that step on).
"""

from __future__ import annotations

from typing import Optional, Tuple

import numpy as np
import torch
from mindspore import amp

from ...errors import ParityUsageError
from ...registry import load

__all__ = ["LossScaling", "REGISTRY_DEFAULTS", "skip_causes"]

# The known mismatch for the default scales: DynamicLossScaleManager's 2**24, GradScaler's 2**16.
REGISTRY_DEFAULTS = ("dynamic-loss-scale-init-default", float(2**24), float(2**16))
_WHERE = "check_training(loss_scale=...)"


def _kind(obj) -> str:
    klass = type(obj)
    return f"{klass.__module__}.{klass.__qualname__}"


class LossScaling:
    """The ``loss_scale`` argument: None (no scaling), a factory of a ``torch.amp.GradScaler``
    (translated), or ``(ms_factory, torch_factory)``, ``ms_factory()`` returning a
    ``mindspore.amp.LossScaler`` (``StaticLossScaler``, ``DynamicLossScaler`` or your own)."""

    def __init__(self, spec):
        self.spec = spec
        self.pair = isinstance(spec, (tuple, list))
        if self.pair and (len(spec) != 2 or not all(callable(f) for f in spec)):
            raise ParityUsageError(
                f"{_WHERE}: a pair (ms_factory, torch_factory) takes two functions of no "
                "arguments, returning a mindspore.amp.LossScaler and a torch.amp.GradScaler"
            )
        if not self.pair and spec is not None and (not callable(spec) or _is_scaler(spec)):
            raise ParityUsageError(
                f"{_WHERE}: give a function of no arguments returning a torch.amp.GradScaler "
                '(lambda: torch.amp.GradScaler("cpu", init_scale=2**16)), or a pair '
                f"(ms_factory, torch_factory); got {type(spec).__qualname__}"
                + (" (a built scaler keeps its state between runs: pass a factory)" if _is_scaler(spec) else "")
            )
        self.ms_factory, self.torch_factory = spec if self.pair else (None, spec)

    @property
    def active(self) -> bool:
        return self.spec is not None

    def torch(self):
        """A fresh GradScaler from the factory (None without loss scaling)."""
        if not self.active:
            return None
        built = _call(self.torch_factory, "the PyTorch scaler factory")
        if not isinstance(built, torch.amp.GradScaler):
            raise ParityUsageError(
                f"{_WHERE}: the PyTorch scaler factory returned {_kind(built)}, not a torch.amp.GradScaler"
            )
        if not built.is_enabled():
            raise ParityUsageError(
                f"{_WHERE}: the GradScaler is disabled (enabled=False, or no such device), so "
                "it scales nothing and skips nothing; leave loss_scale out instead"
            )
        return built

    def mindspore(self, torch_scaler):
        """The MindSpore loss scaler: the pair's own, or the translation of ``torch_scaler``."""
        if not self.active:
            return None
        if self.pair:
            built = _call(self.ms_factory, "the MindSpore scaler factory")
            if not all(callable(getattr(built, m, None)) for m in ("scale", "unscale", "adjust")) or not hasattr(
                built, "scale_value"
            ):
                raise ParityUsageError(
                    f"{_WHERE}: the MindSpore scaler factory returned {_kind(built)}, not a "
                    "mindspore.amp.LossScaler with scale(), unscale(), adjust() and scale_value"
                )
            return built
        return translate_grad_scaler(torch_scaler)

    @staticmethod
    def label(ms_scaler, torch_scaler) -> str:
        if torch_scaler is None:
            return ""
        return f"; loss scaling {describe(ms_scaler)} <-> {describe(torch_scaler)}"


def _is_scaler(obj) -> bool:
    return type(obj).__name__ in ("GradScaler", "DynamicLossScaler", "StaticLossScaler")


def _call(factory, label: str):
    try:
        return factory()
    except TypeError as exc:
        raise ParityUsageError(f"{_WHERE}: {label} must take no arguments: {exc}") from None


def translate_grad_scaler(scaler):
    """``mindspore.amp.DynamicLossScaler`` with ``scaler``'s arithmetic (see the module docstring);
    a usage error names what has no MindSpore counterpart."""
    init, growth = float(scaler.get_scale()), float(scaler.get_growth_factor())
    backoff, interval = float(scaler.get_backoff_factor()), int(scaler.get_growth_interval())
    problems = []
    if growth != int(growth):
        problems.append(f"growth_factor={growth:g} is no integer (MindSpore's scale_factor is one)")
    elif backoff * growth != 1.0:
        problems.append(
            f"backoff_factor={backoff:g} is not 1/growth_factor (MindSpore divides by scale_factor on an overflow)"
        )
    if init < 1.0:
        problems.append(f"init_scale={init:g} is below 1 (MindSpore's scale_value must be >= 1)")
    if problems:
        raise ParityUsageError(
            f"{_WHERE}: the GradScaler has no mindspore.amp.DynamicLossScaler counterpart: "
            + "; ".join(problems)
            + ". Give a pair (ms_factory, torch_factory) with your own "
            "MindSpore loss scaler"
        )
    return amp.DynamicLossScaler(scale_value=init, scale_factor=int(growth), scale_window=interval)


def describe(scaler) -> str:
    """A scaler and the numbers that drive it, as messages show it."""
    if type(scaler).__name__ == "GradScaler":
        return (
            f"torch.amp.GradScaler(init_scale={fmt_scale(scaler.get_scale())}, growth_factor="
            f"{scaler.get_growth_factor():g}, backoff_factor={scaler.get_backoff_factor():g}, "
            f"growth_interval={scaler.get_growth_interval()})"
        )
    scale = fmt_scale(current_scale(scaler))
    if type(scaler).__name__ == "DynamicLossScaler":
        return (
            f"mindspore.amp.DynamicLossScaler(scale_value={scale}, scale_factor={scaler.scale_factor}, "
            f"scale_window={scaler.scale_window})"
        )
    return f"{_kind(scaler)}(scale_value={scale})"


def current_scale(ms_scaler) -> float:
    value = ms_scaler.scale_value
    return float(np.asarray(value.asnumpy() if hasattr(value, "asnumpy") else value).reshape(-1)[0])


def fmt_scale(value: float) -> str:
    """65536 as ``65536 (2**16)``: loss scales are powers of two."""
    value = float(value)
    if value > 0 and np.isfinite(value):
        exponent = np.log2(value)
        if exponent == int(exponent):
            return f"{value:.0f} (2**{int(exponent)})" if abs(exponent) < 64 else f"2**{int(exponent)}"
    return f"{value:g}"


def skip_message(scales: Tuple[float, float], skipped: Tuple[bool, bool]) -> str:
    """One line on a step whose sides disagree on skipping the update."""

    def side(name, scale, was_skipped):
        verdict = "skipped the update (a gradient overflowed)" if was_skipped else "applied the update"
        return f"{name} {verdict} at loss scale {fmt_scale(scale)}"

    return f"{side('MindSpore', scales[0], skipped[0])}; {side('PyTorch', scales[1], skipped[1])}"


def skip_causes(first_scales: Optional[Tuple[float, float]], at_step: int, scales: Tuple[float, float]) -> list:
    """``Likely cause:`` lines for a skip disagreement: the registry entry for the default scales
    when the first step's scales are MindSpore's and PyTorch's defaults, else the scales."""
    if first_scales is None:
        return []
    entry_id, ms_default, torch_default = REGISTRY_DEFAULTS
    found = []
    if first_scales == (ms_default, torch_default):
        found.append(_registry_cause(entry_id))
    if scales[0] != scales[1]:
        found.append(
            f"the loss scales differ at step {at_step} (MindSpore {fmt_scale(scales[0])}, PyTorch "
            f"{fmt_scale(scales[1])}): a gradient that overflows at the larger scale is finite at the "
            "smaller; start both at the same scale with the same growth and backoff"
        )
    return [cause for cause in found if cause]


def _registry_cause(entry_id: str) -> str:
    try:
        entry = load().get(entry_id)
    except Exception:  # the registry helps the message; it never hides the failure
        return ""
    return f"known mismatch {entry.id!r} ({entry.summary})" + (f"; fix: {entry.fix}" if entry.fix else "")
