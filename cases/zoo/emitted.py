"""Translations written as packages of MindSpore Cells (``parity.translate(..., emit=folder)``),
imported and built, checked against the PyTorch model in GRAPH mode and in PYNATIVE mode, forward
and gradients at the float32 default: timm's EfficientNet (train mode too: batch statistics and its
batch counter), torchvision's ResNet-18 (train mode too), and a small LLaMA, GPT-2 and BERT (their
heads tied to the embedding) from transformers; Mixtral's mixture of experts in PYNATIVE mode only.
"""

import numpy as np

from parity import ParityCase, randint, randn

VOCAB, LENGTH = 128, 8  # cases.models.zoo_hf.VOCAB (not imported: listing the catalogue imports no framework)
MASK = np.ones((2, LENGTH), np.int64)
MASK[1, :2] = 0
TEXT = {"input_ids": randint((2, LENGTH), 0, VOCAB), "attention_mask": MASK}
_E = "cases.models.zoo_emitted:"


def _cases(name, factory, torch, inputs, **kwargs):
    return (
        ParityCase(f"{name}_graph", mindspore=_E + factory, torch=torch, inputs=inputs, ms_mode="graph", **kwargs),
        ParityCase(
            f"{name}_pynative", mindspore=_E + factory, torch=torch, inputs=inputs, ms_mode="pynative", **kwargs
        ),
    )


EmittedTimmEfficientNet_graph, EmittedTimmEfficientNet_pynative = _cases(
    "EmittedTimmEfficientNet",
    "timm_efficientnet",
    "cases.models.zoo_translated:timm_efficientnet",
    randn((2, 3, 32, 32)),
    train=(False, True),
)
EmittedResnet18_graph, EmittedResnet18_pynative = _cases(
    "EmittedResnet18",
    "resnet18",
    "cases.models.zoo_translated:resnet18",
    randn((2, 3, 32, 32)),
    train=(False, True),
)
EmittedLlama_graph, EmittedLlama_pynative = _cases("EmittedLlama", "llama", "cases.models.zoo_hf:llama", TEXT)
EmittedGpt2_graph, EmittedGpt2_pynative = _cases("EmittedGpt2", "gpt2", "cases.models.zoo_hf:gpt2", TEXT)
EmittedBert_graph, EmittedBert_pynative = _cases("EmittedBert", "bert", "cases.models.zoo_hf:bert", TEXT)
EmittedMixtral_pynative = ParityCase(  # GRAPH mode does not compile routing whose shapes depend on the data
    "EmittedMixtral_pynative",
    mindspore=_E + "mixtral",
    torch="cases.models.zoo_hf:mixtral",
    inputs=TEXT,
    ms_mode="pynative",
)
