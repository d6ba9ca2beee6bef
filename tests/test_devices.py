"""--parity-device's branches, run on the CPU through a fake device backend.

No accelerator was available where these tests were written, so every device branch runs here
behind fakes that stand where the hardware would:

- ``torch_npu``: a module put in ``sys.modules`` whose NPU is "available" and whose tensors stay on
  the CPU (parity's one placement probe, ``_placement``, sends ``npu:0`` to ``cpu``); or a
  ``None`` entry there, which makes ``import torch_npu`` fail as when it is not installed;
- CUDA: ``torch.cuda.is_available``/``current_device``/``get_device_name`` replaced;
- MindSpore: ``mindspore.set_device`` and ``get_context("device_target")`` record the target
  instead of starting a runtime; MindSpore's own ``device_context.{ascend,gpu}.op_precision``
  functions run as they are, over a configuration object that stands for the C++ one a CPU build
  lacks (so the "can not be set repeatedly" rule is MindSpore's, not the fake's).

What the fakes cannot show: that a tensor reaches an NPU or a GPU, that MindSpore's kernels honour
the precision mode, and the size of the numeric differences on either device.
"""

from __future__ import annotations

import importlib
import inspect
import re
import sys
import types

import mindspore
import pytest
import torch
from mindspore import nn as msnn

import parity
from parity.backends import device
from parity.engine.check import run_check
from parity.engine.diagnosis import messages as report
from parity.engine.settings import Settings
from parity.errors import ParityMismatch, ParityUsageError
from parity.judge import devices
from parity.judge.tolerance import DTYPE_DEFAULTS, Tolerance, ToleranceSpec, resolve
from parity.nightly.records import check_record

try:
    import tomllib
except ImportError:  # Python < 3.11
    import tomli as tomllib

ASCEND_PRECISION = importlib.import_module("mindspore.device_context.ascend.op_precision")
GPU_PRECISION = importlib.import_module("mindspore.device_context.gpu.op_precision")


# -- the fake device backend ----------------------------------------------------------------------


class _AscendConf:
    """Stands for MindSpore's C++ ``AscendOpPrecisionConf`` (Ascend builds only): values as strings,
    "configured" once set, as the Python functions in op_precision expect of it."""

    def __init__(self):
        self.values = {"precision_mode": "", "matmul_allow_hf32": "", "conv_allow_hf32": ""}

    def get_instance(self):
        return self

    def __getattr__(self, name):
        values = self.__dict__["values"]
        for key in values:
            if name == key:
                return lambda: values[key]
            if name == f"is_{key}_configured":
                return lambda: values[key] != ""
            if name == f"set_{key}":
                return lambda value: values.__setitem__(key, value)
        raise AttributeError(name)


class _GpuConf:
    """Stands for MindSpore's C++ ``GPUOpPrecisionConf``: records what was set."""

    def __init__(self):
        self.values = {}

    def get_instance(self):
        return self

    def matmul_allow_tf32(self, value):
        self.values["matmul_allow_tf32"] = value

    def conv_allow_tf32(self, value):
        self.values["conv_allow_tf32"] = value


def _fake_torch_npu(*, available=True):
    npu = types.SimpleNamespace(
        is_available=lambda: available,
        current_device=lambda: 0,
        get_device_name=lambda i: "Ascend910B (fake)",
        matmul=types.SimpleNamespace(allow_hf32=True),
        conv=types.SimpleNamespace(allow_hf32=True),
    )
    module = types.ModuleType("torch_npu")
    module.npu = npu
    return module


class FakeDevices:
    """The fixture's handle: set up a device branch, then look at what parity set."""

    def __init__(self, monkeypatch):
        self.mp = monkeypatch
        self.undo = []
        self.target = mindspore.get_context("device_target")
        self.ascend = _AscendConf()
        self.gpu = _GpuConf()
        real_get_context = mindspore.get_context
        monkeypatch.setattr(mindspore, "set_device", self._set_device)
        monkeypatch.setattr(
            mindspore, "get_context", lambda key: self.target if key == "device_target" else real_get_context(key)
        )
        monkeypatch.setattr(device, "_placement", lambda label: "cpu")  # the fake NPU/GPU is the CPU
        for module, conf, name in (
            (ASCEND_PRECISION, self.ascend, "AscendOpPrecisionConf"),
            (GPU_PRECISION, self.gpu, "GPUOpPrecisionConf"),
        ):
            monkeypatch.setattr(module, name, conf, raising=False)
            monkeypatch.setattr(module, "_is_supported", lambda: True)
            monkeypatch.setattr(module, "function_status", {k: False for k in module.function_status})
        self.no_torch_npu()

    def _set_device(self, target, device_id=None):
        self.target = target

    def torch_npu(self, *, available=True):
        module = _fake_torch_npu(available=available)
        self.mp.setitem(sys.modules, "torch_npu", module)
        return module

    def no_torch_npu(self):
        self.mp.setitem(sys.modules, "torch_npu", None)  # `import torch_npu` raises ModuleNotFoundError

    def cuda(self, available=True):
        self.mp.setattr(torch.cuda, "is_available", lambda: available)
        self.mp.setattr(torch.cuda, "current_device", lambda: 0)
        self.mp.setattr(torch.cuda, "get_device_name", lambda index=None: "NVIDIA H100 (fake)")
        self.undo.append(_tf32_restorer())
        torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True

    def set_before_the_run(self, **settings):
        """Ascend settings a user made before parity ran (MindSpore then refuses to change them)."""
        for name, value in settings.items():
            getattr(ASCEND_PRECISION, name)(value)


def _tf32_restorer():
    """PyTorch's TF32 flags as they are now, put back when called (monkeypatch cannot: the flags
    are properties of torch.backends' module objects)."""
    matmul, cudnn = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32

    def restore():
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = matmul, cudnn

    return restore


@pytest.fixture
def fake(monkeypatch):
    devices_ = FakeDevices(monkeypatch)
    yield devices_
    for undo in devices_.undo:
        undo()


# -- the PyTorch reference's device ---------------------------------------------------------------


def test_cpu_touches_nothing(fake):
    setup = device.setup("CPU")
    assert (setup.torch_device, setup.torch_note, setup.precision, setup.precision_by) == ("cpu", "", (), "")
    assert report.device_lines(setup) == []
    assert fake.ascend.values["precision_mode"] == "" and fake.gpu.values == {}


def test_ascend_with_torch_npu_runs_the_reference_on_the_npu(fake):
    npu = fake.torch_npu().npu
    setup = device.setup("Ascend")
    assert setup.torch_device == "npu:0" and setup.torch_name == "Ascend910B (fake)"
    assert setup.reference == "PyTorch reference on npu:0"
    assert (npu.matmul.allow_hf32, npu.conv.allow_hf32) == (False, False)  # the reference keeps float32
    assert dict(setup.torch_precision) == {"npu.matmul.allow_hf32": False, "npu.conv.allow_hf32": False}


def test_ascend_without_torch_npu_runs_the_reference_on_the_cpu(fake):
    setup = device.setup("Ascend")
    assert (setup.torch_device, setup.torch_note) == ("cpu", "torch_npu not installed")
    assert setup.reference == "PyTorch reference on CPU: torch_npu not installed"
    assert device.torch_placement("Ascend") == "cpu"


def test_ascend_with_torch_npu_but_no_npu_is_a_usage_error(fake):
    fake.torch_npu(available=False)
    with pytest.raises(ParityUsageError, match=r"torch_npu\.npu\.is_available\(\) is False"):
        device.setup("Ascend")


class _BrokenTorchNpu:
    """A torch_npu that is installed but whose runtime libraries are missing."""

    def find_spec(self, name, path=None, target=None):
        if name == "torch_npu":
            raise ImportError("libascendcl.so: cannot open shared object file")
        return None


def test_a_torch_npu_that_cannot_be_imported_is_a_usage_error_not_a_cpu_reference(fake, monkeypatch):
    monkeypatch.delitem(sys.modules, "torch_npu")
    monkeypatch.setattr(sys, "meta_path", [_BrokenTorchNpu()] + sys.meta_path)
    with pytest.raises(ParityUsageError, match="torch_npu is installed but cannot be imported: .*libascendcl"):
        device.setup("Ascend")


def test_gpu_with_cuda_runs_the_reference_on_cuda_with_tf32_off(fake):
    fake.cuda()
    setup = device.setup("GPU")
    assert (setup.torch_device, setup.torch_name) == ("cuda:0", "NVIDIA H100 (fake)")
    assert (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32) == (False, False)
    assert fake.gpu.values == {"matmul_allow_tf32": False, "conv_allow_tf32": False}
    assert setup.precision_by == "parity"
    assert resolve((devices.profile(setup),), ("output",), "float32") == (
        DTYPE_DEFAULTS["float32"],
        "float32 default (GPU, TF32 off)",
    )


def test_gpu_without_cuda_is_a_usage_error_that_says_what_to_do(fake):
    fake.cuda(available=False)
    with pytest.raises(ParityUsageError) as info:
        device.setup("GPU")
    message = str(info.value)
    assert "torch.cuda.is_available() is False" in message and "--parity-device=CPU" in message


# -- MindSpore's Ascend precision settings --------------------------------------------------------


def test_parity_keeps_float32_on_ascend_where_nothing_was_set(fake):
    setup = device.setup("Ascend")
    assert fake.ascend.values == {
        "precision_mode": "must_keep_origin_dtype",
        "matmul_allow_hf32": "0",
        "conv_allow_hf32": "0",
    }
    assert dict(setup.precision) == {
        "precision_mode": "must_keep_origin_dtype",
        "matmul_allow_hf32": False,
        "conv_allow_hf32": False,
    }
    assert setup.precision_by == "parity" and setup.float32_computes_in() is None
    assert devices.profile(setup).default("float32") == (
        DTYPE_DEFAULTS["float32"],
        "float32 default (Ascend, precision_mode=must_keep_origin_dtype)",
    )
    assert device.setup("Ascend") == setup  # every later check: MindSpore takes the same value again


@pytest.mark.parametrize(
    "mode, computes_in",
    [
        ("allow_fp32_to_fp16", "float16"),
        ("force_fp16", "float16"),
        ("allow_fp32_to_bf16", "bfloat16"),
        ("allow_mix_precision", "bfloat16"),
    ],
)
def test_a_reduced_precision_mode_set_before_the_run_is_read_and_loosens_float32(fake, mode, computes_in):
    fake.set_before_the_run(precision_mode=mode)
    setup = device.setup("Ascend")
    assert dict(setup.precision)["precision_mode"] == mode and setup.precision_by == "set before the run"
    assert setup.float32_computes_in() == computes_in
    defaults = devices.profile(setup)
    assert defaults.default("float32") == (DTYPE_DEFAULTS[computes_in], f"Ascend float32 (precision_mode={mode})")
    assert defaults.default("float16") == (DTYPE_DEFAULTS["float16"], "float16 default")  # only float32 moves


def test_hf32_switched_on_before_the_run_loosens_float32_and_is_named(fake):
    fake.set_before_the_run(conv_allow_hf32=True)
    setup = device.setup("Ascend")
    assert dict(setup.precision) == {
        "precision_mode": "must_keep_origin_dtype",
        "matmul_allow_hf32": False,
        "conv_allow_hf32": True,
    }
    assert devices.profile(setup).default("float32") == (
        DTYPE_DEFAULTS["float16"],
        "Ascend float32 (precision_mode=must_keep_origin_dtype, conv_allow_hf32=True)",
    )


def test_precision_settings_that_cannot_be_read_take_the_loosest_profile_and_say_why(fake, monkeypatch):
    monkeypatch.delattr(ASCEND_PRECISION, "AscendOpPrecisionConf")  # as in a MindSpore build without Ascend
    monkeypatch.setattr(ASCEND_PRECISION, "_is_supported", lambda: False)
    setup = device.setup("Ascend")  # MindSpore's setters return quietly the first time, then fail
    assert setup.precision_by.startswith("unread: AttributeError") and setup.float32_computes_in() == "unknown"
    tol, source = devices.profile(setup).default("float32")
    assert tol == DTYPE_DEFAULTS["bfloat16"] and source.startswith("Ascend float32 (precision settings unknown: ")
    again = device.setup("Ascend")
    assert again.precision_by == (
        "unread: precision_mode could not be set (NameError: name 'AscendOpPrecisionConf' is not defined)"
    )
    assert "MindSpore precision settings unread: precision_mode could not be set" in again.line


def test_a_chain_entry_beats_the_device_profile(fake):
    fake.set_before_the_run(precision_mode="allow_fp32_to_fp16")
    chain = (ToleranceSpec.parse({"fc.*": (1e-6, 1e-6)}), devices.profile(device.setup("Ascend")))
    assert resolve(chain, ("fc.weight",), "float32") == (Tolerance(1e-6, 1e-6), "check(tolerance=...)['fc.*']")
    assert resolve(chain, ("output",), "float32")[1] == "Ascend float32 (precision_mode=allow_fp32_to_fp16)"


# -- the data ---------------------------------------------------------------------------------


def test_every_precision_mode_mindspore_accepts_is_in_the_profile_data():
    source = inspect.getsource(ASCEND_PRECISION.precision_mode)
    accepted = set(re.findall(r'^\s+"(\w+)",$', source.split("supported_modes = [")[1].split("]")[0], re.M))
    assert len(accepted) >= 8
    with devices.PROFILES_PATH.open("rb") as file:
        listed = set(tomllib.load(file)["Ascend"]["precision_mode"])
    assert accepted == listed


# -- the record and the message ---------------------------------------------------------------


class _Scale(msnn.Cell):
    def __init__(self, factor):
        super().__init__()
        self.factor = factor

    def construct(self, x):
        return x * self.factor


class _TorchScale(torch.nn.Module):
    def forward(self, x):
        return x * 2.0


def _check_on(device_name, factor):
    settings = Settings(
        device=device_name,
        case="tests/test_scale.py::test_scale",
        location="tests/test_scale.py:3",
        reproduce="pytest tests/test_scale.py::test_scale --parity",
    )
    return run_check(
        _Scale(factor), _TorchScale(), parity.randn((2, 3)), grads=False, settings=settings, localize=False
    )


def test_a_failing_check_on_fake_ascend_says_where_both_sides_ran(fake):
    fake.torch_npu()
    with pytest.raises(ParityMismatch) as info:
        _check_on("Ascend", 2.01)
    assert fake.target == "Ascend"  # MindSpore was asked for Ascend
    lines = str(info.value).splitlines()
    pair = next(i for i, line in enumerate(lines) if line.startswith("Pair:"))
    assert lines[pair + 1] == (
        "Device:     Ascend; MindSpore precision_mode=must_keep_origin_dtype, "
        "matmul_allow_hf32=False, conv_allow_hf32=False (kept by parity); "
        "PyTorch reference on npu:0"
    )
    assert (
        "Tolerance: float32 default (Ascend, precision_mode=must_keep_origin_dtype) (rtol=1.3e-06, atol=1e-05)" in lines
    )
    record = check_record(
        nodeid="n", case="c", call="check", index=0, device="Ascend", seed=1234, duration=0.0, error=info.value
    )
    assert record["device_setup"]["reference"] == "PyTorch reference on npu:0"
    assert record["device_setup"]["precision"]["precision_mode"] == "must_keep_origin_dtype"
    assert record["tensors"][0]["tolerance_source"] == "float32 default (Ascend, precision_mode=must_keep_origin_dtype)"


def test_a_check_under_a_reduced_mode_is_judged_by_the_looser_profile_and_names_it(fake):
    fake.set_before_the_run(precision_mode="allow_fp32_to_fp16")
    result = _check_on("Ascend", 2.0 * (1 + 2e-4))  # beyond float32's 1.3e-6, within float16's 1e-3
    output = result["output"]
    assert output.passed and output.tolerance == DTYPE_DEFAULTS["float16"]
    assert output.tolerance_source == "Ascend float32 (precision_mode=allow_fp32_to_fp16)"
    assert result.device_setup.reference == "PyTorch reference on CPU: torch_npu not installed"
    with pytest.raises(
        ParityMismatch,
        match=r"(?m)^Device:     Ascend; MindSpore precision_mode=allow_fp32_to_fp16"
        r".*\(set before the run\); PyTorch reference on CPU: torch_npu not",
    ):
        _check_on("Ascend", 2.0 * (1 + 1e-2))  # beyond float16's tolerance too


def test_the_same_check_on_the_cpu_keeps_the_float32_default_and_adds_no_device_line():
    with pytest.raises(ParityMismatch) as info:
        _check_on("CPU", 2.0 * (1 + 2e-4))
    message = str(info.value)
    assert "Device:" not in message and "Tolerance: float32 default (rtol=1.3e-06, atol=1e-05)" in message
    assert info.value.result.device_setup.torch_device == "cpu"


def test_a_check_on_gpu_without_cuda_stops_before_running(fake):
    fake.cuda(available=False)
    with pytest.raises(ParityUsageError, match="--parity-device=GPU"):
        _check_on("GPU", 2.0)


def test_the_real_setters_refuse_a_second_value_which_is_what_parity_relies_on(fake):
    """MindSpore's own rule, run over the stand-in configuration: the reason parity reads back."""
    fake.set_before_the_run(precision_mode="force_fp16")
    with pytest.raises(RuntimeError, match="can not be set repeatedly"):
        ASCEND_PRECISION.precision_mode("must_keep_origin_dtype")


def test_a_training_check_on_fake_ascend_takes_the_profile_and_says_where_both_sides_ran(fake):
    from parity.engine.training.loop import run_training

    fake.torch_npu()
    fake.set_before_the_run(precision_mode="allow_fp32_to_bf16")
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 2)
    batches = [(parity.randn((4, 3)), parity.randn((4, 2)))]
    with pytest.raises(ParityMismatch) as info:  # MindSpore's SGD at lr 0.2, PyTorch's at 0.1
        run_training(
            parity.translate(model),
            model,
            batches,
            loss=torch.nn.MSELoss(),
            steps=2,
            optimizer=(lambda p: mindspore.nn.SGD(p, learning_rate=0.2), lambda p: torch.optim.SGD(p, lr=0.1)),
            settings=Settings(device="Ascend"),
        )
    result, text = info.value.result, str(info.value)
    assert result.device_setup.torch_device == "npu:0"
    assert (
        "Device:     Ascend; MindSpore precision_mode=allow_fp32_to_bf16, matmul_allow_hf32=False, "
        "conv_allow_hf32=False (set before the run); PyTorch reference on npu:0"
    ) in text.splitlines()
    assert {c.tolerance_source for c in result.comparisons if c.torch_dtype == "float32"} == {
        "Ascend float32 (precision_mode=allow_fp32_to_bf16)"
    }
