"""The MindSpore side written as a package: ``parity.translate(module, inputs, emit=folder)`` into a
temporary folder, the package imported and its ``build()`` called. The folder stays until the
process ends (GRAPH mode reads ``construct``'s source from it when it compiles).

The PyTorch sides are the translated zoo's (``cases.models.zoo_translated``, ``cases.models.zoo_hf``)
and each is traced here on inputs of the case's shapes.
"""

import atexit
import importlib
import itertools
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np

import parity

from . import zoo_hf, zoo_translated

_FOLDER = Path(tempfile.mkdtemp(prefix="parity-emitted-"))
atexit.register(shutil.rmtree, _FOLDER, ignore_errors=True)
_COUNT = itertools.count()


def _emitted(module, inputs, name):
    folder = _FOLDER / f"{name}_{next(_COUNT)}"
    parity.translate(module, inputs, emit=folder)
    if str(_FOLDER) not in sys.path:
        sys.path.insert(0, str(_FOLDER))
    return importlib.import_module(folder.name).build()


def timm_efficientnet():
    """timm's EfficientNet (both modes' constructs: its batch counter assigned in train mode)."""
    return _emitted(zoo_translated.timm_efficientnet(), parity.randn((2, 3, 32, 32)), "efficientnet")


def resnet18():
    """torchvision's ResNet-18 (both modes' constructs), its padded max pooling written as a 2-d call."""
    return _emitted(zoo_translated.resnet18(), parity.randn((2, 3, 32, 32)), "resnet18")


def text_inputs():
    """The translated Hugging Face cases' text: token ids and a mask padding the second row's first two."""
    mask = np.ones((2, 8), np.int64)
    mask[1, :2] = 0
    return {"input_ids": parity.randint((2, 8), 0, zoo_hf.VOCAB), "attention_mask": mask}


def llama():
    """LLaMA from transformers, small: its ModelOutputs as dicts, its rotary matmul without a gradient."""
    return _emitted(zoo_hf.llama(), text_inputs(), "llama")


def gpt2():
    """GPT-2 from transformers, small: its head tied to the token embedding (one Parameter)."""
    return _emitted(zoo_hf.gpt2(), text_inputs(), "gpt2")


def bert():
    """BERT from transformers, small: a child named ``self``, the masked-LM head tied to the embedding."""
    return _emitted(zoo_hf.bert(), text_inputs(), "bert")


def mixtral():
    """Mixtral from transformers, small: a sparse mixture of experts' routing (PYNATIVE mode only)."""
    return _emitted(zoo_hf.mixtral(), text_inputs(), "mixtral")
