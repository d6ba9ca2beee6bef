"""Normalisation, in eval mode (running statistics) and train mode (batch statistics and their
running updates): BatchNorm1d/2d/3d, LayerNorm, GroupNorm, InstanceNorm1d/2d/3d."""

from parity import TRANSLATE, ParityCase, randn

BOTH = (False, True)

BatchNorm1d = ParityCase(
    "BatchNorm1d",
    mindspore=TRANSLATE,
    torch="torch.nn:BatchNorm1d",
    torch_kwargs={"num_features": 3},
    inputs=randn((4, 3)),
    train=BOTH,
)
BatchNorm1d_3d_momentum = ParityCase(
    "BatchNorm1d_3d_momentum",
    mindspore=TRANSLATE,
    torch="torch.nn:BatchNorm1d",
    torch_kwargs={"num_features": 3, "momentum": 0.3, "eps": 1e-3},
    inputs=randn((4, 3, 5)),
    train=BOTH,
)
BatchNorm2d = ParityCase(
    "BatchNorm2d",
    mindspore=TRANSLATE,
    torch="torch.nn:BatchNorm2d",
    torch_kwargs={"num_features": 3},
    inputs=randn((2, 3, 4, 4)),
    train=BOTH,
)
BatchNorm2d_no_affine = ParityCase(
    "BatchNorm2d_no_affine",
    mindspore=TRANSLATE,
    torch="torch.nn:BatchNorm2d",
    torch_kwargs={"num_features": 3, "affine": False},
    inputs=randn((2, 3, 4, 4)),
    train=BOTH,
)
BatchNorm2d_no_running_stats = ParityCase(
    "BatchNorm2d_no_running_stats",
    mindspore=TRANSLATE,
    torch="torch.nn:BatchNorm2d",
    torch_kwargs={"num_features": 3, "track_running_stats": False},
    inputs=randn((2, 3, 4, 4)),
    train=BOTH,
)
BatchNorm2d_cumulative = ParityCase(
    "BatchNorm2d_cumulative",
    mindspore=TRANSLATE,
    torch="torch.nn:BatchNorm2d",
    torch_kwargs={"num_features": 3, "momentum": None},
    inputs=randn((2, 3, 4, 4)),
    xfail="momentum=None (cumulative moving average) has no MindSpore counterpart",
)
BatchNorm3d = ParityCase(
    "BatchNorm3d",
    mindspore=TRANSLATE,
    torch="torch.nn:BatchNorm3d",
    torch_kwargs={"num_features": 3},
    inputs=randn((2, 3, 2, 3, 3)),
    train=BOTH,
)

LayerNorm = ParityCase(
    "LayerNorm",
    mindspore=TRANSLATE,
    torch="torch.nn:LayerNorm",
    torch_kwargs={"normalized_shape": 6},
    inputs=randn((2, 3, 6)),
)
LayerNorm_two_dims = ParityCase(
    "LayerNorm_two_dims",
    mindspore=TRANSLATE,
    torch="torch.nn:LayerNorm",
    torch_kwargs={"normalized_shape": (3, 4), "eps": 1e-3},
    inputs=randn((2, 3, 4)),
)
LayerNorm_no_affine = ParityCase(
    "LayerNorm_no_affine",
    mindspore=TRANSLATE,
    torch="torch.nn:LayerNorm",
    torch_kwargs={"normalized_shape": 6, "elementwise_affine": False},
    inputs=randn((2, 3, 6)),
)
LayerNorm_no_bias = ParityCase(
    "LayerNorm_no_bias",
    mindspore=TRANSLATE,
    torch="torch.nn:LayerNorm",
    torch_kwargs={"normalized_shape": 6, "bias": False},
    inputs=randn((2, 3, 6)),
)

GroupNorm = ParityCase(
    "GroupNorm",
    mindspore=TRANSLATE,
    torch="torch.nn:GroupNorm",
    torch_kwargs={"num_groups": 2, "num_channels": 4},
    inputs=randn((2, 4, 3, 3)),
)
GroupNorm_no_affine_3d = ParityCase(
    "GroupNorm_no_affine_3d",
    mindspore=TRANSLATE,
    torch="torch.nn:GroupNorm",
    torch_kwargs={"num_groups": 4, "num_channels": 4, "affine": False, "eps": 1e-3},
    inputs=randn((2, 4, 5)),
)

InstanceNorm1d = ParityCase(
    "InstanceNorm1d",
    mindspore=TRANSLATE,
    torch="torch.nn:InstanceNorm1d",
    torch_kwargs={"num_features": 3},
    inputs=randn((2, 3, 6)),
    train=BOTH,
)
InstanceNorm2d_affine = ParityCase(
    "InstanceNorm2d_affine",
    mindspore=TRANSLATE,
    torch="torch.nn:InstanceNorm2d",
    torch_kwargs={"num_features": 3, "affine": True},
    inputs=randn((2, 3, 4, 4)),
    train=BOTH,
)
InstanceNorm2d_running_stats = ParityCase(
    "InstanceNorm2d_running_stats",
    mindspore=TRANSLATE,
    torch="torch.nn:InstanceNorm2d",
    torch_kwargs={"num_features": 3, "track_running_stats": True},
    inputs=randn((2, 3, 4, 4)),
    xfail="MindSpore's InstanceNorm always uses instance statistics; PyTorch uses the running ones in eval",
)
InstanceNorm3d = ParityCase(
    "InstanceNorm3d",
    mindspore=TRANSLATE,
    torch="torch.nn:InstanceNorm3d",
    torch_kwargs={"num_features": 2},
    inputs=randn((2, 2, 3, 3, 3)),
)
