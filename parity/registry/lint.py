"""Registry against cases: ``lint`` (a case that builds a MindSpore API with a known-different
default, or with arguments other than the registry's rule gives for PyTorch's)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Mapping, Optional

from . import rules
from .schema import Argument, Entry
from .store import Api, Registry, api_matches, installed_versions, load

__all__ = ["LintIssue", "lint"]


@dataclass(frozen=True)
class LintIssue:
    """A case builds ``entry.mindspore`` in a way the registry knows differs from PyTorch."""

    entry_id: str
    argument: str
    message: str

    def __str__(self) -> str:
        return self.message


def lint(
    mindspore_api: Api,
    ms_kwargs: Mapping[str, Any],
    acknowledged: Iterable[str] = (),
    *,
    torch_kwargs: Optional[Mapping[str, Any]] = None,
    device: Optional[str] = None,
    registry: Optional[Registry] = None,
    mindspore_version: Optional[str] = None,
    torch_version: Optional[str] = None,
) -> List[LintIssue]:
    """Issues with a case that builds ``mindspore_api(**ms_kwargs)``.

    * an argument whose MindSpore default is known to differ is not set, and the entry is not
      acknowledged: the issue names the argument and what to write (the rule's value when
      ``torch_kwargs`` are given);
    * with ``torch_kwargs``, an argument set to something other than what the rule translates to;
    * an API known to be unsupported on ``device``;
    * an acknowledged id that the registry does not hold.
    """
    registry = registry or load()
    acknowledged_ids = set(acknowledged)
    issues = [
        LintIssue(i, "", f"acknowledges unknown mismatch {i!r}{_suggest(registry, i)}")
        for i in sorted(acknowledged_ids)
        if i not in registry
    ]
    ms_version, torch_version = mindspore_version, torch_version
    if ms_version is None and torch_version is None:
        ms_version, torch_version = installed_versions()
    for entry in registry.entries:
        if (
            entry.id in acknowledged_ids
            or not api_matches(entry.mindspore, mindspore_api)
            or entry.dtypes
            or entry.kind == "precision"
            or entry.family == "llm"
        ):
            # A half dtype's or mixed precision's entry holds where the Cell computes so, an llm entry
            # in a hand-written Cell's code: neither is a case's kwargs.
            continue
        if not entry.applies(ms_version, torch_version, None):
            continue
        issues += _lint_entry(entry, dict(ms_kwargs), torch_kwargs, device)
    return issues


def _suggest(registry: Registry, entry_id: str) -> str:
    import difflib

    close = difflib.get_close_matches(entry_id, [e.id for e in registry.entries], n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


def _ack(entry: Entry) -> str:
    return f"(known mismatch {entry.id!r}; or acknowledge=({entry.id!r},) if the difference is the point)"


def _lint_entry(
    entry: Entry, ms_kwargs: Dict[str, Any], torch_kwargs: Optional[Mapping[str, Any]], device: Optional[str]
) -> List[LintIssue]:
    api = entry.mindspore
    if entry.kind == "unsupported":
        if device is not None and device in entry.devices:
            fix = f"; {entry.fix}" if entry.fix else ""
            return [LintIssue(entry.id, "", f"{api} on {device}: {entry.summary}{fix} {_ack(entry)}")]
        return []
    expected = _expected(entry, torch_kwargs or {})
    concrete = bool(torch_kwargs) and all(v is not None for v in expected.values())
    issues: List[LintIssue] = []
    for argument in entry.arguments:
        name = argument.mindspore
        if not name or not argument.has_mindspore_default or name in ms_kwargs or entry.kind == "layout":
            continue
        if name in expected:
            differs = not _equal(expected[name], argument.mindspore_default)
        elif argument.has_torch_default:
            differs = entry.kind == "default" and not _equal(argument.torch_default, argument.mindspore_default)
        else:
            differs = entry.kind == "default"
        if differs:
            issues.append(
                LintIssue(
                    entry.id, name, _unset_message(entry, argument, expected if concrete else {}, torch_kwargs or {})
                )
            )
    for name, value in expected.items():
        if name in ms_kwargs and torch_kwargs and not _equal(ms_kwargs[name], value):
            issues.append(
                LintIssue(
                    entry.id,
                    name,
                    f"{api}({name}={ms_kwargs[name]!r}) does not match PyTorch's "
                    f"{_torch_args(entry, torch_kwargs)}: write {name}={value!r} {_ack(entry)}",
                )
            )
    return issues


def _expected(entry: Entry, torch_kwargs: Mapping[str, Any]) -> Dict[str, Any]:
    """The rule's MindSpore kwargs for these PyTorch kwargs (PyTorch's defaults for the rest)."""
    if not entry.rule:
        return {}
    try:
        return entry.translate_kwargs(torch_kwargs)
    except Exception:  # the rule needs more than the case gives (e.g. the input shape)
        return {}


def _unset_message(entry: Entry, argument: Argument, expected: Dict[str, Any], torch_kwargs: Mapping[str, Any]) -> str:
    name = argument.mindspore
    torch_value = torch_kwargs.get(argument.torch, argument.torch_default)
    torch_side = (
        f" (PyTorch {argument.torch}={torch_value!r})"
        if argument.torch and (argument.torch in torch_kwargs or argument.has_torch_default)
        else ""
    )
    if expected:
        write = "write " + ", ".join(f"{k}={v!r}" for k, v in expected.items())
    else:
        write = f"fix: {entry.fix}" if entry.fix else f"set {name}"
    return (
        f"{entry.mindspore} is built without {name}: MindSpore's default {name}={argument.mindspore_default!r} "
        f"differs{torch_side}; {write} {_ack(entry)}"
    )


def _torch_args(entry: Entry, torch_kwargs: Optional[Mapping[str, Any]]) -> str:
    names = sorted({n for s in entry.rule.values() for n in rules.referenced(s, "torch")})
    shown = [f"{n}={torch_kwargs[n]!r}" for n in names if torch_kwargs and n in torch_kwargs]
    return ", ".join(shown) or "arguments"


def _equal(a: rules.Value, b: rules.Value) -> bool:
    return (
        a == b
        or _same(a, b)
        or (isinstance(a, float) and isinstance(b, float) and abs(a - b) <= 1e-9 * max(1.0, abs(b)))
    )


def _same(a: rules.Value, b: rules.Value) -> bool:
    """1 == (1, 1): MindSpore stores scalars where PyTorch normalised to tuples and back."""
    if isinstance(a, (tuple, list)) and not isinstance(b, (tuple, list)):
        return all(x == b for x in a)
    if isinstance(b, (tuple, list)) and not isinstance(a, (tuple, list)):
        return all(x == a for x in b)
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return tuple(a) == tuple(b)
    return False
