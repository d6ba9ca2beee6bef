"""Activations, each with its arguments: slopes, alphas, both GELU forms, Softplus' beta and
threshold, thresholds and shrinkage, and the dim of the Softmax family."""

from parity import TRANSLATE, ParityCase, randn

X = randn((2, 3, 4), std=2.0)
# MindSpore's CPU tanh kernel is off by up to 1e-4 (its gradient 2e-4; PyTorch's: 3e-8) and nn.Mish's
# gradient by up to 9e-4: Tanh, Tanhshrink and Mish translate to compositions on an accurate tanh
# (known mismatches tanh-cpu-accuracy, tanhshrink-cpu-accuracy, mish-cpu-gradient) and pass the
# float32 default.
X4 = randn((2, 3, 4, 4), std=2.0)

ReLU = ParityCase("ReLU", mindspore=TRANSLATE, torch="torch.nn:ReLU", inputs=X)
ReLU6 = ParityCase("ReLU6", mindspore=TRANSLATE, torch="torch.nn:ReLU6", inputs=randn((2, 3, 4), std=5.0))
LeakyReLU = ParityCase("LeakyReLU", mindspore=TRANSLATE, torch="torch.nn:LeakyReLU", inputs=X)
LeakyReLU_slope = ParityCase(
    "LeakyReLU_slope", mindspore=TRANSLATE, torch="torch.nn:LeakyReLU", torch_kwargs={"negative_slope": 0.3}, inputs=X
)
PReLU = ParityCase("PReLU", mindspore=TRANSLATE, torch="torch.nn:PReLU", inputs=X)
PReLU_channels = ParityCase(
    "PReLU_channels",
    mindspore=TRANSLATE,
    torch="torch.nn:PReLU",
    torch_kwargs={"num_parameters": 3, "init": 0.1},
    inputs=X4,
)
ELU = ParityCase("ELU", mindspore=TRANSLATE, torch="torch.nn:ELU", inputs=X)
ELU_alpha = ParityCase(
    "ELU_alpha", mindspore=TRANSLATE, torch="torch.nn:ELU", torch_kwargs={"alpha": 0.5}, inputs=X
)  # MindSpore's Elu kernel accepts only alpha=1.0: translation.activation.ELU
CELU_alpha = ParityCase("CELU_alpha", mindspore=TRANSLATE, torch="torch.nn:CELU", torch_kwargs={"alpha": 0.5}, inputs=X)
SELU = ParityCase("SELU", mindspore=TRANSLATE, torch="torch.nn:SELU", inputs=X)  # via translation.activation.SELU
GELU = ParityCase("GELU", mindspore=TRANSLATE, torch="torch.nn:GELU", inputs=X)
GELU_tanh = ParityCase(
    "GELU_tanh", mindspore=TRANSLATE, torch="torch.nn:GELU", torch_kwargs={"approximate": "tanh"}, inputs=X
)
SiLU = ParityCase("SiLU", mindspore=TRANSLATE, torch="torch.nn:SiLU", inputs=X)
Mish = ParityCase("Mish", mindspore=TRANSLATE, torch="torch.nn:Mish", inputs=X)
Softplus = ParityCase("Softplus", mindspore=TRANSLATE, torch="torch.nn:Softplus", inputs=X)
Softplus_beta_threshold = ParityCase(
    "Softplus_beta_threshold",
    mindspore=TRANSLATE,
    torch="torch.nn:Softplus",
    torch_kwargs={"beta": 2.0, "threshold": 1.5},
    inputs=X,
)
Hardswish = ParityCase("Hardswish", mindspore=TRANSLATE, torch="torch.nn:Hardswish", inputs=X)
Hardsigmoid = ParityCase("Hardsigmoid", mindspore=TRANSLATE, torch="torch.nn:Hardsigmoid", inputs=X)
Hardtanh = ParityCase(
    "Hardtanh", mindspore=TRANSLATE, torch="torch.nn:Hardtanh", torch_kwargs={"min_val": -0.5, "max_val": 1.5}, inputs=X
)
Tanh = ParityCase("Tanh", mindspore=TRANSLATE, torch="torch.nn:Tanh", inputs=X)
Sigmoid = ParityCase("Sigmoid", mindspore=TRANSLATE, torch="torch.nn:Sigmoid", inputs=X)
Softsign = ParityCase("Softsign", mindspore=TRANSLATE, torch="torch.nn:Softsign", inputs=X)
Tanhshrink = ParityCase("Tanhshrink", mindspore=TRANSLATE, torch="torch.nn:Tanhshrink", inputs=X)
LogSigmoid = ParityCase("LogSigmoid", mindspore=TRANSLATE, torch="torch.nn:LogSigmoid", inputs=X)
Hardshrink = ParityCase(
    "Hardshrink", mindspore=TRANSLATE, torch="torch.nn:Hardshrink", torch_kwargs={"lambd": 0.3}, inputs=X
)
Softshrink = ParityCase(
    "Softshrink", mindspore=TRANSLATE, torch="torch.nn:Softshrink", torch_kwargs={"lambd": 0.3}, inputs=X
)
Threshold = ParityCase(
    "Threshold",
    mindspore=TRANSLATE,
    torch="torch.nn:Threshold",
    torch_kwargs={"threshold": 0.1, "value": -1.0},
    inputs=X,
)
GLU = ParityCase("GLU", mindspore=TRANSLATE, torch="torch.nn:GLU", torch_kwargs={"dim": 1}, inputs=randn((2, 4, 3)))

Softmax_dim1 = ParityCase(
    "Softmax_dim1", mindspore=TRANSLATE, torch="torch.nn:Softmax", torch_kwargs={"dim": 1}, inputs=X
)
Softmax_no_dim = ParityCase(
    "Softmax_no_dim",
    mindspore=TRANSLATE,
    torch="torch.nn:Softmax",
    inputs=X,
    xfail="dim=None picks a dim from the input rank; MindSpore needs an axis",
)
LogSoftmax = ParityCase(
    "LogSoftmax", mindspore=TRANSLATE, torch="torch.nn:LogSoftmax", torch_kwargs={"dim": -1}, inputs=X
)
Softmin_dim0 = ParityCase(
    "Softmin_dim0", mindspore=TRANSLATE, torch="torch.nn:Softmin", torch_kwargs={"dim": 0}, inputs=X
)
Softmax2d = ParityCase("Softmax2d", mindspore=TRANSLATE, torch="torch.nn:Softmax2d", inputs=X4)
