"""Attention: MultiheadAttention (packed and separate in-projections, batch_first, bias_kv,
zero attention, key-padding and attention masks, averaged weights) and the Transformer layers
(post-norm and norm_first, relu and gelu, encoder and decoder stacks), in eval mode."""

import numpy as np

from parity import TRANSLATE, ParityCase, randn

E = 8
Q = randn((3, 2, E))  # (target length, batch, embed)
KV = randn((4, 2, E))  # (source length, batch, embed)
KEY_PADDING = np.array([[False, False, False, True], [False, False, True, True]])  # (batch, source)
CAUSAL = np.triu(np.full((3, 4), -np.inf, np.float32), k=2)  # additive (target, source) mask

MultiheadAttention = ParityCase(
    "MultiheadAttention",
    mindspore=TRANSLATE,
    torch="torch.nn:MultiheadAttention",
    torch_kwargs={"embed_dim": E, "num_heads": 2},
    inputs=(Q, KV, KV),
)
MultiheadAttention_batch_first_no_bias = ParityCase(
    "MultiheadAttention_batch_first_no_bias",
    mindspore=TRANSLATE,
    torch="torch.nn:MultiheadAttention",
    torch_kwargs={"embed_dim": E, "num_heads": 4, "batch_first": True, "bias": False},
    inputs=(randn((2, 3, E)), randn((2, 4, E)), randn((2, 4, E))),
)
MultiheadAttention_kdim_vdim = ParityCase(
    "MultiheadAttention_kdim_vdim",
    mindspore=TRANSLATE,
    torch="torch.nn:MultiheadAttention",
    torch_kwargs={"embed_dim": E, "num_heads": 2, "kdim": 5, "vdim": 6},
    inputs=(Q, randn((4, 2, 5)), randn((4, 2, 6))),
)
MultiheadAttention_bias_kv_zero_attn = ParityCase(
    "MultiheadAttention_bias_kv_zero_attn",
    mindspore=TRANSLATE,
    torch="torch.nn:MultiheadAttention",
    torch_kwargs={"embed_dim": E, "num_heads": 2, "add_bias_kv": True, "add_zero_attn": True},
    inputs=(Q, KV, KV),
)
MultiheadAttention_key_padding_mask = ParityCase(
    "MultiheadAttention_key_padding_mask",
    mindspore=TRANSLATE,
    torch="torch.nn:MultiheadAttention",
    torch_kwargs={"embed_dim": E, "num_heads": 2},
    inputs=(Q, KV, KV, KEY_PADDING),
)
MultiheadAttention_attn_mask = ParityCase(
    "MultiheadAttention_attn_mask",
    mindspore=TRANSLATE,
    torch="cases.translated.models:MaskedAttention",
    torch_kwargs={"embed_dim": E, "num_heads": 2},
    inputs=(Q, KV, KV, CAUSAL),
)
MultiheadAttention_no_weights = ParityCase(
    "MultiheadAttention_no_weights",
    mindspore=TRANSLATE,
    torch="cases.translated.models:MaskedAttention",
    torch_kwargs={"embed_dim": E, "num_heads": 2, "need_weights": False},
    inputs=(Q, KV, KV, CAUSAL),
)

TransformerEncoderLayer = ParityCase(
    "TransformerEncoderLayer",
    mindspore=TRANSLATE,
    torch="torch.nn:TransformerEncoderLayer",
    torch_kwargs={"d_model": E, "nhead": 2, "dim_feedforward": 16},
    inputs=Q,
)
TransformerEncoderLayer_norm_first_gelu_batch_first = ParityCase(
    "TransformerEncoderLayer_norm_first_gelu_batch_first",
    mindspore=TRANSLATE,
    torch="torch.nn:TransformerEncoderLayer",
    torch_kwargs={
        "d_model": E,
        "nhead": 4,
        "dim_feedforward": 16,
        "activation": "gelu",
        "norm_first": True,
        "batch_first": True,
        "layer_norm_eps": 1e-6,
    },
    inputs=randn((2, 3, E)),
)
TransformerEncoderLayer_no_bias = ParityCase(
    "TransformerEncoderLayer_no_bias",
    mindspore=TRANSLATE,
    torch="torch.nn:TransformerEncoderLayer",
    torch_kwargs={"d_model": E, "nhead": 2, "dim_feedforward": 16, "bias": False},
    inputs=Q,
    xfail="MindSpore's transformer layers always have biases",
)
TransformerDecoderLayer = ParityCase(
    "TransformerDecoderLayer",
    mindspore=TRANSLATE,
    torch="torch.nn:TransformerDecoderLayer",
    torch_kwargs={"d_model": E, "nhead": 2, "dim_feedforward": 16},
    inputs=(Q, KV),
)
TransformerDecoderLayer_norm_first_gelu_batch_first = ParityCase(
    "TransformerDecoderLayer_norm_first_gelu_batch_first",
    mindspore=TRANSLATE,
    torch="torch.nn:TransformerDecoderLayer",
    torch_kwargs={
        "d_model": E,
        "nhead": 2,
        "dim_feedforward": 16,
        "activation": "gelu",
        "norm_first": True,
        "batch_first": True,
    },
    inputs=(randn((2, 3, E)), randn((2, 4, E))),
)
TransformerEncoder = ParityCase(
    "TransformerEncoder", mindspore=TRANSLATE, torch="cases.translated.models:encoder_stack", inputs=Q
)
TransformerDecoder = ParityCase(
    "TransformerDecoder", mindspore=TRANSLATE, torch="cases.translated.models:decoder_stack", inputs=(Q, KV)
)
