"""Registry against a pair of optimizers: which known mismatches (family ``optim`` files, any
entry naming both classes) a MindSpore optimizer and a PyTorch optimizer hit, and the lint of a
MindSpore optimizer built against a network (``nn.Adam(weight_decay=...)`` with norm layers)."""

from __future__ import annotations

from typing import List, Optional

from . import rules
from .diagnosis import HIGH, PRESENT, Diagnosis, _reader
from .schema import Entry
from .store import Registry, installed_versions, load, resolve_api

__all__ = ["optimizer_causes", "NORM_SKIPPED"]

NORM_SKIPPED = "adam-weight-decay-skips-gamma-beta"


class _Hyperparameters:
    """A PyTorch optimizer read as the registry reads a layer: its first group's hyperparameters
    (``torch.lr``, ``torch.weight_decay``...)."""

    def __init__(self, optimizer):
        self._group = optimizer.param_groups[0] if optimizer.param_groups else dict(optimizer.defaults)

    def __getattr__(self, name):
        try:
            return self._group[name]
        except KeyError:
            raise AttributeError(name) from None


def _judge(entry: Entry, ms_optimizer, torch_optimizer) -> Optional[Diagnosis]:
    """The pair is the evidence for an entry without ``inspect.when`` (a formula always differs);
    an entry with one counts where it holds for these instances."""
    if not entry.when:
        return Diagnosis(entry, PRESENT, entry.summary, "optimizer")
    roots = {"ms": _reader(ms_optimizer), "torch": _reader(_Hyperparameters(torch_optimizer))}
    try:
        holds = bool(rules.evaluate(entry.when, roots))
    except rules.RuleError:
        return Diagnosis(entry, PRESENT, entry.summary, "optimizer")
    return Diagnosis(entry, HIGH, entry.summary, "optimizer") if holds else None


def optimizer_causes(ms_optimizer, torch_optimizer, *, device: Optional[str] = None,
                     registry: Optional[Registry] = None) -> List[str]:
    """``Likely cause:`` lines for a training check that failed with these optimizers: the entries
    whose MindSpore class is ``ms_optimizer``'s and whose PyTorch class is ``torch_optimizer``'s,
    those whose condition holds for the instances first."""
    registry = registry or load()
    ms_version, torch_version = installed_versions()
    found = []
    for entry in registry.entries:
        if not entry.applies(ms_version, torch_version, device):
            continue
        if resolve_api(entry.mindspore) is not type(ms_optimizer) or resolve_api(entry.torch) is not type(torch_optimizer):
            continue
        diagnosis = _judge(entry, ms_optimizer, torch_optimizer)
        if diagnosis is not None:
            found.append(diagnosis)
    found.sort(key=lambda d: -d.score)
    return [f"known mismatch {d.entry.id!r} ({d.evidence})" + (f"; fix: {d.entry.fix}" if d.entry.fix else "")
            for d in found]
