"""Model-zoo vision pairs: torchvision's models and Hugging Face's ViT against mindcv's.

Both sides are the packages' own models, built small (10 classes; the catalogue feeds 64x64 or
32x32 images) and compared with no hand-written name map. What the pairs need from the user:

* ResNet-50: mindcv's stem max-pool is ``MaxPool2d(3, 2, pad_mode="same")`` where torchvision
  pads 1 on every side; on an even-sized input the pooled windows sit one row and column off
  (known mismatch ``maxpool2d-pad-mode-same``). ``aligned=True`` swaps in the registry's fix,
  ``pad_mode="pad", padding=1``; ``aligned=False`` keeps mindcv's model as shipped.
* ViT: mindcv's blocks default to MindSpore's ``GELU(approximate=True)`` and
  ``LayerNorm(epsilon=1e-7)``; both are set to what the PyTorch side uses (exact GELU, 1e-6).
  mindcv fuses q/k/v into one ``qkv`` Dense: against Hugging Face's separate query/key/value
  the weight map fuses them automatically; against torchvision's ``nn.MultiheadAttention``
  (whose ``in_proj_weight`` is fused too) they pair directly.
"""

import functools

from mindspore import nn

from .zoo_compat import import_quietly, import_torchvision

NUM_CLASSES = 10
VIT = dict(image_size=32, patch_size=8, hidden=64, depth=2, heads=4, mlp=128)


def torch_resnet50(num_classes: int = NUM_CLASSES):
    return import_torchvision().models.resnet50(num_classes=num_classes)


def ms_resnet50(num_classes: int = NUM_CLASSES, aligned: bool = True):
    cell = import_quietly("mindcv.models").resnet50(num_classes=num_classes)
    if aligned:
        cell.max_pool = nn.MaxPool2d(kernel_size=3, stride=2, pad_mode="pad", padding=1)
    return cell


def torch_mobilenet_v2(num_classes: int = NUM_CLASSES):
    return import_torchvision().models.mobilenet_v2(num_classes=num_classes)


def ms_mobilenet_v2(num_classes: int = NUM_CLASSES):
    return import_quietly("mindcv.models").mobilenet_v2_100(num_classes=num_classes)


def ms_vit():
    """mindcv's VisionTransformer (fused ``qkv``), with PyTorch's GELU and LayerNorm epsilon."""
    vit = import_quietly("mindcv.models.vit")
    return vit.VisionTransformer(
        image_size=VIT["image_size"],
        patch_size=VIT["patch_size"],
        embed_dim=VIT["hidden"],
        depth=VIT["depth"],
        num_heads=VIT["heads"],
        mlp_ratio=VIT["mlp"] / VIT["hidden"],
        num_classes=NUM_CLASSES,
        act_layer=functools.partial(nn.GELU, approximate=False),
        norm_layer=functools.partial(nn.LayerNorm, epsilon=1e-6),
    )


def torch_vit_hf():
    """Hugging Face's ViTForImageClassification (separate query/key/value), returning the logits."""
    transformers = import_quietly("transformers")
    config = transformers.ViTConfig(
        image_size=VIT["image_size"],
        patch_size=VIT["patch_size"],
        hidden_size=VIT["hidden"],
        num_hidden_layers=VIT["depth"],
        num_attention_heads=VIT["heads"],
        intermediate_size=VIT["mlp"],
        hidden_act="gelu",
        layer_norm_eps=1e-6,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        num_labels=NUM_CLASSES,
        attn_implementation="eager",
    )
    return _Logits.make(transformers.ViTForImageClassification, config)


def torch_vit_torchvision():
    """torchvision's VisionTransformer (``nn.MultiheadAttention``, fused ``in_proj``)."""
    models = import_torchvision().models
    return models.VisionTransformer(
        image_size=VIT["image_size"],
        patch_size=VIT["patch_size"],
        num_layers=VIT["depth"],
        num_heads=VIT["heads"],
        hidden_dim=VIT["hidden"],
        mlp_dim=VIT["mlp"],
        num_classes=NUM_CLASSES,
    )


class _Logits:
    """A subclass of a Hugging Face model whose forward returns the logits tensor alone (the
    MindSpore side returns a tensor), with the parameter names of the model itself."""

    @staticmethod
    def make(model_class, config):
        def forward(self, pixel_values):
            return model_class.forward(self, pixel_values, return_dict=False)[0]

        return type(model_class.__name__, (model_class,), {"forward": forward})(config)
