"""Weight normalisation through parity.translate: both of PyTorch's forms (parametrizations and the
deprecated hook), over the whole tensor or along a dimension, checked against PyTorch with the
gradients of g and v; transformers' wav2vec2 positional convolution; what is refused."""

from __future__ import annotations

import mindspore
import numpy as np
import pytest
import torch
from torch.nn.utils.parametrizations import weight_norm

import parity


class Normed(torch.nn.Module):
    def __init__(self, parametrized: bool, dim):
        super().__init__()
        wrap = weight_norm if parametrized else torch.nn.utils.weight_norm
        self.conv = wrap(torch.nn.Conv1d(8, 8, 5, padding=2, groups=2), dim=dim)
        self.fc = wrap(torch.nn.Linear(8, 4), dim=1 if dim == 2 else dim)

    def forward(self, x):
        return self.fc(torch.nn.functional.gelu(self.conv(x)).transpose(1, 2))


@pytest.mark.filterwarnings("ignore:.torch.nn.utils.weight_norm. is deprecated:FutureWarning")  # tested all the same
@pytest.mark.parametrize("parametrized", [True, False], ids=["parametrizations", "hook"])
@pytest.mark.parametrize("dim", [0, 2, None])
def test_weight_norm_matches_pytorch_with_the_gradients_of_g_and_v(parametrized, dim):
    torch.manual_seed(0)
    module = Normed(parametrized, dim)
    cell = parity.translate(module)
    names = {name for name, _ in cell.parameters_and_names()}
    g, v = (
        ("parametrizations.weight.original0", "parametrizations.weight.original1")
        if parametrized
        else ("weight_g", "weight_v")
    )
    assert {f"conv.{g}", f"conv.{v}", f"fc.{g}", f"fc.{v}", "conv.bias", "fc.bias"} == names
    result = parity.check(cell, module, parity.randn((2, 8, 10)))
    assert result.passed, str(result)
    assert {c.name for c in result.comparisons if c.kind == "param grad"} >= {f"conv.{g}", f"conv.{v}"}
    module(torch.randn(2, 8, 10))  # the user's module is left working as it was


def test_wav2vec2_positional_convolution():
    from cases.models.zoo_compat import import_quietly

    wav2vec2 = import_quietly("transformers.models.wav2vec2.modeling_wav2vec2")
    config = wav2vec2.Wav2Vec2Config(hidden_size=16, num_conv_pos_embeddings=8, num_conv_pos_embedding_groups=4)
    torch.manual_seed(0)
    module = wav2vec2.Wav2Vec2PositionalConvEmbedding(config).eval()
    result = parity.check(parity.translate(module), module, parity.randn((2, 12, 16)))
    assert result.passed, str(result)


def test_another_parametrization_is_refused():
    layer = torch.nn.utils.parametrizations.orthogonal(torch.nn.Linear(4, 4))
    with pytest.raises(parity.ParityUnsupported, match="other than weight_norm on 'weight' have no translation"):
        parity.translate(layer)


def test_the_computed_weight_is_not_a_parameter_of_the_cell():
    cell = parity.translate(weight_norm(torch.nn.Linear(3, 2)))
    assert "weight" not in dict(cell.parameters_and_names())
    out = cell(mindspore.Tensor(np.ones((1, 3), np.float32)))
    assert out.shape == (1, 2)


def test_graph_mode_is_refused_before_anything_runs():
    module = weight_norm(torch.nn.Linear(3, 2))
    with pytest.raises(parity.ParityUnsupported, match="WeightNormedDense sets its weight, computed from g and v"):
        parity.check(parity.translate(module), module, parity.randn((2, 3)), ms_mode="graph")
