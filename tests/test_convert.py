"""Checkpoint conversion: PyTorch state dicts to MindSpore checkpoints and back, through the weight
map ``check`` uses, each written file reloaded by the frameworks' own loaders and compared bit for bit."""

import importlib.util
import json
import time

import mindspore as ms
import numpy as np
import pytest
import safetensors.numpy
import torch
from mindspore import nn as msnn

import parity
from parity import ParityUsageError
from parity.tools.convert.checkpoint import ConversionError, state_slots

# -- nets ------------------------------------------------------------------------------------------


class TorchNet(torch.nn.Module):
    """conv -> BatchNorm -> ReLU -> flatten -> Linear, with a non-persistent buffer."""

    def __init__(self, classes=3):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(4)
        self.head = torch.nn.Linear(4 * 4 * 4, classes)
        self.register_buffer("scale", torch.ones(1), persistent=False)

    def forward(self, x):
        return self.head(torch.relu(self.bn(self.conv(x))).flatten(1))


class MSNet(msnn.Cell):
    def __init__(self, classes=3):
        super().__init__()
        self.conv = msnn.Conv2d(3, 4, 3, pad_mode="pad", padding=1, has_bias=True)
        self.bn = msnn.BatchNorm2d(4)
        self.relu = msnn.ReLU()
        self.flatten = msnn.Flatten()
        self.head = msnn.Dense(4 * 4 * 4, classes)

    def construct(self, x):
        return self.head(self.flatten(self.relu(self.bn(self.conv(x)))))


class Wrapped(msnn.Cell):
    """A Cell under a parent built with auto_prefix=False: its Parameter names lack the path's
    ``body.`` (what load_param_into_net matches is the name, not the path)."""

    def __init__(self):
        super().__init__(auto_prefix=False)
        self.body = MSNet()

    def construct(self, x):
        return self.body(x)


def random_torch_net(seed=0, **kwargs):
    """A TorchNet whose every parameter and statistic is random (not the initial values)."""
    torch.manual_seed(seed)
    net = TorchNet(**kwargs).eval()
    with torch.no_grad():
        for tensor in list(net.parameters()) + [net.bn.running_mean, net.bn.running_var]:
            tensor.copy_(torch.rand(tensor.shape) + 0.5)
        net.bn.num_batches_tracked.fill_(7)
    return net


def save_torch(net, path):
    if str(path).endswith(".safetensors"):
        safetensors.numpy.save_file({k: v.numpy() for k, v in net.state_dict().items()}, str(path))
    else:
        torch.save(net.state_dict(), path)
    return path


def ms_state(cell):
    return {p.name: p.asnumpy() for _, p in cell.parameters_and_names()}


def identical(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def expected_ms(net):
    """What MindSpore should hold for a TorchNet's state, by MindSpore name."""
    sd = {k: v.numpy() for k, v in net.state_dict().items()}
    renames = {
        "bn.weight": "bn.gamma",
        "bn.bias": "bn.beta",
        "bn.running_mean": "bn.moving_mean",
        "bn.running_var": "bn.moving_variance",
    }
    return {renames.get(k, k): v for k, v in sd.items() if k not in ("bn.num_batches_tracked",)}


# -- every format, both ways -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "src_suffix, dst_suffix", [(".pth", ".ckpt"), (".safetensors", ".ckpt"), (".bin", ".safetensors")]
)
def test_pytorch_to_mindspore_reloads_bit_identical_with_mindspores_own_loader(tmp_path, src_suffix, dst_suffix):
    net = random_torch_net()
    src = save_torch(net, tmp_path / f"net{src_suffix}")
    report = parity.convert_checkpoint(src, MSNet(), tmp_path / f"net{dst_suffix}")
    assert report.written and report.complete and report.verified == report.converted == 8
    assert report.direction == "PyTorch -> MindSpore"
    assert report.dropped == [("bn.num_batches_tracked", "dropped (BatchNorm step counter; MindSpore keeps none)")]
    fresh = MSNet()
    fmt = "safetensors" if dst_suffix == ".safetensors" else "ckpt"
    stored = ms.load_checkpoint(str(tmp_path / f"net{dst_suffix}"), format=fmt)
    assert ms.load_param_into_net(fresh, stored) == ([], [])
    held = ms_state(fresh)
    assert held.keys() == expected_ms(net).keys()
    assert all(identical(held[k], v) for k, v in expected_ms(net).items())
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted({f"net{src_suffix}", f"net{dst_suffix}"})


@pytest.mark.parametrize(
    "src_suffix, dst_suffix", [(".ckpt", ".pth"), (".ckpt", ".safetensors"), (".safetensors", ".pt")]
)
def test_mindspore_to_pytorch_loads_strictly_and_bit_identical(tmp_path, src_suffix, dst_suffix):
    net = random_torch_net()
    cell = MSNet()
    parity.transfer_weights(net, cell)
    fmt = "safetensors" if src_suffix == ".safetensors" else "ckpt"
    ms.save_checkpoint(cell, str(tmp_path / f"cell{src_suffix}"), format=fmt)
    report = parity.convert_checkpoint(tmp_path / f"cell{src_suffix}", TorchNet(), tmp_path / f"net{dst_suffix}")
    assert report.written and report.complete and report.verified == report.converted == 8
    assert sorted(report.dropped) == [
        ("bn.num_batches_tracked", "written as the Module holds them (BatchNorm step counter; MindSpore keeps none)"),
        ("scale", "PyTorch non-persistent buffers, not in state_dict"),
    ]
    if dst_suffix == ".safetensors":
        stored = safetensors.numpy.load_file(str(tmp_path / f"net{dst_suffix}"))
        state = {k: torch.from_numpy(v) for k, v in stored.items()}
    else:
        state = torch.load(tmp_path / f"net{dst_suffix}", weights_only=True)
    fresh = TorchNet()
    fresh.load_state_dict(state, strict=True)
    for key, value in net.state_dict().items():
        if key != "bn.num_batches_tracked":  # MindSpore keeps no step counter: the new Module's own 0
            assert identical(fresh.state_dict()[key].numpy(), value.numpy()), key
    assert int(fresh.bn.num_batches_tracked) == 0


def test_a_converted_checkpoint_makes_check_pass_with_the_weights_as_loaded(tmp_path):
    net = random_torch_net(seed=3)
    cell = MSNet()
    parity.convert_checkpoint(save_torch(net, tmp_path / "net.pth"), cell, tmp_path / "net.ckpt")
    fresh = MSNet()
    ms.load_param_into_net(fresh, ms.load_checkpoint(str(tmp_path / "net.ckpt")))
    result = parity.check(fresh, net, parity.randn((2, 3, 4, 4)), weights="as_is", grads=False)
    assert result.passed
    with pytest.raises(parity.ParityMismatch):  # the check can fail: a Cell as built disagrees
        parity.check(MSNet(), net, parity.randn((2, 3, 4, 4)), weights="as_is", grads=False)


def test_without_a_destination_the_values_are_loaded_into_the_model(tmp_path):
    net = random_torch_net()
    cell = MSNet()
    report = parity.convert_checkpoint(save_torch(net, tmp_path / "net.pth"), cell)
    assert not report.written and report.verified == 8 and report.target == "MSNet"
    assert all(identical(ms_state(cell)[k], v) for k, v in expected_ms(net).items())
    assert "8/8 tensors converted and verified bit-identical in MSNet" in str(report)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["net.pth"]


def test_the_checkpoint_holds_the_parameter_names_load_param_into_net_matches(tmp_path):
    wrapped = Wrapped()
    assert {path: p.name for path, p in wrapped.parameters_and_names()}["body.conv.weight"] == "conv.weight"
    net = random_torch_net()
    report = parity.convert_checkpoint(save_torch(net, tmp_path / "net.pth"), wrapped, tmp_path / "net.ckpt")
    assert report.verified == 8
    stored = ms.load_checkpoint(str(tmp_path / "net.ckpt"))
    assert sorted(stored) == sorted(expected_ms(net))  # Parameter names, not the paths "body.*"
    plain = MSNet()
    assert ms.load_param_into_net(plain, stored) == ([], [])


# -- the report ------------------------------------------------------------------------------------


class TorchPartial(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = torch.nn.Linear(5, 3)  # MindSpore's takes 4 inputs: shape mismatch by name
        self.layernorm = torch.nn.LayerNorm(3)  # MindSpore's is layer_norm: near miss, same shapes
        self.decoders = torch.nn.Linear(3, 2)  # MindSpore's is decoder, 6 outputs: missing + unexpected


class MSPartial(msnn.Cell):
    def __init__(self):
        super().__init__()
        self.encoder = msnn.Dense(4, 3)
        self.layer_norm = msnn.LayerNorm((3,))
        self.decoder = msnn.Dense(3, 6)


def test_missing_unexpected_and_mismatched_keys_are_reported_with_near_names_and_nothing_is_written(tmp_path):
    torch.save(TorchPartial().state_dict(), tmp_path / "partial.pth")
    (tmp_path / "partial.ckpt").write_bytes(b"left alone")
    cell = MSPartial()
    before = ms_state(cell)
    with pytest.raises(ConversionError) as info:
        parity.convert_checkpoint(tmp_path / "partial.pth", cell, tmp_path / "partial.ckpt")
    report = info.value.report
    assert [k.name for k in report.missing] == ["layer_norm.gamma", "layer_norm.beta", "decoder.weight", "decoder.bias"]
    assert [k.name for k in report.unexpected] == [
        "layernorm.weight",
        "layernorm.bias",
        "decoders.weight",
        "decoders.bias",
    ]
    assert [(s.name, s.shape, m.name, m.shape) for s, m in report.mismatched] == [
        ("encoder.weight", (3, 5), "encoder.weight", (3, 4))
    ]
    missing = {k.name: k.near for k in report.missing}
    assert missing["decoder.weight"][0] == ("decoders.weight", (2, 3))
    text = str(info.value)
    assert "Missing: 4 tensors of MSPartial that " in text
    assert "  decoder.weight (6, 3) float32   did you mean decoders.weight (2, 3)" in text
    assert "  encoder.weight (3, 5) in " in text and "encoder.weight (3, 4) in MSPartial" in text
    assert '  "layernorm.weight" = "layer_norm.gamma"' in text  # a name map entry, same size both sides
    assert "Nothing was converted" in text and "--allow-missing" in text
    assert (tmp_path / "partial.ckpt").read_bytes() == b"left alone"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["partial.ckpt", "partial.pth"]
    assert all(identical(ms_state(cell)[k], v) for k, v in before.items())


def test_allow_missing_writes_what_pairs_and_lists_the_rest(tmp_path):
    torch_net = TorchPartial()
    torch.save(torch_net.state_dict(), tmp_path / "partial.pth")
    report = parity.convert_checkpoint(
        tmp_path / "partial.pth", MSPartial(), tmp_path / "partial.ckpt", allow_missing=True
    )
    assert report.written and not report.complete
    assert report.verified == report.converted == 1  # encoder.bias alone
    stored = ms.load_checkpoint(str(tmp_path / "partial.ckpt"))
    assert sorted(stored) == ["encoder.bias"]
    assert identical(stored["encoder.bias"].asnumpy(), torch_net.encoder.bias.detach().numpy())
    assert "Converted without them (allow_missing)" in str(report)


def test_a_name_map_file_pairs_what_the_names_do_not(tmp_path):
    class TorchRenamed(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.encoder = torch.nn.Linear(4, 3)
            self.layernorm = torch.nn.LayerNorm(3)
            self.decoder = torch.nn.Linear(3, 6)

    torch.save(TorchRenamed().state_dict(), tmp_path / "net.pth")
    (tmp_path / "map.toml").write_text(
        '"layernorm.weight" = "layer_norm.gamma"\n"layernorm.bias" = "layer_norm.beta"\n'
    )
    report = parity.convert_checkpoint(
        tmp_path / "net.pth", MSPartial(), tmp_path / "net.ckpt", name_map=tmp_path / "map.toml"
    )
    assert report.complete and report.verified == 6
    assert {p.torch: p.how for p in report.map.pairs}["layernorm.weight"] == "name_map"
    (tmp_path / "map.json").write_text(
        json.dumps({"layernorm.weight": "layer_norm.gamma", "layernorm.bias": "layer_norm.beta"})
    )
    assert parity.convert_checkpoint(tmp_path / "net.pth", MSPartial(), name_map=tmp_path / "map.json").verified == 6


class TorchAttention(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.q = torch.nn.Linear(4, 4)
        self.k = torch.nn.Linear(4, 4)
        self.v = torch.nn.Linear(4, 4)


class MSAttention(msnn.Cell):
    def __init__(self):
        super().__init__()
        self.qkv = msnn.Dense(4, 12)


def test_fused_qkv_is_fused_split_back_and_listed(tmp_path):
    attention = TorchAttention()
    torch.save(attention.state_dict(), tmp_path / "attn.pth")
    report = parity.convert_checkpoint(tmp_path / "attn.pth", MSAttention(), tmp_path / "attn.ckpt")
    assert report.verified == 2 and len(report.map.pairs) == 6
    assert "  k.weight (4, 4) -> qkv.weight (12, 4) (fused automatically, part 2 of 3 along axis 0)" in str(report)
    stored = ms.load_checkpoint(str(tmp_path / "attn.ckpt"))["qkv.weight"].asnumpy()
    assert identical(stored, torch.cat([attention.q.weight, attention.k.weight, attention.v.weight]).detach().numpy())
    back = parity.convert_checkpoint(tmp_path / "attn.ckpt", TorchAttention(), tmp_path / "back.pth")
    assert back.verified == 6 and "k.bias (4,) -> qkv.bias (12,) (fused automatically, part 2 of 3" in str(back)
    state = torch.load(tmp_path / "back.pth", weights_only=True)
    assert all(torch.equal(state[k], v) for k, v in attention.state_dict().items())


def test_state_slots_guess_trainability_and_layer_class_from_the_names():
    arrays = {k: v.numpy() for k, v in TorchNet().state_dict().items()}
    slots = {s.name: s for s in state_slots(arrays, "torch")}
    assert [n for n, s in slots.items() if not s.trainable] == [
        "bn.running_mean",
        "bn.running_var",
        "bn.num_batches_tracked",
    ]
    assert (slots["conv.weight"].layer_type, slots["bn.bias"].layer_type, slots["head.weight"].layer_type) == (
        "Conv2d",
        "BatchNorm2d",
        "Linear",
    )
    pair = {"a.weight": np.zeros((2, 2)), "b.weight": np.zeros((2, 2))}
    tied = state_slots(pair, "torch", [("a.weight", "b.weight")])
    assert [(s.name, s.aliases) for s in tied] == [("a.weight", ("b.weight",))]


def test_a_state_dict_nested_under_state_dict_is_taken_out_and_said(tmp_path):
    net = random_torch_net()
    torch.save({"epoch": 3, "state_dict": net.state_dict()}, tmp_path / "train.pth")
    report = parity.convert_checkpoint(tmp_path / "train.pth", MSNet(), tmp_path / "net.ckpt")
    assert report.verified == 8
    assert "Note: the state dict was read from the entry 'state_dict'" in str(report)


# -- bad input -------------------------------------------------------------------------------------


def test_bad_input_is_a_usage_error_naming_the_file(tmp_path):
    with pytest.raises(ParityUsageError, match=r"nothing\.pth: no such file"):
        parity.convert_checkpoint(tmp_path / "nothing.pth", MSNet(), tmp_path / "x.ckpt")
    with pytest.raises(ParityUsageError, match=r"must end with one of \.pth, \.pt, \.bin, \.safetensors"):
        parity.convert_checkpoint(tmp_path / "net.h5", MSNet(), tmp_path / "x.ckpt")
    save_torch(random_torch_net(), tmp_path / "net.pth")
    with pytest.raises(ParityUsageError, match=r"x\.pth: a MindSpore checkpoint must end with one of \.ckpt"):
        parity.convert_checkpoint(tmp_path / "net.pth", MSNet(), tmp_path / "x.pth")
    with pytest.raises(
        ParityUsageError,
        match=r"x\.ckpt: .*the suffix picks the format; to convert a MindSpore "
        r"checkpoint, give a PyTorch Module \(--module\)",
    ):
        parity.convert_checkpoint(tmp_path / "x.ckpt", MSNet(), tmp_path / "y.ckpt")
    with pytest.raises(ParityUsageError, match="needs a mindspore.nn.Cell or a torch.nn.Module, got dict"):
        parity.convert_checkpoint(tmp_path / "net.pth", {}, tmp_path / "x.ckpt")
    torch.save(torch.nn.Linear(2, 2), tmp_path / "module.pth")  # a pickled Module: weights_only refuses it
    with pytest.raises(ParityUsageError, match=r"module\.pth: torch.load\(weights_only=True\) cannot read it"):
        parity.convert_checkpoint(tmp_path / "module.pth", MSNet(), tmp_path / "x.ckpt")
    torch.save({"epoch": 3, "lr": 0.1}, tmp_path / "meta.pth")
    with pytest.raises(ParityUsageError, match=r"meta\.pth: not a state dict: the entries \['epoch', 'lr'\] hold"):
        parity.convert_checkpoint(tmp_path / "meta.pth", MSNet(), tmp_path / "x.ckpt")
    (tmp_path / "junk.ckpt").write_bytes(b"not a checkpoint")
    with pytest.raises(ParityUsageError, match=r"junk\.ckpt: mindspore.load_checkpoint cannot read it"):
        parity.convert_checkpoint(tmp_path / "junk.ckpt", TorchNet(), tmp_path / "x.pth")
    assert not list(tmp_path.glob("x.*"))


# -- the command line ------------------------------------------------------------------------------

FACTORIES = """
import sys
sys.path.insert(0, {tests!r})
from test_convert import MSNet, TorchNet


def cell():
    return MSNet()


def module():
    return TorchNet()


def broken():
    raise RuntimeError("no weights here")
"""


@pytest.fixture
def factories(tmp_path, monkeypatch):
    """A module ``convert_factories_<n>`` in the working folder, as a user's project would have."""
    name = f"convert_factories_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{name}.py").write_text(FACTORIES.format(tests=str(__import__("pathlib").Path(__file__).parent)))
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    return name


def test_command_line_both_ways(tmp_path, factories, capsys):
    from parity import cli

    net = random_torch_net()
    save_torch(net, tmp_path / "net.pth")
    assert cli.main(["convert", "net.pth", "net.ckpt", "--cell", f"{factories}:cell"]) == 0
    out = capsys.readouterr().out
    assert "PyTorch -> MindSpore: net.pth -> net.ckpt" in out
    assert "8/8 tensors converted and verified bit-identical after reloading net.ckpt into MSNet" in out
    assert cli.main(["convert", "net.ckpt", "back.safetensors", "--module", f"{factories}:module"]) == 0
    back = safetensors.numpy.load_file(str(tmp_path / "back.safetensors"))
    assert all(identical(back[k], v.numpy()) for k, v in net.state_dict().items() if "num_batches" not in k)


def test_command_line_usage_errors(tmp_path, factories, capsys):
    from parity import cli

    save_torch(random_torch_net(), tmp_path / "net.pth")
    assert cli.main(["convert", "net.pth", "net.ckpt", "--cell", f"{factories}:broken"]) == 2
    assert f"--cell {factories}:broken: building failed: RuntimeError: no weights here" in capsys.readouterr().err
    assert cli.main(["convert", "net.pth", "net.ckpt", "--cell", f"{factories}:module"]) == 2
    assert "the factory made a TorchNet, not a mindspore.nn.Cell" in capsys.readouterr().err
    assert cli.main(["convert", "net.pth", "net.ckpt", "--cell", "no_such_module_here:cell"]) == 2
    assert "cannot import 'no_such_module_here:cell'" in capsys.readouterr().err
    assert cli.main(["convert", "net.pth", "net.ckpt", "--cell", f"{factories}:cell", "--name-map", "none.toml"]) == 2
    assert "name map none.toml: no such file" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main(["convert", "net.pth", "net.ckpt"])  # neither --cell nor --module
    assert "one of the arguments --cell --module is required" in capsys.readouterr().err
    assert not (tmp_path / "net.ckpt").exists()


# -- ResNet-50 -------------------------------------------------------------------------------------

ZOO_MISSING = [p for p in ("torchvision", "mindcv") if importlib.util.find_spec(p) is None]


@pytest.mark.skipif(bool(ZOO_MISSING), reason=f"the zoo packages are not installed: {ZOO_MISSING}")
def test_resnet50_from_torchvision_to_mindcv_and_back_bit_identical(tmp_path):
    from cases.models import zoo_vision

    resnet = zoo_vision.torch_resnet50(num_classes=1000).eval()  # torchvision's, random initialisation
    torch.save(resnet.state_dict(), tmp_path / "resnet50.pth")
    cell = zoo_vision.ms_resnet50(num_classes=1000)  # mindcv's, as the catalogue's ResNet50Zoo
    start = time.perf_counter()
    there = parity.convert_checkpoint(tmp_path / "resnet50.pth", cell, tmp_path / "resnet50.ckpt")
    middle = time.perf_counter()
    back = parity.convert_checkpoint(
        tmp_path / "resnet50.ckpt", zoo_vision.torch_resnet50(num_classes=1000), tmp_path / "resnet50.pth2.pth"
    )
    print(f"ResNet-50: .pth -> .ckpt {middle - start:.2f} s, .ckpt -> .pth {time.perf_counter() - middle:.2f} s")
    assert there.verified == back.verified == 267 and there.complete and back.complete
    assert len(there.dropped) == 53  # one num_batches_tracked per BatchNorm
    assert {p.torch: p.ms for p in there.map.alignments()}["fc.weight"] == "classifier.weight"
    original = resnet.state_dict()
    state = torch.load(tmp_path / "resnet50.pth2.pth", weights_only=True)
    assert state.keys() == original.keys()
    assert all(identical(state[k].numpy(), v.numpy()) for k, v in original.items() if "num_batches" not in k)


def test_the_readme_example(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    torch_net = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, bias=False), torch.nn.BatchNorm2d(8))
    torch.save(torch_net.state_dict(), "net.pth")
    cell = ms.nn.SequentialCell([ms.nn.Conv2d(3, 8, 3, pad_mode="valid"), ms.nn.BatchNorm2d(8)])
    report = parity.convert_checkpoint("net.pth", cell, "net.ckpt")
    print(report)
    assert capsys.readouterr().out == (
        "PyTorch -> MindSpore: net.pth -> net.ckpt\n"
        "5/5 tensors converted and verified bit-identical after reloading net.ckpt into SequentialCell\n"
        "  pairs: same name 1, renamed 4\n"
        "Not converted, on purpose:\n"
        "  1 dropped (BatchNorm step counter; MindSpore keeps none): 1.num_batches_tracked\n"
    )


def test_other_dtypes_are_cast_to_the_models_and_said(tmp_path):
    net = random_torch_net().double()
    torch.save(net.state_dict(), tmp_path / "double.pth")
    report = parity.convert_checkpoint(tmp_path / "double.pth", MSNet(), tmp_path / "double.ckpt")
    assert report.casts == {("float64", "float32"): 8}
    assert "Cast to the model's dtype: 8 float64 -> float32" in str(report)
    torch.save(torch.nn.Linear(2, 2).to(torch.bfloat16).state_dict(), tmp_path / "bf16.pth")
    report = parity.convert_checkpoint(tmp_path / "bf16.pth", msnn.Dense(2, 2), tmp_path / "bf16.ckpt")
    assert report.verified == 2 and report.casts == {}
    assert "Note: 2 bfloat16 tensors read as float32 (exact): weight, bias" in str(report)
