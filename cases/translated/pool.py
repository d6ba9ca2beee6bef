"""Pooling: max and average pooling with padding, dilation, ceil_mode, count_include_pad and
divisor_override; adaptive and power-average pooling. Max pooling gradients follow the argmax,
so inputs are uniform (ties have probability zero) and the reference is float64."""

from parity import TRANSLATE, ParityCase, randn, uniform

X1 = uniform((2, 3, 11), -1, 1)
X2 = uniform((2, 3, 9, 10), -1, 1)
X3 = uniform((1, 2, 5, 6, 7), -1, 1)

MaxPool1d = ParityCase(
    "MaxPool1d", mindspore=TRANSLATE, torch="torch.nn:MaxPool1d", torch_kwargs={"kernel_size": 3}, inputs=X1
)
MaxPool1d_padding_dilation_ceil = ParityCase(
    "MaxPool1d_padding_dilation_ceil",
    mindspore=TRANSLATE,
    torch="torch.nn:MaxPool1d",
    torch_kwargs={"kernel_size": 3, "stride": 2, "padding": 1, "dilation": 2, "ceil_mode": True},
    inputs=X1,
)
MaxPool2d = ParityCase(
    "MaxPool2d", mindspore=TRANSLATE, torch="torch.nn:MaxPool2d", torch_kwargs={"kernel_size": 2}, inputs=X2
)
MaxPool2d_padding_stride = ParityCase(
    "MaxPool2d_padding_stride",
    mindspore=TRANSLATE,
    torch="torch.nn:MaxPool2d",
    torch_kwargs={"kernel_size": 3, "stride": (2, 1), "padding": 1},
    inputs=X2,
)
MaxPool2d_ceil_dilation = ParityCase(
    "MaxPool2d_ceil_dilation",
    mindspore=TRANSLATE,
    torch="torch.nn:MaxPool2d",
    torch_kwargs={"kernel_size": 2, "stride": 2, "dilation": (1, 2), "ceil_mode": True},
    inputs=X2,
)
MaxPool2d_indices = ParityCase(
    "MaxPool2d_indices",
    mindspore=TRANSLATE,
    torch="torch.nn:MaxPool2d",
    torch_kwargs={"kernel_size": 3, "stride": 2, "padding": 1, "return_indices": True},
    inputs=X2,
)
MaxPool3d = ParityCase(
    "MaxPool3d",
    mindspore=TRANSLATE,
    torch="torch.nn:MaxPool3d",
    torch_kwargs={"kernel_size": 2, "stride": (1, 2, 2)},
    inputs=X3,
)
MaxPool3d_padding_ceil = ParityCase(
    "MaxPool3d_padding_ceil",
    mindspore=TRANSLATE,
    torch="torch.nn:MaxPool3d",
    torch_kwargs={"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True},
    inputs=X3,
)

AvgPool1d = ParityCase(
    "AvgPool1d", mindspore=TRANSLATE, torch="torch.nn:AvgPool1d", torch_kwargs={"kernel_size": 3}, inputs=X1
)
AvgPool1d_padding_exclude = ParityCase(
    "AvgPool1d_padding_exclude",
    mindspore=TRANSLATE,
    torch="torch.nn:AvgPool1d",
    torch_kwargs={"kernel_size": 3, "stride": 2, "padding": 1, "count_include_pad": False, "ceil_mode": True},
    inputs=X1,
)
AvgPool2d = ParityCase(
    "AvgPool2d", mindspore=TRANSLATE, torch="torch.nn:AvgPool2d", torch_kwargs={"kernel_size": 2}, inputs=X2
)
AvgPool2d_padding_include = ParityCase(
    "AvgPool2d_padding_include",
    mindspore=TRANSLATE,
    torch="torch.nn:AvgPool2d",
    torch_kwargs={"kernel_size": 3, "stride": 2, "padding": 1},
    inputs=X2,
)
AvgPool2d_exclude_ceil = ParityCase(
    "AvgPool2d_exclude_ceil",
    mindspore=TRANSLATE,
    torch="torch.nn:AvgPool2d",
    torch_kwargs={"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True, "count_include_pad": False},
    inputs=X2,
)
AvgPool2d_divisor = ParityCase(
    "AvgPool2d_divisor",
    mindspore=TRANSLATE,
    torch="torch.nn:AvgPool2d",
    torch_kwargs={"kernel_size": 2, "divisor_override": 3},
    inputs=X2,
)
AvgPool3d_padding_divisor = ParityCase(
    "AvgPool3d_padding_divisor",
    mindspore=TRANSLATE,
    torch="torch.nn:AvgPool3d",
    torch_kwargs={"kernel_size": 2, "stride": 2, "padding": 1, "divisor_override": 5},
    inputs=X3,
)

AdaptiveAvgPool1d = ParityCase(
    "AdaptiveAvgPool1d",
    mindspore=TRANSLATE,
    torch="torch.nn:AdaptiveAvgPool1d",
    torch_kwargs={"output_size": 4},
    inputs=X1,
)
AdaptiveAvgPool2d = ParityCase(
    "AdaptiveAvgPool2d",
    mindspore=TRANSLATE,
    torch="torch.nn:AdaptiveAvgPool2d",
    torch_kwargs={"output_size": (4, 3)},
    inputs=X2,
)
AdaptiveAvgPool2d_keep_dim = ParityCase(
    "AdaptiveAvgPool2d_keep_dim",
    mindspore=TRANSLATE,
    torch="torch.nn:AdaptiveAvgPool2d",
    torch_kwargs={"output_size": (None, 3)},
    inputs=X2,
)
AdaptiveAvgPool3d = ParityCase(
    "AdaptiveAvgPool3d",
    mindspore=TRANSLATE,
    torch="torch.nn:AdaptiveAvgPool3d",
    torch_kwargs={"output_size": (2, 3, 3)},
    inputs=X3,
)
AdaptiveMaxPool1d = ParityCase(
    "AdaptiveMaxPool1d",
    mindspore=TRANSLATE,
    torch="torch.nn:AdaptiveMaxPool1d",
    torch_kwargs={"output_size": 4},
    inputs=X1,
)
AdaptiveMaxPool1d_indices = ParityCase(
    "AdaptiveMaxPool1d_indices",
    mindspore=TRANSLATE,
    torch="torch.nn:AdaptiveMaxPool1d",
    torch_kwargs={"output_size": 5, "return_indices": True},
    inputs=X1,
)
AdaptiveMaxPool2d = ParityCase(
    "AdaptiveMaxPool2d",
    mindspore=TRANSLATE,
    torch="torch.nn:AdaptiveMaxPool2d",
    torch_kwargs={"output_size": (4, 3)},
    inputs=X2,
)
AdaptiveMaxPool2d_indices = ParityCase(
    "AdaptiveMaxPool2d_indices",
    mindspore=TRANSLATE,
    torch="torch.nn:AdaptiveMaxPool2d",
    torch_kwargs={"output_size": 3, "return_indices": True},
    inputs=X2,
)
AdaptiveMaxPool3d = ParityCase(
    "AdaptiveMaxPool3d",
    mindspore=TRANSLATE,
    torch="torch.nn:AdaptiveMaxPool3d",
    torch_kwargs={"output_size": (2, 3, 3)},
    inputs=X3,
)

LPPool1d = ParityCase(
    "LPPool1d",
    mindspore=TRANSLATE,
    torch="torch.nn:LPPool1d",
    torch_kwargs={"norm_type": 2, "kernel_size": 3, "stride": 2},
    inputs=uniform((2, 3, 11), 0.1, 1),
)
LPPool2d = ParityCase(
    "LPPool2d",
    mindspore=TRANSLATE,
    torch="torch.nn:LPPool2d",
    torch_kwargs={"norm_type": 3, "kernel_size": 2},
    inputs=randn((2, 3, 6, 6)),
)
