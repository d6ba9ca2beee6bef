"""Containers and custom Modules: Sequential (plain and named), ModuleList and ModuleDict inside a
custom Module whose forward runs on the translated children, in eval and train mode."""

from parity import TRANSLATE, ParityCase, randn

BOTH = (False, True)

SmallCNN = ParityCase(
    "SmallCNN",
    mindspore=TRANSLATE,
    torch="cases.translated.models:small_cnn",
    inputs=randn((2, 3, 8, 8)),
    reference="float64",
)  # eval: Dropout
NamedMLP = ParityCase("NamedMLP", mindspore=TRANSLATE, torch="cases.translated.models:named_mlp", inputs=randn((3, 6)))
ConvBlock = ParityCase(
    "ConvBlock", mindspore=TRANSLATE, torch="cases.translated.models:ConvBlock", inputs=randn((2, 4, 5, 5)), train=BOTH
)
TinyNet = ParityCase(
    "TinyNet", mindspore=TRANSLATE, torch="cases.translated.models:TinyNet", inputs=randn((2, 3, 6, 6)), train=BOTH
)
UsesFunctional = ParityCase(
    "UsesFunctional",
    mindspore=TRANSLATE,
    torch="cases.translated.models:UsesFunctional",
    inputs=randn((2, 4)),
    train=BOTH,
)  # traced: F.relu maps to ops.relu
