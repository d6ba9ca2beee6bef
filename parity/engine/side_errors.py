"""What a framework raises while one side runs, turned into parity's errors.

A side's forward, backward or training step that raises becomes a :class:`ParityUsageError` naming
the side and what it was doing (the user's net or inputs are the likely culprit), or a
:class:`ParityUnsupported` where MindSpore says a kernel lacks the dtype asked for.
GRAPH mode on a Cell of ``parity.translate``'s PYNATIVE-only Cells never gets here:
:func:`parity.engine.check.refuse_graph_mode` refuses it before anything runs, since MindSpore's
compiler error would read here as a problem of the net's inputs.
"""

from __future__ import annotations

import re
import sys
import traceback

from ..backends import mindspore as msb
from ..errors import ParityUnsupported, ParityUsageError
from ..registry import load as load_registry

__all__ = ["missing_kernel", "run_side", "backward", "side_step", "framework_error"]

_KERNEL_OP = re.compile(
    r"operator\[(\w+)\]|primitive\[(\w+)\]|^\s*(\w+) does not support this kernel data type", re.MULTILINE
)


_KERNEL_DEVICE = re.compile(r"Select (\w+) operator")
# what mindspore.vjp says of an input changed in place (2.10: a slice assignment, an in-place method)
_IN_PLACE = re.compile(r"modify tensor id of input tensor|leaf tensor that requires grad is being used in an inplace")


# "The kernel Embedding unregistered", or "Kernel select failed: Unsupported op [CholeskyGrad] on CPU"
_UNREGISTERED = re.compile(r"The kernel (\w+) unregistered|Unsupported op \[(\w+)\] on \w+")


def _unregistered(exc: BaseException, what: str):
    """A :class:`ParityUnsupported` for a MindSpore kernel that does not exist on this device
    ("The kernel Embedding unregistered": most ``mindspore.mint`` layers on the CPU), naming it and
    the known-mismatch entries measured to raise it; None for any other error."""
    found = _UNREGISTERED.search(str(exc))
    if found is None:
        return None
    kernel = found.group(1) or found.group(2)
    entries = [e.id for e in load_registry() if e.selftest is not None and e.selftest.raises == kernel]
    version = getattr(sys.modules.get("mindspore"), "__version__", "")
    known = (
        f"The known-mismatch registry: {', '.join(entries)} (docs/known-mismatches.md says what to use instead)."
        if entries
        else "The known-mismatch registry has no entry for it yet."
    )
    return ParityUnsupported(
        f"MindSpore {version} has no kernel {kernel} on this device (raised during {what}: "
        f"{found.group(0)}). A layer of the Cell calls it: on the CPU use the classic mindspore.nn "
        f"layer, or check on a device that has the kernel. {known}"
    )


def missing_kernel(label: str, exc: BaseException, what: str):
    """A :class:`ParityUnsupported` for a MindSpore error that says a kernel lacks a half dtype
    ("Select CPU operator[MatMul] fail! Unsupported data type! ... but get input[BFloat16 ...]"),
    or does not exist on this device ("The kernel Embedding unregistered"), naming the operator;
    None for any other error."""
    text = str(exc)
    if label == "MindSpore" and _UNREGISTERED.search(text):
        return _unregistered(exc, what)
    if label != "MindSpore" or not (
        "Unsupported data type" in text
        or "does not support this kernel data type" in text
        or "must be a type of" in text
    ):
        return None
    dtype = "bfloat16" if "BFloat16" in text else "float16" if re.search(r"but (got|get)[^\n]*Float16", text) else None
    found = _KERNEL_OP.search(text)
    if dtype is None or found is None:
        return None
    op = next(g for g in found.groups() if g)
    device = _KERNEL_DEVICE.search(text)
    version = getattr(sys.modules.get("mindspore"), "__version__", "")
    lines = [
        line.strip()
        for line in text.splitlines()
        if line.strip() and not line.strip().startswith(("--", "- C++", "C++ Call Stack"))
    ]
    shown = "\n    ".join(lines[:4])
    where = f" on {device.group(1)}" if device else ""
    return ParityUnsupported(
        f"MindSpore {version} has no {dtype} kernel for {op}{where} (raised during {what}):\n    {shown}\n"
        f"Check this pair in float32 (or float16) here, or where MindSpore has {dtype} kernels; "
        "docs/known-mismatches.md lists the layers measured to lack them."
    )


def framework_error(label: str, exc: BaseException, what: str) -> ParityUsageError:
    """What ``label``'s framework raised during ``what``, as a usage error quoting it."""
    lines = traceback.format_exception_only(type(exc), exc)
    text = "".join(lines).strip().splitlines()
    shown = "\n    ".join(text[:12] + (["..."] if len(text) > 12 else []))
    if label == "MindSpore" and _IN_PLACE.search(str(exc)):
        return ParityUsageError(
            f"The {label} side raised during {what}:\n    {shown}\n"
            "Its forward changes an input in place, which mindspore.vjp refuses for the inputs it "
            "differentiates: check the forward with grads=False, or copy the input in construct."
        )
    return ParityUsageError(
        f"The {label} side raised during {what}:\n    {shown}\n"
        "Check that the net accepts these inputs (shapes, dtypes, argument names)."
    )


def run_side(make, label: str):
    """Run a forward pass; framework errors become usage errors (a kernel missing for a dtype:
    :class:`ParityUnsupported`)."""
    try:
        side = make()
        side.values = side.outputs()  # MindSpore may raise here: PYNATIVE runs asynchronously
    except ParityUsageError:
        raise
    except Exception as exc:  # the framework rejected the net or the inputs
        _recover(label)
        raise (
            missing_kernel(label, exc, "the forward pass") or framework_error(label, exc, "the forward pass")
        ) from None
    return side


def backward(side, cotangents, params, label: str):
    """Run a side's backward pass; errors as :func:`run_side`."""
    try:
        return side.backward(cotangents, params)
    except ParityUsageError:
        raise
    except Exception as exc:
        _recover(label)
        raise (
            missing_kernel(label, exc, "the backward pass") or framework_error(label, exc, "the backward pass")
        ) from None


def _recover(label: str) -> None:
    if label == "MindSpore":
        msb.recover()


def side_step(run, label: str, step: int):
    """One side's step; what the framework raises becomes a usage error naming the side and step."""
    try:
        return run()
    except ParityUsageError:
        raise
    except Exception as exc:
        _recover(label.partition(" ")[0])
        what = f"training step {step + 1}"
        raise (missing_kernel(label.partition(" ")[0], exc, what) or framework_error(label, exc, what)) from None
