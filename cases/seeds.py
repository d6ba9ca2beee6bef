"""The seeds' examples: the classic Conv2d check, a small CNN, ResNet-50 and a custom backward."""

from parity import ParityCase, constant, randn, uniform

CONV_INPUT = uniform((2, 120, 12, 12), -1, 1)

MyCell = ParityCase(
    "MyCell",
    mindspore="cases.models.conv_relu:MSConvReLU",
    ms_kwargs={"pad_mode": "pad"},
    torch="cases.models.conv_relu:TorchConvReLU",
    inputs=CONV_INPUT,
    weights=constant(0.1),
)

# MindSpore's Conv2d defaults to pad_mode="same": the output keeps 12x12 where PyTorch gives 9x9.
MyCellDefaultPadMode = ParityCase(
    "MyCellDefaultPadMode",
    mindspore="cases.models.conv_relu:MSConvReLU",
    torch="cases.models.conv_relu:TorchConvReLU",
    inputs=CONV_INPUT,
    weights=constant(0.1),
    xfail="MindSpore Conv2d pads 'same' by default; PyTorch pads 0",
    acknowledge=("conv2d-pad-mode-default",),
)

Network = ParityCase(
    "Network",
    mindspore="cases.models.network:MSNetwork",
    torch="cases.models.network:TorchNetwork",
    inputs=randn((2, 3, 32, 32)),
    train=(False, True),
)

ResNetSmall = ParityCase(
    "ResNetSmall",
    mindspore="cases.models.resnet:ms_resnet_small",
    torch="cases.models.resnet:torch_resnet_small",
    inputs=randn((2, 3, 64, 64)),
    reference="float64",
)

ResNet50 = ParityCase(
    "ResNet50",
    mindspore="cases.models.resnet:ms_resnet50",
    torch="cases.models.resnet:torch_resnet50",
    inputs=randn((2, 3, 224, 224)),
    reference="float64",
)

# mindcv's ResNet-50 pools its stem with MaxPool2d(3, 2, pad_mode="same"): on the even-sized stem output
# that pads the bottom/right only, where torchvision's padding=1 pads every side. Its 1x1 convolutions keep
# pad_mode="same" too, which pads nothing under either convention: the failure must blame the max-pool alone.
ResNet50MindcvStem = ParityCase(
    "ResNet50MindcvStem",
    mindspore="cases.models.resnet_mindcv:ms_resnet50",
    torch="cases.models.resnet:torch_resnet50",
    inputs=randn((2, 3, 32, 32)),
    grads=False,
    xfail="MindSpore MaxPool2d(pad_mode='same') pads the bottom/right only; PyTorch's padding=1 pads both sides",
    acknowledge=("maxpool2d-pad-mode-same",),
)

CustomBackward = ParityCase(
    "CustomBackward",
    mindspore="cases.models.custom_bprop:MSCustomGradNet",
    torch="cases.models.custom_bprop:TorchCustomGradNet",
    inputs=randn((4, 16), std=2.0),
)
