"""Prove each entry on the installed frameworks: the naive pair from its ``[mismatch.selftest]``
differs the stated way, and the fixed pair (the rule's kwargs, the replacement, the copied weights)
agrees forward and backward. A naive pair that agrees is STALE: the mismatch no longer triggers.

With ``check_range=True`` an entry whose version range leaves out the installed versions is run
too, to measure the range from the other side: an entry that holds there (the naive pair differs as
stated and the fix agrees) is OUTSIDE-RANGE (the range is too narrow); one that does not is
NOT-APPLICABLE, as the range says, with what was measured (a fix that fails there keeps the
installed versions out of the range even where the difference shows).

Imports MindSpore and PyTorch when a self-test runs, never at import.
"""

from __future__ import annotations

import inspect
import time
from dataclasses import dataclass
from typing import Any, Dict, Optional, Tuple

from ..registry.schema import Entry, SelfTestSpec
from ..registry.store import installed_versions
from .pairs import (
    Measurement,
    check_available,
    dtype_pair,
    first_shape,
    fmt2,
    init_stats,
    loss_training_pair,
    module_pair,
    optimizer_pair,
    quiet,
    resolve,
    zero_fraction,
)

__all__ = ["Measurement", "SelfTestOutcome", "selftest", "check_available", "resolve", "fmt2", "STATUSES"]

STATUSES = (
    "ok",
    "stale",
    "unexpected",
    "fix-failed",
    "replay-failed",
    "outside-range",
    "not-applicable",
    "no-selftest",
)
# what a replay can reproduce: the naive pair's values, running statistics or gradients
_REPLAYED = ("values", "buffers", "grads")


@dataclass(frozen=True)
class SelfTestOutcome:
    """One entry's self-test: ``status`` is one of :data:`~parity.mismatch_checks.selftests.STATUSES`; ``before``/``after`` are the
    measured differences of the naive and the fixed pair, as the document shows them."""

    entry_id: str
    status: str
    naive: Optional[Measurement] = None
    fixed: Optional[Measurement] = None
    message: str = ""
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def before(self) -> str:
        return self.naive.display if self.naive else "-"

    @property
    def after(self) -> str:
        return self.fixed.display if self.fixed else "-"

    def __str__(self) -> str:
        return f"{self.status:<11} {self.entry_id}: before {self.before}; after {self.after}" + (
            f" ({self.message})" if self.message else ""
        )


def selftest(entry: Entry, *, device: str = "CPU", seed: int = 1234, check_range: bool = False) -> SelfTestOutcome:
    """Run ``entry``'s self-test on the installed frameworks (see the module docstring)."""
    start = time.perf_counter()
    spec = entry.selftest
    if spec is None:
        return SelfTestOutcome(entry.id, "no-selftest", message=entry.selftest_skip)
    ms_version, torch_version = installed_versions()
    outside = f"not for MindSpore {ms_version}, PyTorch {torch_version} on {device}"
    in_range = entry.applies(ms_version, torch_version)
    if not entry.applies(device=device) or not (in_range or check_range):
        return SelfTestOutcome(entry.id, "not-applicable", message=outside)
    with quiet():
        naive = _run(entry, spec, fixed=False, device=device, seed=seed)
        fixed = _run(entry, spec, fixed=True, device=device, seed=seed) if spec.fixed else None
        replayed = None
        if (entry.replay_set or entry.replay_pad) and naive.observed == spec.differs_in in _REPLAYED:
            replayed = _run(entry, spec, fixed=False, device=device, seed=seed, replayed=True)
    status, message = _judge(spec, naive, fixed)
    if status == "ok" and replayed is not None and replayed.observed != "agrees":
        status = "replay-failed"
        message = f"the naive pair with its replay applied to PyTorch's layer still differs in {replayed.observed}: {replayed.detail}"
    if not in_range:
        status, message = _judge_outside(entry, status, message, naive, ms_version, torch_version)
    return SelfTestOutcome(entry.id, status, naive, fixed, message, time.perf_counter() - start)


def _judge_outside(
    entry: Entry,
    status: str,
    message: str,
    naive: Measurement,
    ms_version: Optional[str],
    torch_version: Optional[str],
) -> Tuple[str, str]:
    """An entry run on versions its range leaves out: it must not hold there."""
    stated = ", ".join(f"{name} {spec}" for name, spec in sorted(entry.versions.items()))
    if status == "ok":
        return "outside-range", (
            f"the mismatch shows on MindSpore {ms_version}, PyTorch {torch_version}, outside "
            f"its versions ({stated}): widen the range"
        )
    if status == "fix-failed":
        return "not-applicable", f"outside its versions ({stated}), as measured: the mismatch shows but {message}"
    shown = "agrees" if naive.observed == "agrees" else f"differs in {naive.observed}: {naive.detail}"
    return "not-applicable", f"outside its versions ({stated}), as measured: the naive pair {shown}"


def _judge(spec: SelfTestSpec, naive: Measurement, fixed: Optional[Measurement]) -> Tuple[str, str]:
    if naive.observed == "agrees":
        return "stale", "the naive pair agrees: the mismatch no longer triggers; update or remove the entry"
    if naive.observed != spec.differs_in:
        return (
            "unexpected",
            f"expected the naive pair to differ in {spec.differs_in}, but it differs in "
            f"{naive.observed}: {naive.detail}",
        )
    if spec.raises and spec.raises not in (naive.text or naive.detail):
        return "unexpected", f"expected an error containing {spec.raises!r}, got {naive.detail!r}"
    if fixed is not None and fixed.observed != "agrees":
        return "fix-failed", f"the fixed pair still differs in {fixed.observed}: {fixed.detail}"
    return "ok", ""


def _run(
    entry: Entry, spec: SelfTestSpec, *, fixed: bool, device: str, seed: int, replayed: bool = False
) -> Measurement:
    api = entry.replacement if fixed and entry.replacement else (spec.mindspore_api or entry.mindspore)
    if spec.optimizer is not None:
        kwargs = _fixed_kwargs(entry, spec, None) if fixed else dict(spec.ms_kwargs)
        mode = (spec.fixed_ms_mode or spec.ms_mode) if fixed else spec.ms_mode
        return optimizer_pair(entry, api, kwargs, spec, mode, device, seed)
    if spec.batches is not None:
        kwargs = _fixed_kwargs(entry, spec, first_shape(spec.batches[0])) if fixed else dict(spec.ms_kwargs)
        return loss_training_pair(entry, api, kwargs, spec, device=device, seed=seed)
    inputs = (spec.fixed_inputs or spec.inputs) if fixed else spec.inputs
    kwargs = _fixed_kwargs(entry, spec, first_shape(inputs)) if fixed else dict(spec.ms_kwargs)
    if spec.amp:
        from .amp_pairs import amp_pair  # imports both frameworks

        return amp_pair(entry, api, kwargs, spec, inputs, device=device, seed=seed)
    if spec.dtype:
        return dtype_pair(entry, api, kwargs, spec, inputs, device=device, seed=seed)
    if spec.differs_in == "zero_fraction":
        return zero_fraction(entry, api, kwargs, spec, device, seed)
    if spec.differs_in == "init" and not fixed:
        return init_stats(entry, api, kwargs, spec, device, seed)
    return module_pair(entry, api, kwargs, spec, inputs, fixed=fixed, device=device, seed=seed, replayed=replayed)


def _fixed_kwargs(entry: Entry, spec: SelfTestSpec, input_shape) -> Dict[str, Any]:
    base = {} if entry.replacement else dict(spec.ms_kwargs)
    defaults = _signature_defaults(resolve(spec.torch_api or entry.torch))
    base.update(entry.translate_kwargs(spec.torch_kwargs, defaults=defaults, input_shape=input_shape))
    return base


def _signature_defaults(obj) -> Dict[str, Any]:
    from ..registry.signatures import parameters_of

    return {n: p.default for n, p in parameters_of(obj).items() if p.default is not inspect.Parameter.empty}
