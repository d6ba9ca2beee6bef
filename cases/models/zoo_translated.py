"""Real PyTorch models for ``parity.translate``: torchvision's classifier families and its ViT and
Swin, timm's VisionTransformer and EfficientNet, and a text model on ``nn.TransformerEncoder``,
built small for the catalogue.

Each factory builds the family's own class, so its ``forward`` (the code ``translate`` traces, with
its ``torch.flatten``, ``torch.cat``, ``F.relu``, ``F.layer_norm``, channel shuffles and in-place
additions) is the library's. 10 classes, seeded weights, eval mode unless the case says otherwise.
Where the published configuration costs more than a few seconds a check on two CPU cores, the same
class is built narrower or shallower (said at each factory); the rest are the published models.
"""

import math

import torch

from .zoo_compat import import_quietly, import_torchvision

NUM_CLASSES = 10


def _models():
    return import_torchvision().models


def resnet18():
    return _models().resnet18(num_classes=NUM_CLASSES)


def vgg11_narrow():
    """VGG-11's layer layout (``cfgs["A"]``) at 1/8 of its widths, and the classifier's 4096-wide
    Linear layers (120 million weights) at 64: ``VGG`` fixes those widths in its ``__init__``."""
    vgg = _models().vgg
    model = vgg.VGG(vgg.make_layers([w if w == "M" else w // 8 for w in vgg.cfgs["A"]]), num_classes=NUM_CLASSES)
    model.classifier = torch.nn.Sequential(
        torch.nn.Linear(64 * 7 * 7, 64),
        torch.nn.ReLU(True),
        torch.nn.Dropout(0.5),
        torch.nn.Linear(64, 64),
        torch.nn.ReLU(True),
        torch.nn.Dropout(0.5),
        torch.nn.Linear(64, NUM_CLASSES),
    )
    return model


def mobilenet_v3_small():
    return _models().mobilenet_v3_small(num_classes=NUM_CLASSES)


def efficientnet_b0_narrow():
    """EfficientNet-B0's stages at half width and half depth (``_efficientnet_conf``'s own multipliers)."""
    efficientnet = _models().efficientnet
    setting, last_channel = efficientnet._efficientnet_conf("efficientnet_b0", width_mult=0.5, depth_mult=0.5)
    return efficientnet.EfficientNet(setting, 0.2, num_classes=NUM_CLASSES, last_channel=last_channel)


def squeezenet1_0():
    return _models().squeezenet1_0(num_classes=NUM_CLASSES)


def densenet_small():
    """DenseNet-121's class with two layers per block, growth rate 8 (121 has 6/12/24/16 and 32)."""
    return _models().DenseNet(
        growth_rate=8, block_config=(2, 2, 2, 2), num_init_features=16, bn_size=2, num_classes=NUM_CLASSES
    )


def shufflenet_v2_x0_5():
    return _models().shufflenet_v2_x0_5(num_classes=NUM_CLASSES)


def convnext_narrow():
    """ConvNeXt's class with three stages of one block, 16/32/64 channels (tiny: four stages of
    3/3/9/3 blocks, 96 to 768 channels)."""
    convnext = _models().convnext
    config = convnext.CNBlockConfig
    return convnext.ConvNeXt([config(16, 32, 1), config(32, 64, 1), config(64, None, 1)], num_classes=NUM_CLASSES)


def regnet_small():
    """RegNet's class with RegNetX-400MF's kind of block (X: no squeeze-excitation) in four stages of
    one block each, 16 to 64 channels (400MF: 22 blocks, 32 to 400)."""
    regnet = _models().regnet
    params = regnet.BlockParams.from_init_params(depth=4, w_0=16, w_a=8.0, w_m=2.0, group_width=8)
    return regnet.RegNet(params, num_classes=NUM_CLASSES)


def googlenet():
    """GoogLeNet without its auxiliary classifiers (eval output: the logits alone)."""
    return _models().googlenet(num_classes=NUM_CLASSES, aux_logits=False, init_weights=True)


def timm_vit():
    """timm's VisionTransformer: 32x32 images in 8x8 patches, 2 blocks of width 64 with 4 heads."""
    vit = import_quietly("timm.models.vision_transformer")
    return vit.VisionTransformer(
        img_size=32, patch_size=8, embed_dim=64, depth=2, num_heads=4, mlp_ratio=2.0, num_classes=NUM_CLASSES
    )


def torchvision_vit():
    """torchvision's VisionTransformer (vit_b_16's class): 32x32 images in 8x8 patches, 2 layers of
    width 32 with 2 heads (vit_b_16: 224x224 in 16x16 patches, 12 layers of 768 with 12 heads)."""
    vision_transformer = _models().vision_transformer
    return vision_transformer.VisionTransformer(
        image_size=32, patch_size=8, num_layers=2, num_heads=2, hidden_dim=32, mlp_dim=64, num_classes=NUM_CLASSES
    )


def torchvision_swin():
    """torchvision's SwinTransformer (swin_t's class and blocks): 4x4 patches, two stages of two
    blocks, 16 and 32 channels with 2 and 4 heads, 4x4 windows shifted by 2, stochastic depth 0
    (swin_t: four stages of 2/2/6/2 blocks, 96 to 768 channels, 7x7 windows). Its
    ``torch.fx.wrap``ped helpers (patch merging's padding, the shifted-window attention) are traced into."""
    swin = _models().swin_transformer
    return swin.SwinTransformer(
        patch_size=[4, 4],
        embed_dim=16,
        depths=[2, 2],
        num_heads=[2, 4],
        window_size=[4, 4],
        stochastic_depth_prob=0.0,
        num_classes=NUM_CLASSES,
    )


def timm_efficientnet():
    """timm's EfficientNet class as its ``test_efficientnet`` variant builds it: five stages of one
    block each (a conv-bn-act, two edge residuals, two inverted residuals with squeeze-excitation),
    16 to 64 channels, and timm's ``BatchNormAct2d`` (``F.batch_norm`` and an activation in one
    layer, counting its batches in a buffer) after every convolution."""
    efficientnet = import_quietly("timm.models.efficientnet")
    return efficientnet.test_efficientnet(num_classes=NUM_CLASSES)


def timm_levit():
    """timm's LeViT: levit_384_s8's stem (three stride-2 convolutions) to 4x4 tokens, two stages of
    one attention block (2 heads, keys of 8, learned attention biases read as ``biases[:, idxs]``)
    joined by an attention subsample, hard-swish, BatchNorm'd linear layers (levit_128s: a 16-fold
    stem, three stages of 2/3/4 blocks, 128 to 384 wide). In eval mode LeViT keeps the attention
    biases it gathered, with their autograd graph, for the next call, and PyTorch's own second
    backward through them fails: the case runs in train mode (batch statistics, no dropout), where
    the 8-fold stem keeps each statistic over 8 values or more (the 16-fold one leaves 2, too
    ill-conditioned for gradients to agree to float32's rounding)."""
    levit = import_quietly("timm.models.levit")
    return levit.Levit(
        img_size=32,
        stem_type="s8",
        embed_dim=(32, 48),
        key_dim=8,
        depth=(1, 1),
        num_heads=(2, 2),
        num_classes=NUM_CLASSES,
    )


def _nf(**config):
    nfnet = import_quietly("timm.models.nfnet")
    return nfnet.NormFreeNet(nfnet.NfCfg(**config), num_classes=NUM_CLASSES)


def timm_nf_resnet():
    """timm's NormFreeNet as nf_resnet builds it (ScaledStdConv2d: weights standardised through
    ``F.batch_norm``, scaled activations), four stages of one bottleneck block, 16 to 64 channels
    (nf_resnet26: 2/2/2/2 blocks, 256 to 2048)."""
    return _nf(depths=(1, 1, 1, 1), channels=(16, 32, 64, 64), stem_type="7x7_pool", stem_chs=16, act_layer="relu")


def timm_dm_nfnet():
    """timm's NormFreeNet as dm_nfnet builds it, with TensorFlow's "same" padding
    (ScaledStdConv2dSame: ``pad_same`` then the standardised convolution), a deep stem, grouped
    convolutions, squeeze-excitation and GELU, two stages of one block, 16 and 32 channels;
    ``skipinit`` off (its zero gains would leave every residual branch without a gradient)."""
    return _nf(
        depths=(1, 1),
        channels=(16, 32),
        stem_type="deep_quad",
        stem_chs=16,
        group_size=8,
        extra_conv=True,
        gamma_in_act=True,
        same_padding=True,
        num_features=64,
        act_layer="gelu",
        attn_layer="se",
        attn_kwargs=dict(rd_ratio=0.5),
    )


def timm_hiera():
    """timm's Hiera: 4x4 patches of a 32x32 image, four stages of one block (16 to 128 wide, 1 to 8
    heads), mask-unit attention in the first two, query pooling by ``amax`` over the pooled tokens;
    PyTorch's default initialisation (``weight_init="skip"``: timm's zeroes the classifier, leaving
    zero logits and no gradient behind them) and the head at its full scale (timm's: 0.001)."""
    hiera = import_quietly("timm.models.hiera")
    return hiera.Hiera(
        img_size=(32, 32),
        embed_dim=16,
        num_heads=1,
        stages=(1, 1, 1, 1),
        q_pool=3,
        mask_unit_size=(8, 8),
        weight_init="skip",
        head_init_scale=1.0,
        num_classes=NUM_CLASSES,
    )


def timm_convnextv2():
    """timm's ConvNeXt as ConvNeXt-V2 builds it: global response normalisation (an L2 norm over
    the spatial dimensions, ``linalg.vector_norm``), no layer scale, four stages of one block, 16 to
    64 channels (convnextv2_atto: 2/2/6/2 blocks, 40 to 320)."""
    convnext = import_quietly("timm.models.convnext")
    return convnext.ConvNeXt(
        depths=(1, 1, 1, 1), dims=(16, 24, 32, 64), use_grn=True, ls_init_value=None, num_classes=NUM_CLASSES
    )


class PositionalEncoding(torch.nn.Module):
    """The sinusoidal table of PyTorch's transformer tutorial, added to the embeddings, then dropout."""

    def __init__(self, d_model, max_len=64, dropout=0.1):
        super().__init__()
        self.dropout = torch.nn.Dropout(dropout)
        position = torch.arange(max_len).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
        pe = torch.zeros(max_len, 1, d_model)
        pe[:, 0, 0::2] = torch.sin(position * div_term)
        pe[:, 0, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe)

    def forward(self, x):
        x = x + self.pe[: x.size(0)]
        return self.dropout(x)


class TransformerLM(torch.nn.Module):
    """PyTorch's language-modelling tutorial model: embedding scaled by sqrt(d_model), positions,
    an ``nn.TransformerEncoder`` over (sequence, batch) under a causal mask made in ``forward``,
    and a Linear decoder."""

    def __init__(self, vocab=50, d_model=32, nhead=4, d_hid=64, nlayers=2, dropout=0.1):
        super().__init__()
        self.d_model = d_model
        self.embedding = torch.nn.Embedding(vocab, d_model)
        self.pos_encoder = PositionalEncoding(d_model, dropout=dropout)
        layer = torch.nn.TransformerEncoderLayer(d_model, nhead, d_hid, dropout)
        self.transformer_encoder = torch.nn.TransformerEncoder(layer, nlayers, enable_nested_tensor=False)
        self.linear = torch.nn.Linear(d_model, vocab)
        self.init_weights()

    def init_weights(self):
        """Called by ``__init__`` only: its torch calls are not translated."""
        torch.nn.init.uniform_(self.embedding.weight, -0.1, 0.1)
        torch.nn.init.zeros_(self.linear.bias)

    def forward(self, src):
        mask = torch.nn.Transformer.generate_square_subsequent_mask(src.size(0))
        src = self.embedding(src) * math.sqrt(self.d_model)
        src = self.pos_encoder(src)
        output = self.transformer_encoder(src, mask)
        return self.linear(output)
