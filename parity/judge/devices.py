"""Where a check ran, said in words, and the float32 tolerance profile that follows from it.

``--parity-device`` decides both sides: MindSpore's ``device_target`` and the device of the
PyTorch reference (see :mod:`parity.backends.device`, which probes and sets them). What it found
is a :class:`DeviceSetup`; it goes into the failure message (the ``Device:`` line), the check
record (``device_setup``) and the choice of tolerance profile.

Tolerance profiles per device are data, ``parity/data/device-tolerances.toml``: on the CPU (and on
a GPU, where both sides have TF32 switched off) every dtype keeps its default; on Ascend, a
MindSpore precision mode or HF32 setting that lets float32 matmul/conv compute in a narrower type
gives float32 that type's default, under a source that names the setting. Standard library only.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Dict, Mapping, Optional, Tuple

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python < 3.11
    import tomli as tomllib

from .tolerance import DTYPE_DEFAULTS, DeviceDefaults, Tolerance

__all__ = ["DeviceSetup", "profile", "planned_reference", "PROFILES_PATH", "KEEP_FLOAT32"]

PROFILES_PATH = Path(__file__).resolve().parents[1] / "data" / "device-tolerances.toml"
# The Ascend settings parity makes so that float32 stays float32 (unless set otherwise before the run).
KEEP_FLOAT32: Mapping[str, object] = {
    "precision_mode": "must_keep_origin_dtype",
    "matmul_allow_hf32": False,
    "conv_allow_hf32": False,
}
_UNKNOWN = "unknown"


@dataclass(frozen=True)
class DeviceSetup:
    """What a check ran on: the device asked for, the PyTorch reference's device (and why, where it
    is not that device), and MindSpore's float32 precision settings as read after parity set them."""

    device: str  # CPU, GPU or Ascend
    torch_device: str  # "cpu", "cuda:0", "npu:0"
    torch_note: str = ""  # why the reference is not on ``device`` ("torch_npu not installed")
    torch_name: Optional[str] = None  # the reference device's name, where PyTorch tells it
    precision: Tuple[Tuple[str, object], ...] = ()  # MindSpore's settings, in KEEP_FLOAT32's order
    precision_by: str = ""  # "parity", "set before the run", or "unread: <why>"
    torch_precision: Tuple[Tuple[str, object], ...] = ()  # the reference's TF32/HF32 flags

    @property
    def reference(self) -> str:
        """``PyTorch reference on npu:0`` or ``PyTorch reference on CPU: torch_npu not installed``."""
        where = "CPU" if self.torch_device == "cpu" else self.torch_device
        return f"PyTorch reference on {where}" + (f": {self.torch_note}" if self.torch_note else "")

    @property
    def precision_text(self) -> str:
        """MindSpore's float32 settings and who made them, or why they are unknown."""
        if self.precision_by.startswith("unread"):
            return f"MindSpore precision settings {self.precision_by}"
        if not self.precision:
            return ""
        shown = ", ".join(f"{k}={v}" for k, v in self.precision)
        return f"MindSpore {shown} ({'kept by parity' if self.precision_by == 'parity' else self.precision_by})"

    @property
    def line(self) -> str:
        """The message's ``Device:`` line."""
        return "; ".join(p for p in (self.device, self.precision_text, self.reference) if p)

    def float32_computes_in(self) -> Optional[str]:
        """The narrower type float32 matmul/conv may compute in on MindSpore's side; ``None`` where
        float32 is kept, ``"unknown"`` where the settings could not be read."""
        if self.device != "Ascend":
            return None
        settings = dict(self.precision)
        mode = settings.get("precision_mode")
        if self.precision_by.startswith("unread") or mode in (None, ""):
            return _UNKNOWN
        narrower: str = _profiles()["Ascend"]["precision_mode"].get(mode, _UNKNOWN)
        if narrower != "float32":
            return narrower
        if any(settings.get(flag) is True for flag in ("matmul_allow_hf32", "conv_allow_hf32")):
            return "hf32"
        if any(settings.get(flag) is None for flag in ("matmul_allow_hf32", "conv_allow_hf32")):
            return _UNKNOWN
        return None

    def as_record(self) -> Dict[str, object]:
        """The check record's ``device_setup``."""
        return {
            "device": self.device,
            "torch_device": self.torch_device,
            "torch_name": self.torch_name,
            "reference": self.reference,
            "precision": dict(self.precision) or None,
            "precision_by": self.precision_by or None,
            "torch_precision": dict(self.torch_precision) or None,
            "float32_computes_in": self.float32_computes_in(),
        }


@lru_cache(maxsize=1)
def _profiles() -> Dict[str, Dict[str, Any]]:
    with PROFILES_PATH.open("rb") as file:
        data: Dict[str, Dict[str, Any]] = tomllib.load(file)
    return data


def _reduced(label: str, computes_in: str) -> Tuple[Tolerance, str]:
    """float32's tolerance while it is computed in ``computes_in`` (``hf32`` and ``unknown`` are
    named by the data as one of the narrower types)."""
    data = _profiles()
    entry = data["float32_computed_in"][data["Ascend"].get(computes_in, computes_in)]
    return Tolerance(entry["rtol"], entry["atol"]), label


def profile(setup: Optional[DeviceSetup]) -> DeviceDefaults:
    """The dtype defaults for a check that ran on ``setup`` (CPU's when ``None``)."""
    if setup is None or setup.device == "CPU":
        return DeviceDefaults()
    settings = dict(setup.precision)
    computes_in = setup.float32_computes_in()
    if computes_in is None:
        how = f"precision_mode={settings.get('precision_mode')}" if setup.device == "Ascend" else "TF32 off"
        float32 = (DTYPE_DEFAULTS["float32"], f"float32 default ({setup.device}, {how})")
        return DeviceDefaults({"float32": float32})
    if computes_in == _UNKNOWN:
        label = f"{setup.device} float32 (precision settings unknown: {setup.precision_by or 'not read'})"
    else:
        shown = [f"precision_mode={settings.get('precision_mode')}"]
        if computes_in == "hf32":
            shown += [f"{flag}=True" for flag in ("matmul_allow_hf32", "conv_allow_hf32") if settings.get(flag)]
        label = f"{setup.device} float32 ({', '.join(shown)})"
    return DeviceDefaults({"float32": _reduced(label, computes_in)})


def planned_reference(device: str, torch_npu_version: Optional[str]) -> Dict[str, Optional[str]]:
    """Where the PyTorch reference will run, as known without importing a framework (for the run's
    environment record): ``torch_npu_version`` is the installed torch_npu's, or ``None``."""
    if device == "Ascend":
        if torch_npu_version is None:
            return {"device": "cpu", "text": "PyTorch reference on CPU: torch_npu not installed"}
        return {"device": "npu", "text": f"PyTorch reference on npu (torch_npu {torch_npu_version})"}
    if device == "GPU":
        return {"device": "cuda", "text": "PyTorch reference on cuda (a usage error when CUDA is not available)"}
    return {"device": "cpu", "text": "PyTorch reference on CPU"}
