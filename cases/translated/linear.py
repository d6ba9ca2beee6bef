"""Dense, shape-only and train-only layers: Linear, Bilinear, Identity, Flatten, Unflatten,
Embedding and Dropout (compared in eval mode, where it is the identity on both sides: in train
mode each framework draws its own random mask)."""

from parity import TRANSLATE, ParityCase, randint, randn

Linear = ParityCase(
    "Linear",
    mindspore=TRANSLATE,
    torch="torch.nn:Linear",
    torch_kwargs={"in_features": 6, "out_features": 4},
    inputs=randn((3, 6)),
)
Linear_nobias_3d = ParityCase(
    "Linear_nobias_3d",
    mindspore=TRANSLATE,
    torch="torch.nn:Linear",
    torch_kwargs={"in_features": 6, "out_features": 4, "bias": False},
    inputs=randn((2, 3, 6)),
)
Bilinear = ParityCase(
    "Bilinear",
    mindspore=TRANSLATE,
    torch="torch.nn:Bilinear",
    torch_kwargs={"in1_features": 4, "in2_features": 5, "out_features": 3},
    inputs=(randn((3, 4)), randn((3, 5))),
)
Bilinear_nobias = ParityCase(
    "Bilinear_nobias",
    mindspore=TRANSLATE,
    torch="torch.nn:Bilinear",
    torch_kwargs={"in1_features": 4, "in2_features": 5, "out_features": 3, "bias": False},
    inputs=(randn((3, 4)), randn((3, 5))),
)
Identity = ParityCase("Identity", mindspore=TRANSLATE, torch="torch.nn:Identity", inputs=randn((2, 3)))
Flatten = ParityCase("Flatten", mindspore=TRANSLATE, torch="torch.nn:Flatten", inputs=randn((2, 3, 4, 2)))
Flatten_middle = ParityCase(
    "Flatten_middle",
    mindspore=TRANSLATE,
    torch="torch.nn:Flatten",
    torch_kwargs={"start_dim": 1, "end_dim": 2},
    inputs=randn((2, 3, 4, 2)),
)
Unflatten = ParityCase(
    "Unflatten",
    mindspore=TRANSLATE,
    torch="torch.nn:Unflatten",
    torch_kwargs={"dim": 1, "unflattened_size": (2, 3)},
    inputs=randn((2, 6, 4)),
)

Embedding = ParityCase(
    "Embedding",
    mindspore=TRANSLATE,
    torch="torch.nn:Embedding",
    torch_kwargs={"num_embeddings": 10, "embedding_dim": 4},
    inputs=randint((2, 5), 0, 10),
)
Embedding_padding_idx = ParityCase(
    "Embedding_padding_idx",
    mindspore=TRANSLATE,
    torch="torch.nn:Embedding",
    torch_kwargs={"num_embeddings": 10, "embedding_dim": 4, "padding_idx": 0},
    inputs=randint((3, 6), 0, 4),
)
Embedding_max_norm = ParityCase(
    "Embedding_max_norm",
    mindspore=TRANSLATE,
    torch="torch.nn:Embedding",
    torch_kwargs={"num_embeddings": 10, "embedding_dim": 4, "max_norm": 1.0},
    inputs=randint((2, 5), 0, 10),
    xfail="nn.Embedding has no max_norm (row renormalisation)",
)

Dropout = ParityCase(
    "Dropout", mindspore=TRANSLATE, torch="torch.nn:Dropout", torch_kwargs={"p": 0.3}, inputs=randn((4, 5))
)
Dropout1d = ParityCase(
    "Dropout1d", mindspore=TRANSLATE, torch="torch.nn:Dropout1d", torch_kwargs={"p": 0.3}, inputs=randn((2, 3, 5))
)
Dropout2d = ParityCase(
    "Dropout2d", mindspore=TRANSLATE, torch="torch.nn:Dropout2d", torch_kwargs={"p": 0.3}, inputs=randn((2, 3, 4, 4))
)
Dropout3d = ParityCase(
    "Dropout3d", mindspore=TRANSLATE, torch="torch.nn:Dropout3d", torch_kwargs={"p": 0.3}, inputs=randn((2, 3, 2, 3, 3))
)
