"""Examples of the documentation (docs/how-to/translate.md, docs/explanation/registry.md), with what
they say they print or raise. Every example of the site also runs as written, from its page:
tests/docsite/test_examples.py."""

import pytest
import torch

import parity
import parity.mismatch_checks


@pytest.mark.unperturbed(
    "the example as written: its BatchNorm weight gradient came to 1.07x its envelope under a 4-ulp move"
)
def test_translate_example():
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.GELU())
    cell = parity.translate(model)
    parity.check(cell, model, parity.randn((2, 3, 16, 16)), reference="float64")


def test_translate_with_inputs_example():
    import mindspore
    import numpy as np

    from parity.translation.trace.concrete import GuardFailed

    class Pad(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(8, 8)

        def forward(self, x, mask=None):
            if x.ndim == 2:  # a guard: the rank the trace saw
                x = x.unsqueeze(0)
            if mask is not None:
                x = x.masked_fill(~mask.bool().unsqueeze(-1), 0.0)
            return self.fc(x)

    model = Pad()
    inputs = {"x": parity.randn((2, 5, 8)), "mask": parity.randint((2, 5), 0, 2)}
    cell = parity.translate(model, inputs)
    assert parity.check(cell, model, inputs).passed
    with pytest.raises(
        GuardFailed, match=r"\.ndim of getattr_1 was 3 \(at .*\(if x\.ndim == 2:.*\)\); this call gives 2"
    ):
        cell(mindspore.Tensor(np.ones((5, 8), np.float32)), mindspore.Tensor(np.ones(5, np.int64)))


@pytest.mark.parity_mismatches(torch_api="torch.nn.Conv2d")
def test_conv_entries_still_hold(parity_mismatch):
    assert parity.mismatch_checks.selftest(parity_mismatch).ok
