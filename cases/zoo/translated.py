"""Real models through ``parity.translate``: torchvision's ten classifier families and its ViT and
Swin, timm's VisionTransformer, EfficientNet, LeViT, NF-ResNet, NFNet (TensorFlow's "same"
padding), Hiera and ConvNeXt-V2, and PyTorch's transformer tutorial model, each
translated from what its ``forward`` executes (a ``torch.fx`` trace: ``torch.flatten``,
``torch.cat``, ``F.relu``, ``F.layer_norm``, ``F.batch_norm``, ``F.scaled_dot_product_attention``,
channel shuffles, in-place residual additions, Swin's ``torch.fx.wrap``ped helpers traced into)
and checked against itself, forward and gradients, at the float32 default.

Batches of two 32x32 images, 10 classes (``cases/models/zoo_translated.py`` says which families are
built narrower). Train mode too where it is deterministic and cheap: batch statistics (RegNet, and
timm's EfficientNet, whose ``BatchNormAct2d`` calls ``F.batch_norm`` and counts its batches in
place), LayerNorm with stochastic depth at p=0 (ConvNeXt); LeViT in train mode only (in eval mode it reuses
attention biases whose graph PyTorch's first backward freed). Not in train mode: torchvision's
EfficientNet (its stochastic depth drops random samples; the translation refuses it in train mode,
naming the call), the models with dropout (MindSpore's random numbers are not PyTorch's), DenseNet
(it passes, but its batch statistics put 34 gradients beyond the tolerance, inside PyTorch's
rounding envelope, and judging them costs 16 s).
"""

from parity import TRANSLATE, ParityCase, randint, randn

IMAGES = randn((2, 3, 32, 32))
BOTH = (False, True)
_M = "cases.models.zoo_translated:"


def _case(name, factory, inputs=IMAGES, **kwargs):
    return ParityCase(name, mindspore=TRANSLATE, torch=_M + factory, inputs=inputs, **kwargs)


ResNet18Translated = _case("ResNet18Translated", "resnet18")
VGG11Translated = _case("VGG11Translated", "vgg11_narrow")
MobileNetV3SmallTranslated = _case("MobileNetV3SmallTranslated", "mobilenet_v3_small")
EfficientNetB0Translated = _case("EfficientNetB0Translated", "efficientnet_b0_narrow")
SqueezeNet10Translated = _case("SqueezeNet10Translated", "squeezenet1_0")
DenseNetTranslated = _case("DenseNetTranslated", "densenet_small")
ShuffleNetV2Translated = _case("ShuffleNetV2Translated", "shufflenet_v2_x0_5")
ConvNeXtTranslated = _case("ConvNeXtTranslated", "convnext_narrow", train=BOTH)
RegNetXTranslated = _case("RegNetXTranslated", "regnet_small", train=BOTH)
GoogLeNetTranslated = _case("GoogLeNetTranslated", "googlenet")
TimmViTTranslated = _case("TimmViTTranslated", "timm_vit")
TorchvisionViTTranslated = _case("TorchvisionViTTranslated", "torchvision_vit")
TorchvisionSwinTranslated = _case("TorchvisionSwinTranslated", "torchvision_swin")
TimmEfficientNetTranslated = _case("TimmEfficientNetTranslated", "timm_efficientnet", train=BOTH)
TimmLeViTTranslated = _case("TimmLeViTTranslated", "timm_levit", train=True)
TimmNFResNetTranslated = _case("TimmNFResNetTranslated", "timm_nf_resnet")
TimmDMNFNetTranslated = _case("TimmDMNFNetTranslated", "timm_dm_nfnet")
TimmHieraTranslated = _case("TimmHieraTranslated", "timm_hiera")
TimmConvNeXtV2Translated = _case("TimmConvNeXtV2Translated", "timm_convnextv2")
TransformerLMTranslated = _case("TransformerLMTranslated", "TransformerLM", inputs=randint((8, 2), 0, 50))
