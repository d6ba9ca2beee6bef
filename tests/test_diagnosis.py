"""Likely causes without false leads: known mismatches judged on the shapes each layer saw, only
at layers that can explain the divergence; registry hints on weights that cannot be paired; layer
rows whose outputs differ in shape. The helpers and the diagnosis's arithmetic on layer tables made
by hand need no framework: tests/registry/test_diagnosis.py.

The end-to-end regression is mindcv's ResNet-50 convention against torchvision's layout: the stem
max-pool (``pad_mode='same'``) is the one cause, none of the 36 1x1 convolutions (``pad_mode='same'``
too, which pads nothing for a 1x1 kernel) is."""

from __future__ import annotations

import mindspore  # noqa: F401  (both frameworks before parity, as everywhere in tests/)
import pytest
import torch
from mindspore import nn as msnn

import parity
from cases.models import resnet, resnet_mindcv
from parity.engine.check import run_check
from parity.engine.settings import Settings
from parity.registry import rules
from parity.registry.diagnosis import Seen, diagnose, likely_causes, parameter_causes

same_pads_differ = rules.HELPERS["same_pads_differ"]


# ---------------------------------------------------------------- MindSpore 'same' vs PyTorch padding


def test_same_pads_differ_agrees_with_mindspore_and_pytorch():
    """The helper's verdicts are what the frameworks compute: equal outputs exactly where it says so."""
    import numpy as np

    for size in (7, 8, 9, 10):
        x = np.random.default_rng(size).standard_normal((1, 2, size, size)).astype(np.float32)
        ms_out = msnn.MaxPool2d(3, 2, pad_mode="same")(mindspore.Tensor(x)).asnumpy()
        torch_out = torch.nn.MaxPool2d(3, 2, padding=1)(torch.from_numpy(x)).numpy()
        equal = ms_out.shape == torch_out.shape and np.array_equal(ms_out, torch_out)
        assert equal is not same_pads_differ(x.shape, 3, 2, 1, 1), size


def test_same_transpose_differs_agrees_with_mindspore_and_pytorch():
    """Transposed convolutions: 'same' crops the full result floor(c/2) at the start, the rest at the
    end; PyTorch crops padding at the start and padding - output_padding at the end."""
    import numpy as np

    differs = rules.HELPERS["same_transpose_differs"]
    x = np.random.default_rng(0).standard_normal((1, 2, 5, 5)).astype(np.float32)
    for kernel, stride, padding, output_padding in [
        (2, 2, 0, 0),
        (4, 2, 1, 0),
        (3, 1, 1, 0),
        (3, 2, 1, 0),
        (3, 2, 1, 1),
        (5, 2, 2, 1),
        (1, 2, 0, 1),
        (2, 1, 0, 0),
    ]:
        module = torch.nn.ConvTranspose2d(2, 3, kernel, stride, padding, output_padding, bias=False)
        cell = msnn.Conv2dTranspose(2, 3, kernel, stride, pad_mode="same")
        cell.weight.set_data(mindspore.Tensor(module.weight.detach().numpy()))
        ms_out, torch_out = cell(mindspore.Tensor(x)).asnumpy(), module(torch.from_numpy(x)).detach().numpy()
        equal = ms_out.shape == torch_out.shape and np.allclose(ms_out, torch_out, atol=1e-5)
        assert equal is not differs((kernel,) * 2, (stride,) * 2, (1, 1), (padding,) * 2, (output_padding,) * 2), (
            kernel,
            stride,
            padding,
            output_padding,
        )


def test_an_upsampling_transposed_convolution_is_no_candidate():
    """UNet's ConvTranspose2d(kernel_size=2, stride=2) and DCGAN's (4, 2, padding=1) compute what
    MindSpore's default pad_mode='same' computes; (3, 2, padding=1) does not."""

    def leads(kernel, stride, padding):
        pair = msnn.Conv2dTranspose(4, 4, kernel, stride), torch.nn.ConvTranspose2d(4, 4, kernel, stride, padding)
        return [d.entry.id for d in diagnose(*pair) if d.score >= 0.9 and "pad-mode" in d.entry.id]

    assert leads(2, 2, 0) == [] and leads(4, 2, 1) == []
    assert leads(3, 2, 1) == ["conv2d-transpose-pad-mode-default"]


# ---------------------------------------------------------------- diagnosis judged on what the layers saw


def _stem_pair():
    """A 1x1 conv, a 3x3 strided conv and a ResNet stem max-pool, MindSpore convention vs PyTorch's."""
    ms_net = msnn.SequentialCell(
        [
            msnn.Conv2d(3, 4, 1),
            msnn.Conv2d(4, 4, 3, stride=2, pad_mode="pad", padding=1),
            msnn.MaxPool2d(3, 2, pad_mode="same"),
        ]
    )
    torch_net = torch.nn.Sequential(
        torch.nn.Conv2d(3, 4, 1, bias=False),
        torch.nn.Conv2d(4, 4, 3, stride=2, padding=1, bias=False),
        torch.nn.MaxPool2d(3, 2, padding=1),
    )
    return ms_net, torch_net


def test_a_one_by_one_convolution_is_no_candidate_even_without_shapes():
    found = [d.entry.id for d in diagnose(*_stem_pair()) if d.score >= 0.9]
    assert found == ["maxpool2d-pad-mode-same"]


def test_the_max_pool_is_judged_on_the_shape_it_saw():
    seen = lambda size: {"2": Seen("2", ((2, 4, size, size),), diverged=True)}  # noqa: E731
    assert likely_causes(*_stem_pair(), at="2", seen=seen(16)) == [
        "known mismatch 'maxpool2d-pad-mode-same' at '2' (MindSpore pad_mode='SAME' vs PyTorch padding=1; "
        "input shape (2, 4, 16, 16)); fix: pass pad_mode='pad', padding=1"
    ]
    assert likely_causes(*_stem_pair(), at="2", seen=seen(17)) == []  # 'same' pads (1, 1) there


def test_a_layer_seen_to_agree_explains_nothing():
    ms_net = msnn.SequentialCell([msnn.Conv2d(3, 4, 3), msnn.GELU()])
    torch_net = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, bias=False), torch.nn.GELU())
    shapes = ((2, 3, 8, 8),), ((2, 4, 8, 8),)
    gelu_failed = {"0": Seen("0", shapes[0], False), "1": Seen("1", shapes[1], True)}
    causes = likely_causes(ms_net, torch_net, at="1", seen=gelu_failed)
    assert [c.split("'")[1] for c in causes] == ["gelu-approximate-default"]
    nothing_failed = {"0": Seen("0", shapes[0], False), "1": Seen("1", shapes[1], False)}
    causes = likely_causes(ms_net, torch_net, seen=nothing_failed)  # no layer to blame: every candidate
    assert sorted(c.split("'")[1] for c in causes) == ["conv2d-pad-mode-default", "gelu-approximate-default"]


def test_layers_pair_as_the_check_aligned_them():
    class MSNet(msnn.Cell):
        def __init__(self):
            super().__init__()
            self.pool_b = msnn.MaxPool2d(3, 1, pad_mode="pad", padding=1)
            self.pool_a = msnn.MaxPool2d(3, 2, pad_mode="same")

    class TorchNet(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.first = torch.nn.MaxPool2d(3, 2, padding=1)
            self.second = torch.nn.MaxPool2d(3, 1, padding=1)

    seen = {"first": Seen("pool_a", ((1, 2, 8, 8),), True), "second": Seen("pool_b", ((1, 2, 4, 4),), False)}
    found = [d for d in diagnose(MSNet(), TorchNet(), seen=seen) if d.score >= 0.9]
    assert [(d.entry.id, d.path, d.ms_path) for d in found] == [("maxpool2d-pad-mode-same", "first", "pool_a")]


def test_running_statistics_of_a_layer_fed_alike_keep_its_cause():
    """Train mode, BatchNorm momentum: every layer's outputs agree, only the running statistics
    differ; the cause at that BatchNorm stays, the LeakyReLU's slope (seen to agree on positive
    inputs) is left out."""
    ms_net = msnn.SequentialCell(
        [msnn.LeakyReLU(), msnn.Conv2d(3, 4, 3, pad_mode="pad", padding=1), msnn.BatchNorm2d(4, momentum=0.5)]
    )
    torch_net = torch.nn.Sequential(
        torch.nn.LeakyReLU(), torch.nn.Conv2d(3, 4, 3, padding=1, bias=False), torch.nn.BatchNorm2d(4)
    )
    assert {d.entry.id for d in diagnose(ms_net, torch_net) if d.score >= 0.9} == {
        "leakyrelu-negative-slope-default",
        "batchnorm2d-momentum-convention",
    }
    with pytest.raises(parity.ParityMismatch) as raised:
        run_check(ms_net, torch_net, parity.uniform((2, 3, 6, 6), 0.1, 1.0), train=True, grads=False)
    assert [c.split("'")[1:4] for c in _likely_causes(str(raised.value))] == [
        ["batchnorm2d-momentum-convention", " at ", "2"]
    ]


# ---------------------------------------------------------------- registry hints on usage errors


def test_an_unmapped_bias_names_has_bias():
    with pytest.raises(parity.ParityUsageError) as raised:
        run_check(msnn.Conv2d(120, 240, 4), torch.nn.Conv2d(120, 240, 4), parity.randn((2, 120, 12, 12)))
    text = str(raised.value)
    assert text.startswith("Unmapped parameters: in MindSpore only []; in PyTorch only ['bias']")
    assert text.splitlines()[-1] == (
        "Likely cause: known mismatch 'conv2d-has-bias-default' at '(root)' "
        "(MindSpore has_bias=False vs PyTorch bias=True); fix: pass has_bias=True"
    )
    assert "conv2d-pad-mode-default" not in text  # padding does not explain a missing parameter


def test_a_weight_of_another_shape_names_group():
    with pytest.raises(parity.ParityUsageError) as raised:
        run_check(
            msnn.Conv2d(4, 4, 3, pad_mode="pad", padding=1, has_bias=True),
            torch.nn.Conv2d(4, 4, 3, padding=1, groups=2),
            parity.randn((2, 4, 6, 6)),
        )
    text = str(raised.value)
    assert text.startswith("Parameter shapes differ")
    assert text.splitlines()[-1] == (
        "Likely cause: known mismatch 'conv2d-groups-name' at '(root)' (MindSpore "
        "group=1 vs PyTorch groups=2); fix: pass group=2"
    )


def test_unpaired_weights_without_a_known_cause_get_no_hint():
    with pytest.raises(parity.ParityUsageError) as raised:
        run_check(msnn.Dense(4, 3), torch.nn.Linear(4, 5), parity.randn((2, 4)))
    assert "Likely cause" not in str(raised.value)


def test_parameter_causes_only_where_the_parameters_do_not_line_up():
    from parity.backends import mindspore as msb
    from parity.backends import torch as tb

    ms_net = msnn.SequentialCell([msnn.Conv2d(3, 4, 3, has_bias=True), msnn.Conv2d(4, 4, 3)])
    torch_net = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.Conv2d(4, 4, 3))
    causes = parameter_causes(ms_net, torch_net, msb.slots(ms_net), tb.slots(torch_net))
    assert causes == [
        "known mismatch 'conv2d-has-bias-default' at '1' (MindSpore has_bias=False vs "
        "PyTorch bias=True); fix: pass has_bias=True"
    ]


# ---------------------------------------------------------------- layer rows whose shapes differ


def test_a_failure_message_shows_the_shapes_a_layer_changed():
    ms_net = msnn.SequentialCell([msnn.ReLU(), msnn.MaxPool2d(2), msnn.Flatten()])  # stride 1 by default
    torch_net = torch.nn.Sequential(torch.nn.ReLU(), torch.nn.MaxPool2d(2), torch.nn.Flatten())
    with pytest.raises(parity.ParityMismatch) as raised:
        run_check(ms_net, torch_net, parity.randn((2, 3, 8, 8)), grads=False)
    text = str(raised.value)
    assert (
        "  FAIL       1                            MaxPool2d              shapes differ: (2, 3, 7, 7) vs "
        "(2, 3, 4, 4)   <- first divergence" in text
    )
    assert "max abs diff inf" not in text
    assert "Likely cause: known mismatch 'maxpool2d-stride-default' at '1'" in text


# ---------------------------------------------------------------- regression: mindcv's ResNet-50 stem


def _likely_causes(text):
    return [line for line in text.splitlines() if line.startswith("Likely cause:")]


def test_mindcv_resnet50_blames_the_stem_max_pool_alone():
    # localize=True captures the layers in the check's own pass; the default ("auto") captures the
    # same layers in one extra pass (as in the small pairs above) and costs this model twice as much.
    with pytest.raises(parity.ParityMismatch) as raised:
        run_check(
            resnet_mindcv.ms_resnet50(),
            resnet.torch_resnet50(),
            parity.randn((2, 3, 32, 32)),
            grads=False,
            localize=True,
        )
    text = str(raised.value)
    verdict, _ = raised.value.result.layers.first("forward")
    assert (verdict.path, verdict.ms_path) == ("maxpool", "max_pool")
    assert "Divergence: first at forward output of 'maxpool' (MaxPool2d <-> MaxPool2d)" in text
    assert _likely_causes(text) == [
        "Likely cause: known mismatch 'maxpool2d-pad-mode-same' at 'maxpool' (MindSpore 'max_pool') (MindSpore "
        "pad_mode='SAME' vs PyTorch padding=1; input shape (2, 64, 16, 16)); fix: pass pad_mode='pad', padding=1; "
        "confirmed: PyTorch's layer with padding=0, ceil_mode=False, its input padded [0, 1, 0, 1] as MindSpore "
        "pads it reproduces MindSpore's output"
    ]


def test_without_layer_capture_candidates_that_no_input_shows_are_dropped():
    with pytest.raises(parity.ParityMismatch) as raised:
        run_check(*_stem_pair(), parity.randn((2, 3, 16, 16)), grads=False, localize=False, settings=Settings())
    assert raised.value.result.layers is None
    assert _likely_causes(str(raised.value)) == [
        "Likely cause: known mismatch 'maxpool2d-pad-mode-same' at '2' (MindSpore pad_mode='SAME' vs PyTorch "
        "padding=1); fix: pass pad_mode='pad', padding=1"
    ]
