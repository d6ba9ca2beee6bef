"""Training loops as a migration writes them, a few steps each.

* ``SmallCNN_Adam``: a BatchNorm CNN, 20 steps of translated ``torch.optim.Adam`` under a
  translated ``CrossEntropyLoss``, over two batches.
* ``ResNetGuide``: the ResNet-50 migration guide's loop (Adam, lr 1e-3, weight_decay 1e-5;
  PyTorch's ``CrossEntropyLoss`` against MindSpore's ``SoftmaxCrossEntropyWithLogits(sparse=True,
  reduction='mean')``), 3 steps, on the small Bottleneck ResNet of ``cases.models.resnet`` and
  32 x 32 images.
* ``ResNet50Guide``: the same loop on ResNet-50 itself (torchvision's against mindcv's, 10
  classes), eight 32 x 32 images. Measured: about 2 minutes and 11 GB peak on 2 CPUs for both
  modes; from step 2 nearly every gradient element moves with PyTorch's own rounding (Adam's first
  step follows each gradient's sign), so the rounding envelope judges most tensors. Two 64 x 64
  images cost as much, but two images are learnt by step 3 (loss 0.01), where the loss itself
  becomes chaotic: with MindSpore's side moved as on another CPU, one seed in three failed there.
* ``TransformerBlock_AdamW``: a pre-LN Transformer encoder block (``nn.TransformerEncoderLayer``
  against a MindSpore block written by hand, ``cases.models.transformer``) with a classification
  head, 5 steps of translated ``AdamW`` (weight_decay 0.01) under a linear warmup, gradients
  clipped to norm 0.5 (the unclipped norms are 1.1 to 1.3: every step clips). The key projection's
  bias has no gradient in exact arithmetic (softmax ignores a shift shared by all keys), so its
  rounding-level gradient moves under AdamW: the rounding envelope judges it.

Each trains MindSpore twice from the same start, PYNATIVE and GRAPH (``ms_mode="both"``),
against one PyTorch run. Models, optimizers, the scheduler and the losses are named by dotted path (most in
``cases.models.training``) and built when a case runs, so that listing the catalogue imports no
framework.
"""

from parity import TRANSLATE, ParityCase, Training, randint, randn

IMAGES = [(randn((4, 3, 16, 16)), randint((4,), 0, 10)), (randn((4, 3, 16, 16)), randint((4,), 0, 10))]

SmallCNN_Adam = ParityCase(
    "SmallCNN_Adam",
    mindspore=TRANSLATE,
    torch="cases.models.training:torch_small_cnn",
    ms_mode="both",
    training=Training(IMAGES, loss="torch.nn:CrossEntropyLoss", optimizer="cases.models.training:adam", steps=20),
)

ResNetGuide = ParityCase(
    "ResNetGuide",
    mindspore="cases.models.resnet:ms_resnet_small",
    torch="cases.models.resnet:torch_resnet_small",
    ms_mode="both",
    training=Training(
        [(randn((4, 3, 32, 32)), randint((4,), 0, 10))],
        steps=3,
        optimizer="cases.models.training:guide_adam",
        loss=("cases.models.training:guide_ms_loss", "torch.nn:CrossEntropyLoss"),
    ),
)

ResNet50Guide = ParityCase(
    "ResNet50Guide",
    mindspore="cases.models.zoo_vision:ms_resnet50",
    torch="cases.models.zoo_vision:torch_resnet50",
    ms_mode="both",
    training=Training(
        [(randn((8, 3, 32, 32)), randint((8,), 0, 10))],
        steps=3,
        optimizer="cases.models.training:guide_adam",
        loss=("cases.models.training:guide_ms_loss", "torch.nn:CrossEntropyLoss"),
    ),
)

SEQUENCES = [(randn((4, 8, 32)), randint((4,), 0, 5)), (randn((4, 8, 32)), randint((4,), 0, 5))]

TransformerBlock_AdamW = ParityCase(
    "TransformerBlock_AdamW",
    mindspore="cases.models.transformer:MSEncoderClassifier",
    torch="cases.models.transformer:TorchEncoderClassifier",
    ms_mode="both",
    training=Training(
        SEQUENCES,
        loss="torch.nn:CrossEntropyLoss",
        optimizer="cases.models.training:adamw",
        lr_scheduler="cases.models.training:warmup",
        clip_grad_norm=0.5,
        steps=5,
    ),
)
