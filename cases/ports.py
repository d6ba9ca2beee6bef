"""Real ports written by others against their originals: mindcv against torchvision and timm,
mindone.transformers against transformers (``cases.models.ports``, which says what each pair is).

Each pair comes twice. ``<Pair>Port`` is the port with what truly differs patched to PyTorch's
semantics (``fixed=True``): it must pass. ``<Pair>PortShipped`` is the port as its authors ship
it: it must fail, for the reason given, which names the true difference (read from both
sources). Small configurations, random weights, the PyTorch side's norm statistics made
trained-like so that the differences show. The mindone pairs install CPU stand-ins for the mint
kernels MindSpore registers for Ascend only (``cases.models.mint_cpu``).

Left out, as over about ten seconds each on CPU: EfficientNet-B0, RegNetY-400MF and GhostNet
(their checks), and MobileNetV3, ConvNeXt and Swin as shipped (their diagnosis);
``benchmarks/diagnosis_ports.py`` measures every pair, shipped and fixed.
"""

from parity import ParityCase

from .models.ports import pairs

_M = "cases.models.ports:"
_PORTS = pairs()


def _case(name, pair, *, fixed, xfail=None, acknowledge=()):
    """The case of ``pair`` (a name in ``cases.models.ports``), its port ``fixed`` or as shipped."""
    port = _PORTS[pair]
    return ParityCase(
        name,
        mindspore=_M + "mindspore_side",
        torch=_M + "torch_side",
        inputs=port.inputs,
        ms_kwargs={"pair": pair, "fixed": fixed},
        torch_kwargs={"pair": pair},
        name_map=port.name_map() if port.name_map is not None else None,
        xfail=xfail,
        acknowledge=acknowledge,
    )


ResNet18Port = _case("ResNet18Port", "resnet18", fixed=True)
MobileNetV3SmallPort = _case("MobileNetV3SmallPort", "mobilenet_v3_small", fixed=True)
ConvNeXtPort = _case("ConvNeXtPort", "convnext", fixed=True)
SwinPort = _case("SwinPort", "swin", fixed=True)
ViTPort = _case("ViTPort", "vit", fixed=True)
MLPMixerPort = _case("MLPMixerPort", "mlp_mixer", fixed=True)
LlamaPort = _case("LlamaPort", "llama", fixed=True)
GPT2Port = _case("GPT2Port", "gpt2", fixed=True)
# No difference found: the port as shipped.
Qwen2Port = _case("Qwen2Port", "qwen2", fixed=False)
BertPort = _case("BertPort", "bert", fixed=False)

ResNet18PortShipped = _case(
    "ResNet18PortShipped",
    "resnet18",
    fixed=False,
    xfail="mindcv's stem max-pool pads 'same' (bottom and right only) where torchvision's pads 1 on every side",
    acknowledge=("maxpool2d-pad-mode-same",),
)
ViTPortShipped = _case(
    "ViTPortShipped",
    "vit",
    fixed=False,
    xfail="mindcv's ViT: nn.GELU() is the tanh approximation and nn.LayerNorm's epsilon 1e-7, where "
    "torchvision's GELU is exact and its LayerNorm's epsilon 1e-6",
    acknowledge=("gelu-approximate-default", "layernorm-epsilon-default"),
)
MLPMixerPortShipped = _case(
    "MLPMixerPortShipped",
    "mlp_mixer",
    fixed=False,
    xfail="mindcv's MLPMixer: nn.GELU() is the tanh approximation and nn.LayerNorm's epsilon 1e-7, where "
    "timm's GELU is exact and its LayerNorm's epsilon 1e-6",
    acknowledge=("gelu-approximate-default", "layernorm-epsilon-default"),
)
LlamaPortShipped = _case(
    "LlamaPortShipped",
    "llama",
    fixed=False,
    xfail="mindone's LLaMA masks with float16's minimum (-65504) where transformers masks with float32's: "
    "a row that sees only padding softmaxes its scores instead of spreading evenly",
    acknowledge=("attention-mask-inf-vs-finfo-min",),
)
GPT2PortShipped = _case(
    "GPT2PortShipped",
    "gpt2",
    fixed=False,
    xfail="mindone's GPT-2 adds the padding mask alone where transformers adds causal and padding combined: "
    "a row that sees only padding spreads its weight over the future keys",
)
