"""A refusal of parity.translate lists every blocker in the whole model at once, grouped by what
blocks, with how many modules each blocks: one refusal no longer hides the next."""

from __future__ import annotations

import importlib.util

import mindspore
import numpy as np
import pytest
import torch

import parity
from parity import ParityUnsupported


class UsesGeqrf(torch.nn.Module):
    def forward(self, x):
        return torch.geqrf(x)[0].real


class UsesAiry(torch.nn.Module):
    def forward(self, x):
        return torch.special.airy_ai(x.clamp(-0.5, 0.5))


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.qr = UsesGeqrf()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        return self.lin(self.qr(x))


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = torch.nn.ModuleList([Block() for _ in range(3)])
        self.odd = UsesAiry()
        self.rnn = torch.nn.LSTM(4, 3, proj_size=2)

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return self.odd(x)


def test_every_blocker_is_listed_with_the_modules_it_blocks():
    with pytest.raises(ParityUnsupported) as info:
        parity.translate(Model())
    message = str(info.value)
    first, *rest = message.splitlines()
    # geqrf and the .real read after it block the three blocks; airy_ai and the LSTM's projection one each
    assert first.startswith("translate() cannot translate 5 module(s): 4 blocker(s), every one found")
    assert "geqrf" in rest[0] and "test_translate_blockers.py:" in rest[0]
    assert rest[1].strip() == (
        "in 3 module(s): blocks.0.qr (test_translate_blockers.UsesGeqrf), blocks.1.qr "
        "(test_translate_blockers.UsesGeqrf), blocks.2.qr (test_translate_blockers.UsesGeqrf)"
    )
    assert (
        any("airy_ai" in line for line in rest) and "in 1 module(s): odd (test_translate_blockers.UsesAiry)" in message
    )
    assert "proj_size=2 has no MindSpore counterpart" in message and "in 1 module(s): rnn (torch.nn.LSTM)" in message
    assert len(info.value.items) == 5 and len(info.value.groups()) == 4


def test_one_blocker_reads_as_it_was_raised():
    net = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.LSTM(4, 3, proj_size=2))
    with pytest.raises(ParityUnsupported, match=r"^1 \(torch\.nn\.LSTM\): proj_size=2 has no MindSpore counterpart"):
        parity.translate(net)


@pytest.mark.skipif(importlib.util.find_spec("transformers") is None, reason="transformers is not installed")
def test_hugging_face_llama_translates_and_its_call_names_what_stops_it():
    from cases.models.llama import torch_llama

    # the RMSNorms (Tensor.to, .pow, .dtype), the rotary embedding (.device, cos, sin), the decoder
    # layers (forward(..., **kwargs)) and the LlamaModel (traced when called: input_ids=None by
    # default) translate (tests/test_translate_fx.py); what is left shows when it runs
    cell = parity.translate(torch_llama())
    ids, mask = mindspore.Tensor(np.ones((1, 4), np.int64)), mindspore.Tensor(np.ones((1, 4), np.int64))
    with pytest.raises(
        ParityUnsupported,
        match=r"^model \(transformers\.models\.llama\.modeling_llama\.LlamaModel\): "
        r"torch\.fx cannot trace forward: .*control flow .*masking_utils\.py",
    ):
        cell(ids, mask)
