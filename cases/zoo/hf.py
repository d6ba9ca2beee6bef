"""Hugging Face transformers families through ``parity.translate(model, inputs)``: each traced on
the case's own inputs (its masks and positions computed in the trace, each branch taken a guard)
and checked against itself, forward and every parameter's gradient, at the float32 default.

Text models take int64 token ids and an attention mask in which the second sequence pads its first
two tokens (left padding: in the causal models those rows attend to nothing). The models are
built in ``cases.models.zoo_hf`` from small configs, offline.
"""

import numpy as np

from parity import TRANSLATE, ParityCase, Training, randint, randn

VOCAB, LENGTH = 128, 8  # cases.models.zoo_hf.VOCAB (not imported: listing the catalogue imports no framework)
MASK = np.ones((2, LENGTH), np.int64)
MASK[1, :2] = 0
TEXT = {"input_ids": randint((2, LENGTH), 0, VOCAB), "attention_mask": MASK}
_M = "cases.models.zoo_hf:"


def _case(name, factory, inputs=TEXT, **kwargs):
    return ParityCase(name, mindspore=TRANSLATE, torch=_M + factory, inputs=inputs, **kwargs)


LlamaForCausalLMTranslated = _case("LlamaForCausalLMTranslated", "llama")
MixtralForCausalLMTranslated = _case("MixtralForCausalLMTranslated", "mixtral")
Qwen2MoeForCausalLMTranslated = _case("Qwen2MoeForCausalLMTranslated", "qwen2_moe")
OlmoeForCausalLMTranslated = _case("OlmoeForCausalLMTranslated", "olmoe")
GPT2LMHeadModelTranslated = _case("GPT2LMHeadModelTranslated", "gpt2")
BertForMaskedLMTranslated = _case("BertForMaskedLMTranslated", "bert")
T5EncoderTranslated = _case("T5EncoderTranslated", "t5_encoder")
T5Translated = _case("T5Translated", "t5", inputs=dict(TEXT, decoder_input_ids=randint((2, 6), 0, VOCAB)))
CLIPVisionTranslated = _case("CLIPVisionTranslated", "clip_vision", inputs={"pixel_values": randn((2, 3, 32, 32))})
WhisperEncoderTranslated = _case(
    "WhisperEncoderTranslated", "whisper_encoder", inputs={"input_features": randn((2, 16, 32))}
)
CLIPTextTranslated = _case("CLIPTextTranslated", "clip_text")
Wav2Vec2Translated = _case("Wav2Vec2Translated", "wav2vec2", inputs={"input_values": randn((2, 400))})
Qwen3MoeForCausalLMTranslated = _case("Qwen3MoeForCausalLMTranslated", "qwen3_moe")
DeepseekV3ForCausalLMTranslated = _case("DeepseekV3ForCausalLMTranslated", "deepseek_v3")
DeepseekV2ForCausalLMTranslated = _case("DeepseekV2ForCausalLMTranslated", "deepseek_v2")
MambaForCausalLMTranslated = _case("MambaForCausalLMTranslated", "mamba")
Mamba2ForCausalLMTranslated = _case("Mamba2ForCausalLMTranslated", "mamba2")
SEQ2SEQ = dict(TEXT, decoder_input_ids=randint((2, 6), 0, VOCAB))
BartTranslated = _case("BartTranslated", "bart", inputs=SEQ2SEQ)
MBartTranslated = _case("MBartTranslated", "mbart", inputs=SEQ2SEQ)
MarianMTTranslated = _case("MarianMTTranslated", "marian", inputs=SEQ2SEQ)
CodeGenForCausalLMTranslated = _case("CodeGenForCausalLMTranslated", "codegen")
DebertaV2ForMaskedLMTranslated = _case("DebertaV2ForMaskedLMTranslated", "deberta_v2")
LongformerForMaskedLMTranslated = _case("LongformerForMaskedLMTranslated", "longformer")
# The translated LLaMA trains: three steps of next-token loss, AdamW with a warmup and gradient
# clipping, on the padded batch (traced on that batch's inputs).
LlamaForCausalLMTranslated_training = _case(
    "LlamaForCausalLMTranslated_training",
    "llama",
    inputs=None,
    training=Training(
        [(TEXT, randint((2, LENGTH), 0, VOCAB))],
        steps=3,
        loss=("cases.models.llama:MsCausalLMLoss", "cases.models.llama:torch_causal_lm_loss"),
        optimizer="cases.models.training:adamw",
        lr_scheduler="cases.models.training:warmup",
        clip_grad_norm=1.0,
    ),
)
