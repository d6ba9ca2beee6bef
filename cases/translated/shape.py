"""Layers that move values: Upsample (nearest, linear, bilinear, bicubic, trilinear; scale factor
or size; align_corners), the padding families and the pixel/channel shuffles."""

from parity import TRANSLATE, ParityCase, randn

X1 = randn((2, 3, 5))
X2 = randn((2, 3, 4, 5))
X3 = randn((1, 2, 3, 4, 3))

Upsample_nearest_scale = ParityCase(
    "Upsample_nearest_scale",
    mindspore=TRANSLATE,
    torch="torch.nn:Upsample",
    torch_kwargs={"scale_factor": 2},
    inputs=X2,
)
Upsample_nearest_size = ParityCase(
    "Upsample_nearest_size", mindspore=TRANSLATE, torch="torch.nn:Upsample", torch_kwargs={"size": (7, 9)}, inputs=X2
)
Upsample_linear = ParityCase(
    "Upsample_linear",
    mindspore=TRANSLATE,
    torch="torch.nn:Upsample",
    torch_kwargs={"scale_factor": 2.0, "mode": "linear"},
    inputs=X1,
)
Upsample_bilinear = ParityCase(
    "Upsample_bilinear",
    mindspore=TRANSLATE,
    torch="torch.nn:Upsample",
    torch_kwargs={"scale_factor": 2.0, "mode": "bilinear"},
    inputs=X2,
)
Upsample_bilinear_align_corners_size = ParityCase(
    "Upsample_bilinear_align_corners_size",
    mindspore=TRANSLATE,
    torch="torch.nn:Upsample",
    torch_kwargs={"size": (7, 8), "mode": "bilinear", "align_corners": True},
    inputs=X2,
)
Upsample_bicubic = ParityCase(
    "Upsample_bicubic",
    mindspore=TRANSLATE,
    torch="torch.nn:Upsample",
    torch_kwargs={"scale_factor": 2.0, "mode": "bicubic"},
    inputs=X2,
    xfail="MindSpore's bicubic resize (ResizeBicubic) differs from PyTorch's: up to 0.19 here",
)
Upsample_bicubic_align_corners = ParityCase(
    "Upsample_bicubic_align_corners",
    mindspore=TRANSLATE,
    torch="torch.nn:Upsample",
    torch_kwargs={"size": (6, 7), "mode": "bicubic", "align_corners": True},
    inputs=X2,
    xfail="MindSpore's bicubic resize with align_corners differs from PyTorch's by up to 2e-3",
)
Upsample_trilinear = ParityCase(
    "Upsample_trilinear",
    mindspore=TRANSLATE,
    torch="torch.nn:Upsample",
    torch_kwargs={"scale_factor": 2.0, "mode": "trilinear"},
    inputs=X3,
)
Upsample_bilinear_fractional = ParityCase(
    "Upsample_bilinear_fractional",
    mindspore=TRANSLATE,
    torch="torch.nn:Upsample",
    torch_kwargs={"scale_factor": 1.5, "mode": "bilinear"},
    inputs=X2,
    xfail="MindSpore maps bilinear source coordinates from the sizes, PyTorch from 1/scale_factor",
)
Upsample_bilinear_fractional_recompute = ParityCase(
    "Upsample_bilinear_fractional_recompute",
    mindspore=TRANSLATE,
    torch="torch.nn:Upsample",
    torch_kwargs={"scale_factor": 1.5, "mode": "bilinear", "recompute_scale_factor": True},
    inputs=X2,
)
UpsamplingNearest2d = ParityCase(
    "UpsamplingNearest2d",
    mindspore=TRANSLATE,
    torch="torch.nn:UpsamplingNearest2d",
    torch_kwargs={"scale_factor": 3},
    inputs=X2,
)
UpsamplingBilinear2d = ParityCase(
    "UpsamplingBilinear2d",
    mindspore=TRANSLATE,
    torch="torch.nn:UpsamplingBilinear2d",
    torch_kwargs={"size": (6, 8)},
    inputs=X2,
)

ZeroPad1d = ParityCase(
    "ZeroPad1d", mindspore=TRANSLATE, torch="torch.nn:ZeroPad1d", torch_kwargs={"padding": (1, 2)}, inputs=X1
)
ZeroPad2d = ParityCase(
    "ZeroPad2d", mindspore=TRANSLATE, torch="torch.nn:ZeroPad2d", torch_kwargs={"padding": (1, 2, 0, 3)}, inputs=X2
)
ZeroPad3d = ParityCase(
    "ZeroPad3d",
    mindspore=TRANSLATE,
    torch="torch.nn:ZeroPad3d",
    torch_kwargs={"padding": (0, 1, 1, 0, 2, 1)},
    inputs=X3,
)
ConstantPad1d = ParityCase(
    "ConstantPad1d",
    mindspore=TRANSLATE,
    torch="torch.nn:ConstantPad1d",
    torch_kwargs={"padding": 2, "value": 0.5},
    inputs=X1,
)
ConstantPad2d = ParityCase(
    "ConstantPad2d",
    mindspore=TRANSLATE,
    torch="torch.nn:ConstantPad2d",
    torch_kwargs={"padding": (1, 0, 2, 1), "value": -1.0},
    inputs=X2,
)
ConstantPad3d = ParityCase(
    "ConstantPad3d",
    mindspore=TRANSLATE,
    torch="torch.nn:ConstantPad3d",
    torch_kwargs={"padding": (1, 1, 0, 2, 1, 0), "value": 2.0},
    inputs=X3,
)
ReflectionPad1d = ParityCase(
    "ReflectionPad1d",
    mindspore=TRANSLATE,
    torch="torch.nn:ReflectionPad1d",
    torch_kwargs={"padding": (2, 1)},
    inputs=X1,
)
ReflectionPad2d = ParityCase(
    "ReflectionPad2d",
    mindspore=TRANSLATE,
    torch="torch.nn:ReflectionPad2d",
    torch_kwargs={"padding": (1, 2, 2, 0)},
    inputs=X2,
)
ReflectionPad3d = ParityCase(
    "ReflectionPad3d", mindspore=TRANSLATE, torch="torch.nn:ReflectionPad3d", torch_kwargs={"padding": 1}, inputs=X3
)
ReplicationPad1d = ParityCase(
    "ReplicationPad1d",
    mindspore=TRANSLATE,
    torch="torch.nn:ReplicationPad1d",
    torch_kwargs={"padding": (3, 1)},
    inputs=X1,
)
ReplicationPad2d = ParityCase(
    "ReplicationPad2d",
    mindspore=TRANSLATE,
    torch="torch.nn:ReplicationPad2d",
    torch_kwargs={"padding": (1, 2, 2, 0)},
    inputs=X2,
)
ReplicationPad3d = ParityCase(
    "ReplicationPad3d",
    mindspore=TRANSLATE,
    torch="torch.nn:ReplicationPad3d",
    torch_kwargs={"padding": (1, 0, 2, 1, 0, 1)},
    inputs=X3,
)
CircularPad1d = ParityCase(
    "CircularPad1d", mindspore=TRANSLATE, torch="torch.nn:CircularPad1d", torch_kwargs={"padding": (2, 1)}, inputs=X1
)
CircularPad2d = ParityCase(
    "CircularPad2d",
    mindspore=TRANSLATE,
    torch="torch.nn:CircularPad2d",
    torch_kwargs={"padding": (1, 2, 2, 1)},
    inputs=X2,
)
CircularPad3d = ParityCase(
    "CircularPad3d", mindspore=TRANSLATE, torch="torch.nn:CircularPad3d", torch_kwargs={"padding": 1}, inputs=X3
)

PixelShuffle = ParityCase(
    "PixelShuffle",
    mindspore=TRANSLATE,
    torch="torch.nn:PixelShuffle",
    torch_kwargs={"upscale_factor": 2},
    inputs=randn((2, 8, 3, 4)),
)
PixelUnshuffle = ParityCase(
    "PixelUnshuffle",
    mindspore=TRANSLATE,
    torch="torch.nn:PixelUnshuffle",
    torch_kwargs={"downscale_factor": 2},
    inputs=randn((2, 2, 4, 6)),
)
ChannelShuffle = ParityCase(
    "ChannelShuffle",
    mindspore=TRANSLATE,
    torch="torch.nn:ChannelShuffle",
    torch_kwargs={"groups": 3},
    inputs=randn((2, 6, 3, 3)),
)
