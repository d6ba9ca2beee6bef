"""A LLaMA-style decoder written by hand for MindSpore, as a migrator writes one against Hugging
Face transformers' ``LlamaForCausalLM``.

Classic ``mindspore.nn``/``mindspore.ops`` only (``mindspore.mint`` has no CPU kernels for most
of this), with Hugging Face's attribute and parameter names (``model.embed_tokens.weight``,
``model.layers.0.self_attn.q_proj.weight``, ..., ``lm_head.weight``), so that ``parity.check``
pairs every weight with no name map, and Hugging Face's call structure: the decoder layer calls
``self_attn(hidden_states=..., attention_mask=..., position_embeddings=...)`` with keyword
arguments, and the attention returns ``(output, weights)``.

What the MindSpore side must compute as transformers does (4.57.1, ``attn_implementation="eager"``):

- RMSNorm in float32, ``weight * x * rsqrt(mean(x**2) + eps)``;
- rotary embeddings in the ``rotate_half`` layout: element i of a head and element i + head_dim/2
  are a rotation's pair (``cos``/``sin`` are ``cat(freqs, freqs)``). ``ms_llama("interleaved")``
  has each attention rotate adjacent pairs instead, from the same ``cos``/``sin`` (the layout of
  Meta's original LLaMA and of ports from it): known mismatch ``rope-rotate-half-vs-interleaved``;
- grouped-query attention: each of the ``num_key_value_heads`` key/value heads serves
  ``num_attention_heads // num_key_value_heads`` query heads in turn (``repeat_kv``);
- one additive mask for causality and padding, ``0`` where a query may attend and the dtype's
  smallest finite value where it may not (not ``-inf``: a row with nothing to attend to, a left
  pad's, then softmaxes to uniform weights instead of NaN);
- SwiGLU: ``down_proj(silu(gate_proj(x)) * up_proj(x))``.

The model takes ``(input_ids, attention_mask)`` (int64, the mask 1 per real token and 0 per pad)
and returns ``{"logits": logits}``: transformers' model returns a ``CausalLMOutputWithPast``, a
dict whose one entry here is ``logits`` (no cache, no labels), and both sides' outputs are compared
by key. (``return_dict=False`` is no way out: transformers 4.57.1's ``LlamaForCausalLM`` then
reads ``.last_hidden_state`` off the tuple its inner model returns, and raises.)
"""

import mindspore as ms
import numpy as np
from mindspore import nn, ops

from .zoo_compat import import_quietly

VOCAB = 128
CONFIG = dict(
    vocab_size=VOCAB,
    hidden_size=32,
    intermediate_size=64,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    max_position_embeddings=64,
    rms_norm_eps=1e-6,
    rope_theta=10000.0,
)
ROTARY = ("half", "interleaved")


def llama_config():
    """A small transformers ``LlamaConfig``: 2 layers, hidden 32, 4 query heads over 2 key/value heads."""
    transformers = import_quietly("transformers")
    return transformers.LlamaConfig(**CONFIG, use_cache=False, attn_implementation="eager", tie_word_embeddings=False)


def torch_llama():
    """transformers' ``LlamaForCausalLM``, randomly initialised, in eval mode: returns a
    ``CausalLMOutputWithPast`` holding ``logits`` alone."""
    return import_quietly("transformers").LlamaForCausalLM(llama_config()).eval()


def ms_llama(rotary: str = "half"):
    """The MindSpore model below; ``rotary="interleaved"`` rotates adjacent pairs (the wrong layout)."""
    return LlamaForCausalLM(llama_config(), rotary=rotary)


def _weight(shape, std=0.02):
    return ms.Parameter(ms.Tensor(np.random.default_rng(0).normal(0.0, std, shape).astype(np.float32)), name="weight")


class Embedding(nn.Cell):
    """A ``weight`` table whose rows are gathered (``nn.Embedding`` names its table ``embedding_table``)."""

    def __init__(self, num, dim):
        super().__init__()
        self.weight = _weight((num, dim))

    def construct(self, ids):
        return ops.gather(self.weight, ids, 0)


class Linear(nn.Cell):
    """``x @ weight.T`` without bias, the weight stored (out, in) as ``torch.nn.Linear``'s."""

    def __init__(self, dim_in, dim_out):
        super().__init__()
        self.weight = _weight((dim_out, dim_in))

    def construct(self, x):
        return ops.matmul(x, self.weight.T)


class LlamaRMSNorm(nn.Cell):
    def __init__(self, dim, eps):
        super().__init__()
        self.weight = ms.Parameter(ms.Tensor(np.ones(dim, np.float32)), name="weight")
        self.variance_epsilon = eps

    def construct(self, hidden_states):
        dtype = hidden_states.dtype
        hidden_states = hidden_states.astype(ms.float32)
        variance = ops.mean(ops.pow(hidden_states, 2), -1, keep_dims=True)
        hidden_states = hidden_states * ops.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states.astype(dtype)


class LlamaRotaryEmbedding(nn.Cell):
    """``(cos, sin)`` of shape (batch, sequence, head_dim) for the given positions: of
    ``cat(freqs, freqs)``, transformers' layout."""

    def __init__(self, config):
        super().__init__()
        dim = config.hidden_size // config.num_attention_heads
        exponents = np.arange(0, dim, 2, dtype=np.int64).astype(np.float32) / dim
        self.inv_freq = ms.Tensor(1.0 / (config.rope_theta**exponents), ms.float32)

    def construct(self, x, position_ids):
        freqs = ops.matmul(self.inv_freq[None, :, None], position_ids[:, None, :].astype(ms.float32))
        emb = ops.cat((ops.transpose(freqs, (0, 2, 1)),) * 2, axis=-1)
        return ops.cos(emb).astype(x.dtype), ops.sin(emb).astype(x.dtype)


def rotate_half(x):
    half = x.shape[-1] // 2
    return ops.cat((-x[..., half:], x[..., :half]), axis=-1)


def apply_rotary(x, cos, sin):
    """transformers' ``apply_rotary_pos_emb`` for one of q, k: the halves are a rotation's pairs."""
    return x * cos + rotate_half(x) * sin


def apply_rotary_interleaved(x, cos, sin):
    """The interleaved layout (Meta's LLaMA, ``view_as_complex``): adjacent elements (x0, x1),
    (x2, x3), ... are a rotation's pairs, pair i turned by frequency i. A rotation as good as
    transformers' for weights laid out for it; with transformers' weights, a different one."""
    half = x.shape[-1] // 2
    cos, sin = (ops.repeat_interleave(t[..., :half], 2, axis=-1) for t in (cos, sin))
    pairs = ops.reshape(x, x.shape[:-1] + (half, 2))
    rotated = ops.reshape(ops.stack((-pairs[..., 1], pairs[..., 0]), axis=-1), x.shape)
    return x * cos + rotated * sin


def repeat_kv(x, groups):
    """(batch, kv_heads, n, d) -> (batch, kv_heads * groups, n, d), each head repeated in place."""
    if groups == 1:
        return x
    b, heads, n, d = x.shape
    return ops.reshape(ops.broadcast_to(x[:, :, None], (b, heads, groups, n, d)), (b, heads * groups, n, d))


class LlamaAttention(nn.Cell):
    def __init__(self, config, rotary="half"):
        super().__init__()
        self.head_dim = config.hidden_size // config.num_attention_heads
        self.groups = config.num_attention_heads // config.num_key_value_heads
        self.scaling = self.head_dim**-0.5
        self.rotary = apply_rotary if rotary == "half" else apply_rotary_interleaved
        self.q_proj = Linear(config.hidden_size, config.num_attention_heads * self.head_dim)
        self.k_proj = Linear(config.hidden_size, config.num_key_value_heads * self.head_dim)
        self.v_proj = Linear(config.hidden_size, config.num_key_value_heads * self.head_dim)
        self.o_proj = Linear(config.num_attention_heads * self.head_dim, config.hidden_size)

    def _heads(self, x):
        b, n, _ = x.shape
        return ops.transpose(ops.reshape(x, (b, n, -1, self.head_dim)), (0, 2, 1, 3))

    def construct(self, hidden_states, position_embeddings, attention_mask):
        b, n, _ = hidden_states.shape
        q, k = self._heads(self.q_proj(hidden_states)), self._heads(self.k_proj(hidden_states))
        v = self._heads(self.v_proj(hidden_states))
        cos, sin = position_embeddings
        cos, sin = cos[:, None], sin[:, None]
        q, k = self.rotary(q, cos, sin), self.rotary(k, cos, sin)
        k, v = repeat_kv(k, self.groups), repeat_kv(v, self.groups)
        scores = ops.matmul(q, ops.transpose(k, (0, 1, 3, 2))) * self.scaling + attention_mask
        weights = ops.softmax(scores.astype(ms.float32), axis=-1).astype(q.dtype)
        out = ops.reshape(ops.transpose(ops.matmul(weights, v), (0, 2, 1, 3)), (b, n, -1))
        return self.o_proj(out), weights


class LlamaMLP(nn.Cell):
    def __init__(self, config):
        super().__init__()
        self.gate_proj = Linear(config.hidden_size, config.intermediate_size)
        self.up_proj = Linear(config.hidden_size, config.intermediate_size)
        self.down_proj = Linear(config.intermediate_size, config.hidden_size)

    def construct(self, x):
        return self.down_proj(ops.silu(self.gate_proj(x)) * self.up_proj(x))


class LlamaDecoderLayer(nn.Cell):
    def __init__(self, config, rotary="half"):
        super().__init__()
        self.self_attn = LlamaAttention(config, rotary)
        self.mlp = LlamaMLP(config)
        self.input_layernorm = LlamaRMSNorm(config.hidden_size, config.rms_norm_eps)
        self.post_attention_layernorm = LlamaRMSNorm(config.hidden_size, config.rms_norm_eps)

    def construct(self, hidden_states, attention_mask=None, position_embeddings=None):
        residual = hidden_states
        hidden_states = self.input_layernorm(hidden_states)
        hidden_states, _ = self.self_attn(
            hidden_states=hidden_states, attention_mask=attention_mask, position_embeddings=position_embeddings
        )
        hidden_states = residual + hidden_states
        residual = hidden_states
        return residual + self.mlp(self.post_attention_layernorm(hidden_states))


class LlamaBlock(LlamaDecoderLayer):
    """The decoder layer taking the mask and the rotary ``cos`` and ``sin`` one by one, as
    ``parity.check_blocks`` feeds a block (its inputs are arrays, not a tuple of them)."""

    def construct(self, hidden_states, attention_mask, cos, sin):
        return super().construct(hidden_states, attention_mask=attention_mask, position_embeddings=(cos, sin))


def torch_llama_block(config, index):
    """transformers' ``LlamaDecoderLayer`` for layer ``index`` of ``config``, in eval mode, taking
    the mask, ``cos`` and ``sin`` one by one (the pair of :class:`LlamaBlock`)."""
    modeling = import_quietly("transformers.models.llama.modeling_llama")

    class TorchLlamaBlock(modeling.LlamaDecoderLayer):
        def forward(self, hidden_states, attention_mask, cos, sin):
            return super().forward(hidden_states, attention_mask=attention_mask, position_embeddings=(cos, sin))

    return TorchLlamaBlock(config, layer_idx=index).eval()


def block_inputs(config, length):
    """What every decoder layer of a batch of one unpadded sequence of ``length`` takes besides
    the hidden states, as numpy float32: the causal mask (0 or float32's smallest finite value)
    and the rotary ``cos`` and ``sin`` of positions 0..length-1 (transformers' layout)."""
    dim = config.hidden_size // config.num_attention_heads
    inv_freq = 1.0 / config.rope_theta ** (np.arange(0, dim, 2, dtype=np.float32) / dim)
    emb = np.concatenate([np.outer(np.arange(length, dtype=np.float32), inv_freq)] * 2, axis=-1)[None]
    mask = np.triu(np.full((length, length), np.finfo(np.float32).min, np.float32), 1)[None, None]
    return mask, np.cos(emb).astype(np.float32), np.sin(emb).astype(np.float32)


def causal_padding_mask(attention_mask, dtype, smallest):
    """(batch, 1, n, n): 0 where query i may attend key j (j <= i and j a real token), else
    ``smallest``, the dtype's smallest finite value, as transformers' eager mask. Ops only, so that
    GRAPH mode compiles it, for every sequence length."""
    positions = ops.arange(attention_mask.shape[1])
    causal = (positions[None, :] <= positions[:, None])[None, None]
    allowed = ops.logical_and(causal, attention_mask[:, None, None, :].astype(ms.bool_))
    zeros = ops.zeros_like(allowed.astype(dtype))
    return ops.select(allowed, zeros, zeros + smallest)


class LlamaModel(nn.Cell):
    def __init__(self, config, rotary="half"):
        super().__init__()
        self.embed_tokens = Embedding(config.vocab_size, config.hidden_size)
        self.layers = nn.CellList([LlamaDecoderLayer(config, rotary) for _ in range(config.num_hidden_layers)])
        self.norm = LlamaRMSNorm(config.hidden_size, config.rms_norm_eps)
        self.rotary_emb = LlamaRotaryEmbedding(config)
        self.smallest = float(np.finfo(np.float32).min)  # the mask's fill: float32's smallest finite value

    def construct(self, input_ids, attention_mask):
        hidden_states = self.embed_tokens(input_ids)
        positions = ops.arange(input_ids.shape[1])[None]
        mask = causal_padding_mask(attention_mask, hidden_states.dtype, self.smallest)
        position_embeddings = self.rotary_emb(hidden_states, positions)
        for layer in self.layers:
            hidden_states = layer(hidden_states, attention_mask=mask, position_embeddings=position_embeddings)
        return self.norm(hidden_states)


class LlamaForCausalLM(nn.Cell):
    def __init__(self, config, rotary="half"):
        super().__init__()
        if rotary not in ROTARY:
            raise ValueError(f"rotary must be one of {ROTARY}, got {rotary!r}")
        self.model = LlamaModel(config, rotary)
        self.lm_head = Linear(config.hidden_size, config.vocab_size)

    def construct(self, input_ids, attention_mask):
        return {"logits": self.lm_head(self.model(input_ids, attention_mask))}


# Training: next-token cross-entropy over the logits both models return under "logits".


class MsCausalLMLoss(nn.Cell):
    """MindSpore's side: ``SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")`` over every
    position's logits against the labels (batch, length), as transformers' loss without the shift."""

    def __init__(self):
        super().__init__()
        self.ce = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")

    def construct(self, output, labels):
        logits = output["logits"]
        return self.ce(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1).astype(ms.int32))


def torch_causal_lm_loss():
    """PyTorch's side: ``CrossEntropyLoss`` over every position's logits against the labels."""
    import torch

    class TorchCausalLMLoss(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.ce = torch.nn.CrossEntropyLoss()

        def forward(self, output, labels):
            logits = output["logits"]
            return self.ce(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1))

    return TorchCausalLMLoss()


def ms_generation_step(model, input_ids, cache):
    """``check_generation``'s MindSpore adapter: every token attended (no cache)."""
    return model(input_ids, ops.ones_like(input_ids)), None
