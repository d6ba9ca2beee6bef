"""Registry against a pair of optimizers: which known mismatches (family ``optim`` files, any
entry naming both classes) a MindSpore optimizer and a PyTorch optimizer hit, and the lint of a
MindSpore optimizer built against a network (``nn.Adam(weight_decay=...)`` with norm layers)."""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Optional

from . import rules
from .diagnosis import HIGH, PRESENT, Diagnosis
from .lint import LintIssue
from .schema import Entry
from .store import Registry, installed_versions, load, resolve_api

__all__ = ["optimizer_causes", "lint_optimizer", "NORM_SKIPPED"]

NORM_SKIPPED = "adam-weight-decay-skips-gamma-beta"


# An optimizer: a mindspore.nn.Optimizer or a torch.optim.Optimizer, read by duck typing (the
# registry imports neither framework).
Optimizer = Any


class _Hyperparameters:
    """A PyTorch optimizer read as the registry reads a layer: its first group's hyperparameters
    (``torch.lr``, ``torch.weight_decay``...)."""

    def __init__(self, optimizer: Optimizer) -> None:
        self._group: Dict[str, Any] = optimizer.param_groups[0] if optimizer.param_groups else dict(optimizer.defaults)

    def __getattr__(self, name: str) -> rules.Value:
        try:
            return self._group[name]
        except KeyError:
            raise AttributeError(name) from None


def _judge(entry: Entry, ms_optimizer: Optimizer, torch_optimizer: Optimizer) -> Optional[Diagnosis]:
    """The pair is the evidence for an entry without ``inspect.when`` (a formula always differs);
    an entry with one counts where it holds for these instances."""
    if not entry.when:
        return Diagnosis(entry, PRESENT, entry.summary, "optimizer")
    roots = {
        "ms": rules.attribute_lookup(ms_optimizer),
        "torch": rules.attribute_lookup(_Hyperparameters(torch_optimizer)),
    }
    try:
        holds = bool(rules.evaluate(entry.when, roots))
    except rules.RuleError:
        return Diagnosis(entry, PRESENT, entry.summary, "optimizer")
    return Diagnosis(entry, HIGH, entry.summary, "optimizer") if holds else None


def optimizer_causes(
    ms_optimizer: Optimizer,
    torch_optimizer: Optimizer,
    *,
    device: Optional[str] = None,
    registry: Optional[Registry] = None,
) -> List[str]:
    """``Likely cause:`` lines for a training check that failed with these optimizers: the entries
    whose MindSpore class is ``ms_optimizer``'s and whose PyTorch class is ``torch_optimizer``'s,
    those whose condition holds for the instances first."""
    registry = registry or load()
    ms_version, torch_version = installed_versions()
    found: List[Diagnosis] = []
    for entry in registry.entries:
        if not entry.applies(ms_version, torch_version, device):
            continue
        if resolve_api(entry.mindspore) is not type(ms_optimizer) or resolve_api(entry.torch) is not type(
            torch_optimizer
        ):
            continue
        diagnosis = _judge(entry, ms_optimizer, torch_optimizer)
        if diagnosis is not None:
            found.append(diagnosis)
    found.sort(key=lambda d: -d.score)
    return [
        f"known mismatch {d.entry.id!r} ({d.evidence})" + (f"; fix: {d.entry.fix}" if d.entry.fix else "")
        for d in found
    ]


def lint_optimizer(
    ms_optimizer: Optimizer,
    acknowledged: Iterable[str] = (),
    *,
    device: Optional[str] = None,
    registry: Optional[Registry] = None,
) -> List[LintIssue]:
    """What the registry knows is wrong with a built MindSpore optimizer whatever it is compared
    with, before any step: the entries for its class whose ``inspect.when`` reads the MindSpore
    side only and holds (``nn.Adam``/``nn.Momentum``/``nn.SGD`` with ``weight_decay > 0`` over
    parameters named ``gamma``/``beta``, which their default filter leaves undecayed), unless
    ``acknowledged``."""
    registry = registry or load()
    acknowledged_ids = set(acknowledged)
    ms_version, torch_version = installed_versions()
    issues: List[LintIssue] = []
    for entry in registry.entries:
        if entry.id in acknowledged_ids or not entry.when or not entry.applies(ms_version, torch_version, device):
            continue
        if resolve_api(entry.mindspore) is not type(ms_optimizer):
            continue
        try:
            holds = bool(rules.evaluate(entry.when, {"ms": rules.attribute_lookup(ms_optimizer)}))
        except rules.RuleError:  # the condition needs the PyTorch side: a matter for optimizer_causes
            continue
        if holds:
            issues.append(LintIssue(entry.id, "", _optimizer_message(entry, ms_optimizer)))
    return issues


def _optimizer_message(entry: Entry, ms_optimizer: Optimizer) -> str:
    flags = getattr(ms_optimizer, "decay_flags", ())
    params = list(getattr(ms_optimizer, "parameters", ()))
    skipped = [p.name for p, flag in zip(params, flags) if not flag]
    shown = f"{skipped[:4]}" + (f" and {len(skipped) - 4} more" if len(skipped) > 4 else "")
    where = f" (here {shown})" if skipped else ""
    decay = getattr(ms_optimizer, "weight_decay", None)
    decay = f"{float(decay.asnumpy() if hasattr(decay, 'asnumpy') else decay):g}" if decay is not None else "..."
    return (
        f"{entry.mindspore}(weight_decay={decay}){where}: {entry.summary}; fix: {entry.fix} "
        f"(known mismatch {entry.id!r}; or acknowledge=({entry.id!r},) if the difference is the point)"
    )
