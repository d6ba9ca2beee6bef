"""Hugging Face transformers models for ``parity.translate``, built from small configurations with
seeded random weights: no checkpoint, no hub. Each factory builds the family's own class, so the
``forward`` translated is the library's (its mask builders, rotary embeddings, ``ModelOutput``s).

Sizes: hidden 32, 2 layers, 4 heads, vocabulary 128, eager attention, no key/value cache, eval
mode. Nothing here may reach the network: ``HF_HUB_OFFLINE`` is set before transformers is
imported, and every factory runs inside :func:`no_network`, where opening a connection raises
:class:`NetworkAccess` (a ``RuntimeError``, which transformers' hub code does not swallow as it
swallows ``OSError``s).
"""

import contextlib
import os
import socket

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # read by huggingface_hub when transformers imports it

from .zoo_compat import import_quietly  # noqa: E402

VOCAB = 128
SMALL = dict(
    hidden_size=32,
    num_hidden_layers=2,
    num_attention_heads=4,
    intermediate_size=64,
    vocab_size=VOCAB,
    attn_implementation="eager",
)


class NetworkAccess(RuntimeError):
    """A model factory tried to open a network connection."""


@contextlib.contextmanager
def no_network():
    """Opening a socket connection or resolving a host name raises :class:`NetworkAccess`."""

    def refuse(*args, **kwargs):
        raise NetworkAccess(
            f"a catalogue model tried to reach the network ({args[:2]!r}); build it from a config with random weights"
        )

    saved = socket.socket.connect, socket.socket.connect_ex, socket.create_connection, socket.getaddrinfo
    socket.socket.connect = socket.socket.connect_ex = refuse
    socket.create_connection = socket.getaddrinfo = refuse
    try:
        yield
    finally:
        socket.socket.connect, socket.socket.connect_ex, socket.create_connection, socket.getaddrinfo = saved


def _offline(factory):
    def build():
        with no_network():
            return factory(import_quietly("transformers")).eval()

    build.__name__, build.__doc__ = factory.__name__, factory.__doc__
    return build


@_offline
def llama(tf):
    """``LlamaForCausalLM``: RMSNorm, rotary embeddings, grouped-query attention (4 heads over 2)."""
    return tf.LlamaForCausalLM(
        tf.LlamaConfig(**SMALL, num_key_value_heads=2, max_position_embeddings=64, use_cache=False)
    )


@_offline
def mixtral(tf):
    """``MixtralForCausalLM``: a sparse mixture of experts (4, each token to the top 2: ``topk``,
    ``one_hot``, ``nonzero``, ``where(condition)``, ``index_add_``), grouped-query attention."""
    return tf.MixtralForCausalLM(
        tf.MixtralConfig(
            **SMALL,
            num_key_value_heads=2,
            num_local_experts=4,
            num_experts_per_tok=2,
            max_position_embeddings=64,
            use_cache=False,
        )
    )


@_offline
def qwen2_moe(tf):
    """``Qwen2MoeForCausalLM``: routed experts beside a shared expert behind a sigmoid gate."""
    return tf.Qwen2MoeForCausalLM(
        tf.Qwen2MoeConfig(
            **SMALL,
            num_key_value_heads=2,
            num_experts=4,
            num_experts_per_tok=2,
            moe_intermediate_size=32,
            shared_expert_intermediate_size=48,
            max_position_embeddings=64,
            use_cache=False,
        )
    )


@_offline
def olmoe(tf):
    """``OlmoeForCausalLM``: top-k routing without renormalisation, query-key norms."""
    return tf.OlmoeForCausalLM(
        tf.OlmoeConfig(
            **SMALL,
            num_key_value_heads=2,
            num_experts=4,
            num_experts_per_tok=2,
            max_position_embeddings=64,
            use_cache=False,
        )
    )


@_offline
def gpt2(tf):
    """``GPT2LMHeadModel``: ``Conv1D`` (addmm), ``gelu_new``, the head tied to the embedding."""
    return tf.GPT2LMHeadModel(
        tf.GPT2Config(
            n_embd=32,
            n_layer=2,
            n_head=4,
            n_inner=64,
            vocab_size=VOCAB,
            n_positions=64,
            use_cache=False,
            attn_implementation="eager",
        )
    )


@_offline
def bert(tf):
    """``BertForMaskedLM``: token type and position embeddings, the padding mask, the tied MLM head."""
    return tf.BertForMaskedLM(tf.BertConfig(**SMALL, max_position_embeddings=64))


def _t5_config(tf):
    return tf.T5Config(
        vocab_size=VOCAB,
        d_model=32,
        d_kv=8,
        d_ff=64,
        num_layers=2,
        num_decoder_layers=2,
        num_heads=4,
        relative_attention_num_buckets=8,
        use_cache=False,
        decoder_start_token_id=0,
        attn_implementation="eager",
    )


@_offline
def t5_encoder(tf):
    """``T5EncoderModel``: relative position buckets (log, min), T5's RMS LayerNorm."""
    return tf.T5EncoderModel(_t5_config(tf))


@_offline
def t5(tf):
    """``T5ForConditionalGeneration``: encoder, causal decoder with cross-attention, the LM head."""
    return tf.T5ForConditionalGeneration(_t5_config(tf))


@_offline
def clip_vision(tf):
    """``CLIPVisionModel`` on 32x32 images in 8x8 patches: class token, position embeddings, quick GELU."""
    return tf.CLIPVisionModel(
        tf.CLIPVisionConfig(
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=4,
            image_size=32,
            patch_size=8,
            attn_implementation="eager",
        )
    )


@_offline
def whisper_encoder(tf):
    """``WhisperEncoder``: two 1-D convolutions over 16 mel bins, GELU, sinusoidal positions."""
    config = tf.WhisperConfig(
        vocab_size=VOCAB,
        d_model=32,
        encoder_layers=2,
        encoder_attention_heads=4,
        decoder_layers=2,
        decoder_attention_heads=4,
        encoder_ffn_dim=64,
        decoder_ffn_dim=64,
        num_mel_bins=16,
        max_source_positions=16,
        max_target_positions=32,
        pad_token_id=0,
        bos_token_id=1,
        eos_token_id=2,
        decoder_start_token_id=1,
        attn_implementation="eager",
    )
    return tf.WhisperModel(config).get_encoder()


@_offline
def clip_text(tf):
    """``CLIPTextModel``: causal and padding masks added (``finfo.min`` twice: -inf), a float32 softmax,
    the pooled output at each row's highest token id."""
    return tf.CLIPTextModel(
        tf.CLIPTextConfig(
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=4,
            vocab_size=VOCAB,
            max_position_embeddings=16,
            eos_token_id=2,
            attn_implementation="eager",
        )
    )


@_offline
def wav2vec2(tf):
    """``Wav2Vec2Model`` on raw waveforms: a strided convolutional feature encoder (group norm on its
    first layer), a weight-normed grouped positional convolution, a post-norm transformer encoder."""
    config = tf.Wav2Vec2Config(
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        conv_dim=(16, 16),
        conv_stride=(5, 2),
        conv_kernel=(10, 3),
        num_conv_pos_embeddings=16,
        num_conv_pos_embedding_groups=4,
        vocab_size=32,
        attn_implementation="eager",
    )
    return tf.Wav2Vec2Model(config)


@_offline
def qwen3_moe(tf):
    """``Qwen3MoeForCausalLM``: routed experts (4, the top 2 renormalised), query-key RMSNorms, heads of 8."""
    return tf.Qwen3MoeForCausalLM(
        tf.Qwen3MoeConfig(
            **SMALL,
            num_key_value_heads=2,
            head_dim=8,
            num_experts=4,
            num_experts_per_tok=2,
            moe_intermediate_size=32,
            max_position_embeddings=64,
            use_cache=False,
        )
    )


@_offline
def deepseek_v3(tf):
    """``DeepseekV3ForCausalLM``: multi-head latent attention (low-rank queries and keys/values, a
    rotary part beside a plain part), a dense first layer, then 8 routed experts in 4 groups, the
    top 2 groups kept (``scatter_`` of a group mask) and the top 2 experts of those, sigmoid scores
    with a correction bias, beside a shared expert."""
    return tf.DeepseekV3ForCausalLM(
        tf.DeepseekV3Config(
            **SMALL,
            num_key_value_heads=4,
            n_routed_experts=8,
            num_experts_per_tok=2,
            n_group=4,
            topk_group=2,
            n_shared_experts=1,
            moe_intermediate_size=32,
            first_k_dense_replace=1,
            kv_lora_rank=16,
            q_lora_rank=24,
            qk_rope_head_dim=8,
            qk_nope_head_dim=8,
            v_head_dim=8,
            max_position_embeddings=64,
            rope_scaling=None,
            use_cache=False,
        )
    )


@_offline
def mamba(tf):
    """``MambaForCausalLM`` on its sequential path (the CUDA kernels absent): a causal depthwise
    1-D convolution, softplus time steps, the selective scan written out token by token."""
    return tf.MambaForCausalLM(
        tf.MambaConfig(
            hidden_size=32,
            num_hidden_layers=2,
            vocab_size=VOCAB,
            state_size=8,
            expand=2,
            conv_kernel=4,
            use_cache=False,
        )
    )


@_offline
def mamba2(tf):
    """``Mamba2ForCausalLM`` on its naive path: 8 heads of 8, the state-space dual form in chunks of
    4 (``cumsum``, segment sums, ``exp`` of masked decays), a gated RMSNorm."""
    return tf.Mamba2ForCausalLM(
        tf.Mamba2Config(
            hidden_size=32,
            num_hidden_layers=2,
            vocab_size=VOCAB,
            state_size=8,
            expand=2,
            conv_kernel=4,
            num_heads=8,
            head_dim=8,
            n_groups=1,
            chunk_size=4,
            use_cache=False,
        )
    )


SEQ2SEQ = dict(
    vocab_size=VOCAB,
    d_model=32,
    encoder_layers=2,
    decoder_layers=2,
    encoder_attention_heads=4,
    decoder_attention_heads=4,
    encoder_ffn_dim=64,
    decoder_ffn_dim=64,
    max_position_embeddings=64,
    use_cache=False,
    attn_implementation="eager",
)


@_offline
def bart(tf):
    """``BartForConditionalGeneration``: learned positions offset by 2, the padding mask checked with
    ``isinstance(mask, torch.Tensor)``, a causal decoder with cross-attention, the tied LM head."""
    return tf.BartForConditionalGeneration(tf.BartConfig(**SEQ2SEQ))


@_offline
def mbart(tf):
    """``MBartForConditionalGeneration``: BART's layers with the norm before each block and a final
    LayerNorm on each stack."""
    return tf.MBartForConditionalGeneration(tf.MBartConfig(**SEQ2SEQ, pad_token_id=1, decoder_start_token_id=2))


@_offline
def marian(tf):
    """``MarianMTModel``: fixed sinusoidal positions (a parameter without gradient), embeddings scaled
    by the square root of the width."""
    return tf.MarianMTModel(tf.MarianConfig(**SEQ2SEQ, pad_token_id=1, decoder_start_token_id=2))


@_offline
def codegen(tf):
    """``CodeGenForCausalLM``: one fused projection split by a model-parallel layout, rotary on the
    first 4 dimensions read from a sinusoid table held as a plain tensor
    (``embed_positions[position_ids]``), ``nn.Softmax(dim=-1)`` built inside ``forward``."""
    return tf.CodeGenForCausalLM(
        tf.CodeGenConfig(
            vocab_size=VOCAB,
            n_embd=32,
            n_layer=2,
            n_head=4,
            rotary_dim=4,
            n_positions=64,
            n_ctx=64,
            use_cache=False,
            attn_implementation="eager",
        )
    )


@_offline
def deepseek_v2(tf):
    """``DeepseekV2ForCausalLM``: multi-head latent attention with rotary embeddings as complex
    numbers (``torch.polar``, ``view_as_complex``, a complex product, ``view_as_real``), a dense
    first layer, then 8 routed experts in 4 groups, ``group_limited_greedy`` (the top 2 groups by
    their best score, ``scatter_``), tokens sorted by expert (``argsort``, ``empty_like``, an indexed
    write), beside a shared expert."""
    return tf.DeepseekV2ForCausalLM(
        tf.DeepseekV2Config(
            **SMALL,
            num_key_value_heads=4,
            n_routed_experts=8,
            num_experts_per_tok=2,
            n_group=4,
            topk_group=2,
            topk_method="group_limited_greedy",
            n_shared_experts=1,
            moe_intermediate_size=32,
            first_k_dense_replace=1,
            kv_lora_rank=16,
            q_lora_rank=24,
            qk_rope_head_dim=8,
            qk_nope_head_dim=8,
            v_head_dim=8,
            max_position_embeddings=64,
            use_cache=False,
        )
    )


@_offline
def deberta_v2(tf):
    """``DebertaV2ForMaskedLM``: disentangled attention, content-to-position and position-to-content
    over log-bucketed relative positions (8 buckets), its ``@torch.jit.script`` helpers traced as
    the Python they were compiled from."""
    return tf.DebertaV2ForMaskedLM(
        tf.DebertaV2Config(
            **SMALL,
            max_position_embeddings=64,
            relative_attention=True,
            position_buckets=8,
            pos_att_type=["p2c", "c2p"],
            max_relative_positions=16,
        )
    )


@_offline
def longformer(tf):
    """``LongformerForMaskedLM``: sliding-window attention over windows of 4 (two on each side),
    cut by ``as_strided`` over the strides of a transposed view (answered by PyTorch's layout),
    diagonals padded and masked, no global attention."""
    config = tf.LongformerConfig(
        **{k: v for k, v in SMALL.items() if k != "attn_implementation"},  # its own attention only
        attention_window=4,
        max_position_embeddings=64,
        pad_token_id=1,
    )
    return tf.LongformerForMaskedLM(config)
