"""The README's examples, run as written (the fixture example is in test_plugin.py, the standalone
repro's in test_repro.py)."""

import pytest
import torch
import parity
import parity.mismatch_checks


def test_translate_example():
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.GELU())
    cell = parity.translate(model)
    parity.check(cell, model, parity.randn((2, 3, 16, 16)), reference="float64")


@pytest.mark.parity_mismatches(torch_api="torch.nn.Conv2d")
def test_conv_entries_still_hold(parity_mismatch):
    assert parity.mismatch_checks.selftest(parity_mismatch).ok
