"""Real ports: mindcv's models against torchvision's and timm's, small, with random weights.

Each pair is the two packages' own models as shipped, the PyTorch side's norm statistics made
trained-like (:func:`cases.models.norm_stats.perturb_norms`) so that what differs shows. Each
MindSpore factory takes ``fixed``: ``True`` patches mindcv's model to PyTorch's semantics where it
differs (the Cells swapped before the weights are copied), so the fixed pair should pass.

What differs, read from both sources (mindcv 0.3.0, torchvision 0.28.0, timm 1.0.31) and shown by
the fixed pairs passing:

* MindSpore's defaults: ``nn.GELU()`` is the tanh approximation (PyTorch's is exact),
  ``nn.LayerNorm`` has epsilon 1e-7 (PyTorch's models use 1e-5 or 1e-6), ``nn.Conv2d`` pads
  ``'same'`` and has no bias. On an even-sized input a strided ``'same'`` convolution or pool
  pads the bottom and right only, where PyTorch's ``padding=k // 2`` pads every side: the
  windows sit one row and column off.
* torchvision's MobileNetV3 uses BatchNorm epsilon 1e-3 (mindcv keeps 1e-5).

Framework imports are inside the functions, so listing these pairs imports neither framework.
"""

import functools

from parity import randn

from .norm_stats import perturb_norms
from .ports import Port
from .zoo_compat import import_quietly, import_torchvision

NUM_CLASSES = 10
IMAGE, PATCH = (2, 3, 64, 64), (2, 3, 32, 32)
IMAGES, PATCHES = randn(IMAGE), randn(PATCH)
_HERE = "cases.models.ports_vision:"


# -- swapping MindSpore Cells ---------------------------------------------------------------------


def _replace(root, wanted, make):
    """Replace each sub-Cell of ``root`` for which ``wanted(path, cell)`` holds by ``make(cell)``, at its attribute path; then name every Parameter by its path, as the
    new Cells' Parameters are named by their own attributes alone."""
    from mindspore import nn

    for path, cell in list(root.cells_and_names()):
        if not path or not wanted(path, cell):
            continue
        parent_path, _, name = path.rpartition(".")
        parent = root.get_sub_cell(parent_path) if parent_path else root
        new = make(cell)
        if isinstance(parent, (nn.SequentialCell, nn.CellList)):
            parent[int(name)] = new
        else:
            setattr(parent, name, new)
    for path, parameter in root.parameters_and_names():
        parameter.name = path
    return root


def _padded_conv(conv):
    """``conv`` with PyTorch's padding, ``k // 2`` on every side, in place of ``'same'``."""
    from mindspore import nn

    kernel = conv.kernel_size
    return nn.Conv2d(
        conv.in_channels,
        conv.out_channels,
        kernel,
        stride=conv.stride,
        pad_mode="pad",
        padding=(kernel[0] // 2, kernel[0] // 2, kernel[1] // 2, kernel[1] // 2),
        group=conv.group,
        has_bias=conv.has_bias,
    )


def _strided_same(path, cell):
    from mindspore import nn

    if not isinstance(cell, nn.Conv2d) or cell.pad_mode != "same":
        return False
    return max(cell.stride) > 1 and max(cell.kernel_size) > 1


def _exact_gelu(cell):
    from mindspore import nn

    return nn.GELU(approximate=False)


def _is_gelu(path, cell):
    from mindspore import nn

    return isinstance(cell, nn.GELU)


def _layernorm_eps(epsilon):
    def make(cell):
        from mindspore import nn

        return nn.LayerNorm(cell.normalized_shape, cell.begin_norm_axis, cell.begin_params_axis, epsilon=epsilon)

    return make


def _is_layernorm(path, cell):
    from mindspore import nn

    return type(cell) is nn.LayerNorm


def _paths(module, kind, where=lambda path, layer: True):
    """The paths of ``module``'s layers of class ``kind`` (a name) for which ``where`` holds."""
    return [p for p, m in module.named_modules() if type(m).__name__ == kind and where(p, m)]


def _strided(path, conv):
    return max(conv.stride) > 1 and max(conv.kernel_size) > 1


# -- ResNet-18 ------------------------------------------------------------------------------------


def torch_resnet18():
    return perturb_norms(import_torchvision().models.resnet18(num_classes=NUM_CLASSES), calibrate=PATCH)


def ms_resnet18(fixed: bool = False):
    """mindcv's ``resnet18``. Its stem max-pool pads ``'same'``: on the 16x16 map after the stem
    (32x32 images) it pads the bottom and right only, torchvision's ``padding=1`` every side."""
    from mindspore import nn

    cell = import_quietly("mindcv.models").resnet18(num_classes=NUM_CLASSES)
    if fixed:
        cell.max_pool = nn.MaxPool2d(kernel_size=3, stride=2, pad_mode="pad", padding=1)
    return cell


# -- MobileNetV3-small ----------------------------------------------------------------------------


def torch_mobilenet_v3_small():
    return perturb_norms(import_torchvision().models.mobilenet_v3_small(num_classes=NUM_CLASSES), calibrate=IMAGE)


def ms_mobilenet_v3_small(fixed: bool = False):
    """mindcv's ``mobilenet_v3_small_100``: BatchNorm epsilon 1e-5 where torchvision's is 1e-3, and
    its depthwise convolutions pad ``'same'`` (four of them strided)."""
    from mindspore import nn

    cell = import_quietly("mindcv.models").mobilenet_v3_small_100(num_classes=NUM_CLASSES)
    if fixed:
        _replace(
            cell, lambda path, c: isinstance(c, nn.BatchNorm2d), lambda c: nn.BatchNorm2d(c.num_features, eps=1e-3)
        )
        _replace(cell, _strided_same, _padded_conv)
    return cell


def mobilenet_v3_differences(module):
    found = {p: "BatchNorm epsilon 1e-5 vs 1e-3" for p in _paths(module, "BatchNorm2d")}
    for path in _paths(module, "Conv2d", _strided):
        if path != "features.0.0":  # mindcv's stem pads 1 explicitly
            found[path] = "strided depthwise convolution pads 'same' vs k // 2 on every side"
    return found


# -- EfficientNet-B0 ------------------------------------------------------------------------------


def torch_efficientnet_b0():
    return perturb_norms(import_torchvision().models.efficientnet_b0(num_classes=NUM_CLASSES), calibrate=IMAGE)


def ms_efficientnet_b0(fixed: bool = False):
    """mindcv's ``efficientnet_b0``: every convolution keeps MindSpore's ``pad_mode='same'``, the
    stride-2 stem and the four stride-2 depthwise convolutions among them."""
    cell = import_quietly("mindcv.models").efficientnet_b0(num_classes=NUM_CLASSES)
    if fixed:
        _replace(cell, _strided_same, _padded_conv)
    return cell


def efficientnet_differences(module):
    return {p: "strided convolution pads 'same' vs k // 2 on every side" for p in _paths(module, "Conv2d", _strided)}


# -- RegNetY-400MF --------------------------------------------------------------------------------


def torch_regnet_y_400mf():
    return perturb_norms(import_torchvision().models.regnet_y_400mf(num_classes=NUM_CLASSES), calibrate=IMAGE)


def ms_regnet_y_400mf(fixed: bool = False):
    """mindcv's ``regnet_y_400mf`` (pycls' code: explicit symmetric padding, BatchNorm defaults,
    squeeze-excitation at a quarter of each block's input width, as torchvision's)."""
    return import_quietly("mindcv.models").regnet_y_400mf(num_classes=NUM_CLASSES)


# -- ConvNeXt (reduced) ---------------------------------------------------------------------------

CONVNEXT = dict(depths=[1, 1, 2, 1], dims=[32, 64, 128, 256])


def torch_convnext():
    convnext = import_torchvision().models.convnext
    dims, depths = CONVNEXT["dims"], CONVNEXT["depths"]
    setting = [
        convnext.CNBlockConfig(dims[i], dims[i + 1] if i + 1 < len(dims) else None, depths[i]) for i in range(len(dims))
    ]
    model = convnext.ConvNeXt(setting, stochastic_depth_prob=0.0, num_classes=NUM_CLASSES)
    return perturb_norms(model)


def ms_convnext(fixed: bool = False):
    """mindcv's ``ConvNeXt`` at the same depths and widths: its blocks' ``nn.GELU()`` is the tanh
    approximation. Its layer scale ``gamma_`` is ``(C,)`` where torchvision's is ``(C, 1, 1)``."""
    convnext = import_quietly("mindcv.models.convnext")
    cell = convnext.ConvNeXt(3, NUM_CLASSES, drop_path_rate=0.0, **CONVNEXT)
    if fixed:
        _replace(cell, _is_gelu, _exact_gelu)
    return cell


def convnext_differences(module):
    return {p: "GELU tanh approximation vs exact" for p in _paths(module, "GELU")}


# -- Swin (reduced) -------------------------------------------------------------------------------

SWIN = dict(embed_dim=32, depths=[2, 2, 2], num_heads=[2, 4, 8], window_size=4)


def torch_swin():
    swin = import_torchvision().models.swin_transformer
    model = swin.SwinTransformer(
        patch_size=[4, 4],
        embed_dim=SWIN["embed_dim"],
        depths=SWIN["depths"],
        num_heads=SWIN["num_heads"],
        window_size=[SWIN["window_size"]] * 2,
        stochastic_depth_prob=0.0,
        num_classes=NUM_CLASSES,
    )
    return perturb_norms(model)


def ms_swin(fixed: bool = False):
    """mindcv's ``SwinTransformer`` on 64x64 images (maps of 16, 8 and 4, windows of 4): exact
    where torchvision is, except its MLPs' ``nn.GELU()`` (tanh) and its patch-merging LayerNorms,
    built without an epsilon (1e-7 against torchvision's 1e-5). It keeps q, k and v as three Dense
    layers, its relative position index as a one-hot ``Parameter`` and each shifted block's mask as
    a ``Parameter``, neither of which torchvision stores."""
    swin = import_quietly("mindcv.models.swintransformer")
    cell = swin.SwinTransformer(image_size=64, patch_size=4, num_classes=NUM_CLASSES, drop_path_rate=0.0, **SWIN)
    if fixed:
        _replace(cell, _is_gelu, _exact_gelu)
        _replace(cell, lambda path, c: path.endswith("downsample.norm"), _layernorm_eps(1e-5))
    return cell


def swin_differences(module):
    found = {p: "GELU tanh approximation vs exact" for p in _paths(module, "GELU")}
    for path, layer in module.named_modules():
        if type(layer).__name__ == "PatchMerging":
            found[f"{path}.norm"] = "LayerNorm epsilon 1e-7 vs 1e-5"
    return found


# -- ViT against torchvision ----------------------------------------------------------------------

VIT = dict(image_size=32, patch_size=8, hidden=64, depth=2, heads=4, mlp=128)


def torch_vit():
    models = import_torchvision().models
    model = models.VisionTransformer(
        image_size=VIT["image_size"],
        patch_size=VIT["patch_size"],
        num_layers=VIT["depth"],
        num_heads=VIT["heads"],
        hidden_dim=VIT["hidden"],
        mlp_dim=VIT["mlp"],
        num_classes=NUM_CLASSES,
    )
    return perturb_norms(model)


def ms_vit(fixed: bool = False):
    """mindcv's ``VisionTransformer`` as shipped: ``nn.GELU()`` (tanh) and ``nn.LayerNorm`` at
    epsilon 1e-7, where torchvision's are exact and 1e-6."""
    from mindspore import nn

    vit = import_quietly("mindcv.models.vit")
    options = {}
    if fixed:
        options = dict(
            act_layer=functools.partial(nn.GELU, approximate=False),
            norm_layer=functools.partial(nn.LayerNorm, epsilon=1e-6),
        )
    return vit.VisionTransformer(
        image_size=VIT["image_size"],
        patch_size=VIT["patch_size"],
        embed_dim=VIT["hidden"],
        depth=VIT["depth"],
        num_heads=VIT["heads"],
        mlp_ratio=VIT["mlp"] / VIT["hidden"],
        num_classes=NUM_CLASSES,
        **options,
    )


def vit_differences(module):
    found = {p: "GELU tanh approximation vs exact" for p in _paths(module, "GELU")}
    found.update({p: "LayerNorm epsilon 1e-7 vs 1e-6" for p in _paths(module, "LayerNorm")})
    return found


# -- MLP-Mixer against timm -----------------------------------------------------------------------

MIXER = dict(patch_size=8, depth=2, hidden=64, tokens_mlp=32, channels_mlp=256)


def torch_mixer():
    timm = import_quietly("timm")
    model = timm.models.mlp_mixer.MlpMixer(
        num_classes=NUM_CLASSES,
        img_size=32,
        patch_size=MIXER["patch_size"],
        num_blocks=MIXER["depth"],
        embed_dim=MIXER["hidden"],
        mlp_ratio=(MIXER["tokens_mlp"] / MIXER["hidden"], MIXER["channels_mlp"] / MIXER["hidden"]),
    )
    return perturb_norms(model)


def ms_mixer(fixed: bool = False):
    """mindcv's ``MLPMixer``: ``nn.GELU()`` (tanh), ``nn.LayerNorm`` at epsilon 1e-7 (timm: exact,
    1e-6), and a patch embedding without a bias (timm's has one: :func:`mixer_adapt`)."""
    mixer = import_quietly("mindcv.models.mlpmixer")
    cell = mixer.MLPMixer(
        depth=MIXER["depth"],
        patch_size=MIXER["patch_size"],
        n_patches=(32 // MIXER["patch_size"]) ** 2,
        n_channels=MIXER["hidden"],
        token_dim=MIXER["tokens_mlp"],
        channel_dim=MIXER["channels_mlp"],
        num_classes=NUM_CLASSES,
    )
    if fixed:
        _replace(cell, _is_gelu, _exact_gelu)
        _replace(cell, _is_layernorm, _layernorm_eps(1e-6))
    return cell


def mixer_adapt(ms_cell, module):
    """mindcv's patch embedding has no bias, timm's has one: no weight map pairs them. The
    MindSpore side gets the bias it lacks (the check then copies timm's), as a user must before
    anything can be compared."""
    from mindspore import nn

    if ms_cell is None:
        return
    size = MIXER["patch_size"]
    conv = nn.Conv2d(3, MIXER["hidden"], size, size, pad_mode="pad", padding=0, has_bias=True)
    _replace(ms_cell, lambda path, c: path == "to_patch_embedding.0", lambda c: conv)


def mixer_differences(module):
    found = {p: "GELU tanh approximation vs exact" for p in _paths(module, "GELU")}
    found.update({p: "LayerNorm epsilon 1e-7 vs 1e-6" for p in _paths(module, "LayerNorm")})
    return found  # the missing bias is no difference once adapted: the weights cannot pair without it


# -- GhostNet against timm ------------------------------------------------------------------------


def torch_ghostnet():
    timm = import_quietly("timm")
    model = timm.create_model("ghostnet_100", pretrained=False, num_classes=NUM_CLASSES)
    return perturb_norms(model, calibrate=IMAGE)


def ms_ghostnet(fixed: bool = False):
    """mindcv's ``ghostnet_100``."""
    return import_quietly("mindcv.models").ghostnet_100(num_classes=NUM_CLASSES)


def _none(module):
    return {}


PAIRS = (
    Port(
        "resnet18",
        _HERE + "ms_resnet18",
        _HERE + "torch_resnet18",
        PATCHES,
        lambda m: {"maxpool": "max-pool pads 'same' (bottom and right) vs 1 on every side"},
        causes=("maxpool2d-pad-mode-same",),
    ),
    Port(
        "mobilenet_v3_small",
        _HERE + "ms_mobilenet_v3_small",
        _HERE + "torch_mobilenet_v3_small",
        IMAGES,
        mobilenet_v3_differences,
        causes=("conv2d-pad-mode-default", "batchnorm2d-eps-not-carried"),
    ),
    Port(
        "efficientnet_b0",
        _HERE + "ms_efficientnet_b0",
        _HERE + "torch_efficientnet_b0",
        IMAGES,
        efficientnet_differences,
        causes=("conv2d-pad-mode-default",),
    ),
    Port(
        "regnet_y_400mf",
        _HERE + "ms_regnet_y_400mf",
        _HERE + "torch_regnet_y_400mf",
        IMAGES,
        _none,
    ),
    Port(
        "convnext",
        _HERE + "ms_convnext",
        _HERE + "torch_convnext",
        IMAGES,
        convnext_differences,
        causes=("gelu-approximate-default",),
    ),
    Port(
        "swin",
        _HERE + "ms_swin",
        _HERE + "torch_swin",
        IMAGES,
        swin_differences,
        causes=("gelu-approximate-default", "layernorm-epsilon-default"),
    ),
    Port(
        "vit",
        _HERE + "ms_vit",
        _HERE + "torch_vit",
        PATCHES,
        vit_differences,
        causes=("gelu-approximate-default", "layernorm-epsilon-default"),
    ),
    Port(
        "mlp_mixer",
        _HERE + "ms_mixer",
        _HERE + "torch_mixer",
        PATCHES,
        mixer_differences,
        causes=("gelu-approximate-default", "layernorm-epsilon-default"),
        adapt=mixer_adapt,
    ),
    Port("ghostnet", _HERE + "ms_ghostnet", _HERE + "torch_ghostnet", IMAGES, _none),
)
