"""Registry records and their validation: one :class:`Entry` per known mismatch, loaded from
``parity/data/mismatches/*.toml`` (the schema is documented in docs/registry.md).

Every problem is reported with the file and line of the entry's ``id = "..."`` (or of the offending
key), all problems of a load at once, as a :class:`RegistryError`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Dict, Iterable, List, Mapping, Optional, Tuple

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import Version

from ..errors import ParityUsageError
from . import rules

if TYPE_CHECKING:
    import numpy.typing as npt

__all__ = [
    "RegistryError",
    "Argument",
    "SelfTestSpec",
    "Entry",
    "Availability",
    "SCHEMA",
    "KINDS",
    "FAMILIES",
    "DEVICES",
    "MODES",
    "DTYPES",
    "DIFFERS",
    "NONE",
    "AmpPattern",
    "AMP_LEVELS",
    "AMP_PRECISIONS",
]

SCHEMA = 1
KINDS = ("default", "name", "layout", "formula", "unsupported", "precision")
FAMILIES = ("nn", "mint", "llm")  # llm: a hand-written MindSpore model against a transformers one
DEVICES = ("CPU", "GPU", "Ascend")
MODES = ("pynative", "graph")
DTYPES = ("float16", "bfloat16")  # an entry's `dtypes`: the half dtypes MindSpore computes in where it holds
DIFFERS = ("shape", "values", "grads", "buffers", "params", "raises", "init", "zero_fraction", "precision")
AMP_LEVELS = ("O1", "O2", "O3", "auto")  # an entry's `amp.levels`: mindspore.amp.auto_mixed_precision levels
AMP_PRECISIONS = ("half", "float32")  # `amp.mindspore` / `amp.torch`: "half" is the check's amp dtype
NONE = "None"  # TOML has no null: the string "None" stands for Python's None in defaults and kwargs
ID_PATTERN = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
RULE_ROOTS = frozenset({"torch"})
RULE_NAMES = frozenset({"input_shape", "labels"})
INSPECT_ROOTS = frozenset({"torch", "ms"})


class RegistryError(ParityUsageError):
    """A mismatch data file is wrong, or a query names something the registry does not hold.
    The message gives ``file:line`` for every problem."""


def from_toml(value: Any) -> Any:
    """TOML value -> Python: "None" -> None, arrays -> tuples (MindSpore validators want tuples).
    Any in, any out: what ``tomllib`` read, with those two changes at every depth."""
    if isinstance(value, str) and value == NONE:
        return None
    if isinstance(value, list):
        return tuple(from_toml(v) for v in value)
    if isinstance(value, dict):
        return {k: from_toml(v) for k, v in value.items()}
    return value


_MISSING = object()


@dataclass(frozen=True)
class Argument:
    """One constructor argument involved, with each side's default (``MISSING`` where the side has
    no such argument or it is required)."""

    torch: str = ""
    mindspore: str = ""
    torch_default: Any = _MISSING
    mindspore_default: Any = _MISSING
    note: str = ""

    MISSING = _MISSING

    @property
    def has_torch_default(self) -> bool:
        return self.torch_default is not _MISSING

    @property
    def has_mindspore_default(self) -> bool:
        return self.mindspore_default is not _MISSING


@dataclass(frozen=True)
class SelfTestSpec:
    """A real pair that shows the difference (``naive``) and, where the entry has a fix, its fix."""

    torch_kwargs: Mapping[str, Any]
    ms_kwargs: Mapping[str, Any]
    differs_in: str
    inputs: Tuple[Any, ...] = ()
    fixed_inputs: Optional[Tuple[Any, ...]] = None
    raises: str = ""
    train: bool = False
    grads: bool = True
    weights: str = "copy"
    fixed: bool = True
    ms_mode: str = "pynative"
    fixed_ms_mode: Optional[str] = None
    optimizer: Optional[Mapping[str, Any]] = None  # {shape = [..], steps = n}: an optimizer pair
    batches: Optional[Tuple[Tuple[Any, ...], ...]] = None  # a loss pair trained over these (input, target) specs
    dtype: str = ""  # the MindSpore Cell alone, run in this half dtype (to_float): does its kernel exist?
    amp: str = ""  # the pair, each inside a one-layer container, checked with parity.check(amp=<this level>)
    # What the pair is built from where the entry's APIs cannot be built from keyword arguments (a
    # transformers layer takes a config; ``mindspore.nn.Cell`` stands for any hand-written Cell):
    # "package.module:Name", called with torch_kwargs / ms_kwargs (the fix: ms_kwargs and the rule's).
    torch_api: str = ""
    mindspore_api: str = ""


@dataclass(frozen=True)
class AmpPattern:
    """Where a ``precision`` entry holds: under these ``auto_mixed_precision`` levels the layer (or,
    with ``after``, each layer run right after it) runs in ``mindspore`` on MindSpore's side and in
    ``torch`` under ``torch.autocast``; "half" stands for the check's dtype (float16, bfloat16)."""

    levels: Tuple[str, ...]
    mindspore: str = ""  # empty: the entry is about something else at these levels (e.g. the rewrite fails)
    torch: str = ""
    after: bool = False

    def precisions(self, dtype: str) -> Tuple[str, str]:
        mindspore, torch = (dtype if p == "half" else p for p in (self.mindspore, self.torch))
        return mindspore, torch


@dataclass(frozen=True)
class Entry:
    """One known mismatch. See docs/registry.md for the meaning of each field."""

    id: str
    kind: str
    torch: str
    mindspore: str
    family: str
    summary: str
    reason: str
    reference: str
    devices: Tuple[str, ...]
    fix: str = ""
    arguments: Tuple[Argument, ...] = ()
    rule: Mapping[str, str] = field(default_factory=dict)
    replacement: str = ""
    weights: Mapping[str, str] = field(default_factory=dict)
    layout: Mapping[str, str] = field(default_factory=dict)
    inspect_torch: Mapping[str, str] = field(default_factory=dict)
    inspect_mindspore: Mapping[str, str] = field(default_factory=dict)
    inspect_fix: Mapping[str, str] = field(default_factory=dict)  # MindSpore kwargs fixing a built pair
    # How the mismatch is replayed on a PyTorch layer (see docs/registry.md): its attributes set as
    # MindSpore's layer has them, and its first input padded as MindSpore pads it
    replay_set: Mapping[str, str] = field(default_factory=dict)
    replay_pad: str = ""
    replay_value: str = ""
    when: str = ""
    versions: Mapping[str, SpecifierSet] = field(default_factory=dict)
    modes: Tuple[str, ...] = MODES
    runs_on: Tuple[str, ...] = ()
    dtypes: Tuple[str, ...] = ()  # only where the MindSpore layer computes in one of these (empty: any)
    amp: Optional["AmpPattern"] = None  # kind "precision": the levels and the precisions each side runs in
    selftest: Optional[SelfTestSpec] = None
    selftest_skip: str = ""
    file: str = ""
    line: int = 0

    @property
    def location(self) -> str:
        return f"{self.file}:{self.line}"

    @property
    def fixed_api(self) -> str:
        """The MindSpore API the fix builds: ``replacement`` where given, else ``mindspore``."""
        return self.replacement or self.mindspore

    def applies(
        self,
        mindspore_version: Optional[str] = None,
        torch_version: Optional[str] = None,
        device: Optional[str] = None,
        mode: Optional[str] = None,
    ) -> bool:
        """Whether this mismatch is expected for these versions, device and MindSpore mode
        (an argument left as None is not checked)."""
        for framework, version in (("mindspore", mindspore_version), ("torch", torch_version)):
            spec = self.versions.get(framework)
            if version is not None and spec is not None and not spec.contains(Version(str(version)), prereleases=True):
                return False
        if device is not None and device not in self.devices:
            return False
        return mode is None or mode in self.modes

    def translate_kwargs(
        self,
        torch_kwargs: Mapping[str, Any],
        *,
        defaults: Optional[Mapping[str, Any]] = None,
        input_shape: Optional[Tuple[int, ...]] = None,
    ) -> Dict[str, Any]:
        """The MindSpore keyword arguments the rule gives for these PyTorch ones. A PyTorch argument
        the rule reads but ``torch_kwargs`` lacks comes from ``defaults`` (e.g. the signature's), then
        from this entry's ``arguments``; otherwise :class:`RegistryError` says which is missing."""
        known = {a.torch: a.torch_default for a in self.arguments if a.torch and a.has_torch_default}
        known.update(defaults or {})

        def torch_arg(name: str) -> rules.Value:
            if name in torch_kwargs:
                return torch_kwargs[name]
            if name in known:
                return known[name]
            raise rules.MissingArgument("torch", name)

        names = {"input_shape": tuple(input_shape)} if input_shape is not None else {}
        result: Dict[str, Any] = {}
        for key, source in self.rule.items():
            try:
                result[key] = rules.evaluate(source, {"torch": torch_arg}, names)
            except rules.RuleError as exc:
                raise RegistryError(f"{self.location}: entry {self.id!r}: rule {key} = {source!r} {exc}") from None
        return result

    def to_mindspore_layout(self, leaf: str, array: npt.NDArray[Any]) -> npt.NDArray[Any]:
        """PyTorch's tensor ``leaf`` in MindSpore's layout (``layout = { leaf = "permute(1, 0)" }``)."""
        transform = self.layout.get(leaf)
        if not transform:
            return array
        return array.transpose(tuple(int(axis) for axis in re.findall(r"\d+", transform)))

    def name_map(self, torch_names: Iterable[str]) -> Dict[str, str]:
        """``parity.check(name_map=...)`` for the renamed weights: full PyTorch name -> MindSpore name."""
        found: Dict[str, str] = {}
        for name in torch_names:
            prefix, _, leaf = name.rpartition(".")
            if leaf in self.weights:
                found[name] = f"{prefix}.{self.weights[leaf]}" if prefix else self.weights[leaf]
        return found

    def __str__(self) -> str:
        return f"{self.id} ({self.kind}: {self.mindspore} <-> {self.torch})"


@dataclass(frozen=True)
class Availability:
    """A MindSpore API measured to run (and to agree with PyTorch) on some devices."""

    mindspore: str
    torch: str
    family: str
    runs_on: Tuple[str, ...]
    documented: Tuple[str, ...]
    kwargs: Mapping[str, Any]
    inputs: Tuple[Any, ...]
    note: str = ""
    file: str = ""
    line: int = 0

    @property
    def location(self) -> str:
        return f"{self.file}:{self.line}"


def parse_versions(value: object, where: str, errors: List[str]) -> Dict[str, SpecifierSet]:
    found: Dict[str, SpecifierSet] = {}
    if not isinstance(value, dict):
        errors.append(f"{where}: versions must be a table {{ mindspore = '...', torch = '...' }}")
        return found
    for framework, text in value.items():
        if framework not in ("mindspore", "torch"):
            errors.append(f"{where}: versions has unknown framework {framework!r}; expected mindspore, torch")
            continue
        try:
            found[framework] = SpecifierSet(text)
        except (InvalidSpecifier, TypeError):
            errors.append(f"{where}: versions.{framework} {text!r} is not a PEP 440 specifier (e.g. '>=2.7')")
    return found


def check_names(values: object, allowed: Tuple[str, ...], label: str, where: str, errors: List[str]) -> Tuple[str, ...]:
    if not isinstance(values, (list, tuple)) or not values:
        errors.append(f"{where}: {label} must be a non-empty list drawn from {list(allowed)}")
        return ()
    unknown = [v for v in values if v not in allowed]
    if unknown:
        errors.append(f"{where}: unknown {label} {unknown}; expected some of {list(allowed)}")
    return tuple(v for v in values if v in allowed)


def inspect_table(value: object, where: str, errors: List[str], root: str) -> Dict[str, str]:
    """``["a", "b"]`` (read attributes as they are) or ``{a = "<expression>"}``."""
    if isinstance(value, list):
        value = {name: f"{root}.{name}" for name in value}
    if not isinstance(value, dict):
        errors.append(
            f"{where}: inspect.{'mindspore' if root == 'ms' else root} must be a list of attribute "
            "names or a table name -> expression"
        )
        return {}
    for name, source in value.items():
        try:
            rules.check_expression(source, INSPECT_ROOTS)
        except rules.RuleError as exc:
            errors.append(f"{where}: inspect {name}: {exc}")
    return dict(value)
