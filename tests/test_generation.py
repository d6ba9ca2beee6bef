"""parity.check_generation: greedy decoding on both sides, every step's logits judged.

The pair is a small causal language model written in both frameworks with the same parameter
names: token embedding, a causal running mean of the embeddings (the context), tanh, a head. Its
cache is the running sum, which makes a cached step compute what the whole sequence would. A real
Hugging Face model is checked against its own translation-free twin in tests of the catalogue.
"""

from __future__ import annotations

import mindspore as ms
import numpy as np
import pytest
import torch
from mindspore import nn as msnn
from mindspore import ops

import parity
from parity import ParityMismatch, ParityUsageError

VOCAB, HIDDEN = 24, 16


class TorchLM(torch.nn.Module):
    """Hugging Face's conventions: ``model(input_ids=..., past_key_values=..., use_cache=...)`` returns
    an object with ``.logits`` and ``.past_key_values``."""

    def __init__(self, scale: float = 1.0):
        super().__init__()
        self.embed = torch.nn.Embedding(VOCAB, HIDDEN)
        self.mix = torch.nn.Linear(HIDDEN, HIDDEN)
        self.head = torch.nn.Linear(HIDDEN, VOCAB)
        self.scale = scale

    class Out:
        def __init__(self, logits, past):
            self.logits, self.past_key_values = logits, past

    def forward(self, input_ids, past_key_values=None, use_cache=False):
        x = self.embed(input_ids)
        total, count = (
            past_key_values if past_key_values is not None else (torch.zeros(x.shape[0], 1, HIDDEN), torch.zeros(()))
        )
        sums = total + torch.cumsum(x, dim=1)
        counts = count + torch.arange(1, x.shape[1] + 1, dtype=x.dtype)[None, :, None]
        logits = self.head(torch.tanh(self.mix(sums / counts) * self.scale))
        past = (sums[:, -1:, :], count + x.shape[1]) if use_cache else None
        return self.Out(logits, past)


class MsLM(msnn.Cell):
    """The MindSpore twin; ``scale`` != 1 is a fault after ``mix``; ``bias_token`` nudges one
    token's logit by a relative ``nudge`` (a rounding-level difference)."""

    def __init__(self, scale: float = 1.0, bias_token: int = -1, nudge: float = 0.0):
        super().__init__()
        self.embed = msnn.Embedding(VOCAB, HIDDEN)
        self.mix = msnn.Dense(HIDDEN, HIDDEN)
        self.head = msnn.Dense(HIDDEN, VOCAB)
        self.scale = scale
        factor = np.ones(VOCAB, np.float32)
        if bias_token >= 0:
            factor[bias_token] += nudge
        self.factor = ms.Tensor(factor)

    def construct(self, input_ids, total=None, count=None):
        x = self.embed(input_ids)
        if total is None:
            total, count = ops.zeros((x.shape[0], 1, HIDDEN), ms.float32), ms.Tensor(0.0, ms.float32)
        sums = total + ops.cumsum(x, axis=1)
        counts = count + ops.arange(1, x.shape[1] + 1, dtype=ms.float32).reshape(1, -1, 1)
        logits = self.head(ops.tanh(self.mix(sums / counts) * self.scale))
        logits = logits * self.factor
        return logits, sums[:, -1:, :], count + x.shape[1]


def ms_step(model, ids, cache):
    """The MindSpore side's cache convention: (logits, cache) from (ids, cache)."""
    logits, total, count = model(ids) if cache is None else model(ids, *cache)
    return logits, (total, count)


def _pair(**ms_kwargs):
    torch.manual_seed(0)
    return MsLM(**ms_kwargs), TorchLM()


PROMPT = parity.randint((3, 5), 0, VOCAB)


@pytest.mark.parametrize("use_cache", [False, True], ids=["whole-sequence", "cache"])
def test_the_same_model_generates_the_same_tokens(use_cache):
    ms_model, torch_model = _pair()
    result = parity.check_generation(
        ms_model, torch_model, PROMPT, max_new_tokens=6, use_cache=use_cache, ms_step=ms_step if use_cache else None
    )
    assert result.passed and result.first_difference is None
    assert result.ms_tokens.shape == result.torch_tokens.shape == (3, 6)
    assert (result.ms_tokens == result.torch_tokens).all()
    assert len(result.comparisons) == 6 and all(c.torch_shape == (3, VOCAB) for c in result.comparisons)
    assert str(result).startswith("ok: mindspore MsLM <-> torch TorchLM")


def test_tokens_follow_the_models_own_choices():
    """Greedy decoding for real: the tokens are PyTorch's argmax at each step, and they vary."""
    ms_model, torch_model = _pair()
    result = parity.check_generation(ms_model, torch_model, np.array([[1, 2, 3]], np.int64), max_new_tokens=4)
    sequence = torch.tensor([[1, 2, 3]])
    expected = []
    for _ in range(4):
        with torch.no_grad():
            token = int(torch_model(sequence).logits[0, -1].argmax())
        expected.append(token)
        sequence = torch.cat([sequence, torch.tensor([[token]])], dim=1)
    assert result.torch_tokens.tolist() == [expected]


def test_a_fault_fails_naming_step_row_tokens_and_layer():
    ms_model, torch_model = _pair(scale=1.3)
    with pytest.raises(ParityMismatch) as info:
        parity.check_generation(ms_model, torch_model, PROMPT, max_new_tokens=4)
    message = str(info.value)
    result = info.value.result
    assert not result.passed
    assert message.startswith("MindSpore and PyTorch do not generate the same!")
    assert "Divergence: first at step 1 of 4" in message
    assert "Greatest absolute difference" in message and "Tolerance:" in message
    assert "Tokens (rows x steps):" in message
    # The head is fed a different input: the divergence starts at 'mix' (scaled after it in the
    # Cell's own code) or in the root's code; never at the embedding.
    assert "Layer: first divergence" in message and "'embed'" not in message.split("Layer:")[1].splitlines()[0]
    assert "Reproduce:" in message and "parity.check_generation" in message


def test_a_token_that_differs_beyond_the_envelope_names_both_tokens():
    ms_model, torch_model = _pair(bias_token=7, nudge=5.0)  # token 7's logit six times as large
    with pytest.raises(ParityMismatch) as info:
        parity.check_generation(ms_model, torch_model, PROMPT, max_new_tokens=3)
    result = info.value.result
    step, row = result.first_difference
    d = result.differences[0]
    assert not d.near_tie and d.ms_token == 7 and d.torch_token != 7
    assert f"Step {step}, row {row}: MindSpore chose token 7, PyTorch token {d.torch_token}" in str(info.value)
    assert "no near-tie" in str(info.value)


def test_a_near_tie_is_reported_not_failed():
    """Two tokens whose logits tie exactly in PyTorch: MindSpore's rounding-level nudge picks the
    other. PyTorch's own envelope could pick either, so the check passes and says so. Where the
    tokens part first is MindSpore's rounding of the tie on the CPU at hand."""
    ms_model, torch_model = _pair(bias_token=5, nudge=2e-7)
    with torch.no_grad():  # rows 4 and 5 of the head the same: their logits tie, PyTorch picks 4
        torch_model.head.weight[5] = torch_model.head.weight[4]
        torch_model.head.bias[5] = torch_model.head.bias[4]
        torch_model.head.bias[4] += 10.0
        torch_model.head.bias[5] += 10.0
    result = parity.check_generation(ms_model, torch_model, PROMPT, max_new_tokens=3)
    assert result.passed
    assert result.near_ties and result.near_ties == result.differences
    tie = result.near_ties[0]
    assert result.first_difference == (tie.step, tie.row)
    assert all((t.torch_token, t.ms_token) == (4, 5) and t.gap <= t.allowed for t in result.near_ties)
    assert "near-tie" in str(result)


@pytest.mark.parametrize(
    "prompt, match",
    [
        (parity.randn((2, 4)), "one integer array of token ids"),
        (np.zeros((4,), np.int64), "one integer array of token ids"),
        (np.zeros((0, 3), np.int64), "one integer array of token ids"),
        ((np.zeros((1, 3), np.int64), np.zeros((1, 3), np.int64)), "one integer array of token ids"),
    ],
)
def test_a_prompt_that_is_not_token_ids_is_refused(prompt, match):
    ms_model, torch_model = _pair()
    with pytest.raises(ParityUsageError, match=match):
        parity.check_generation(ms_model, torch_model, prompt)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"max_new_tokens": 0}, "max_new_tokens must be an integer >= 1"),
        ({"max_new_tokens": True}, "max_new_tokens must be an integer >= 1"),
        ({"use_cache": True}, "needs ms_step"),
        ({"ms_step": 3}, "ms_step must be a function"),
        ({"use_cache": "yes", "ms_step": ms_step}, "use_cache must be True or False"),
    ],
)
def test_bad_arguments_are_refused(kwargs, match):
    ms_model, torch_model = _pair()
    with pytest.raises(ParityUsageError, match=match):
        parity.check_generation(ms_model, torch_model, PROMPT, **kwargs)


def test_swapped_models_are_refused():
    ms_model, torch_model = _pair()
    with pytest.raises(ParityUsageError, match="swapped"):
        parity.check_generation(torch_model, ms_model, PROMPT)


def test_models_are_left_in_their_modes():
    ms_model, torch_model = _pair()
    ms_model.set_train(True)
    torch_model.train()
    parity.check_generation(ms_model, torch_model, PROMPT, max_new_tokens=1)
    assert ms_model.training and torch_model.training


def test_the_fixture_offers_check_generation_and_records_it(pytester):
    pytester.makepyfile(
        test_gen=f"""
        import numpy as np
        import sys
        sys.path.insert(0, {str(__import__("pathlib").Path(__file__).parent)!r})
        from test_generation import _pair, PROMPT

        def test_gen(parity):
            ms_model, torch_model = _pair()
            result = parity.check_generation(ms_model, torch_model, PROMPT, max_new_tokens=2)
            assert result.passed
    """
    )
    result = pytester.runpytest("--parity", "--parity-report=gen.jsonl", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    from parity.nightly.records import read_records

    _, checks = read_records(pytester.path / "gen.jsonl")
    (record,) = checks
    assert record["call"] == "check_generation" and record["verdict"] == "pass"
    assert record["generation"]["steps"] == 2 and len(record["generation"]["torch_tokens"]) == 3
    assert [t["step"] for t in record["tensors"]] == [1, 2]


def test_the_readme_example():
    ms_lm, torch_lm = _pair()
    vocab = VOCAB
    result = parity.check_generation(ms_lm, torch_lm, parity.randint((3, 5), 0, vocab), max_new_tokens=6)
    assert result.ms_tokens.shape == result.torch_tokens.shape == (3, 6)
    assert result.first_difference is None and result.near_ties == []


def test_a_session_in_both_modes_decodes_in_pynative_and_says_so():
    from parity.engine.generation.run import run_generation
    from parity.engine.settings import Settings

    ms_model, torch_model = _pair()
    result = run_generation(ms_model, torch_model, PROMPT, max_new_tokens=1, settings=Settings(mode="both"))
    assert result.passed and any(note.startswith("decoded in PYNATIVE mode only") for note in result.notes)
