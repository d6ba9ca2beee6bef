"""``parity doctor`` on the installed frameworks, as a user runs it (a process of its own): the
versions it names are the installed ones, the CPU runs both sides, and what it says of the GPU is
what torch and MindSpore say. Without the frameworks: tests/tools/test_doctor.py."""

from __future__ import annotations

import os
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import mindspore
import torch

import parity
from parity.registry.store import load

SOURCE = str(Path(parity.__file__).resolve().parents[1])  # this parity, wherever the test runs from


def test_doctor_reports_this_environment_and_exits_0_where_checks_can_run(tmp_path):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [SOURCE, os.environ.get("PYTHONPATH")])))
    done = subprocess.run(
        [sys.executable, "-m", "parity.cli", "doctor"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env=env,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    ms, pt = metadata.version("mindspore"), metadata.version("torch")
    assert f"  ok  MindSpore {ms} (supported: >=2.7,<2.11)" in lines
    assert f"  ok  PyTorch {pt} (supported: >=2.0,<3)" in lines
    assert any(line.startswith(f"  ok  a supported pair: MindSpore {ms} with PyTorch {pt}") for line in lines)
    assert "  ok  CPU    MindSpore: runs here; PyTorch reference on cpu" in lines
    gpu = next(line for line in lines if line[6:].startswith("GPU "))
    both = torch.cuda.is_available() and mindspore.hal.is_available("GPU")
    assert gpu.startswith("  ok  " if both else "  --  "), gpu
    if torch.version.cuda is None:
        assert f"a CPU build of PyTorch ({torch.__version__})" in gpu
    assert f"  ok  {len(load())} known mismatches and " in done.stdout
    assert done.stdout.endswith("parity doctor: checks can run here\n")
    assert "Traceback" not in done.stderr
