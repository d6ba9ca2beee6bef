"""Convolutions: padding as numbers and as 'same'/'valid', padding_mode, stride, dilation,
groups, bias, and the transposed convolutions' output_padding."""

from parity import TRANSLATE, ParityCase, randn

X1 = randn((2, 4, 9))
X2 = randn((2, 4, 7, 8))
X3 = randn((1, 4, 5, 6, 5))

Conv1d_default = ParityCase(
    "Conv1d_default",
    mindspore=TRANSLATE,
    torch="torch.nn:Conv1d",
    torch_kwargs={"in_channels": 4, "out_channels": 6, "kernel_size": 3},
    inputs=X1,
)
Conv1d_stride_padding_dilation_groups = ParityCase(
    "Conv1d_stride_padding_dilation_groups",
    mindspore=TRANSLATE,
    torch="torch.nn:Conv1d",
    torch_kwargs={
        "in_channels": 4,
        "out_channels": 6,
        "kernel_size": 3,
        "stride": 2,
        "padding": 2,
        "dilation": 2,
        "groups": 2,
    },
    inputs=X1,
)
Conv1d_same = ParityCase(
    "Conv1d_same",
    mindspore=TRANSLATE,
    torch="torch.nn:Conv1d",
    torch_kwargs={"in_channels": 4, "out_channels": 6, "kernel_size": 3, "padding": "same", "dilation": 2},
    inputs=X1,
)
Conv1d_valid_nobias = ParityCase(
    "Conv1d_valid_nobias",
    mindspore=TRANSLATE,
    torch="torch.nn:Conv1d",
    torch_kwargs={"in_channels": 4, "out_channels": 6, "kernel_size": 5, "padding": "valid", "bias": False},
    inputs=X1,
)
Conv1d_reflect = ParityCase(
    "Conv1d_reflect",
    mindspore=TRANSLATE,
    torch="torch.nn:Conv1d",
    torch_kwargs={"in_channels": 4, "out_channels": 6, "kernel_size": 3, "padding": 2, "padding_mode": "reflect"},
    inputs=X1,
)
Conv1d_circular = ParityCase(
    "Conv1d_circular",
    mindspore=TRANSLATE,
    torch="torch.nn:Conv1d",
    torch_kwargs={"in_channels": 4, "out_channels": 6, "kernel_size": 3, "padding": 1, "padding_mode": "circular"},
    inputs=X1,
)

Conv2d_padding = ParityCase(
    "Conv2d_padding",
    mindspore=TRANSLATE,
    torch="torch.nn:Conv2d",
    torch_kwargs={"in_channels": 4, "out_channels": 6, "kernel_size": 3, "padding": 1},
    inputs=X2,
)
Conv2d_asymmetric = ParityCase(
    "Conv2d_asymmetric",
    mindspore=TRANSLATE,
    torch="torch.nn:Conv2d",
    torch_kwargs={
        "in_channels": 4,
        "out_channels": 6,
        "kernel_size": (3, 2),
        "stride": (2, 1),
        "padding": (1, 2),
        "dilation": (1, 2),
    },
    inputs=X2,
)
Conv2d_same = ParityCase(
    "Conv2d_same",
    mindspore=TRANSLATE,
    torch="torch.nn:Conv2d",
    torch_kwargs={"in_channels": 4, "out_channels": 6, "kernel_size": 5, "padding": "same"},
    inputs=X2,
)
Conv2d_valid_stride = ParityCase(
    "Conv2d_valid_stride",
    mindspore=TRANSLATE,
    torch="torch.nn:Conv2d",
    torch_kwargs={"in_channels": 4, "out_channels": 6, "kernel_size": 3, "stride": 2, "padding": "valid"},
    inputs=X2,
)
Conv2d_depthwise_nobias = ParityCase(
    "Conv2d_depthwise_nobias",
    mindspore=TRANSLATE,
    torch="torch.nn:Conv2d",
    torch_kwargs={"in_channels": 4, "out_channels": 8, "kernel_size": 3, "padding": 1, "groups": 4, "bias": False},
    inputs=X2,
)
Conv2d_replicate = ParityCase(
    "Conv2d_replicate",
    mindspore=TRANSLATE,
    torch="torch.nn:Conv2d",
    torch_kwargs={
        "in_channels": 4,
        "out_channels": 6,
        "kernel_size": 3,
        "padding": (1, 2),
        "padding_mode": "replicate",
    },
    inputs=X2,
)
Conv2d_reflect_same = ParityCase(
    "Conv2d_reflect_same",
    mindspore=TRANSLATE,
    torch="torch.nn:Conv2d",
    torch_kwargs={"in_channels": 4, "out_channels": 6, "kernel_size": 3, "padding": "same", "padding_mode": "reflect"},
    inputs=X2,
)
Conv2d_circular = ParityCase(
    "Conv2d_circular",
    mindspore=TRANSLATE,
    torch="torch.nn:Conv2d",
    torch_kwargs={
        "in_channels": 4,
        "out_channels": 6,
        "kernel_size": 3,
        "padding": 1,
        "stride": 2,
        "padding_mode": "circular",
    },
    inputs=X2,
)

Conv3d_padding_groups = ParityCase(
    "Conv3d_padding_groups",
    mindspore=TRANSLATE,
    torch="torch.nn:Conv3d",
    torch_kwargs={
        "in_channels": 4,
        "out_channels": 6,
        "kernel_size": 3,
        "stride": (1, 2, 1),
        "padding": (1, 0, 1),
        "groups": 2,
    },
    inputs=X3,
)
Conv3d_same = ParityCase(
    "Conv3d_same",
    mindspore=TRANSLATE,
    torch="torch.nn:Conv3d",
    torch_kwargs={"in_channels": 4, "out_channels": 3, "kernel_size": 3, "padding": "same"},
    inputs=X3,
)
Conv3d_replicate = ParityCase(
    "Conv3d_replicate",
    mindspore=TRANSLATE,
    torch="torch.nn:Conv3d",
    torch_kwargs={"in_channels": 4, "out_channels": 3, "kernel_size": 3, "padding": 1, "padding_mode": "replicate"},
    inputs=X3,
)
Conv3d_reflect = ParityCase(
    "Conv3d_reflect",
    mindspore=TRANSLATE,
    torch="torch.nn:Conv3d",
    torch_kwargs={"in_channels": 4, "out_channels": 3, "kernel_size": 3, "padding": 1, "padding_mode": "reflect"},
    inputs=X3,
    xfail="MindSpore's ops.pad has no 5-d reflect kernel on CPU",
)

ConvTranspose1d_padding = ParityCase(
    "ConvTranspose1d_padding",
    mindspore=TRANSLATE,
    torch="torch.nn:ConvTranspose1d",
    torch_kwargs={"in_channels": 4, "out_channels": 6, "kernel_size": 3, "stride": 2, "padding": 1},
    inputs=X1,
)
ConvTranspose1d_output_padding = ParityCase(
    "ConvTranspose1d_output_padding",
    mindspore=TRANSLATE,
    torch="torch.nn:ConvTranspose1d",
    torch_kwargs={
        "in_channels": 4,
        "out_channels": 6,
        "kernel_size": 3,
        "stride": 2,
        "padding": 1,
        "output_padding": 1,
    },
    inputs=X1,
)
ConvTranspose1d_groups_dilation = ParityCase(
    "ConvTranspose1d_groups_dilation",
    mindspore=TRANSLATE,
    torch="torch.nn:ConvTranspose1d",
    torch_kwargs={
        "in_channels": 4,
        "out_channels": 6,
        "kernel_size": 3,
        "stride": 2,
        "padding": 2,
        "dilation": 2,
        "groups": 2,
        "bias": False,
    },
    inputs=X1,
)
ConvTranspose2d_stride = ParityCase(
    "ConvTranspose2d_stride",
    mindspore=TRANSLATE,
    torch="torch.nn:ConvTranspose2d",
    torch_kwargs={"in_channels": 4, "out_channels": 6, "kernel_size": (3, 2), "stride": 2},
    inputs=X2,
)
ConvTranspose2d_output_padding = ParityCase(
    "ConvTranspose2d_output_padding",
    mindspore=TRANSLATE,
    torch="torch.nn:ConvTranspose2d",
    torch_kwargs={
        "in_channels": 4,
        "out_channels": 6,
        "kernel_size": 3,
        "stride": 2,
        "padding": 1,
        "output_padding": 1,
    },
    inputs=X2,
)
ConvTranspose2d_groups_dilation = ParityCase(
    "ConvTranspose2d_groups_dilation",
    mindspore=TRANSLATE,
    torch="torch.nn:ConvTranspose2d",
    torch_kwargs={
        "in_channels": 4,
        "out_channels": 6,
        "kernel_size": 3,
        "stride": (2, 1),
        "padding": (2, 1),
        "dilation": 2,
        "groups": 2,
    },
    inputs=X2,
)
ConvTranspose2d_output_padding_unpadded_nobias = ParityCase(
    "ConvTranspose2d_output_padding_unpadded_nobias",
    mindspore=TRANSLATE,
    torch="torch.nn:ConvTranspose2d",
    torch_kwargs={
        "in_channels": 4,
        "out_channels": 6,
        "kernel_size": 3,
        "stride": 2,
        "output_padding": 1,
        "bias": False,
    },
    inputs=X2,
)
ConvTranspose2d_output_padding_unpadded = ParityCase(
    "ConvTranspose2d_output_padding_unpadded",
    mindspore=TRANSLATE,
    torch="torch.nn:ConvTranspose2d",
    torch_kwargs={"in_channels": 4, "out_channels": 6, "kernel_size": 3, "stride": 2, "output_padding": 1},
    inputs=X2,
    xfail="nn.Conv2dTranspose fills output_padding rows with zeros after the bias; PyTorch adds the bias",
)
ConvTranspose3d_padding = ParityCase(
    "ConvTranspose3d_padding",
    mindspore=TRANSLATE,
    torch="torch.nn:ConvTranspose3d",
    torch_kwargs={
        "in_channels": 4,
        "out_channels": 6,
        "kernel_size": 3,
        "stride": (1, 2, 1),
        "padding": 1,
        "groups": 2,
    },
    inputs=X3,
)
ConvTranspose3d_output_padding = ParityCase(
    "ConvTranspose3d_output_padding",
    mindspore=TRANSLATE,
    torch="torch.nn:ConvTranspose3d",
    torch_kwargs={"in_channels": 4, "out_channels": 3, "kernel_size": 3, "stride": 2, "output_padding": 1},
    inputs=X3,
    reference="float64",
)  # the bias gradient sums ~1300 cotangents: float32 rounding
