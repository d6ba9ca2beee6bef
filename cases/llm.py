"""A LLaMA written by hand in MindSpore (``cases.models.llama``) against transformers'
``LlamaForCausalLM`` (2 layers, hidden 32, 4 query heads over 2 key/value heads, eager attention,
eval), weights paired by Hugging Face's names with no name map.

The inputs are int64 token ids and a fixed padding mask: the first sequence pads its last two
tokens, the second its first three (left padding: those rows of the causal mask attend to
nothing, and both sides softmax them to uniform weights). ``LlamaInterleavedRotary`` rotates
adjacent pairs instead of halves in each attention: it must fail, at ``model.layers.0.self_attn``,
citing the known mismatch ``rope-rotate-half-vs-interleaved``.
"""

import numpy as np

from parity import ParityCase, Training, randint

VOCAB = 128  # cases.models.llama.VOCAB (not imported: listing the catalogue imports no framework)
MASK = np.array([[1] * 14 + [0] * 2, [0] * 3 + [1] * 13], np.int64)
INPUTS = (randint((2, 16), 0, VOCAB), MASK)

LlamaHF = ParityCase(
    "LlamaHF",
    mindspore="cases.models.llama:ms_llama",
    torch="cases.models.llama:torch_llama",
    inputs=INPUTS,
    ms_mode="both",
)

# The same pair over sequence lengths 5, 9 and 12 and batches of 1 and 2 (every token attended): in
# GRAPH mode compiled once for input_ids and attention_mask of shape (None, None).
LlamaHF_shapes = ParityCase(
    "LlamaHF_shapes",
    mindspore="cases.models.llama:ms_llama",
    torch="cases.models.llama:torch_llama",
    shapes=[(randint((b, n), 0, VOCAB), np.ones((b, n), np.int64)) for b, n in ((1, 5), (2, 9), (1, 12))],
    ms_mode="both",
)

# Three steps of next-token training, AdamW with a warmup and gradient clipping, on the padded batch.
LlamaHF_training = ParityCase(
    "LlamaHF_training",
    mindspore="cases.models.llama:ms_llama",
    torch="cases.models.llama:torch_llama",
    ms_mode="both",
    training=Training(
        [(INPUTS, randint((2, 16), 0, VOCAB))],
        steps=3,
        loss=("cases.models.llama:MsCausalLMLoss", "cases.models.llama:torch_causal_lm_loss"),
        optimizer="cases.models.training:adamw",
        lr_scheduler="cases.models.training:warmup",
        clip_grad_norm=1.0,
    ),
)

LlamaInterleavedRotary = ParityCase(
    "LlamaInterleavedRotary",
    mindspore="cases.models.llama:ms_llama",
    ms_kwargs={"rotary": "interleaved"},
    torch="cases.models.llama:torch_llama",
    inputs=INPUTS,
    xfail="rotary embeddings on adjacent pairs against transformers' halves (rope-rotate-half-vs-interleaved)",
    acknowledge=("rope-rotate-half-vs-interleaved",),
)
