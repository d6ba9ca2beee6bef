"""Rules: each entry's translation of PyTorch's arguments to MindSpore's, the rule language, and where
an entry applies (versions, devices, modes)."""

from __future__ import annotations

import pytest

from parity.registry import RegistryError, load, rules

# ---------------------------------------------------------------- rules


def test_conv_rule_translates_padding():
    entry = load().get("conv2d-pad-mode-default")
    assert entry.translate_kwargs({"padding": 1}) == {"pad_mode": "pad", "padding": 1}
    assert entry.translate_kwargs({"padding": (1, 2)}) == {"pad_mode": "pad", "padding": (1, 1, 2, 2)}
    assert entry.translate_kwargs({"padding": "same"}) == {"pad_mode": "same", "padding": 0}
    assert entry.translate_kwargs({}) == {"pad_mode": "pad", "padding": 0}  # PyTorch's default from `arguments`


def test_rules_of_other_families():
    registry = load()
    assert registry.get("batchnorm2d-momentum-convention").translate_kwargs({"momentum": 0.3}) == {
        "momentum": pytest.approx(0.7)
    }
    assert registry.get("gelu-approximate-default").translate_kwargs({"approximate": "tanh"}) == {"approximate": True}
    pool = registry.get("maxpool2d-stride-default")
    assert pool.translate_kwargs({"kernel_size": 3}, defaults={"stride": None}) == {"stride": 3}
    upsample = registry.get("upsample-scale-factor-unsupported")
    assert upsample.translate_kwargs(
        {"scale_factor": 2.0, "mode": "bilinear"}, defaults={"align_corners": None}, input_shape=(2, 3, 5, 7)
    )["size"] == (10, 14)


def test_rule_needing_a_missing_argument_says_which():
    entry = load().get("mint-conv2d-cpu-unsupported")
    with pytest.raises(
        RegistryError,
        match=r"mint\.toml:\d+: entry 'mint-conv2d-cpu-unsupported': rule .* "
        r"needs torch\.in_channels",
    ):
        entry.translate_kwargs({})


@pytest.mark.parametrize(
    "source",
    [
        "__import__('os')",
        "torch.__class__",
        "(lambda: 1)()",
        "torch",
        "open('x')",
        "[x for x in (1,)]",
        "len(x=1)",
        "ms.a",
    ],
)
def test_rule_language_rejects(source):
    with pytest.raises(rules.RuleError):
        rules.check_expression(source, frozenset({"torch"}))


def test_rule_language_evaluates():
    value = {"padding": (1, 2), "dim": None}.__getitem__
    assert rules.evaluate("pad4(torch.padding)", {"torch": value}) == (1, 1, 2, 2)
    assert rules.evaluate("-1 if torch.dim is None else torch.dim", {"torch": value}) == -1
    assert rules.evaluate("len(input_shape) - 1", {}, {"input_shape": (2, 3)}) == 1
    assert rules.referenced("torch.a + max(torch.b, 1)", "torch") == {"a", "b"}


# ---------------------------------------------------------------- applicability


def test_applies_versions_devices_modes():
    registry = load()
    conv = registry.get("conv2d-pad-mode-default")
    assert conv.applies("2.10.0", "2.13.0+cpu", "CPU")
    assert not conv.applies("2.6.0", "2.13.0", "CPU")
    assert conv.applies(None, None, "Ascend")
    mint = registry.get("mint-conv2d-cpu-unsupported")
    assert mint.applies("2.10.0", "2.13.0", "CPU") and not mint.applies("2.10.0", "2.13.0", "Ascend")
    noop = registry.get("mint-optim-sgd-pynative-noop")
    assert noop.applies(device="CPU", mode="pynative") and not noop.applies(device="CPU", mode="graph")
    assert registry.applicable(mindspore_version="2.10.0", torch_version="2.13.0", device="CPU")


def test_same_pads_in_the_order_functional_pad_takes_them():
    from parity.registry.rules import RuleError, evaluate

    # 8 wide, kernel 3, stride 2: MindSpore pads 1 in all, at the end; the last dimension comes first
    assert evaluate("same_pads(input_shape, 3, 2, 1)", {}, {"input_shape": (2, 3, 8, 6)}) == (0, 1, 0, 1)
    assert evaluate("same_pads(input_shape, (5, 3), 1, 1)", {}, {"input_shape": (1, 1, 7, 7)}) == (1, 1, 2, 2)
    assert evaluate("same_pads(input_shape, 3, 1, 2)", {}, {"input_shape": (1, 1, 9)}) == (2, 2)
    with pytest.raises(RuleError, match="needs the input's shape"):
        evaluate("same_pads(input_shape, 3, 2, 1)", {}, {"input_shape": None})
