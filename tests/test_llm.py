"""A LLaMA written by hand in MindSpore against transformers' LlamaForCausalLM (``cases/llm.py``):
the pair agrees within the default tolerances with every layer compared, and the interleaved
rotary layout fails at the first block's attention, citing the known mismatch."""

from __future__ import annotations

import importlib.util

import mindspore  # noqa: F401  (both frameworks before parity, as everywhere in tests/)
import numpy as np
import pytest
import torch

import parity
from parity import ParityMismatch
from parity.catalogue import build

if importlib.util.find_spec("transformers") is None:
    pytest.skip("transformers is not installed (make, or pip install -e .[zoo])", allow_module_level=True)

from cases import llm  # noqa: E402
from cases.models.zoo_compat import import_quietly  # noqa: E402

ROPE = "rope-rotate-half-vs-interleaved"


def _check(case, **kwargs):
    ms_cell, torch_module = build(case)
    return parity.check(ms_cell, torch_module, case.inputs, **{**case.check_kwargs(), **kwargs})


def _divergence_line(message: str) -> str:
    return next(line for line in message.splitlines() if line.startswith("Divergence: "))


def test_the_pair_maps_every_weight_by_hugging_face_names():
    ms_cell, torch_module = build(llm.LlamaHF)
    ms_names = {p.name for p in ms_cell.get_parameters()}
    assert ms_names == set(torch_module.state_dict())
    assert {"model.embed_tokens.weight", "model.layers.0.self_attn.q_proj.weight", "lm_head.weight"} <= ms_names


def test_the_pair_agrees_with_every_layer_compared_keywords_included():
    result = _check(llm.LlamaHF, localize=True)
    assert result.worst_margin < 1.0
    # a layer beyond the tolerance by another CPU's rounding reads "noise" (the check passed)
    assert {v.status for v in result.layers.forward + result.layers.backward} <= {"ok", "noise"}
    attention = next(v for v in result.layers.forward if v.path == "model.layers.0.self_attn")
    # Called with keywords only: hidden_states, the additive mask, cos and sin, compared by name;
    # transformers' position_ids and cache_position have no MindSpore counterpart.
    assert attention.in_shapes == ((2, 16, 32), (2, 1, 16, 16), (1, 16, 8), (1, 16, 8))
    assert len(attention.out_shapes) == 2  # (output, attention weights)


def test_the_interleaved_rotary_layout_fails_at_the_first_attention_and_cites_the_registry():
    with pytest.raises(ParityMismatch) as info:
        _check(llm.LlamaInterleavedRotary)
    message = str(info.value)
    verdict, where = info.value.result.layers.first("forward")
    assert verdict.path == "model.layers.0.self_attn"
    assert "'model.layers.0.self_attn.v_proj'" in where and "'model.layers.0.self_attn.o_proj'" in where
    assert "in the code of 'model.layers.0.self_attn'" in _divergence_line(message)
    assert f"Likely cause: known mismatch '{ROPE}' at 'model.layers.0.self_attn'" in message
    assert "'model.layers.1.self_attn'" not in next(line for line in message.splitlines() if ROPE in line)


def test_the_self_test_pair_computes_what_transformers_computes():
    """``TorchRotaryQuery`` (the entry's self-test, which cannot import transformers) against
    transformers' own LlamaRotaryEmbedding and apply_rotary_pos_emb, bit for bit."""
    from parity.mismatch_checks.llm_pairs import TorchRotaryQuery

    llama = import_quietly("transformers.models.llama.modeling_llama")
    config = import_quietly("transformers").LlamaConfig(hidden_size=16, num_attention_heads=2, rope_theta=10000.0)
    torch.manual_seed(0)
    ours = TorchRotaryQuery(hidden_size=16, num_heads=2)
    x = torch.randn(2, 6, 16)
    q = ours.q_proj(x).view(2, 6, 2, 8).transpose(1, 2)
    cos, sin = llama.LlamaRotaryEmbedding(config)(x, torch.arange(6)[None])
    theirs, _ = llama.apply_rotary_pos_emb(q, q, cos, sin)
    np.testing.assert_array_equal(ours(x).detach().numpy(), theirs.detach().numpy())


# Generation: greedy decoding of the pair, transformers' model as it is on PyTorch's side.


def _generate(case, **kwargs):
    from cases.models.llama import ms_generation_step

    ms_cell, torch_module = build(case)
    return parity.check_generation(
        ms_cell,
        torch_module,
        parity.randint((2, 6), 0, llm.VOCAB),
        max_new_tokens=5,
        ms_step=ms_generation_step,
        **kwargs,
    )


def test_the_pair_generates_the_same_tokens():
    result = _generate(llm.LlamaHF)
    assert result.passed and result.first_difference is None
    assert result.torch_tokens.shape == (2, 5) and (result.ms_tokens == result.torch_tokens).all()
    assert result.worst_margin < 0.5


def test_the_wrong_rotary_layout_fails_generation_at_the_first_attention():
    with pytest.raises(ParityMismatch) as info:
        _generate(llm.LlamaInterleavedRotary)
    message = str(info.value)
    assert "Divergence: first at step 1 of 5" in message
    assert "Layer: first divergence" in message and "'model.layers.0.self_attn'" in message


# Hugging Face's GELUs: hidden_act "gelu" is erf, "gelu_new" and "gelu_pytorch_tanh" tanh;
# mindspore.nn.GELU() is tanh.

GELUS = {
    "gelu": ("hf-gelu-exact-vs-mindspore-tanh-default", False),
    "gelu_new": ("hf-gelu-new-tanh-vs-mindspore-exact", True),
    "gelu_pytorch_tanh": ("hf-gelu-pytorch-tanh-vs-mindspore-exact", True),
}


@pytest.mark.parametrize(
    "hidden_act, ours", [("gelu", "TorchGELU"), ("gelu_new", "TorchNewGELU"), ("gelu_pytorch_tanh", "TorchGELUTanh")]
)
def test_the_gelu_self_test_pairs_compute_what_transformers_computes(hidden_act, ours):
    from parity.mismatch_checks import llm_pairs

    theirs = import_quietly("transformers.activations").ACT2FN[hidden_act]
    x = torch.randn(2, 6, 32, generator=torch.Generator().manual_seed(0)) * 3
    np.testing.assert_array_equal(getattr(llm_pairs, ours)()(x).numpy(), theirs(x).numpy())


def _mlp_pair(hidden_act: str, approximate: bool):
    from mindspore import nn

    class MLP(nn.Cell):
        def __init__(self):
            super().__init__()
            self.fc1, self.act, self.fc2 = nn.Dense(8, 32), nn.GELU(approximate=approximate), nn.Dense(32, 8)

        def construct(self, x):
            return self.fc2(self.act(self.fc1(x)))

    class TorchMLP(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1, self.fc2 = torch.nn.Linear(8, 32), torch.nn.Linear(32, 8)
            self.act = import_quietly("transformers.activations").ACT2FN[hidden_act]

        def forward(self, x):
            return self.fc2(self.act(self.fc1(x)))

    return MLP(), TorchMLP()


@pytest.mark.parametrize("hidden_act", list(GELUS))
def test_the_wrong_gelu_fails_at_the_activation_and_cites_the_registry(hidden_act):
    entry_id, right = GELUS[hidden_act]
    with pytest.raises(ParityMismatch) as info:
        parity.check(*_mlp_pair(hidden_act, not right), parity.randn((4, 6, 8), std=3.0))
    assert f"Likely cause: known mismatch '{entry_id}' at 'act'" in str(info.value)
    assert parity.check(*_mlp_pair(hidden_act, right), parity.randn((4, 6, 8), std=3.0)).passed
    assert [
        d.entry.id for d in parity.registry.diagnose(*_mlp_pair(hidden_act, right)) if d.entry.family == "llm"
    ] == []


# Masking with -inf where transformers' eager mask uses float32's smallest finite value.

MASK_FILL = "attention-mask-inf-vs-finfo-min"


def test_the_masked_attention_pair_computes_what_transformers_computes():
    """``TorchMaskedAttention`` against transformers' own eager mask and eager attention, bit for bit."""
    from parity.mismatch_checks.llm_pairs import TorchMaskedAttention

    llama = import_quietly("transformers.models.llama.modeling_llama")
    masking = import_quietly("transformers.masking_utils")
    ours = TorchMaskedAttention(hidden_size=16, num_heads=2, padding=2)
    x = torch.randn(2, 6, 16, generator=torch.Generator().manual_seed(0))
    q, k, v = (p(x).view(2, 6, 2, 8).transpose(1, 2) for p in (ours.q_proj, ours.k_proj, ours.v_proj))
    padding = torch.tensor([[0, 0, 1, 1, 1, 1], [1] * 6], dtype=torch.bool)
    mask = masking.eager_mask(batch_size=2, cache_position=torch.arange(6), kv_length=6, attention_mask=padding)
    module = torch.nn.Module()
    module.num_key_value_groups, module.training = 1, False
    theirs, _ = llama.eager_attention_forward(module, q, k, v, mask, scaling=8**-0.5)
    np.testing.assert_array_equal(ours(x).detach().numpy(), theirs.transpose(1, 2).detach().numpy())


def test_a_minus_inf_mask_fails_at_the_first_attention_and_cites_the_registry():
    ms_cell, torch_module = build(llm.LlamaHF)
    ms_cell.model.smallest = float("-inf")
    with pytest.raises(ParityMismatch) as info:
        parity.check(ms_cell, torch_module, llm.LlamaHF.inputs, **llm.LlamaHF.check_kwargs())
    assert info.value.result.layers.first("forward")[0].path == "model.layers.0.self_attn"
    assert f"Likely cause: known mismatch '{MASK_FILL}' at 'model'" in str(info.value)


def test_a_float16_minimum_mask_names_no_cause_at_the_attention_whose_own_error_passes():
    """Fed PyTorch's mask, the attention computes what PyTorch does: the attention entries the
    registry holds for it (scale, GQA repeat, RoPE layout) explain nothing and are not named."""
    ms_cell, torch_module = build(llm.LlamaHF)
    ms_cell.model.smallest = float(np.finfo(np.float16).min)
    with pytest.raises(ParityMismatch) as info:
        parity.check(ms_cell, torch_module, llm.LlamaHF.inputs, **llm.LlamaHF.check_kwargs())
    layers = info.value.result.layers
    attention = [v for v in layers.forward if v.path == "model.layers.0.self_attn"]
    assert attention and {v.own_status for v in attention} <= {"ok", "inherited"}, str(info.value)[-600:]
    named = [line for line in str(info.value).splitlines() if line.startswith("Likely cause:")]
    assert any(f"'{MASK_FILL}' at 'model'" in line for line in named), named
    assert not [line for line in named if "self_attn" in line], named


def test_the_mask_entry_is_cited_only_for_a_batch_of_several_sequences():
    from parity.registry.diagnosis import Seen

    ms_cell, torch_module = build(llm.LlamaHF)
    for batch, cited in ((2, True), (1, False)):
        seen = {"model": Seen("model", ((batch, 16),), True)}
        found = [d.path for d in parity.registry.diagnose(ms_cell, torch_module, seen=seen) if d.entry.id == MASK_FILL]
        assert found == (["model"] if cited else []), batch


# RMSNorm in float16: transformers squares in float32.


def _rmsnorm_pair(upcast: bool):
    from parity.mismatch_checks.llm_pairs import RMSNorm

    llama = import_quietly("transformers.models.llama.modeling_llama")
    return RMSNorm(64, 1e-6, dtype="float16", upcast=upcast), llama.LlamaRMSNorm(64, eps=1e-6).half()


def test_the_rmsnorm_pair_computes_what_transformers_computes():
    from parity.mismatch_checks.llm_pairs import TorchRMSNorm

    _, theirs = _rmsnorm_pair(True)
    x = (torch.rand(2, 6, 64, generator=torch.Generator().manual_seed(0)) * 600 - 300).half()
    np.testing.assert_array_equal(TorchRMSNorm(64, 1e-6, "float16")(x).detach().numpy(), theirs(x).detach().numpy())


def test_a_float16_rmsnorm_fails_and_cites_the_registry():
    inputs = parity.uniform((2, 6, 64), -300.0, 300.0, dtype="float16")
    with pytest.raises(ParityMismatch) as info:
        parity.check(*_rmsnorm_pair(False), inputs)
    assert "Likely cause: known mismatch 'rmsnorm-float32-upcast'" in str(info.value)
    assert parity.check(*_rmsnorm_pair(True), inputs).passed
