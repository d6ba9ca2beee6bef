"""Model-zoo packages: what is installed, and how their models' weights pair with no name map.
The forward checks of the same pairs are catalogue cases (``cases/zoo``, ``make parity``)."""

import importlib.metadata
import importlib.util
import pathlib
import re

import numpy as np
import pytest
import torch

import parity
from parity.backends import mindspore as msb

ZOO = ("torchvision", "transformers", "mindone", "mindcv")
_MISSING = [p for p in ZOO if importlib.util.find_spec(p) is None]
if _MISSING:  # shown in the run summary (-ra): make installs them
    pytest.skip(
        f"the zoo packages are not installed: {_MISSING} (make, or pip install -e .[zoo])", allow_module_level=True
    )

from cases.models import zoo_text, zoo_vision  # noqa: E402
from cases.models.zoo_compat import import_quietly  # noqa: E402

CONSTRAINTS = pathlib.Path(__file__).parents[1] / "constraints.txt"


def constraints_text(path: pathlib.Path = CONSTRAINTS) -> str:
    """``path`` with the files it includes (``-c other.txt``), as pip reads them."""
    text = path.read_text()
    included = re.findall(r"^-c\s+(\S+)$", text, re.M)
    return "\n".join([text] + [constraints_text(path.parent / name) for name in included])


def pinned(package: str) -> str:
    match = re.search(rf"^{re.escape(package)}==(\S+)$", constraints_text(), re.M)
    assert match, f"{package} is not pinned exactly in constraints.txt or the files it includes"
    return match.group(1)


def test_the_zoo_packages_leave_the_cpu_torch_in_place():
    # An unpinned torch, or a package that pulls one in, replaces the CPU build with a CUDA one.
    assert torch.__version__ == importlib.metadata.version("torch") == f"{pinned('torch')}+cpu"
    assert torch.version.cuda is None, f"a CUDA build of torch was installed: {torch.__version__}"
    for package in ZOO:
        assert importlib.metadata.version(package) == pinned(package), package


def mindone():
    return import_quietly("mindone.transformers")


@pytest.mark.parametrize("model, config", [("BertModel", zoo_text.bert_config), ("GPT2Model", zoo_text.gpt2_config)])
def test_mindone_models_pair_with_transformers_both_ways(model, config):
    cell = getattr(mindone(), model)(config())
    module = getattr(import_quietly("transformers"), model)(config())
    report = parity.transfer_weights(module, cell)
    assert {p.how for p in report.map.pairs} <= {"same name", "renamed"}
    assert report.map.ignored and {reason for _, reason in report.map.ignored} == {
        parity.weights.transfer.NOT_PERSISTENT
    }
    back = parity.transfer_weights(cell, module)
    assert back.verified == back.total == report.total
    first = report.map.pairs[0]
    assert np.array_equal(msb.read(cell, first.ms), module.get_parameter(first.torch).detach().numpy())


def test_bert_and_gpt2_report_the_buffers_they_ignore():
    cell, module = mindone().GPT2Model(zoo_text.gpt2_config()), zoo_text.torch_gpt2()
    report = parity.transfer_weights(module, cell)
    assert [name for name, _ in report.map.ignored] == [
        "h.0.attn.bias",
        "h.0.attn.masked_bias",
        "h.1.attn.bias",
        "h.1.attn.masked_bias",
    ]
    assert (
        "4 PyTorch-only buffers ignored (non-persistent buffers, not in state_dict: h.0.attn.bias, "
        "h.0.attn.masked_bias, h.1.attn.bias and 1 more)"
    ) in str(report)
    bert = parity.transfer_weights(zoo_text.torch_bert(), mindone().BertModel(zoo_text.bert_config()))
    assert [name for name, _ in bert.map.ignored] == ["embeddings.position_ids", "embeddings.token_type_ids"]


@pytest.mark.parametrize(
    "ours, model, config",
    [(zoo_text.ms_bert, "BertModel", zoo_text.bert_config), (zoo_text.ms_gpt2, "GPT2Model", zoo_text.gpt2_config)],
)
def test_the_cpu_counterparts_have_mindones_parameter_tables(ours, model, config):
    table = lambda cell: [(s.name, s.shape, s.trainable, s.dtype) for s in msb.slots(cell)]  # noqa: E731
    assert table(ours()) == table(getattr(mindone(), model)(config()))


def test_mindone_bert_needs_kernels_mindspore_has_not_on_cpu():
    """Why the forward checks use the counterparts: when this starts passing, use mindone's own."""
    import mindspore as ms

    cell = mindone().BertModel(zoo_text.bert_config())
    with pytest.raises(RuntimeError, match="The kernel Embedding unregistered"):
        cell(ms.Tensor(np.array([[1, 2, 3]], np.int32))).asnumpy()
    msb.recover()


def test_vit_qkv_is_fused_automatically_and_reported():
    report = parity.transfer_weights(zoo_vision.torch_vit_hf(), zoo_vision.ms_vit())
    fused = sorted({p.ms for p in report.map.pairs if p.how == "fused automatically"})
    assert fused == [
        "blocks.0.attn.qkv.bias",
        "blocks.0.attn.qkv.weight",
        "blocks.1.attn.qkv.bias",
        "blocks.1.attn.qkv.weight",
    ]
    assert (
        "4 fused automatically: blocks.0.attn.qkv.weight = [vit.encoder.layer.0.attention.attention.query.weight, "
        "vit.encoder.layer.0.attention.attention.key.weight, vit.encoder.layer.0.attention.attention.value.weight]"
    ) in str(report)
    assert {p.how for p in report.map.pairs} == {"fused automatically", "definition order"}


def test_vit_fused_qkv_checks_from_mindspore_weights_with_grads_named_by_pytorch():
    # what this holds is the gradients' names; an attention bias's gradient sits near its rounding
    # envelope at float32's defaults on some CPUs (1.44x under 4 ulps of noise), so the verdict is loosened
    result = parity.check(
        zoo_vision.ms_vit(),
        zoo_vision.torch_vit_hf(),
        parity.randn((2, 3, 32, 32)),
        weights="copy_to_torch",
        tolerance=parity.Tolerance(1e-4, 1e-4),
    )
    grads = {c.name: c.ms_name for c in result.comparisons if c.kind == "param grad"}
    assert grads["vit.encoder.layer.1.attention.attention.value.weight"] == "part 2 of fused blocks.1.attn.qkv.weight"
    assert grads["vit.encoder.layer.1.attention.output.dense.weight"] == "blocks.1.attn.proj.weight"


def test_resnet50_and_mobilenet_v2_pair_by_renames_and_definition_order():
    resnet = parity.transfer_weights(zoo_vision.torch_resnet50(), zoo_vision.ms_resnet50())
    pairs = {p.torch: p.ms for p in resnet.map.pairs}
    assert pairs["layer1.0.downsample.1.running_var"] == "layer1.0.down_sample.1.moving_variance"
    assert pairs["fc.weight"] == "classifier.weight"
    assert resnet.verified == resnet.total == 267
    mobilenet = parity.transfer_weights(zoo_vision.torch_mobilenet_v2(), zoo_vision.ms_mobilenet_v2())
    assert mobilenet.verified == mobilenet.total == 262


@pytest.mark.slow
def test_regnet_pairs_with_torchvisions_by_structure_and_checks():
    """mindcv and torchvision name nothing of RegNet alike (``stages.0.blocks.0.f.a`` against
    ``trunk_output.block1.block1-0.f.a.0``), and two 1x1 convolutions of a block add up to the next
    stage's projection: no name map."""
    ms_net = import_quietly("mindcv").create_model("regnet_y_400mf", num_classes=zoo_vision.NUM_CLASSES)
    torch_net = import_quietly("torchvision").models.regnet_y_400mf(num_classes=zoo_vision.NUM_CLASSES)
    result = parity.check(ms_net, torch_net, parity.randn((1, 3, 32, 32)), grads=False, localize=False)
    report = result.weights
    assert {p.how for p in report.map.pairs} == {"structure"}
    assert report.verified == report.total == 331
    assert "331 paired by structure (names differ; definition order, layer kind and shape agree)" in str(report)


@pytest.mark.slow
@pytest.mark.parametrize(
    "ms_name, torch_package, torch_name",
    [
        ("convnext_tiny", "torchvision", "convnext_tiny"),
        ("swin_tiny", "torchvision", "swin_t"),
        ("swin_tiny", "timm", "swin_tiny_patch4_window7_224"),
    ],
)
def test_convnext_and_swin_pair_with_no_name_map(ms_name, torch_package, torch_name):
    """A custom LayerNorm class, layer scales named otherwise, q/k/v against a fused qkv, one-hot
    constants against index vectors, and (timm) each stage's downsampling at the next one's start."""
    from parity.engine.pairing import map_pair_weights

    ms_net = import_quietly("mindcv").create_model(ms_name)
    package = import_quietly(torch_package)
    torch_net = package.create_model(torch_name) if torch_package == "timm" else getattr(package.models, torch_name)()
    wmap = map_pair_weights(ms_net, torch_net, None, "CPU")
    assert {n for n, _ in torch_net.named_parameters()} <= {p.torch for p in wmap.pairs}
    assert {n for n, p in ms_net.parameters_and_names() if p.requires_grad} <= {p.ms for p in wmap.pairs}
    assert all(not n.endswith(("weight", "bias")) for _, n in wmap.constants)  # constants only
    assert any(p.how == "structure" for p in wmap.pairs)
