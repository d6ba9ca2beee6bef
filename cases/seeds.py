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

CustomBackward = ParityCase(
    "CustomBackward",
    mindspore="cases.models.custom_bprop:MSCustomGradNet",
    torch="cases.models.custom_bprop:TorchCustomGradNet",
    inputs=randn((4, 16), std=2.0),
)
