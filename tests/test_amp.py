"""Mixed-precision pairs: MindSpore's auto_mixed_precision levels against torch.autocast, run for real."""

import os

import mindspore
import pytest
import torch
from mindspore import nn

import parity


class Mlp(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Dense(16, 32)
        self.act = nn.Tanh()
        self.fc2 = nn.Dense(32, 8)

    def construct(self, x):
        return self.fc2(self.act(self.fc1(x)))


class TorchMlp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(16, 32)
        self.act = torch.nn.Tanh()
        self.fc2 = torch.nn.Linear(32, 8)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


class Stem(nn.Cell):
    """LayerNorm then ReLU: O1's white list holds ReLU, CPU autocast runs it in its input's float32."""

    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm((16,), epsilon=1e-5)
        self.act = nn.ReLU()

    def construct(self, x):
        return self.act(self.norm(x))


class TorchStem(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = torch.nn.LayerNorm(16)
        self.act = torch.nn.ReLU()

    def forward(self, x):
        return self.act(self.norm(x))


def test_same_lists_pass_and_record_each_layers_precision():
    result = parity.check(Mlp(), TorchMlp(), parity.randn((4, 16)), amp="O2", localize=True)
    assert [(r.path, r.ms, r.torch) for r in result.precisions] == [
        ("fc1", "float16", "float16"),
        ("act", "float16", "float16"),
        ("fc2", "float16", "float16"),
    ]
    assert any("mixed precision: MindSpore O2 (float16) vs torch.autocast(float16)" in n for n in result.notes)


def test_o1_keeps_tanh_in_float32_and_passes():
    # O1 casts each converted layer's result back to float32: Tanh runs in float32 there, in float16
    # under autocast. MindSpore is the more precise side, which the golden judge allows.
    result = parity.check(Mlp(), TorchMlp(), parity.randn((4, 16)), amp="O1", localize=True)
    rows = {r.path: (r.ms, r.torch) for r in result.precisions}
    assert rows == {"fc1": ("float16", "float16"), "act": ("float32", "float16"), "fc2": ("float16", "float16")}


def test_o1_relu_in_float16_is_named_with_both_precisions():
    cell = Stem()
    with pytest.raises(parity.ParityMismatch) as info:
        parity.check(cell, TorchStem(), parity.randn((8, 16)), amp="O1")
    message = str(info.value)
    assert "first at forward output of 'act'" in message
    assert "Pair:       mindspore Stem <-> torch TorchStem" in message  # the user's Cell, not O1's StemOpt
    assert (
        "Likely cause: layer 'act' (ReLU) ran in different precisions: MindSpore O1 ran it in float16, "
        "torch.autocast(float16) in float32 (known mismatch 'o1-relu-float16': O1 runs ReLU in float16"
    ) in message
    assert type(cell.act) is nn.ReLU  # the user's Cell was not rewritten
    assert not os.path.exists("rewritten_network")  # O1's generated code went to parity's own folder


@pytest.mark.parametrize(
    "amp, words",
    [
        ("O4", "unknown amp level 'O4'"),
        (parity.Amp("O1", dtype="float32"), "unknown amp dtype 'float32'"),
        (parity.Amp("O1", torch="bf16"), "unknown amp torch side 'bf16'"),
        (1, "amp must be a level name"),
    ],
)
def test_bad_amp_is_a_usage_error(amp, words):
    with pytest.raises(parity.ParityUsageError, match=words):
        parity.check(Mlp(), TorchMlp(), parity.randn((4, 16)), amp=amp)


def test_amp_helper_validates():
    assert str(parity.amp("O3", torch="half")) == "MindSpore O3 (float16) vs Module.half()"
    with pytest.raises(parity.ParityUsageError, match="parity.amp"):
        parity.amp("O9")


def test_o1_lstmcell_is_unsupported_and_names_the_known_mismatch():
    class Cell(nn.Cell):
        def __init__(self):
            super().__init__()
            self.cell = nn.LSTMCell(8, 6)

        def construct(self, x):
            return self.cell(x)

    class Module(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.cell = torch.nn.LSTMCell(8, 6)

        def forward(self, x):
            return self.cell(x)

    with pytest.raises(parity.ParityUnsupported) as info:
        parity.check(Cell(), Module(), parity.randn((3, 8)), amp="O1")
    message = str(info.value)
    assert "NameError: name '_check_lstmcell_init' is not defined" in message
    assert "Known mismatch 'o1-lstmcell-rewrite-fails'" in message


def _row(path, kind, ms, torch_precision):
    from parity.engine.amp import PrecisionRow

    return PrecisionRow(path, path, kind, kind.replace("Dense", "Linear"), ms, torch_precision)


def test_a_layer_after_a_converted_dense_cites_the_cast_back_entry():
    from parity.engine.amp import precision_causes
    from parity.engine.check import _amp_entries

    rows = [_row("fc1", "Dense", "float16", "float16"), _row("act", "Tanh", "float32", "float16")]
    spec = parity.amp("O1")
    [cause] = precision_causes(rows, spec, "act", _amp_entries(spec))
    assert cause.startswith(
        "layer 'act' (Tanh) ran in different precisions: MindSpore O1 ran it in float32, "
        "torch.autocast(float16) in float16 (known mismatch 'o1-dense-result-float32'"
    )
    # After a layer no entry names, or against a .half() copy, no entry is cited.
    rows[0] = _row("fc1", "Conv2d", "float16", "float16")
    assert "known mismatch" not in precision_causes(rows, spec, "act", _amp_entries(spec))[0]
    half = parity.amp("O1", torch="half")
    assert (
        "known mismatch"
        not in precision_causes([_row("act", "ReLU", "float16", "float32")], half, "act", _amp_entries(half))[0]
    )


def test_ordinary_pairs_are_never_blamed_on_precision_entries():
    from parity.registry import diagnose, lint, load

    precision = {e.id for e in load().entries if e.kind == "precision"}
    assert {"o1-relu-float16", "o1-dense-result-float32"} <= precision
    found = diagnose(
        nn.SequentialCell([nn.Dense(4, 4), nn.ReLU()]).to_float(mindspore.float16),
        torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU()).half(),
        device="CPU",
    )
    assert not {d.entry.id for d in found} & precision
    assert not {i.entry_id for i in lint("mindspore.nn.ReLU", {}, device="CPU")} & precision


def test_against_a_half_copy_the_layers_run_alike_and_pass():
    result = parity.check(Mlp(), TorchMlp(), parity.randn((4, 16)), amp=parity.amp("O2", torch="half"), localize=True)
    assert [(r.path, r.ms, r.torch) for r in result.precisions] == [
        ("fc1", "float16", "float16"),
        ("act", "float16", "float16"),
        ("fc2", "float16", "float16"),
    ]
    assert any("MindSpore O2 (float16) vs Module.half()" in n for n in result.notes)


@pytest.mark.parametrize("level, paths", [("O1", ["'fc1'", "'fc2'"]), ("O2", ["'_backbone.fc1'", "'_backbone.act'"])])
@pytest.mark.parametrize("side", ["autocast", "half"])
def test_bfloat16_amp_is_refused_before_running_where_the_registry_knows_no_kernel(level, paths, side):
    with pytest.raises(parity.ParityUnsupported) as info:
        parity.check(Mlp(), TorchMlp(), parity.randn((4, 16)), amp=parity.amp(level, dtype="bfloat16", torch=side))
    message = str(info.value)
    assert f"MindSpore computes in bfloat16 here (mixed precision {level})" in message
    assert "known mismatch 'bfloat16-linear-cpu-unsupported'" in message
    assert all(p in message for p in paths)
    assert "raised during" not in message  # found in the registry, not by running into the kernel
