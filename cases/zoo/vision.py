"""torchvision and Hugging Face vision models against mindcv's: weights paired by the automatic
rules alone (renames, definition order by kind and shape, fused q/k/v)."""

from parity import ParityCase, randn

IMAGES = randn((2, 3, 64, 64))
PATCHES = randn((2, 3, 32, 32))

# mindcv's stem max-pool pads 'same' (known mismatch 'maxpool2d-pad-mode-same'); the aligned
# model takes the registry's fix. ReLU and max-pool gradients of a 50-layer float32 net are
# ill-conditioned: float64 judges them against PyTorch float32's own error.
ResNet50Zoo = ParityCase(
    "ResNet50Zoo",
    mindspore="cases.models.zoo_vision:ms_resnet50",
    torch="cases.models.zoo_vision:torch_resnet50",
    inputs=IMAGES,
    reference="float64",
)

MobileNetV2Zoo = ParityCase(
    "MobileNetV2Zoo",
    mindspore="cases.models.zoo_vision:ms_mobilenet_v2",
    torch="cases.models.zoo_vision:torch_mobilenet_v2",
    inputs=IMAGES,
)

# mindcv fuses q/k/v into one Dense; Hugging Face keeps query/key/value: fused automatically.
ViTZooHF = ParityCase(
    "ViTZooHF",
    mindspore="cases.models.zoo_vision:ms_vit",
    torch="cases.models.zoo_vision:torch_vit_hf",
    inputs=PATCHES,
)

# torchvision's nn.MultiheadAttention keeps q/k/v fused too (in_proj_weight).
ViTZooTorchvision = ParityCase(
    "ViTZooTorchvision",
    mindspore="cases.models.zoo_vision:ms_vit",
    torch="cases.models.zoo_vision:torch_vit_torchvision",
    inputs=PATCHES,
)
