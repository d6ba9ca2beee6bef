"""The device branches of both sides, behind small probes a test can replace.

``--parity-device`` picks, for the PyTorch reference:

- CPU: ``cpu``.
- GPU: ``cuda:N`` (the current CUDA device); where ``torch.cuda.is_available()`` is False the check
  stops with a usage error rather than move the reference elsewhere: a GPU runner whose torch sees
  no GPU has the wrong torch build or a hidden device, which a nightly run must not paper over.
- Ascend: ``npu:N`` when ``torch_npu`` is installed (imported here, lazily), else ``cpu``: torch_npu
  is an add-on often absent from MindSpore's Ascend images, and a CPU reference in float32 is a
  sound one. The choice is stated in the message, the check record and the run's fingerprint.

Both sides keep float32 by default: the reference's TF32 (cuda) or HF32 (npu) flags are turned
off; on MindSpore's side ``mindspore.device_context.ascend.op_precision`` gets
``precision_mode("must_keep_origin_dtype")``, ``matmul_allow_hf32(False)`` and
``conv_allow_hf32(False)``, and on a GPU ``mindspore.device_context.gpu.op_precision`` gets
``matmul_allow_tf32(False)`` and ``conv_allow_tf32(False)``. MindSpore refuses to set an Ascend
setting twice: one set before the run to another value stays, and is read back and reported (the
float32 tolerance profile then follows it, see :mod:`parity.judge.devices`).

The frameworks are imported inside the functions, and only for the device asked for. The probes
(:func:`_import_torch_npu`, :func:`_ascend_precision_api`, :func:`_gpu_precision_api`,
:func:`_placement`) are what tests/test_devices.py replaces to run every branch on a CPU.
"""

from __future__ import annotations

import importlib
from typing import Optional, Tuple

from ..errors import ParityUsageError
from ..judge.devices import KEEP_FLOAT32, DeviceSetup

__all__ = ["setup", "torch_reference", "torch_placement"]


def _import_torch_npu():
    """``torch_npu``, or ``None`` where it is not installed. Installed but failing to import (CANN
    libraries missing, a torch version it was not built for) is a usage error that says so."""
    try:
        return importlib.import_module("torch_npu")
    except ModuleNotFoundError as exc:
        if exc.name != "torch_npu":  # torch_npu is there, something it needs is not
            raise ParityUsageError(
                f"--parity-device=Ascend: torch_npu is installed but cannot be imported: {exc}"
            ) from None
        return None
    except Exception as exc:  # torch_npu raises ImportError, OSError or RuntimeError when its runtime is missing
        raise ParityUsageError(
            f"--parity-device=Ascend: torch_npu is installed but cannot be imported: {type(exc).__name__}: {exc}"
        ) from None


def _placement(label: str) -> str:
    """The device string tensors are moved to for the reference device ``label`` (the same, except
    under the tests' fake device, where it is ``cpu``)."""
    return label


def _device_name(get_name, index: int) -> Optional[str]:
    try:
        return str(get_name(index))
    except Exception:  # a name is a nicety: no device query may stop a check
        return None


def torch_reference(device: str) -> Tuple[str, str, Optional[str], Tuple[Tuple[str, object], ...]]:
    """The reference's device label (``cpu``, ``cuda:0``, ``npu:0``), the note on why it is not
    ``device``, the device's name, and the precision flags set for it."""
    if device == "CPU":
        return "cpu", "", None, ()
    import torch

    if device == "GPU":
        if not torch.cuda.is_available():
            raise ParityUsageError(
                f"--parity-device=GPU: torch.cuda.is_available() is False (torch {torch.__version__}), so the "
                "PyTorch reference cannot run on the GPU. Install a CUDA build of torch, check "
                "CUDA_VISIBLE_DEVICES, or run with --parity-device=CPU."
            )
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        index = torch.cuda.current_device()
        flags = (("cuda.matmul.allow_tf32", False), ("cudnn.allow_tf32", False))
        return f"cuda:{index}", "", _device_name(torch.cuda.get_device_name, index), flags
    torch_npu = _import_torch_npu()
    if torch_npu is None:
        return "cpu", "torch_npu not installed", None, ()
    npu = torch_npu.npu
    if not npu.is_available():
        raise ParityUsageError(
            "--parity-device=Ascend: torch_npu is installed but torch_npu.npu.is_available() is "
            "False: PyTorch sees no NPU. Check ASCEND_RT_VISIBLE_DEVICES and the driver, or "
            "uninstall torch_npu to run the reference on the CPU."
        )
    npu.matmul.allow_hf32 = False
    npu.conv.allow_hf32 = False
    index = npu.current_device()
    flags = (("npu.matmul.allow_hf32", False), ("npu.conv.allow_hf32", False))
    return f"npu:{index}", "", _device_name(npu.get_device_name, index), flags


def torch_placement(device: str) -> str:
    """The device string the PyTorch side moves its tensors to for ``--parity-device=device``."""
    return _placement(torch_reference(device)[0])


def _ascend_precision_api():
    from mindspore.device_context.ascend import op_precision

    return op_precision


def _gpu_precision_api():
    from mindspore.device_context.gpu import op_precision

    return op_precision


def _flag(value) -> Optional[bool]:
    """MindSpore's ``"1"``/``"0"`` (or a bool) as a bool; ``None`` when it says nothing."""
    if isinstance(value, bool):
        return value
    return {"1": True, "0": False}.get(str(value))


def _read_ascend(api) -> Tuple[Tuple[str, object], ...]:
    """The Ascend precision settings as MindSpore holds them (its configuration singleton is the
    only reader MindSpore has: the public functions only set)."""
    conf = api.AscendOpPrecisionConf.get_instance()
    return (
        ("precision_mode", conf.precision_mode() or None),
        ("matmul_allow_hf32", _flag(conf.matmul_allow_hf32())),
        ("conv_allow_hf32", _flag(conf.conv_allow_hf32())),
    )


def ascend_precision() -> Tuple[Tuple[Tuple[str, object], ...], str]:
    """Keep float32 on MindSpore's Ascend side where nothing else was set; the settings read back,
    and ``"parity"``, ``"set before the run"`` or ``"unread: <why>"``."""
    try:
        api = _ascend_precision_api()
    except ImportError as exc:
        return (), f"unread: mindspore.device_context.ascend.op_precision cannot be imported ({exc})"
    for name, value in KEEP_FLOAT32.items():
        try:
            getattr(api, name)(value)
        except RuntimeError:  # "can not be set repeatedly": set to another value before the run
            pass
        except Exception as exc:  # a MindSpore build without Ascend's configuration object
            return (), f"unread: {name} could not be set ({type(exc).__name__}: {exc})"
    try:
        read = _read_ascend(api)
    except Exception as exc:  # no reader in this MindSpore build, or it moved
        return (), f"unread: {type(exc).__name__}: {exc}"
    kept = all(dict(read).get(k) == v for k, v in KEEP_FLOAT32.items())
    return read, "parity" if kept else "set before the run"


def gpu_precision() -> Tuple[Tuple[Tuple[str, object], ...], str]:
    """Switch TF32 off for MindSpore's float32 matmul and conv on a GPU (set only: MindSpore has no
    reader for these, and lets them be set again)."""
    try:
        api = _gpu_precision_api()
        api.matmul_allow_tf32(False)
        api.conv_allow_tf32(False)
    except Exception as exc:  # a MindSpore build without GPU support has no configuration to set
        return (), f"unread: TF32 could not be switched off ({type(exc).__name__}: {exc})"
    return (("matmul_allow_tf32", False), ("conv_allow_tf32", False)), "parity"


def setup(device: str) -> DeviceSetup:
    """Set both sides up for ``device`` (after MindSpore's ``device_target`` is set, before any
    kernel runs) and say what was found."""
    label, note, name, torch_flags = torch_reference(device)
    precision, by = ascend_precision() if device == "Ascend" else gpu_precision() if device == "GPU" else ((), "")
    return DeviceSetup(
        device=device,
        torch_device=label,
        torch_note=note,
        torch_name=name,
        precision=precision,
        precision_by=by,
        torch_precision=torch_flags,
    )
