"""Lint: what the registry says of a layer built with given arguments (the unset defaults that
differ, values against the rules, acknowledged ids, kernels missing on a device)."""

from __future__ import annotations

from parity.registry import lint


def test_lint_unset_default_names_argument_and_fix():
    issues = lint("mindspore.nn.Conv2d", {"in_channels": 3, "out_channels": 4, "kernel_size": 3})
    by_id = {i.entry_id: i for i in issues}
    assert set(by_id) == {"conv2d-pad-mode-default", "conv2d-has-bias-default"}
    message = str(by_id["conv2d-pad-mode-default"])
    assert (
        "built without pad_mode" in message and "pad_mode='same'" in message and "fix: pass pad_mode='pad'" in message
    )


def test_lint_with_torch_kwargs_gives_concrete_values():
    issues = lint(
        "mindspore.nn.Conv2d",
        {"in_channels": 3, "out_channels": 4, "kernel_size": 3, "has_bias": True},
        torch_kwargs={"in_channels": 3, "out_channels": 4, "kernel_size": 3, "padding": 1},
    )
    assert [str(i).split(" (known")[0] for i in issues] == [
        "mindspore.nn.Conv2d is built without pad_mode: MindSpore's default pad_mode='same' differs "
        "(PyTorch padding=1); write pad_mode='pad', padding=1"
    ]


def test_lint_wrong_value_against_rule():
    issues = lint(
        "mindspore.nn.BatchNorm2d",
        {"num_features": 3, "momentum": 0.1},
        torch_kwargs={"num_features": 3, "momentum": 0.1},
    )
    assert len(issues) == 1 and "write momentum=0.9" in str(issues[0])
    assert lint("mindspore.nn.BatchNorm2d", {"num_features": 3}) == []  # 0.9 and 0.1 agree


def test_lint_acknowledged_and_unknown_ids():
    kwargs = {"in_channels": 3, "out_channels": 4, "kernel_size": 3, "pad_mode": "pad", "has_bias": False}
    assert lint("mindspore.nn.Conv2d", kwargs, {"conv2d-has-bias-default"}) == []
    issues = lint("mindspore.nn.Conv2d", kwargs, {"conv2d-has-bias-defualt"})
    assert "did you mean 'conv2d-has-bias-default'" in str(issues[0])


def test_lint_equal_defaults_under_other_names_are_quiet():
    assert lint("mindspore.nn.Conv2d", {"pad_mode": "pad", "has_bias": True}) == []  # group=1 == groups=1
    assert lint("mindspore.nn.Dropout", {}) == []  # keep_prob=0.5 keeps what p=0.5 drops


def test_lint_unsupported_on_device():
    issues = lint("mindspore.mint.nn.Conv2d", {"in_channels": 3}, device="CPU")
    assert [i.entry_id for i in issues] == ["mint-conv2d-cpu-unsupported"]
    assert lint("mindspore.mint.nn.Conv2d", {"in_channels": 3}, device="Ascend") == []
