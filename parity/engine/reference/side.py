"""PyTorch's side of a check as recorded data: what the engine asks of :mod:`parity.backends.torch`
(its slots and weights, a pass's outputs and vector-Jacobian product, the layer capture, the
envelope's reruns), answered from a reference read by :mod:`.store`. Framework-free."""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Optional, Tuple

import numpy as np

from ...backends import Grads, Slot
from ...errors import ParityUsageError
from ...judge.envelope import Rerun
from ...judge.tolerance import Tolerance, ToleranceSpec
from ..diagnosis.recording import Recording
from ..inputs import Inputs
from .store import Reference, read_reference, recording_from

__all__ = ["RecordedTorch", "RecordedPass", "RecordedModule"]

NAME = "torch"
LABEL = "PyTorch (recorded)"


class RecordedPass:
    """PyTorch's recorded forward, as :func:`parity.engine.side_errors.run_side` leaves a pass:
    ``values`` (path, array) in PyTorch's order, ``changed`` the inputs its forward changed in place."""

    def __init__(self, values: List[Tuple[str, np.ndarray]], changed: List[str]):
        self.values = values
        self.changed = changed

    def outputs(self) -> List[Tuple[str, np.ndarray]]:
        return self.values


class RecordedTorch:
    """A recorded reference standing for a ``torch.nn.Module`` and the adapter running it."""

    def __init__(self, reference: Reference):
        self.reference = reference
        self.manifest = reference.manifest
        self.weights: Dict[str, np.ndarray] = dict(reference.named("weights"))

    @classmethod
    def read(cls, path) -> "RecordedTorch":
        return cls(read_reference(path))

    # -- what the adapter tells of a model -----------------------------------------------------------

    @property
    def type_name(self) -> str:
        return str(self.manifest["torch_type"])

    def slots(self) -> List[Slot]:
        return [
            Slot(
                s["name"],
                tuple(s["shape"]),
                s["dtype"],
                s["trainable"],
                s["layer"],
                s["layer_type"],
                tuple(s["aliases"]),
                s["persistent"],
            )
            for s in self.manifest["slots"]
        ]

    def compute_dtype(self) -> Optional[str]:
        return self.manifest["compute_dtype"]

    def layer_kinds(self) -> Dict[str, tuple]:
        return {path: (kind, native) for path, kind, native in self.manifest["layer_kinds"]}

    def options(self) -> Dict[str, Any]:
        return dict(self.manifest["options"])

    def tolerance(self) -> ToleranceSpec:
        spec = self.manifest["tolerance"]
        default = None if spec["default"] is None else Tolerance(*spec["default"])
        overrides = tuple((glob, Tolerance(*pair)) for glob, pair in spec["overrides"])  # each override is a pair
        return ToleranceSpec(default, overrides, spec["source"])

    # -- one check's passes ---------------------------------------------------------------------------

    def inputs(self) -> Inputs:
        """The inputs the check was recorded on (before each side's dtype)."""
        return self._inputs("inputs")

    def torch_inputs(self) -> Inputs:
        """The inputs PyTorch was given."""
        return self._inputs("torch_inputs")

    def _inputs(self, section: str) -> Inputs:
        named = self.reference.named(section)
        keywords = set(self.manifest["keywords"])
        args = tuple(a for n, a in named if n not in keywords)
        return Inputs(args, {n: a for n, a in named if n in keywords}, dict(self.manifest["descriptions"]))

    def forward(self) -> RecordedPass:
        return RecordedPass(self.reference.named("outputs"), list(self.manifest["changed"]))

    def cotangents(self) -> Dict[str, np.ndarray]:
        return dict(self.reference.named("cotangents"))

    def backward(self, params: Iterable[str]) -> Grads:
        """The recorded gradients: every input's, and the parameters ``params``."""
        if self.manifest["input_grads"] is None:
            raise ParityUsageError(
                f"reference {self.reference.path}: recorded with grads=False; check with grads=False or record it again"
            )
        recorded = dict(self.reference.named("param_grads"))
        return Grads(dict(self.reference.named("input_grads")), {name: recorded[name] for name in params})

    def statistics(self) -> Dict[str, np.ndarray]:
        """The running statistics after the forward (train mode), by PyTorch name."""
        return dict(self.reference.named("statistics"))

    def rerun(self, spec: Rerun) -> List[Tuple[Tuple[str, str], np.ndarray]]:
        """A run of the envelope's (or the golden's) as recorded, keyed like ``ArrayPair.key``."""
        for run in self.manifest["reruns"]:
            if (run["cast"], run["draw"], float(run["ulps"])) == (spec.cast, spec.draw, float(spec.ulps)):
                return [((kind, name), self.reference.arrays[key]) for kind, name, key in run["values"]]
        raise ParityUsageError(
            f"reference {self.reference.path}: PyTorch's run ({_run_label(spec)}) was not recorded; record the "
            "reference again"
        )

    # -- the layers -------------------------------------------------------------------------------------

    def has_layers(self) -> bool:
        return self.manifest.get("layers") is not None

    def has_own_reruns(self) -> bool:
        return bool(self.manifest.get("own_reruns"))

    def recording(self) -> Recording:
        return recording_from(self.reference)

    def own_rerun(self, spec: Rerun, keep) -> List[Tuple[tuple, np.ndarray]]:
        """A run of the envelope's for each layer's own error, as recorded (every call fed), the
        values of the calls in ``keep`` (PyTorch path, call) and the running statistics."""
        for run in self.manifest.get("own_reruns") or []:
            if (run["cast"], run["draw"], float(run["ulps"])) == (spec.cast, spec.draw, float(spec.ulps)):
                return [
                    (tuple(key), self.reference.arrays[array])
                    for *key, array in run["values"]
                    if key[0] == "buffer" or keep is None or (key[1], key[2]) in keep
                ]
        raise ParityUsageError(
            f"reference {self.reference.path}: PyTorch's run ({_run_label(spec)}) of the layers fed was not "
            "recorded; record the reference again"
        )

    def module_view(self) -> Optional["RecordedModule"]:
        """PyTorch's layers as the known-mismatch registry reads them, or None where not recorded."""
        facts = self.manifest.get("layer_facts")
        if facts is None:
            return None
        return RecordedModule(facts, self.manifest["parts"]["torch"])

    def noise(self) -> Dict[Tuple[str, str, int], Tuple[float, float]]:
        return {(d, path, call): (out, inp) for d, path, call, out, inp in self.manifest.get("noise") or []}


def _run_label(spec: Rerun) -> str:
    return spec.cast if spec.cast is not None else f"draw {spec.draw}, {spec.ulps:+g} ulps"


class _Api(type):
    """A PyTorch API of the registry's, standing in for its class: a recorded layer is an instance
    where it was one when recorded."""

    api: str

    def __instancecheck__(cls, obj: object) -> bool:
        return cls.api in getattr(obj, "parity_apis", ())


class _Layer:
    """A recorded layer: the registry's APIs it is an instance of, and the attributes its rules read."""

    parity_apis: Tuple[str, ...] = ()


class _Opaque:
    """An attribute value that is no plain value (a tensor, a dtype): only its type is known."""

    def __init__(self, type_name: str):
        self.type_name = type_name

    def __repr__(self) -> str:
        return f"<{self.type_name}>"


def _value(fact: Any) -> Any:
    if isinstance(fact, dict):
        return tuple(_value(v) for v in fact["tuple"]) if "tuple" in fact else _Opaque(fact["object"])
    if isinstance(fact, list):
        return [_value(v) for v in fact]
    return fact


class RecordedModule:
    """The recorded PyTorch module as :func:`parity.registry.diagnose` reads one: ``named_modules``,
    and (``parity_resolve``, ``parity_torch_version``) the classes and the version it stands for."""

    def __init__(self, facts: Dict[str, Any], torch_version: str):
        self.parity_torch_version = torch_version
        self._apis: Dict[str, type] = {}
        self._layers: List[Tuple[str, _Layer]] = []
        for path, item in facts.items():
            layer = type(item["type"], (_Layer,), {})()
            layer.parity_apis = tuple(item["apis"])
            for name, fact in item["attributes"].items():
                setattr(layer, name, _value(fact))
            self._layers.append((path, layer))

    def named_modules(self) -> List[Tuple[str, _Layer]]:
        return list(self._layers)

    def parity_resolve(self, api: str) -> type:
        if api not in self._apis:
            self._apis[api] = _Api(api.rpartition(".")[2], (), {"api": api})
        return self._apis[api]
