"""Where a run ran: versions, device and host, read without importing either framework.

Package versions come from installed metadata, the host from ``/proc/cpuinfo``, Ascend's CANN
and driver versions from their install folders and NVIDIA's from ``/proc/driver/nvidia``;
anything absent is ``None``. Standard library only.
"""

from __future__ import annotations

import os
import platform
import re
import subprocess
from importlib import metadata
from pathlib import Path
from typing import Dict, Iterable, List, Optional, TypedDict

__all__ = ["versions", "cpu", "accelerator", "git_state", "CPU_FLAGS"]

# The instruction-set flags that change which kernels the frameworks pick (x86 and aarch64 names).
CPU_FLAGS = (
    "sse4_2",
    "avx",
    "avx2",
    "fma",
    "f16c",
    "avx512f",
    "avx512bw",
    "avx512vl",
    "avx512_vnni",
    "avx512_bf16",
    "avx512_fp16",
    "amx_tile",
    "amx_bf16",
    "amx_int8",
    "asimd",
    "asimdhp",
    "asimddp",
    "fphp",
    "sve",
    "sve2",
    "bf16",
    "i8mm",
)

_DISTRIBUTIONS = {
    "mindspore": ("mindspore", "mindspore-ascend", "mindspore-gpu", "mindspore-cpu"),
    "torch": ("torch",),
    "torch_npu": ("torch-npu", "torch_npu"),
    "numpy": ("numpy",),
    "pytest": ("pytest",),
    "parity": ("pytest-parity",),
}
_ASCEND = Path(os.environ.get("ASCEND_HOME_PATH", "/usr/local/Ascend"))
_NVIDIA = Path("/proc/driver/nvidia")
# The toolkit's own version files (``Version=8.0.0.1``) first, then its install record
# (``runtime_running_version=[8.0.0.1:8.0.0]``).
_CANN_FILES = (
    "ascend-toolkit/latest/compiler/version.info",
    "ascend-toolkit/latest/runtime/version.info",
    "latest/compiler/version.info",
    "ascend-toolkit/latest/version.cfg",
    "latest/version.cfg",
)


def _version(names: Iterable[str]) -> Optional[str]:
    for name in names:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return None


def versions() -> Dict[str, Optional[str]]:
    """Python and the installed packages that decide the numbers, ``None`` where not installed."""
    found = {key: _version(names) for key, names in _DISTRIBUTIONS.items()}
    if found["parity"] is None:  # run from a source tree that was never installed
        from .. import __version__

        found["parity"] = __version__
    return {"python": platform.python_version(), **found}


def _cpuinfo() -> Dict[str, str]:
    """The first processor's fields of /proc/cpuinfo (empty where there is none)."""
    try:
        text = Path("/proc/cpuinfo").read_text(errors="replace")
    except OSError:
        return {}
    fields: Dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() not in fields:
            fields[key.strip()] = value.strip()
    return fields


class Cpu(TypedDict):
    """What :func:`cpu` tells of the host's processor."""

    model: Optional[str]
    arch: str
    cores: Optional[int]
    flags: List[str]


def cpu() -> Cpu:
    """The host CPU: model, architecture, cores, and which of :data:`CPU_FLAGS` it has."""
    info = _cpuinfo()
    model = info.get("model name") or info.get("Hardware") or platform.processor() or None
    if model is None and "CPU implementer" in info:  # aarch64 names no model, only its ids
        model = f"implementer {info['CPU implementer']} part {info.get('CPU part', '?')}"
    present = set((info.get("flags") or info.get("Features") or "").split())
    return {
        "model": model,
        "arch": platform.machine(),
        "cores": os.cpu_count(),
        "flags": [flag for flag in CPU_FLAGS if flag in present],
    }


def _key_value(path: Path, keys: Iterable[str]) -> Optional[str]:
    """The value of the first of ``keys`` in a ``key=value`` (or ``key: value``) file."""
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return None
    for line in lines:
        for sep in ("=", ":"):
            key, found, value = line.partition(sep)
            if found and key.strip().lower() in keys and value.strip():
                return value.strip()
    return None


def _cann_version() -> Optional[str]:
    for relative in _CANN_FILES:
        value = _key_value(_ASCEND / relative, ("version", "runtime_running_version", "toolkit_installed_version"))
        if value is not None:
            return value.strip("[]").split(":")[0]
    return None


def _first_version(text: Optional[str]) -> Optional[str]:
    found = re.search(r"\d+\.\d+(?:\.\d+)*", text or "")
    return found.group(0) if found else None


def _gpu_names() -> List[str]:
    names: List[str] = []
    for info in sorted((_NVIDIA / "gpus").glob("*/information")):
        name = _key_value(info, ("model",))
        if name:
            names.append(name)
    return names


def accelerator(device: str) -> Dict[str, Optional[str]]:
    """The device a run asked for, its name where it can be read without a framework, and the
    CANN and driver versions where installed."""
    nvidia = _key_value(_NVIDIA / "version", ("nvrm version",))
    gpus = _gpu_names()
    names = {"CPU": cpu()["model"], "GPU": gpus[0] if gpus else None, "Ascend": None}
    return {
        "device": device,
        "device_name": names.get(device),
        "cann": _cann_version(),
        "ascend_driver": _key_value(_ASCEND / "driver" / "version.info", ("version",)),
        "nvidia_driver": _first_version(nvidia),
    }


def _git(root: Path, *args: str) -> Optional[str]:
    try:
        done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def git_state(root: Path) -> Dict[str, object]:
    """The commit checked out at ``root`` and whether tracked files differ from it (``None`` outside git)."""
    commit = _git(root, "rev-parse", "HEAD")
    if commit is None:
        return {"commit": None, "dirty": None}
    changes = _git(root, "status", "--porcelain", "--untracked-files=no")
    return {"commit": commit, "dirty": None if changes is None else bool(changes)}
