"""Losses, each fed ``(input, target)`` (or the triples of the embedding and ranking losses):
class-index targets are integers, ±1 labels and probabilities are floats, so targets get
gradients too, and they are compared. Class weights are PyTorch buffers, paired with the
translation's non-trainable parameters of the same name."""

import numpy as np

from parity import TRANSLATE, ParityCase, randint, randn, uniform

LOGITS = randn((4, 5))
CLASSES = randint((4,), 0, 5)
CLASS_WEIGHT = np.array([1.0, 2.0, 0.5, 1.5, 1.0], np.float32)
# torch.nn.<loss>(**kwargs) with the arrays made tensors when a case runs: listing imports no torch
WITH_TENSORS = "cases.translated.models:loss_with_tensors"
SIGNS = np.array([1.0, -1.0, -1.0, 1.0], np.float32)
SIGNS_2D = np.array([[1, -1, 1, -1, 1], [-1, -1, 1, 1, 1], [1, 1, -1, 1, -1], [-1, 1, 1, -1, 1]], np.float32)
PROBS = uniform((4, 5), 0.05, 0.95)

CrossEntropyLoss = ParityCase(
    "CrossEntropyLoss", mindspore=TRANSLATE, torch="torch.nn:CrossEntropyLoss", inputs=(LOGITS, CLASSES)
)
CrossEntropyLoss_weight_ignore_index = ParityCase(
    "CrossEntropyLoss_weight_ignore_index",
    mindspore=TRANSLATE,
    torch=WITH_TENSORS,
    torch_kwargs={"loss": "CrossEntropyLoss", "weight": CLASS_WEIGHT, "ignore_index": 2},
    inputs=(LOGITS, randint((4,), 0, 4)),
)
CrossEntropyLoss_label_smoothing_sum = ParityCase(
    "CrossEntropyLoss_label_smoothing_sum",
    mindspore=TRANSLATE,
    torch="torch.nn:CrossEntropyLoss",
    torch_kwargs={"label_smoothing": 0.1, "reduction": "sum"},
    inputs=(LOGITS, CLASSES),
)
CrossEntropyLoss_label_smoothing_weight = ParityCase(
    "CrossEntropyLoss_label_smoothing_weight",
    mindspore=TRANSLATE,
    torch=WITH_TENSORS,
    torch_kwargs={"loss": "CrossEntropyLoss", "label_smoothing": 0.2, "weight": CLASS_WEIGHT},
    inputs=(LOGITS, CLASSES),
)
CrossEntropyLoss_probabilities = ParityCase(
    "CrossEntropyLoss_probabilities", mindspore=TRANSLATE, torch="torch.nn:CrossEntropyLoss", inputs=(LOGITS, PROBS)
)
CrossEntropyLoss_spatial_none = ParityCase(
    "CrossEntropyLoss_spatial_none",
    mindspore=TRANSLATE,
    torch="torch.nn:CrossEntropyLoss",
    torch_kwargs={"reduction": "none"},
    inputs=(randn((2, 5, 3, 3)), randint((2, 3, 3), 0, 5)),
)

NLLLoss = ParityCase("NLLLoss", mindspore=TRANSLATE, torch="torch.nn:NLLLoss", inputs=(LOGITS, CLASSES))
NLLLoss_weight_ignore_index_sum = ParityCase(
    "NLLLoss_weight_ignore_index_sum",
    mindspore=TRANSLATE,
    torch=WITH_TENSORS,
    torch_kwargs={"loss": "NLLLoss", "weight": CLASS_WEIGHT, "ignore_index": 0, "reduction": "sum"},
    inputs=(LOGITS, CLASSES),
)

MSELoss = ParityCase("MSELoss", mindspore=TRANSLATE, torch="torch.nn:MSELoss", inputs=(LOGITS, randn((4, 5))))
MSELoss_sum = ParityCase(
    "MSELoss_sum",
    mindspore=TRANSLATE,
    torch="torch.nn:MSELoss",
    torch_kwargs={"reduction": "sum"},
    inputs=(LOGITS, randn((4, 5))),
)
L1Loss = ParityCase("L1Loss", mindspore=TRANSLATE, torch="torch.nn:L1Loss", inputs=(LOGITS, randn((4, 5))))
L1Loss_none = ParityCase(
    "L1Loss_none",
    mindspore=TRANSLATE,
    torch="torch.nn:L1Loss",
    torch_kwargs={"reduction": "none"},
    inputs=(LOGITS, randn((4, 5))),
)
SmoothL1Loss = ParityCase(
    "SmoothL1Loss", mindspore=TRANSLATE, torch="torch.nn:SmoothL1Loss", inputs=(LOGITS, randn((4, 5)))
)
SmoothL1Loss_beta_sum = ParityCase(
    "SmoothL1Loss_beta_sum",
    mindspore=TRANSLATE,
    torch="torch.nn:SmoothL1Loss",
    torch_kwargs={"beta": 0.5, "reduction": "sum"},
    inputs=(LOGITS, randn((4, 5))),
)
HuberLoss = ParityCase("HuberLoss", mindspore=TRANSLATE, torch="torch.nn:HuberLoss", inputs=(LOGITS, randn((4, 5))))
HuberLoss_delta = ParityCase(
    "HuberLoss_delta",
    mindspore=TRANSLATE,
    torch="torch.nn:HuberLoss",
    torch_kwargs={"delta": 0.5, "reduction": "sum"},
    inputs=(LOGITS, randn((4, 5))),
)

BCELoss = ParityCase("BCELoss", mindspore=TRANSLATE, torch="torch.nn:BCELoss", inputs=(PROBS, uniform((4, 5), 0, 1)))
BCELoss_weight_full_shape = ParityCase(
    "BCELoss_weight_full_shape",
    mindspore=TRANSLATE,
    torch=WITH_TENSORS,
    torch_kwargs={
        "loss": "BCELoss",
        "weight": np.linspace(0.5, 2.0, 20, dtype=np.float32).reshape(4, 5),
        "reduction": "sum",
    },
    inputs=(PROBS, uniform((4, 5), 0, 1)),
)
BCELoss_weight_broadcast = ParityCase(
    "BCELoss_weight_broadcast",
    mindspore=TRANSLATE,
    torch=WITH_TENSORS,
    torch_kwargs={"loss": "BCELoss", "weight": CLASS_WEIGHT, "reduction": "sum"},
    inputs=(PROBS, uniform((4, 5), 0, 1)),
    xfail="MindSpore's CPU BCELoss sums garbage (~1e31) when the weight broadcasts; 'none' is right",
)
BCEWithLogitsLoss = ParityCase(
    "BCEWithLogitsLoss", mindspore=TRANSLATE, torch="torch.nn:BCEWithLogitsLoss", inputs=(LOGITS, uniform((4, 5), 0, 1))
)
BCEWithLogitsLoss_pos_weight = ParityCase(
    "BCEWithLogitsLoss_pos_weight",
    mindspore=TRANSLATE,
    torch=WITH_TENSORS,
    torch_kwargs={
        "loss": "BCEWithLogitsLoss",
        "pos_weight": np.array([3.0, 1.0, 0.5, 2.0, 1.0], np.float32),
        "weight": CLASS_WEIGHT,
    },
    inputs=(LOGITS, uniform((4, 5), 0, 1)),
)

# Forward only: MindSpore's kl_div gives the target no gradient (KLDivLoss_target_gradient below).
KLDivLoss_batchmean = ParityCase(
    "KLDivLoss_batchmean",
    mindspore=TRANSLATE,
    torch="torch.nn:KLDivLoss",
    torch_kwargs={"reduction": "batchmean"},
    inputs=(LOGITS, PROBS),
    grads=False,
)
KLDivLoss_sum = ParityCase(
    "KLDivLoss_sum",
    mindspore=TRANSLATE,
    torch="torch.nn:KLDivLoss",
    torch_kwargs={"reduction": "sum"},
    inputs=(LOGITS, PROBS),
    grads=False,
)
KLDivLoss_target_gradient = ParityCase(
    "KLDivLoss_target_gradient",
    mindspore=TRANSLATE,
    torch="torch.nn:KLDivLoss",
    torch_kwargs={"reduction": "batchmean"},
    inputs=(LOGITS, PROBS),
    xfail="MindSpore's kl_div gives the target a zero gradient; PyTorch differentiates it",
)
KLDivLoss_log_target = ParityCase(
    "KLDivLoss_log_target",
    mindspore=TRANSLATE,
    torch="torch.nn:KLDivLoss",
    torch_kwargs={"reduction": "batchmean", "log_target": True},
    inputs=(LOGITS, randn((4, 5))),
    xfail="nn.KLDivLoss has no log_target",
)

CosineEmbeddingLoss = ParityCase(
    "CosineEmbeddingLoss",
    mindspore=TRANSLATE,
    torch="torch.nn:CosineEmbeddingLoss",
    inputs=(LOGITS, randn((4, 5)), SIGNS),
)
CosineEmbeddingLoss_margin = ParityCase(
    "CosineEmbeddingLoss_margin",
    mindspore=TRANSLATE,
    torch="torch.nn:CosineEmbeddingLoss",
    torch_kwargs={"margin": 0.2, "reduction": "sum"},
    inputs=(LOGITS, randn((4, 5)), SIGNS),
)
MarginRankingLoss = ParityCase(
    "MarginRankingLoss",
    mindspore=TRANSLATE,
    torch="torch.nn:MarginRankingLoss",
    torch_kwargs={"margin": 0.3},
    inputs=(randn((4,)), randn((4,)), SIGNS),
)
# Forward only: MindSpore's hinge_embedding_loss backward raises on CPU (an Add of a bool tensor),
# and its forward takes float labels only, so the labels cannot be kept out of the backward.
HingeEmbeddingLoss = ParityCase(
    "HingeEmbeddingLoss",
    mindspore=TRANSLATE,
    torch="torch.nn:HingeEmbeddingLoss",
    torch_kwargs={"margin": 0.8},
    inputs=(LOGITS, SIGNS_2D),
    grads=False,
)
SoftMarginLoss = ParityCase(
    "SoftMarginLoss",
    mindspore=TRANSLATE,
    torch="torch.nn:SoftMarginLoss",
    inputs=(LOGITS, SIGNS_2D.astype(np.int64)),
    xfail="MindSpore has no CPU kernel for SoftMarginLoss",
)
TripletMarginLoss = ParityCase(
    "TripletMarginLoss",
    mindspore=TRANSLATE,
    torch="torch.nn:TripletMarginLoss",
    inputs=(LOGITS, randn((4, 5)), randn((4, 5))),
    xfail="MindSpore has no CPU kernel for TripletMarginLoss",
)
TripletMarginLoss_p1_swap_margin = ParityCase(
    "TripletMarginLoss_p1_swap_margin",
    mindspore=TRANSLATE,
    torch="torch.nn:TripletMarginLoss",
    torch_kwargs={"p": 1, "swap": True, "margin": 0.5},
    inputs=(LOGITS, randn((4, 5)), randn((4, 5))),
    xfail="MindSpore has no CPU kernel for TripletMarginLoss",
)

MultiLabelSoftMarginLoss = ParityCase(
    "MultiLabelSoftMarginLoss",
    mindspore=TRANSLATE,
    torch=WITH_TENSORS,
    torch_kwargs={"loss": "MultiLabelSoftMarginLoss", "weight": CLASS_WEIGHT},
    inputs=(LOGITS, (SIGNS_2D > 0).astype(np.float32)),
)
MultiMarginLoss = ParityCase(
    "MultiMarginLoss", mindspore=TRANSLATE, torch="torch.nn:MultiMarginLoss", inputs=(LOGITS, CLASSES)
)
MultiMarginLoss_p2_weight = ParityCase(
    "MultiMarginLoss_p2_weight",
    mindspore=TRANSLATE,
    torch=WITH_TENSORS,
    torch_kwargs={"loss": "MultiMarginLoss", "p": 2, "margin": 0.5, "weight": CLASS_WEIGHT},
    inputs=(LOGITS, CLASSES),
)
PoissonNLLLoss = ParityCase(
    "PoissonNLLLoss", mindspore=TRANSLATE, torch="torch.nn:PoissonNLLLoss", inputs=(LOGITS, uniform((4, 5), 0, 3))
)
PoissonNLLLoss_full_linear = ParityCase(
    "PoissonNLLLoss_full_linear",
    mindspore=TRANSLATE,
    torch="torch.nn:PoissonNLLLoss",
    torch_kwargs={"log_input": False, "full": True},
    inputs=(uniform((4, 5), 0.1, 2), uniform((4, 5), 0, 3)),
)
GaussianNLLLoss = ParityCase(
    "GaussianNLLLoss",
    mindspore=TRANSLATE,
    torch="torch.nn:GaussianNLLLoss",
    inputs=(LOGITS, randn((4, 5)), uniform((4, 5), 0.1, 1)),
)
GaussianNLLLoss_full_sum = ParityCase(
    "GaussianNLLLoss_full_sum",
    mindspore=TRANSLATE,
    torch="torch.nn:GaussianNLLLoss",
    torch_kwargs={"full": True, "reduction": "sum"},
    inputs=(LOGITS, randn((4, 5)), uniform((4, 5), 0.1, 1)),
)
