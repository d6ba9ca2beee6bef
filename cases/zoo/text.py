"""transformers' BERT and GPT-2 against MindSpore models with mindone's structure and parameter
names (``cases.models.zoo_text`` says why they are not mindone's own on CPU). PyTorch's
non-persistent buffers (BERT's position_ids/token_type_ids, GPT-2's causal mask) are ignored."""

from parity import ParityCase, randint

TOKENS = randint((2, 8), 0, 100)

BertZoo = ParityCase(
    "BertZoo",
    mindspore="cases.models.zoo_text:ms_bert",
    torch="cases.models.zoo_text:torch_bert",
    inputs=TOKENS,
)

GPT2Zoo = ParityCase(
    "GPT2Zoo",
    mindspore="cases.models.zoo_text:ms_gpt2",
    torch="cases.models.zoo_text:torch_gpt2",
    inputs=TOKENS,
)
