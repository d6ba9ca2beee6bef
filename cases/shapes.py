"""Pairs checked over several input shapes (``ParityCase(shapes=[...])``, :func:`parity.check_shapes`):
the migration guides' "function compliance" step. In GRAPH mode the Cell is compiled once for a
dynamic signature and run on every shape."""

from parity import ParityCase, randn

D_MODEL = 32  # cases.models.transformer's (not imported here: listing the catalogue imports no framework)

# Sequence lengths 5, 12 and 17, batches of 1 and 3: the dynamic signature is (None, None, 32).
SEQUENCES = [randn((1, 5, D_MODEL)), randn((3, 12, D_MODEL)), randn((1, 17, D_MODEL))]

TransformerBlock_shapes = ParityCase(
    "TransformerBlock_shapes",
    mindspore="cases.models.transformer:MSEncoderClassifier",
    torch="cases.models.transformer:TorchEncoderClassifier",
    shapes=SEQUENCES,
    ms_mode="both",
)
