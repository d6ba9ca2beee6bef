"""The environment record (``parity.nightly.environment``): what it says of the host and where the
PyTorch reference runs, read without importing a framework."""

import subprocess
import sys

import pytest

from parity.nightly.records import fingerprint


def test_the_fingerprint_imports_no_framework():
    code = (
        "import sys, pathlib; from parity.nightly.records import fingerprint; "
        "fingerprint(root=pathlib.Path('.'), device='CPU', seed=None, mode=None); "
        "print(sorted(n for n in ('mindspore', 'torch') if n in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_ascend_and_nvidia_versions_are_read_from_their_files(tmp_path, monkeypatch):
    """No Ascend or NVIDIA host here: the readers meet files laid out as those installs write them."""
    from parity.nightly import environment

    toolkit = tmp_path / "ascend-toolkit" / "latest"
    toolkit.mkdir(parents=True)
    toolkit.joinpath("version.cfg").write_text("# version: 1.0\nruntime_running_version=[8.0.0.1:8.0.0]\n")
    (tmp_path / "driver").mkdir()
    tmp_path.joinpath("driver", "version.info").write_text("Version=24.1.rc2\nascendhal_version=7.35.23\n")
    monkeypatch.setattr(environment, "_ASCEND", tmp_path)
    found = environment.accelerator("Ascend")
    assert (found["cann"], found["ascend_driver"], found["device"]) == ("8.0.0.1", "24.1.rc2", "Ascend")
    toolkit.joinpath("compiler").mkdir()
    toolkit.joinpath("compiler", "version.info").write_text("Version=8.0.0.2\nversion_dir=8.0.0\n")
    assert environment.accelerator("Ascend")["cann"] == "8.0.0.2"

    gpu = tmp_path / "nvidia" / "gpus" / "0000:00:05.0"
    gpu.mkdir(parents=True)
    gpu.joinpath("information").write_text("Model: \t\t NVIDIA H100 80GB HBM3\nIRQ:   \t\t 33\n")
    tmp_path.joinpath("nvidia", "version").write_text(
        "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023\n"
    )
    monkeypatch.setattr(environment, "_NVIDIA", tmp_path / "nvidia")
    found = environment.accelerator("GPU")
    assert (found["device_name"], found["nvidia_driver"]) == ("NVIDIA H100 80GB HBM3", "535.104.05")


@pytest.mark.parametrize(
    "device_name, torch_npu, expected",
    [
        ("Ascend", None, ("cpu", "PyTorch reference on CPU: torch_npu not installed")),
        ("Ascend", "2.5.1", ("npu", "PyTorch reference on npu (torch_npu 2.5.1)")),
        ("CPU", None, ("cpu", "PyTorch reference on CPU")),
    ],
)
def test_the_fingerprint_states_where_the_reference_will_run(tmp_path, monkeypatch, device_name, torch_npu, expected):
    from parity.nightly import environment

    real = environment.versions
    monkeypatch.setattr(environment, "versions", lambda: {**real(), "torch_npu": torch_npu})
    found = fingerprint(root=tmp_path, device=device_name, seed=None, mode=None)["torch_reference"]
    assert (found["device"], found["text"]) == expected
