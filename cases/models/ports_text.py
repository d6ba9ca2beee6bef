"""Real ports: mindone.transformers' models against Hugging Face transformers', small, random weights.

mindone 0.5.0 follows transformers 4.57.1 class by class, with the same parameter names. Its
models compute with ``mindspore.mint`` kernels that MindSpore 2.10 registers for Ascend only, so
every MindSpore factory first installs the CPU stand-ins of :mod:`cases.models.mint_cpu` (before
building: some layers keep the function they call from construction on). The configurations are
tiny (2 layers, hidden 64, 4 heads, vocabulary 128, eager attention, no cache, dropout 0, tuples
returned), the PyTorch side's norm weights trained-like (:func:`cases.models.norm_stats.perturb_norms`).

The inputs are 2 sequences of 8 token ids and an attention mask in which the second sequence pads
its first two tokens (left padding): the rows of padded positions attend to nothing but padding,
where masks built differently part.

What differs, read from both sources and shown by the fixed pairs passing:

* LLaMA: mindone builds the causal and padding mask with float16's minimum (-65504, its
  ``_MIN_FP16``) where transformers uses float32's (-3.4e38). On a padded row every key is masked:
  transformers' scores all become -3.4e38 exactly (the score is lost next to it), a uniform
  softmax; mindone's keep the scores (-65504 + s), a softmax of the scores themselves.
* Qwen2: none found. mindone's Qwen2 builds its mask with ``masking_utils.create_causal_mask``, at
  the dtype's own minimum as transformers does: the fixed pair is the pair itself.
* GPT-2: both apply the causal table ``self.bias`` (float32's minimum where a key is in the
  future), then add the model's mask. transformers' mask is causal and padding combined (its
  minimum where either masks), mindone's the padding alone. Where both add their minimum the sum
  is -inf: in transformers every future key, in mindone only a future key that is also padding.
  On a row that sees only padding (the padded sequence's first two queries) transformers' weight
  stays on the past keys, mindone's spreads over the future ones.
* BERT: none found: the fixed pair is the pair itself.
"""

import os
import types

import numpy as np

from parity import randint

from .ports import Port

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # read by huggingface_hub when transformers imports it

VOCAB, LENGTH = 128, 8
MASK = np.ones((2, LENGTH), np.int64)
MASK[1, :2] = 0
TEXT = {"input_ids": randint((2, LENGTH), 0, VOCAB), "attention_mask": MASK}
_HERE = "cases.models.ports_text:"
SMALL = dict(
    vocab_size=VOCAB,
    hidden_size=64,
    num_hidden_layers=2,
    num_attention_heads=4,
    intermediate_size=128,
    max_position_embeddings=64,
    attn_implementation="eager",
)


def _transformers():
    from .zoo_compat import import_quietly

    return import_quietly("transformers")


def _mindone(build):
    """``build(mindone.transformers)``, run on CPU with the stand-ins of :mod:`cases.models.mint_cpu`."""
    from . import mint_cpu
    from .zoo_compat import import_quietly

    return mint_cpu.on_cpu(lambda: build(import_quietly("mindone.transformers")))


def _torch(model):
    from .norm_stats import perturb_norms

    return perturb_norms(model.eval())


# -- LLaMA ----------------------------------------------------------------------------------------


def llama_config():
    return _transformers().LlamaConfig(**SMALL, num_key_value_heads=2, use_cache=False)


def torch_llama():
    return _torch(_transformers().LlamaForCausalLM(llama_config()))


def ms_llama(fixed: bool = False):
    cell = _mindone(lambda mindone: mindone.LlamaForCausalLM(llama_config()))
    if fixed:
        _float32_mask(cell.model)
    return cell


# -- Qwen2 ----------------------------------------------------------------------------------------


def qwen2_config():
    return _transformers().Qwen2Config(**SMALL, num_key_value_heads=2, use_cache=False)


def torch_qwen2():
    return _torch(_transformers().Qwen2ForCausalLM(qwen2_config()))


def ms_qwen2(fixed: bool = False):
    return _mindone(lambda mindone: mindone.Qwen2ForCausalLM(qwen2_config()))


def _float32_mask(model):
    """``model`` (mindone's LlamaModel) builds its 4-D mask with float32's minimum,
    as transformers does: masked where the key is in the future or padded."""
    import mindspore as ms
    from mindspore import ops

    minimum = float(np.finfo(np.float32).min)

    def build(attention_mask, sequence_length, target_length, dtype, cache_position, batch_size, **kwargs):
        keys = ops.arange(target_length).reshape(1, -1)
        future = keys > cache_position.reshape(-1, 1)
        masked = future[None, None].broadcast_to((batch_size, 1, sequence_length, target_length))
        if attention_mask is not None:
            padded = (attention_mask == 0)[:, None, None, :]
            masked = ops.logical_or(masked, padded)
        zeros = ops.zeros(masked.shape, dtype)
        return ops.where(masked, ops.full(masked.shape, minimum, dtype=dtype), zeros).astype(ms.float32)

    model._prepare_4d_causal_attention_mask_with_cache_position = build


# -- GPT-2 ----------------------------------------------------------------------------------------


def gpt2_config():
    return _transformers().GPT2Config(
        vocab_size=VOCAB,
        n_embd=64,
        n_layer=2,
        n_head=4,
        n_inner=128,
        n_positions=64,
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
        use_cache=False,
        attn_implementation="eager",
        return_dict=False,
    )


def torch_gpt2():
    return _torch(_transformers().GPT2LMHeadModel(gpt2_config()))


def ms_gpt2(fixed: bool = False):
    cell = _mindone(lambda mindone: mindone.GPT2LMHeadModel(gpt2_config()))
    if fixed:
        for _, attention in cell.cells_and_names():
            if type(attention).__name__ == "GPT2Attention":
                attention._attn = types.MethodType(_gpt2_attention, attention)
    return cell


def _gpt2_attention(self, query, key, value, attention_mask=None, head_mask=None):
    """mindone's ``GPT2Attention._attn`` adding transformers' mask: the padding mask it is given
    with the causal table folded in (float32's minimum where the key is in the future)."""
    from mindspore import ops

    minimum = float(np.finfo(np.float32).min)
    weights = ops.matmul(query, key.swapaxes(-1, -2)) / float(value.shape[-1]) ** 0.5
    length = key.shape[-2]
    causal = self.bias[:, :, length - query.shape[-2] : length, :length]
    weights = ops.where(causal, weights, ops.full(weights.shape, minimum, dtype=weights.dtype))
    if attention_mask is not None:
        combined = ops.where(causal, attention_mask, ops.full(weights.shape, minimum, dtype=weights.dtype))
        weights = weights + combined
    weights = self.attn_dropout(ops.softmax(weights, axis=-1))
    return ops.matmul(weights, value), weights


# -- BERT -----------------------------------------------------------------------------------------


def bert_config():
    return _transformers().BertConfig(**SMALL, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)


def torch_bert():
    return _torch(_transformers().BertModel(bert_config()))


def ms_bert(fixed: bool = False):
    return _mindone(lambda mindone: mindone.BertModel(bert_config()))


def _none(module):
    return {}


def _model_code(module):
    return {"model": "causal and padding mask filled with float16's minimum vs float32's"}


PAIRS = (
    Port(
        "llama",
        _HERE + "ms_llama",
        _HERE + "torch_llama",
        TEXT,
        _model_code,
        causes=("attention-mask-inf-vs-finfo-min",),
    ),
    Port(
        "qwen2",
        _HERE + "ms_qwen2",
        _HERE + "torch_qwen2",
        TEXT,
        _none,
    ),
    Port(
        "gpt2",
        _HERE + "ms_gpt2",
        _HERE + "torch_gpt2",
        TEXT,
        lambda m: {
            f"transformer.h.{i}.attn": "the padding mask added alone, not causal and padding combined" for i in (0, 1)
        },
        causes=("attention-mask-inf-vs-finfo-min",),
    ),
    Port("bert", _HERE + "ms_bert", _HERE + "torch_bert", TEXT, _none),
)
