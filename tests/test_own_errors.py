"""Each layer's own error (every layer fed PyTorch's inputs on a failing check) and the first
non-finite value, on real pairs: mindcv's ViT as shipped against timm's, the fault catalogue's
BatchNorm momentum under rounding noise as another CPU makes it, and a log of a softmax that
underflows on one side only."""

from __future__ import annotations

import mindspore  # noqa: F401  (both frameworks before parity, as everywhere in tests/)
import pytest
import torch
from mindspore import nn as msnn
from mindspore import ops

import parity
from cases.faults import catalogue
from parity import ParityMismatch
from parity.backends import mindspore as msb
from parity.catalogue import build
from parity.nightly.records import _result_fields

FAULTS = {fault.name: fault for fault in catalogue.FAULTS}


def _readme_vit_example():
    """The documentation's example (docs/explanation/localisation.md, "Each layer's own error"), run as written."""
    import re
    from pathlib import Path

    from cases.models.zoo_compat import import_quietly

    import_quietly("timm")  # first, quietly: torchvision 0.28 needs a shim on CPU torch (see zoo_compat)
    import_quietly("mindcv.models.vit")
    page = Path(__file__).parents[1] / "docs" / "explanation" / "localisation.md"
    readme = page.read_text(encoding="utf-8")
    section = readme[readme.index("## Each layer's own error") :]
    source = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    scope = {}
    exec(compile(source, str(page), "exec"), scope)
    return scope["info"].value


@pytest.fixture(scope="module")
def vit_failure():
    return _readme_vit_example()


def test_the_vit_names_both_its_layernorm_and_its_gelu(vit_failure):
    own = vit_failure.result.layers.own_errors
    assert [e.layer for e in own][:3] == ["blocks.0.norm1", "blocks.0.norm2", "blocks.0.mlp.act"]
    # The forward diverged: the backward's errors are downstream of it, and not measured again.
    assert {e.direction for e in own} == {"forward"}
    assert {v.own_status for v in vit_failure.result.layers.backward} <= {"", "inherited"}
    causes = {e.layer: e.causes for e in own}
    assert any("'layernorm-epsilon-default'" in c for c in causes["blocks.0.norm1"])
    assert any("'gelu-approximate-default'" in c for c in causes["blocks.0.mlp.act"])
    # The GELU is fed a differing input (the LayerNorm before it): only its own error names it.
    forward = {v.label: v for v in vit_failure.result.layers.forward}
    act = forward["blocks.0.mlp.act"]
    assert act.status == "downstream" and act.own_status == "own" and act.own_margin > 1.0
    assert forward["blocks.0.mlp.fc1"].own_status == "inherited" and forward["blocks.0.mlp.fc1"].own_margin <= 1.0
    assert forward["blocks.0"].own_status == "inherited"  # its error is its sub-layers'
    assert forward["blocks.0.drop_path1"].own_status == "ok"  # an identity returns what it is given


def test_the_message_lists_own_errors_apart_from_inherited_ones(vit_failure):
    text = str(vit_failure)
    section = text[text.index("Own errors, each layer fed PyTorch's inputs") :].splitlines()
    assert section[1].split()[0] == "blocks.0.norm1" and "known mismatch 'layernorm-epsilon-default'" in section[1]
    assert section[3].split()[0] == "blocks.0.mlp.act" and "known mismatch 'gelu-approximate-default'" in section[3]
    assert any(line.startswith("Inherited only: ") for line in section)
    assert "Likely cause: known mismatch 'gelu-approximate-default' at 'blocks.0.mlp.act'" in text
    row = next(line for line in text.splitlines() if "<- first divergence" in line)
    assert "blocks.0.norm1" in row and "; own " in row  # both figures in the layer table


def test_the_record_carries_own_errors(vit_failure):
    record = _result_fields(vit_failure.result)
    assert [e["layer"] for e in record["own_errors"]][:3] == ["blocks.0.norm1", "blocks.0.norm2", "blocks.0.mlp.act"]
    assert set(record["own_errors"][0]) == {"layer", "direction", "causes"}
    forward = {entry["layer"]: entry for entry in record["layers"]["forward"]}
    assert forward["blocks.0.mlp.act"]["own_status"] == "own" and forward["blocks.0.mlp.act"]["own_margin"] > 1
    assert record["first_divergence"]["forward"]["own_status"] == "own"
    assert record["first_nonfinite"] is None


def test_a_passing_check_measures_no_own_error():
    cell, module = msnn.Dense(4, 3), torch.nn.Linear(4, 3)
    result = parity.check(cell, module, parity.randn((2, 4)), localize=True)
    assert result.passed and not result.layers.own_measured and result.layers.own_errors == []
    assert all(v.own_status == "" and v.own_margin is None for v in result.layers.forward)
    assert _result_fields(result)["own_errors"] is None


def test_the_bn_momentum_fault_is_named_at_its_batchnorm_on_another_cpu():
    """8 ulps of noise on every MindSpore layer moves the first forward divergence into functional
    code; fed PyTorch's inputs, no layer has its own forward error, and the running statistics
    of 'layer1.bn1' alone do."""
    fault = FAULTS["ResNetBnMomentum"]
    ms_cell, torch_module = build(fault.case)
    with msb.perturbed(ms_cell, seed=1, ulps=8.0), pytest.raises(ParityMismatch) as info:
        parity.check(ms_cell, torch_module, fault.case.inputs, **{**fault.case.check_kwargs(), "train": True})
    own = info.value.result.layers.own_errors
    assert [(e.layer, e.direction) for e in own] == [("layer1.bn1", "buffer")]
    assert any("'batchnorm2d-momentum-convention'" in c for c in own[0].causes)
    assert "  layer1.bn1  running statistics at " in str(info.value)


# -- the first non-finite value --------------------------------------------------------------


class _MsLogOfSoftmax(msnn.Cell):
    """log(softmax(x)): the softmax underflows to 0 for logits far below the greatest, and its log is -inf."""

    def construct(self, x):
        return ops.log(ops.softmax(x, axis=-1))


class _MsNet(msnn.Cell):
    def __init__(self):
        super().__init__()
        self.fc, self.act, self.scale, self.head = msnn.Dense(8, 8), msnn.Tanh(), msnn.Dense(8, 8), _MsLogOfSoftmax()

    def construct(self, x):
        return self.head(self.scale(self.act(self.fc(x))))


class _TorchNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc, self.act, self.scale, self.head = (
            torch.nn.Linear(8, 8),
            torch.nn.Tanh(),
            torch.nn.Linear(8, 8),
            torch.nn.LogSoftmax(-1),
        )

    def forward(self, x):
        return self.head(self.scale(self.act(self.fc(x))))


def test_the_first_non_finite_value_is_named_where_it_appeared():
    torch.manual_seed(0)
    module = _TorchNet()
    with torch.no_grad():
        module.scale.weight.mul_(400.0)  # logits hundreds apart: exp underflows on the log(softmax) side
    with pytest.raises(ParityMismatch) as info:
        parity.check(_MsNet(), module, parity.randn((4, 8)))
    origin = info.value.result.first_nonfinite
    assert (origin.layer, origin.direction, origin.side, origin.inputs_finite) == ("head", "forward", "mindspore", True)
    assert origin.step is None and origin.stage is None
    text = str(info.value)
    assert (
        "Non-finite: first at forward output of 'head', NaN/Inf on the MindSpore side only; what flowed in was "
        "finite on both sides"
    ) in text
    assert "Divergence: first at forward output of 'head' (_MsLogOfSoftmax <-> LogSoftmax)" in text
    assert _result_fields(info.value.result)["first_nonfinite"] == {
        "layer": "head",
        "direction": "forward",
        "side": "mindspore",
        "ms_layer": "head",
        "inputs_finite": True,
        "step": None,
        "stage": None,
    }


class _MsSqrtHead(msnn.Cell):
    def __init__(self):
        super().__init__()
        self.fc = msnn.Dense(8, 4)

    def construct(self, x):
        return ops.sqrt(self.fc(x))  # NaN where the layer's output is negative


class _TorchSqrtHead(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, 4)

    def forward(self, x):
        return torch.sqrt(torch.relu(self.fc(x)))  # clamped first: finite


def test_training_names_the_step_and_stage_of_the_first_non_finite_value():
    batches = [(parity.randn((4, 8)), parity.randn((4, 4)))]
    with pytest.raises(ParityMismatch) as info:
        parity.check_training(
            _MsSqrtHead(),
            _TorchSqrtHead(),
            batches,
            loss=torch.nn.MSELoss(),
            optimizer=lambda p: torch.optim.SGD(p, lr=0.1),
            steps=2,
        )
    origin = info.value.result.first_nonfinite
    assert (origin.step, origin.stage, origin.direction, origin.side, origin.inputs_finite) == (
        1,
        "loss",
        "forward",
        "mindspore",
        True,
    )
    assert (
        "Non-finite: first at step 1, stage 'loss', NaN/Inf on the MindSpore side only; every tensor compared "
        "before it was finite on both sides"
    ) in str(info.value)
    assert _result_fields(info.value.result)["first_nonfinite"]["step"] == 1


class MSTokens(msnn.Cell):
    """A patch embedding that keeps tokens (N, H*W, C) between layers, as mindcv's Swin does."""

    def __init__(self, eps):
        super().__init__()
        self.proj = msnn.Conv2d(3, 8, 4, stride=4, has_bias=True)
        self.norm = msnn.LayerNorm((8,), epsilon=eps)
        self.head = msnn.Dense(8, 5)

    def construct(self, x):
        x = self.proj(x)
        n, c, h, w = x.shape
        return self.head(self.norm(x.reshape(n, c, h * w).transpose(0, 2, 1)))


class TorchGrid(torch.nn.Module):
    """The same computation keeping a grid (N, H, W, C), as torchvision's Swin does."""

    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Conv2d(3, 8, 4, stride=4)
        self.norm = torch.nn.LayerNorm(8)
        self.head = torch.nn.Linear(8, 5)

    def forward(self, x):
        return self.head(self.norm(self.proj(x).permute(0, 2, 3, 1))).flatten(1, 2)


def test_tokens_against_a_grid_are_compared_through_the_layout():
    # Shaped alike but for the layout, every layer but the LayerNorm (epsilon 1e-1 against 1e-5)
    # agrees: it alone has an own error, and no layer is reported for its shapes.
    inputs = [parity.randn((2, 3, 16, 16))]
    assert parity.check(MSTokens(1e-5), TorchGrid(), inputs).passed
    with pytest.raises(ParityMismatch) as failed:
        parity.check(MSTokens(1e-1), TorchGrid(), inputs)
    layers = failed.value.result.layers
    assert [e.layer for e in layers.own_errors if e.direction == "forward"] == ["norm"]
    norm = next(v for v in layers.forward if v.path == "norm")
    assert norm.ms_in_shapes == ((2, 16, 8),) and norm.in_shapes == ((2, 4, 4, 8),)
    assert "shapes differ" not in str(failed.value)


class MSFlatBlock(msnn.Cell):
    """Its GELU is ``act``, a child of its own; the weights pair ``fc1``, ``norm`` and ``fc2``."""

    def __init__(self, approximate, eps):
        super().__init__()
        self.fc1 = msnn.Dense(16, 32)
        self.norm = msnn.LayerNorm((32,), epsilon=eps)
        self.act = msnn.GELU(approximate=approximate)
        self.fc2 = msnn.Dense(32, 8)

    def construct(self, x):
        return self.fc2(self.act(self.norm(self.fc1(x))))


class TorchMlpBlock(torch.nn.Module):
    """The same computation, its GELU ``mlp.2`` inside a Sequential (torchvision's ConvNeXt's way)."""

    def __init__(self):
        super().__init__()
        self.mlp = torch.nn.Sequential(
            torch.nn.Linear(16, 32), torch.nn.LayerNorm(32), torch.nn.GELU(), torch.nn.Linear(32, 8)
        )

    def forward(self, x):
        return self.mlp(x)


def test_an_activation_at_another_path_is_paired_by_its_place_and_named():
    # MindSpore's tanh GELU against the exact one, on inputs wide enough to tell them apart
    with pytest.raises(ParityMismatch) as failed:
        parity.check(MSFlatBlock(True, 1e-5), TorchMlpBlock(), parity.randn((4, 16), std=3.0))
    layers = failed.value.result.layers
    gelu = next(v for v in layers.forward if v.ms_path == "act")
    assert (gelu.path, gelu.status, gelu.own_status) == ("mlp.2", "FAIL", "own")
    (own,) = layers.own_errors
    assert (own.layer, own.ms_path, own.direction) == ("mlp.2", "act", "forward")
    assert any("known mismatch 'gelu-approximate-default'" in cause for cause in own.causes)
    assert "Divergence: first at forward output of 'mlp.2' (GELU <-> GELU)" in str(failed.value)


def test_a_clean_activation_paired_by_its_place_has_no_own_error():
    # the LayerNorm before it differs (epsilon 1e-1 against 1e-5): the GELU only inherits that
    with pytest.raises(ParityMismatch) as failed:
        parity.check(MSFlatBlock(False, 1e-1), TorchMlpBlock(), parity.randn((4, 16), std=3.0))
    layers = failed.value.result.layers
    gelu = next(v for v in layers.forward if v.ms_path == "act")
    assert (gelu.path, gelu.status, gelu.own_status) == ("mlp.2", "downstream", "inherited")
    assert [(e.layer, e.direction) for e in layers.own_errors if e.direction == "forward"] == [("mlp.1", "forward")]
