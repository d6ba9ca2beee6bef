"""The facts ``parity doctor`` reports, each gathered on its own so that one that fails says why
and the others still show. Nothing here changes the environment: a framework is imported to ask it
about devices, never configured."""

from __future__ import annotations

import importlib
import importlib.util
import os
import platform
import shutil
import sys
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from packaging.specifiers import SpecifierSet

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python < 3.11 only
    import tomli as tomllib
from packaging.version import InvalidVersion, Version

__all__ = [
    "SUPPORTED",
    "TESTED",
    "DEVICES",
    "Fact",
    "Framework",
    "Facts",
    "gather",
    "frameworks",
    "devices",
    "missing_on_cpu",
    "browsers",
]

# The `frameworks` extra's ranges (pyproject.toml; tests/tools/test_doctor.py keeps the two equal).
SUPPORTED = {"mindspore": ">=2.7,<2.11", "torch": ">=2.0,<3"}
# What the version matrix (tox.ini) and `make` run: every MindSpore release of the range, PyTorch 2.13.0.
TESTED = "MindSpore 2.7.2, 2.8.0, 2.9.0 and 2.10.0, each with PyTorch 2.13.0"
DEVICES = ("CPU", "GPU", "Ascend")
_NAMES = {"mindspore": "MindSpore", "torch": "PyTorch"}
_EXTRA = 'pip install "pytest-parity[frameworks]"'


@dataclass(frozen=True)
class Fact:
    """One line of the report: ``ok`` or not, what was found, and what to do where it is not ok."""

    ok: bool
    text: str
    fix: str = ""


@dataclass(frozen=True)
class Framework:
    name: str  # the distribution: mindspore, torch
    version: Optional[str]

    @property
    def label(self) -> str:
        return _NAMES[self.name]

    @property
    def supported(self) -> bool:
        return self.version is not None and _within(self.version, SpecifierSet(SUPPORTED[self.name]))


@dataclass
class Facts:
    python: str
    parity: str
    frameworks: List[Framework]
    versions: List[Fact]
    devices: Dict[str, List[Fact]]
    registry: List[Fact]
    missing_on_cpu: List[Tuple[str, List[str]]]  # (which dtypes, the MindSpore APIs)
    browsers: List[Fact]
    optional: List[Fact] = field(default_factory=list)

    @property
    def can_check(self) -> bool:
        """Whether checks can run here: both frameworks, a supported pair, a numpy MindSpore works
        with, and the registry's data."""
        return all(f.ok for f in self.versions + self.registry)


def _version(distribution: str) -> Optional[str]:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


def _within(version: str, spec: SpecifierSet) -> bool:
    try:
        return spec.contains(Version(version).base_version, prereleases=True)
    except InvalidVersion:
        return False


def frameworks() -> List[Framework]:
    """The installed MindSpore and PyTorch, read from their metadata (neither is imported)."""
    return [Framework(name, _version(name)) for name in ("mindspore", "torch")]


def version_facts(found: List[Framework], numpy_version: Optional[str]) -> List[Fact]:
    """Each framework against the supported range, numpy against what MindSpore needs, and the pair."""
    facts = []
    for framework in found:
        wanted = SUPPORTED[framework.name]
        if framework.version is None:
            facts.append(Fact(False, f"{framework.label} is not installed (parity supports {wanted})", _EXTRA))
        elif not framework.supported:
            facts.append(
                Fact(
                    False,
                    f"{framework.label} {framework.version} is outside the supported range {wanted}",
                    f'pip install "{framework.name}{wanted}"',
                )
            )
        else:
            facts.append(Fact(True, f"{framework.label} {framework.version} (supported: {wanted})"))
    mindspore = found[0]
    if mindspore.version is not None and numpy_version is not None:
        if _within(numpy_version, SpecifierSet("<2")):
            facts.append(Fact(True, f"numpy {numpy_version} (MindSpore needs numpy < 2)"))
        else:
            facts.append(
                Fact(
                    False,
                    f"numpy {numpy_version}: MindSpore {mindspore.version} is built against numpy 1.x "
                    "(with numpy 2 its first Tensor operation raises SystemError)",
                    'pip install "numpy<2"',
                )
            )
    if all(f.supported for f in found):
        pair = " with ".join(f"{f.label} {f.version}" for f in found)
        facts.append(Fact(True, f"a supported pair: {pair} (tested: {TESTED})"))
    return facts


def _mindspore_devices() -> Dict[str, Tuple[bool, str]]:
    os.environ.setdefault("GLOG_v", "3")  # MindSpore logs a warning for each backend it cannot load
    try:
        from mindspore import hal
    except Exception as exc:  # a broken install raises anything: say what, and go on
        return {d: (False, f"MindSpore cannot be imported: {type(exc).__name__}: {exc}") for d in DEVICES}
    found = {}
    for device in DEVICES:
        try:
            available = bool(hal.is_available(device))
        except Exception as exc:
            found[device] = (False, f"MindSpore could not say: {type(exc).__name__}: {exc}")
            continue
        found[device] = (available, "runs here" if available else "not in this MindSpore build")
    return found


def _torch_devices() -> Dict[str, Tuple[bool, str]]:
    try:
        import torch
    except Exception as exc:
        return {d: (False, f"PyTorch cannot be imported: {type(exc).__name__}: {exc}") for d in DEVICES}
    if torch.cuda.is_available():
        gpu = (True, f"PyTorch reference on cuda:{torch.cuda.current_device()}")
    elif torch.version.cuda is None:
        gpu = (False, f"a CPU build of PyTorch ({torch.__version__})")
    else:
        gpu = (False, f"PyTorch {torch.__version__} (CUDA {torch.version.cuda}) sees no GPU")
    if importlib.util.find_spec("torch_npu") is not None:
        npu = (True, "PyTorch reference on the NPU (torch_npu installed)")
    else:
        npu = (True, "PyTorch reference on the CPU (torch_npu not installed)")
    return {"CPU": (True, "PyTorch reference on cpu"), "GPU": gpu, "Ascend": npu}


def _hardware(device: str) -> bool:
    """Whether this host has the device's driver (an NVIDIA GPU, an Ascend toolkit)."""
    if device == "GPU":
        return any(Path("/proc/driver/nvidia/gpus").glob("*"))
    if device == "Ascend":
        return Path(os.environ.get("ASCEND_HOME_PATH", "/usr/local/Ascend")).is_dir()
    return True


def devices(found: List[Framework]) -> Dict[str, List[Fact]]:
    """For each ``--parity-device``: whether MindSpore runs there and where the PyTorch reference runs."""
    installed = {f.name for f in found if f.version is not None}
    ms = (
        _mindspore_devices()
        if "mindspore" in installed
        else {d: (False, "MindSpore is not installed") for d in DEVICES}
    )
    pt = _torch_devices() if "torch" in installed else {d: (False, "PyTorch is not installed") for d in DEVICES}
    result: Dict[str, List[Fact]] = {}
    for device in DEVICES:
        fix = ""
        if not ms[device][0] and "mindspore" in installed and _hardware(device):
            fix = f"this host has {device} drivers: install MindSpore's {device} build (mindspore.cn/install)"
        if device == "GPU" and ms[device][0] and not pt[device][0]:
            fix = "install a CUDA build of torch for a GPU reference (pytorch.org/get-started)"
        ok = ms[device][0] and pt[device][0]
        result[device] = [Fact(ok, f"MindSpore: {ms[device][1]}; {pt[device][1]}", fix)]
    return result


def _short(api: str) -> str:
    return api[len("mindspore.") :] if api.startswith("mindspore.") else api


def missing_on_cpu(mindspore_version: Optional[str], torch_version: Optional[str]) -> List[Tuple[str, List[str]]]:
    """What the registry says MindSpore cannot run on the CPU (``unsupported`` entries for the CPU
    and not for every device), for the installed versions where known: grouped by the dtypes the
    entry is limited to."""
    from ...registry.store import load

    groups: Dict[str, List[str]] = {}
    for entry in load():
        if entry.kind != "unsupported" or "CPU" not in entry.devices or set(entry.devices) == set(DEVICES):
            continue
        if not entry.applies(mindspore_version, torch_version, device="CPU"):
            continue
        key = " and ".join(entry.dtypes) + " only" if entry.dtypes else "every dtype"
        name = _short(entry.mindspore)
        if name not in groups.setdefault(key, []):
            groups[key].append(name)
    return sorted(groups.items(), key=lambda item: (item[0] != "every dtype", item[0]))


def registry_facts() -> List[Fact]:
    """The package's data files: the registry and the device tolerance profiles, loaded."""
    from ...judge import devices as judge_devices
    from ...registry.loader import DATA_DIR
    from ...registry.schema import RegistryError
    from ...registry.store import load

    try:
        registry = load()
        profiles = tomllib.loads(judge_devices.PROFILES_PATH.read_text(encoding="utf-8"))
    except (RegistryError, OSError, tomllib.TOMLDecodeError) as exc:
        return [Fact(False, f"the package's data cannot be read: {exc}", "pip install --force-reinstall pytest-parity")]
    return [
        Fact(
            True,
            f"{len(registry)} known mismatches and {len(registry.available)} availability records from "
            f"{len(registry.files)} files in {DATA_DIR}; device tolerance profiles of {len(profiles)} tables "
            f"({judge_devices.PROFILES_PATH.name})",
        )
    ]


_BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "firefox")


def _playwright_chromium() -> Optional[Path]:
    """playwright's own downloaded Chromium, where its browsers folder holds one."""
    folder = os.environ.get("PLAYWRIGHT_BROWSERS_PATH")
    root = Path(folder) if folder and folder != "0" else Path.home() / ".cache" / "ms-playwright"
    found = sorted(root.glob("chromium*"))
    return found[-1] if found else None


def browsers() -> List[Fact]:
    """A browser to open ``parity report --html``'s page in, and one that loads it headless for the
    page's tests (playwright, with its own Chromium or the system's)."""
    found = [f"{name} ({path})" for name in _BROWSERS if (path := shutil.which(name))]
    if os.environ.get("PARITY_CHROMIUM"):
        found.insert(0, f"PARITY_CHROMIUM ({os.environ['PARITY_CHROMIUM']})")
    own = _playwright_chromium()
    if own is not None:
        found.append(f"playwright's Chromium ({own})")
    facts = []
    if found:
        facts.append(Fact(True, "a browser for the report page: " + ", ".join(found)))
    else:
        facts.append(
            Fact(
                False,
                "no browser found on PATH (the page opens in any browser; none is needed to write it)",
                "apt-get install chromium, or python -m playwright install chromium",
            )
        )
    if importlib.util.find_spec("playwright") is None:
        facts.append(
            Fact(
                False,
                "playwright is not installed: the report page's browser tests skip",
                'pip install "pytest-parity[test]"',
            )
        )
    else:
        facts.append(Fact(True, f"playwright {_version('playwright')}: the report page's browser tests can run"))
    return facts


def optional() -> List[Fact]:
    hypothesis = _version("hypothesis")
    if hypothesis is None:
        return [
            Fact(
                False,
                "hypothesis is not installed: parity.strategies (property-based pairs) needs it",
                'pip install "pytest-parity[hypothesis]"',
            )
        ]
    return [Fact(True, f"hypothesis {hypothesis}: parity.strategies can generate pairs")]


def gather(parity: str) -> Facts:
    """Every fact, for the report of ``parity`` (this package's version)."""
    found = frameworks()
    ms_version, torch_version = (f.version for f in found)
    return Facts(
        python=f"{platform.python_version()} ({platform.system()} {platform.machine()})",
        parity=parity,
        frameworks=found,
        versions=version_facts(found, _version("numpy")),
        devices=devices(found),
        registry=registry_facts(),
        missing_on_cpu=missing_on_cpu(ms_version, torch_version),
        browsers=browsers(),
        optional=optional(),
    )
