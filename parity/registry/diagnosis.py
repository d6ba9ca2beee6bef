"""Registry against real objects: ``diagnose`` (which known mismatches a pair of models hits),
``likely_causes`` (those that can explain a failing check, judged on the shapes its layers saw)
and ``parameter_causes`` (those that explain weights that cannot be paired)."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Mapping, Optional, Protocol, Sequence, Set, Tuple

from . import rules
from .schema import Entry
from .store import Registry, installed_versions, load, resolve_api

__all__ = [
    "Diagnosis",
    "Replay",
    "Seen",
    "replay_of",
    "diagnose",
    "likely_causes",
    "observed",
    "parameter_causes",
    "unsupported_dtype",
    "HIGH",
    "UNSUPPORTED",
    "PRESENT",
]

# A model or a layer: a mindspore.nn.Cell or a torch.nn.Module. The registry imports neither
# framework (and MindSpore has no type information): their layers are read by duck typing.
Model = Any


class VerdictView(Protocol):
    """What :func:`~parity.registry.diagnosis.observed` reads of a layer call's verdict (``parity.engine.diagnosis.verdicts.LayerVerdict``)."""

    @property
    def direction(self) -> str: ...
    @property
    def path(self) -> str: ...
    @property
    def ms_path(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def in_error(self) -> float: ...
    @property
    def in_margin(self) -> float: ...
    @property
    def in_noise(self) -> float: ...
    @property
    def in_shapes(self) -> Sequence[Optional[Sequence[int]]]: ...
    @property
    def ms_in_shapes(self) -> Sequence[Optional[Sequence[int]]]: ...


class LayerTableView(Protocol):
    """A check's layer table (``parity.engine.diagnosis.verdicts.LayerTable``), as :func:`~parity.registry.diagnosis.observed` reads it."""

    @property
    def forward(self) -> Sequence[VerdictView]: ...
    @property
    def backward(self) -> Sequence[VerdictView]: ...


class SlotView(Protocol):
    """A parameter or buffer of one side (``parity.backends.Slot``), as :func:`parameter_causes` reads it."""

    @property
    def layer(self) -> str: ...
    @property
    def leaf(self) -> str: ...
    @property
    def shape(self) -> Tuple[int, ...]: ...
    @property
    def trainable(self) -> bool: ...


HIGH = 0.9  # the instances were built the way the entry describes
UNSUPPORTED = 0.6  # the API has no kernel/feature where this runs
PRESENT = 0.2  # the layer types are merely present on both sides


@dataclass(frozen=True)
class Replay:
    """A known mismatch applied to the PyTorch layer, to replay it there (the entry's ``replay``):
    its ``attributes`` set as MindSpore's layer has them, and, with ``pads``, its first input padded
    (``torch.nn.functional.pad``'s order, with ``value``) as MindSpore pads an input of that shape."""

    attributes: Tuple[Tuple[str, Any], ...] = ()
    pads: Tuple[Tuple[Tuple[int, ...], Tuple[int, ...]], ...] = ()  # (input shape, its pads)
    value: float = 0.0

    def __str__(self) -> str:
        shown = [f"{name}={_short(value)}" for name, value in self.attributes]
        if self.pads:
            shown.append("its input padded " + ", ".join(f"{list(p)}" for _, p in self.pads) + " as MindSpore pads it")
        return ", ".join(shown)


def _short(value: Any) -> str:
    """A replayed attribute's value as a person writes it (0.1, not 0.09999999999999998)."""
    return f"{value:.6g}" if isinstance(value, float) else repr(value)


@dataclass(frozen=True)
class Diagnosis:
    """A known mismatch found in a pair of models: ``score`` in [0, 1], higher is more likely."""

    entry: Entry
    score: float
    evidence: str
    path: str  # the layer's attribute path (PyTorch's, where the two differ)
    ms_path: str = ""  # MindSpore's path, where it differs from PyTorch's
    fix: str = ""  # the arguments that fix this pair (``inspect.fix``), where the entry has them
    replay: Optional[Replay] = None  # the mismatch applied to PyTorch's layer (None: it cannot be)
    unreplayable: str = ""  # why it cannot be, where the entry has a replay
    confirmed: str = ""  # what replaying it showed, where it was replayed and reproduced MindSpore's output

    def __str__(self) -> str:
        where = f"{self.path or '(root)'!r}" + (f" (MindSpore {self.ms_path!r})" if self.ms_path else "")
        return f"known mismatch {self.entry.id!r} at {where} ({self.evidence})"

    def cause(self) -> str:
        """One line for a failure message: what, where, and the fix."""
        fix = f"; fix: pass {self.fix}" if self.fix else f"; fix: {self.entry.fix}" if self.entry.fix else ""
        confirmed = f"; confirmed: {self.confirmed}" if self.confirmed else ""
        return f"{self}{fix}{confirmed}"


@dataclass(frozen=True)
class Seen:
    """What one layer did in a failing check (from the layer capture), by PyTorch path."""

    ms_path: str
    input_shapes: Tuple[Tuple[int, ...], ...] = ()  # the shape of its first input, per distinct call
    diverged: bool = False  # a divergence starts here, or its parameters' gradients or statistics failed


def _versions(mindspore_version: Optional[str], torch_version: Optional[str]) -> Tuple[Optional[str], Optional[str]]:
    if mindspore_version is not None or torch_version is not None:
        return mindspore_version, torch_version
    found: List[Optional[str]] = []
    for name in ("mindspore", "torch"):
        module = sys.modules.get(name)
        found.append(getattr(module, "__version__", None))
    if None in found:
        installed = installed_versions()
        found = [f or i for f, i in zip(found, installed)]
    return found[0], found[1]


def diagnose(
    ms_model: Model,
    torch_model: Model,
    *,
    registry: Optional[Registry] = None,
    device: Optional[str] = None,
    mode: Optional[str] = None,
    mindspore_version: Optional[str] = None,
    torch_version: Optional[str] = None,
    seen: Optional[Mapping[str, Seen]] = None,
    layer_dtypes: Optional[Mapping[str, str]] = None,
    labels: Optional[Tuple[int, ...]] = None,
) -> List[Diagnosis]:
    """Known mismatches between the layers of ``ms_model`` and ``torch_model``, most likely first.

    Only entries that apply to the installed versions, ``device`` and ``mode`` (those given) count.
    Layers are paired as ``seen`` pairs them, then by attribute path, then (per entry) in
    definition order. An entry whose ``inspect.when`` holds for the instances ranks high; one whose
    ``when`` is false is left out; an unsupported API on ``device`` ranks medium; otherwise the
    layer types' presence ranks low. ``seen`` (PyTorch layer path -> :class:`~parity.registry.diagnosis.Seen`) holds what
    the layers saw in a check: a ``when`` that reads ``input_shape`` is judged on each layer's
    input shapes; without them ``input_shape`` is None and ``when`` says whether some input would
    show the mismatch (a 1x1 convolution with stride 1 pads nothing under any convention).
    ``layer_dtypes`` (MindSpore path -> half dtype) adds layers known to compute in a half dtype that
    their flags do not tell (O1's rewritten layers cast inside their code). ``labels``: a loss's
    distinct integer targets, where known (a ``when`` reading ``labels`` sees None otherwise)."""
    registry = registry or load()
    given_torch = torch_version
    ms_version, torch_version = _versions(mindspore_version, torch_version)
    # A recorded reference's PyTorch side (parity.engine.reference.side.RecordedModule) stands in for
    # the module: the PyTorch that recorded it, and its own classes for the registry's APIs.
    recorded_version = getattr(torch_model, "parity_torch_version", None)
    if recorded_version is not None and given_torch is None:
        torch_version = recorded_version
    resolve_torch = getattr(torch_model, "parity_resolve", resolve_api)
    # A ``precision`` entry is about mixed-precision levels against torch.autocast: only an AMP check
    # (parity.engine.amp) cites it, never an ordinary float16/float32 pair.
    entries = [
        e for e in registry.entries if e.applies(ms_version, torch_version, device, mode) and e.kind != "precision"
    ]
    ms_layers = list(ms_model.cells_and_names())
    torch_layers = dict(torch_model.named_modules())
    seen = seen or {}
    aligned = {s.ms_path: path for path, s in seen.items()}
    dtypes = {**_layer_dtypes(ms_layers), **(layer_dtypes or {})} if any(e.dtypes for e in entries) else {}
    found: List[Tuple[float, int, str, Diagnosis]] = []
    for entry in entries:
        ms_class, torch_class = resolve_api(entry.mindspore), resolve_torch(entry.torch)
        if not isinstance(ms_class, type) or not isinstance(torch_class, type):
            continue
        for order, path, ms_path, ms_layer, torch_layer in _pairs(
            ms_layers, torch_layers, ms_class, torch_class, aligned
        ):
            if entry.dtypes and dtypes.get(ms_path or path) not in entry.dtypes:
                continue  # the layer does not compute in the dtype the entry is about
            shapes = seen[path].input_shapes if path in seen else ()
            found_one = _judge(entry, path, ms_path, ms_layer, torch_layer, device, shapes, labels)
            if found_one is not None:
                found.append((-found_one.score, order, entry.id, found_one))
    found.sort(key=lambda item: item[:3])
    return [item[3] for item in found]


def likely_causes(
    ms_model: Model,
    torch_model: Model,
    *,
    at: Optional[str] = None,
    device: Optional[str] = None,
    mode: Optional[str] = None,
    threshold: float = UNSUPPORTED,
    registry: Optional[Registry] = None,
    seen: Optional[Mapping[str, Seen]] = None,
    labels: Optional[Tuple[int, ...]] = None,
    found: Optional[List[Diagnosis]] = None,
) -> List[str]:
    """``Likely cause:`` lines for a failure message: the diagnoses at or above ``threshold`` that
    can explain the failure, each with its fix, those at layer ``at`` (the first divergence) first.
    With ``seen`` (see :func:`diagnose`, :func:`~parity.registry.diagnosis.observed`), conditions are judged on the shapes the
    layers saw, and where some layer diverged, a layer seen to agree explains nothing and is left
    out. ``labels``: see :func:`diagnose`; ``found``: its result, where it ran already. Never
    raises: a failing diagnosis must not hide the failure it explains."""
    try:
        if found is None:
            found = diagnose(
                ms_model, torch_model, registry=registry, device=device, mode=mode, seen=seen, labels=labels
            )
    except Exception:  # the registry is a helper of the message, not part of the verdict
        return []
    found = [d for d in found if d.score >= threshold and _can_explain(d, seen or {})]
    found.sort(key=lambda d: at is not None and d.path != at)  # stable: most likely first otherwise
    return [d.cause() for d in found]


def unsupported_dtype(
    ms_model: Model,
    torch_model: Model,
    *,
    dtype: str,
    device: str,
    registry: Optional[Registry] = None,
    layer_dtypes: Optional[Mapping[str, str]] = None,
) -> List[Diagnosis]:
    """The layers of ``ms_model`` that compute in ``dtype`` and that the registry knows to have no
    kernel for it on ``device`` (entries of kind ``unsupported`` with ``dtypes``), in execution order
    (``layer_dtypes``: see :func:`diagnose`)."""
    found = [
        d
        for d in diagnose(ms_model, torch_model, registry=registry, device=device, layer_dtypes=layer_dtypes)
        if d.entry.kind == "unsupported" and dtype in d.entry.dtypes
    ]
    order = {path: i for i, (path, _) in enumerate(ms_model.cells_and_names())}
    return sorted(found, key=lambda d: order.get(d.ms_path or d.path, len(order)))


def _layer_dtypes(ms_layers: Iterable[Tuple[str, Model]]) -> Dict[str, Optional[str]]:
    """MindSpore layer path -> the half dtype it computes in (see :func:`parity.judge.dtypes.cell_dtype`);
    a layer with nothing to tell by (no flag, no parameter) computes in its nearest container's."""
    from ..judge.dtypes import cell_dtype

    found: Dict[str, Optional[str]] = {}
    for path, cell in ms_layers:  # containers come before what they contain
        own = cell_dtype(cell)
        if own is None and not _has_flag(cell) and not any(True for _ in cell.get_parameters()):
            parent = path.rpartition(".")[0] if "." in path else ""
            own = found.get(parent) if path else None
        found[path] = own
    return found


def _has_flag(cell: Model) -> bool:
    flags = cell.get_flags() if hasattr(cell, "get_flags") else {}
    return any(flags.get(f) for f in ("fp16", "bf16", "fp32"))


def _can_explain(diagnosis: Diagnosis, seen: Mapping[str, Seen]) -> bool:
    if not any(s.diverged for s in seen.values()):
        return True  # no layer to blame (e.g. functional code diverged): every candidate stays
    layer = seen.get(diagnosis.path)
    return layer is None or layer.diverged


def observed(layers: LayerTableView, failed: Iterable[Tuple[str, str]] = ()) -> Dict[str, Seen]:
    """:class:`~parity.registry.diagnosis.Seen` per PyTorch layer path, from a check's layer table (``.forward`` and
    ``.backward`` verdicts with ``path``, ``ms_path``, ``status``, input margins and shapes) and
    the failing tensors that belong to a layer, as ``(layer, kind)`` (``"param grad"``,
    ``"buffer"``). A layer diverged where a divergence starts (``FAIL``, or ``contains`` one), or
    where its own tensors failed although what flowed into it agreed: forward for its running
    statistics, forward and backward for its parameters' gradients."""
    ms_paths: Dict[str, str] = {}
    shapes: Dict[str, List[Tuple[int, ...]]] = {}
    diverged: Set[str] = set()
    fed_badly: Dict[str, Set[str]] = {"forward": set(), "backward": set()}
    for verdict in list(layers.forward) + list(layers.backward):
        if verdict.status == "unaligned":
            continue
        ms_paths.setdefault(verdict.path, verdict.ms_path)
        if verdict.status in ("FAIL", "contains"):
            diverged.add(verdict.path)
        if verdict.in_margin > 1.0 and verdict.in_error > verdict.in_noise:
            fed_badly[verdict.direction].add(verdict.path)
        if verdict.direction == "forward":
            shape = _first_shape(verdict.in_shapes) or _first_shape(verdict.ms_in_shapes)
            known = shapes.setdefault(verdict.path, [])
            if shape is not None and shape not in known:
                known.append(shape)
    for layer, kind in failed:
        inflows = ("forward", "backward") if kind == "param grad" else ("forward",)
        if layer in ms_paths and not any(layer in fed_badly[d] for d in inflows):
            diverged.add(layer)
    return {path: Seen(ms_path, tuple(shapes.get(path, ())), path in diverged) for path, ms_path in ms_paths.items()}


def _first_shape(shapes: Sequence[Optional[Sequence[int]]]) -> Optional[Tuple[int, ...]]:
    return tuple(shapes[0]) if shapes and shapes[0] is not None else None


def parameter_causes(
    ms_model: Model,
    torch_model: Model,
    ms_slots: Iterable[SlotView],
    torch_slots: Iterable[SlotView],
    *,
    device: Optional[str] = None,
    ignore: Iterable[str] = (),
    registry: Optional[Registry] = None,
) -> List[str]:
    """``Likely cause:`` lines for weights that cannot be paired: the known mismatches whose naive
    pair differs in its parameters (self-test ``differs_in = "params"``) that hold at a layer pair
    whose own parameters do not line up (another count or other shapes). ``*_slots`` describe each
    side's parameters and buffers (``layer``, ``leaf``, ``shape``, ``trainable``); leaves in
    ``ignore`` exist on one side by design. Never raises."""
    try:
        found = diagnose(ms_model, torch_model, registry=registry, device=device)
        ms_params, torch_params = _params_by_layer(ms_slots, set(ignore)), _params_by_layer(torch_slots, set(ignore))
    except Exception:  # hints for a usage error must not replace it
        return []
    return [
        d.cause()
        for d in found
        if d.score >= HIGH
        and d.entry.selftest is not None
        and d.entry.selftest.differs_in == "params"
        and ms_params.get(d.ms_path or d.path, []) != torch_params.get(d.path, [])
    ]


def _params_by_layer(slots: Iterable[SlotView], ignore: Set[str]) -> Dict[str, List[Tuple[bool, Tuple[int, ...]]]]:
    found: Dict[str, List[Tuple[bool, Tuple[int, ...]]]] = {}
    for slot in slots:
        if slot.leaf not in ignore:
            found.setdefault(slot.layer, []).append((bool(slot.trainable), tuple(slot.shape)))
    return {layer: sorted(params) for layer, params in found.items()}


def _pairs(
    ms_layers: Sequence[Tuple[str, Model]],
    torch_layers: Dict[str, Model],
    ms_class: type,
    torch_class: type,
    aligned: Optional[Mapping[str, str]] = None,
) -> List[Tuple[int, str, str, Model, Model]]:
    """(order, path, MindSpore path if different, ms layer, torch layer) of these types: as
    ``aligned`` (MindSpore path -> PyTorch path) pairs them, then the same path, the rest that
    ``aligned`` leaves unpaired paired in definition order; ``order`` is the MindSpore layer's
    position, to rank ties by execution order."""
    aligned = aligned or {}
    ms_of_type = [(i, p, c) for i, (p, c) in enumerate(ms_layers) if isinstance(c, ms_class)]
    torch_of_type = {p: m for p, m in torch_layers.items() if isinstance(m, torch_class)}
    paired: List[Tuple[int, str, str, Model, Model]] = []
    rest_ms = ms_of_type
    for match in (aligned.get, lambda path: path):  # as the check aligned them, then by path
        left = []
        for i, ms_path, cell in rest_ms:
            torch_path = match(ms_path)
            if torch_path not in torch_of_type:
                left.append((i, ms_path, cell))
                continue
            module = torch_of_type.pop(torch_path)
            paired.append((i, torch_path, "" if torch_path == ms_path else ms_path, cell, module))
        rest_ms = left
    # in definition order: only layers the check did not pair with another (a Dropout the check
    # paired with a StochasticDepth stands for no other Dropout)
    partners = set(aligned.values())
    rest_ms = [(i, p, c) for i, p, c in rest_ms if p not in aligned]
    rest_torch = [(p, m) for p, m in torch_of_type.items() if p not in partners]
    for (i, ms_path, cell), (torch_path, module) in zip(rest_ms, rest_torch):
        paired.append((i, torch_path, ms_path, cell, module))
    return paired


def _judge(
    entry: Entry,
    path: str,
    ms_path: str,
    ms_layer: Model,
    torch_layer: Model,
    device: Optional[str],
    shapes: Sequence[Tuple[int, ...]] = (),
    labels: Optional[Tuple[int, ...]] = None,
) -> Optional[Diagnosis]:
    roots = {"ms": rules.attribute_lookup(ms_layer), "torch": rules.attribute_lookup(torch_layer)}
    if entry.kind == "unsupported" and device is not None and device in entry.devices and not entry.when:
        return Diagnosis(entry, UNSUPPORTED, f"{entry.summary} (device {device})", path, ms_path)
    if not entry.when:
        return Diagnosis(entry, PRESENT, f"layer types present on both sides: {entry.summary}", path, ms_path)
    by_shape = "input_shape" in rules.bare_names(entry.when)
    for shape in shapes if by_shape and shapes else (None,):
        try:
            holds = bool(rules.evaluate(entry.when, roots, {"input_shape": shape, "labels": labels}))
        except rules.RuleError as exc:
            return Diagnosis(entry, PRESENT, f"layer types present; could not read the arguments: {exc}", path, ms_path)
        if holds:
            evidence = _evidence(entry, roots) + (f"; input shape {shape}" if by_shape and shape is not None else "")
            replay, why = replay_of(entry, ms_layer, torch_layer, shapes)
            return Diagnosis(entry, HIGH, evidence, path, ms_path, _fix(entry, roots, shape), replay, why)
    return None


def replay_of(
    entry: Entry, ms_layer: Model, torch_layer: Model, shapes: Sequence[Tuple[int, ...]]
) -> Tuple[Optional[Replay], str]:
    """The entry's ``replay`` for this pair of layers (``shapes``: the first input's shape in each
    distinct call), or None and why it cannot be replayed."""
    roots = {"ms": rules.attribute_lookup(ms_layer), "torch": rules.attribute_lookup(torch_layer)}
    if not entry.replay_set and not entry.replay_pad:
        return None, "the entry has no replay"
    try:
        attributes = tuple((name, rules.evaluate(source, roots)) for name, source in entry.replay_set.items())
        pads: Tuple[Tuple[Tuple[int, ...], Tuple[int, ...]], ...] = ()
        if entry.replay_pad:
            if not shapes:
                return None, "the layer's input shapes are not known"
            pads = tuple(
                (tuple(s), tuple(int(p) for p in rules.evaluate(entry.replay_pad, roots, {"input_shape": tuple(s)})))
                for s in shapes
            )
        value = float(rules.evaluate(entry.replay_value, roots)) if entry.replay_value else 0.0
    except (rules.RuleError, TypeError, ValueError) as exc:
        return None, f"its replay could not be read for these layers: {exc}"
    return Replay(attributes, pads, value), ""


def _fix(entry: Entry, roots: Mapping[str, rules.Lookup], shape: Optional[Tuple[int, ...]]) -> str:
    """``inspect.fix`` evaluated for this pair, as keyword arguments; empty where it cannot be."""
    try:
        return ", ".join(
            f"{name}={rules.evaluate(source, roots, {'input_shape': shape})!r}"
            for name, source in entry.inspect_fix.items()
        )
    except rules.RuleError:
        return ""


def _evidence(entry: Entry, roots: Mapping[str, rules.Lookup]) -> str:
    sides: List[str] = []
    for label, table in (("MindSpore", entry.inspect_mindspore), ("PyTorch", entry.inspect_torch)):
        shown: List[str] = []
        for name, source in table.items():
            try:
                shown.append(f"{name}={rules.evaluate(source, roots)!r}")
            except rules.RuleError:
                shown.append(f"{name}=?")
        if shown:
            sides.append(f"{label} {', '.join(shown)}")
    return " vs ".join(sides) or entry.summary
