"""parity.translate on custom Modules through their torch.fx trace: the table of functions and
Tensor methods (each row checked against PyTorch, forward and gradients), what is baked into a
trace (train/eval, constant arguments) and traced again, in-place calls, weight names, and the
errors, which name the call and its file:line."""

from __future__ import annotations

import functools
import inspect
import math

import mindspore
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import parity
from parity import ParityUnsupported
from parity.translation.calls import table
from parity.translation.trace.graph import GraphForward


def _passes(module, inputs, **kwargs):
    cell = parity.translate(module)
    assert isinstance(cell, GraphForward)
    result = parity.check(cell, module, inputs, **kwargs)
    assert result.passed, str(result)
    return cell


def _line_of(function, text: str) -> int:
    lines, start = inspect.getsourcelines(function)
    return start + next(i for i, line in enumerate(lines) if text in line)


# --- the table, row by row against PyTorch --------------------------------------------------


class Shapes(torch.nn.Module):
    """Tensor methods and torch functions that move data around, a channel shuffle among them."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(4, 4, 1)

    def forward(self, x):
        batch, channels, height, width = x.size()
        y = self.conv(x).view(batch, 2, channels // 2, height, width)
        y = torch.transpose(y, 1, 2).contiguous().view(batch, -1, height, width)
        a, b = y.chunk(2, dim=1)
        c, d = torch.split(y, [1, 3], dim=1)
        z = torch.cat([a * 2, b, c.permute(0, 1, 3, 2), d.transpose(2, 3)], 1)
        w = x.reshape(batch, channels, -1).unsqueeze(1).squeeze(1).squeeze(0)
        v = torch.stack(w.unbind(1), dim=2).unsqueeze(0).expand(3, -1, -1, -1)
        return (
            torch.flatten(z, 1),
            z.flatten(2).mean([2]),
            v.sum(dim=-1, keepdim=True) * (w.shape[-1] + x.ndim),
            x[:, 1:3, ..., None],
        )


class Arithmetic(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(6, 6)
        self.weight = torch.nn.Parameter(torch.randn(6, 6) / 3)

    def forward(self, x):
        y = self.fc(x)
        z = torch.add(y, x, alpha=0.5) - torch.mul(x, 3) / 2
        z = torch.matmul(z, self.weight) + F.linear(x, self.weight) + x @ self.weight.T.contiguous()
        return torch.clamp(z, -1, 1) + torch.sqrt(z.abs() + 1) * torch.exp(-z.abs()) + math.sqrt(x.size(-1))


class Activations(torch.nn.Module):
    def forward(self, x):
        return (
            F.relu(x)
            + F.relu6(x * 4)
            + F.leaky_relu(x, 0.2)
            + F.elu(x, alpha=0.5)
            + F.gelu(x)
            + F.gelu(x, approximate="tanh")
            + F.silu(x)
            + F.hardswish(x)
            + F.hardsigmoid(x)
            + torch.sigmoid(x)
            + torch.tanh(x)
            + x.tanh()
            + F.softmax(x, dim=-1)
            + F.log_softmax(x, -1)
            + F.dropout(x, 0.3, training=False)
        )


class Layers(torch.nn.Module):
    """Layers called as functions on the Module's own parameters."""

    def __init__(self):
        super().__init__()
        self.gamma = torch.nn.Parameter(1 + torch.randn(6) / 5)
        self.beta = torch.nn.Parameter(torch.randn(6) / 5)

    def forward(self, x):
        pooled = (
            F.adaptive_avg_pool2d(x, (1, 1))
            + F.adaptive_max_pool2d(x, 1)
            + F.adaptive_avg_pool2d(x, (None, 1)).mean(2, True)
        )
        windows = F.avg_pool2d(x, 2) + F.max_pool2d(x, 2, stride=2)
        normed = F.layer_norm(x.permute(0, 2, 3, 1), (6,), self.gamma, self.beta, 1e-6).permute(0, 3, 1, 2)
        near = F.interpolate(windows, scale_factor=2, mode="nearest")
        smooth = F.interpolate(windows, size=(6, 6), mode="bilinear", align_corners=False)
        padded = F.pad(windows, (1, 1, 1, 1))
        resized = F.interpolate(windows, scale_factor=1.5, mode="bilinear", recompute_scale_factor=True)  # 4x4
        return pooled + normed + near + smooth + padded.mean() + resized.mean()


class Attention(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = torch.nn.Linear(8, 24)

    def forward(self, x, mask):
        q, k, v = self.qkv(x).reshape(2, 5, 3, 2, 4).permute(2, 0, 3, 1, 4).unbind(0)
        plain = F.scaled_dot_product_attention(q, k, v)
        causal = F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.3)
        masked = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        return (plain + causal + masked).transpose(1, 2).reshape(2, 5, 8)


class Casts(torch.nn.Module):
    """Tensor.to in each form, and .dtype and .device read off traced values, as Hugging Face's
    RMSNorm and rotary embedding use them; a cast that did nothing would leave float16's overflow
    out, or a bool where a float belongs."""

    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(1 + torch.randn(6) / 5)

    def forward(self, x, other):
        dtype, big = x.dtype, x * 1e5  # float16 overflows past 65504: inf, clamped to 1e6
        y = big.half().float() + big.to(torch.float16).to(torch.float32) * (dtype == torch.float32)
        y = y.to(x.device) + big.to("cpu", torch.float16).to(dtype=dtype, device=x.device, non_blocking=True)
        y = torch.clamp(y, -1e6, 1e6) / 1e5
        positive = (x > 0).to(x) + (x > 0).to(torch.full((1,), 0.0, dtype=x.dtype).dtype)
        return self.weight * y.to(dtype) + positive + other.to(x), (x * 4).to(torch.int64)


class RMSNorm(torch.nn.Module):
    """transformers' LlamaRMSNorm and LlamaRotaryEmbedding, reduced to the calls they make."""

    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(1 + torch.randn(6) / 5)
        self.register_buffer("inv_freq", 1.0 / (100 ** (torch.arange(0, 6, 2).float() / 6)))

    def forward(self, x, positions):
        input_dtype = x.dtype
        hidden = x.to(torch.float32)
        hidden = hidden * torch.rsqrt(hidden.pow(2).mean(-1, keepdim=True) + 1e-6)
        normed = self.weight * hidden.to(input_dtype)
        freqs = self.inv_freq[None, :, None].float().expand(positions.shape[0], -1, 1).to(x.device)
        freqs = (freqs @ positions[:, None, :].float()).transpose(1, 2)
        emb = torch.cat((freqs, freqs), dim=-1)
        return normed * emb.cos().to(dtype=x.dtype) + emb.sin().to(dtype=x.dtype)


class Powers(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(6, 4) / 3)
        self.bias = torch.nn.Parameter(torch.randn(4) / 3)

    def forward(self, x):
        odd = torch.pow(x, 3.0) + x.pow(2) + x**3 + 2**x + (x.abs() + 1).pow(0.5) + x.abs().pow_(1.5)
        waves = torch.cos(x) * x.sin() + x.cos() - torch.sin(3 * x) + torch.rsqrt(x.abs() + 1) + (x * x + 1).rsqrt()
        flat = x.view(-1, x.size(-1))
        return odd + waves, torch.addmm(self.bias, flat, self.weight) + torch.addmm(
            self.bias, flat, self.weight, beta=0.5, alpha=2
        )


@pytest.mark.parametrize(
    "module, inputs",
    [
        (Shapes(), parity.randn((2, 4, 3, 3))),
        (Arithmetic(), parity.randn((3, 6))),
        (Activations(), parity.randn((2, 3, 5), std=3.0)),
        (Layers(), parity.randn((2, 6, 6, 6))),
        (Attention(), (parity.randn((2, 5, 8)), parity.randn((5, 5)))),
        (Casts(), (parity.randn((3, 6)), parity.randn((3, 6), dtype="float64"))),
        (RMSNorm(), (parity.randn((2, 5, 6)), np.tile(np.arange(5), (2, 1)))),
        (Powers(), parity.randn((2, 3, 6))),
    ],
    ids=lambda v: type(v).__name__ if isinstance(v, torch.nn.Module) else "",
)
def test_table_rows_match_pytorch(module, inputs):
    torch.manual_seed(0)
    _passes(module.eval(), inputs)


def test_every_table_key_names_a_real_pytorch_api():
    for name in table.FUNCTIONS:
        if not name.startswith("torchvision."):
            assert table._resolve(name) is not None, name
    for name in table.METHODS:
        assert hasattr(torch.Tensor, name), name


# --- only what runs counts -------------------------------------------------------------------


class UnusedTorch(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 4)

    def export(self):  # never called by forward: torch here blocks nothing
        return torch.jit.script(self)

    def forward(self, x):
        return self.fc(x) * 2 if not torch.jit.is_scripting() else x


def test_a_method_forward_does_not_call_does_not_block():
    _passes(UnusedTorch(), parity.randn((2, 4)))


class ModeDependent(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = torch.nn.BatchNorm1d(4)

    def forward(self, x):
        return self.norm(x) * (2.0 if self.training else 3.0)


def test_each_mode_runs_its_own_trace():
    module = ModeDependent()
    cell = parity.translate(module)
    for train in (False, True):
        assert parity.check(cell, module, parity.randn((5, 4)), train=train).passed
    assert len({key[0] for key in cell._source.programs}) == 2


class DropsInTraining(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 4)

    def forward(self, x):
        x = self.fc(x)
        if self.training:
            x = x * torch.bernoulli(torch.full_like(x, 0.5))
        return x


def test_a_mode_that_cannot_be_translated_fails_only_when_used():
    module = DropsInTraining()  # built in train mode: translate must not refuse the eval mode
    cell = parity.translate(module)
    assert parity.check(cell, module, parity.randn((3, 4))).passed
    cell.set_train(True)
    line = _line_of(DropsInTraining.forward, "torch.bernoulli")
    with pytest.raises(ParityUnsupported, match=rf"torch\.bernoulli at tests/test_translate_fx\.py:{line}"):
        cell(mindspore.Tensor(np.ones((3, 4), np.float32)))


class Scaled(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 4)

    def forward(self, x, scale=None, square=False):
        y = self.fc(x)
        if scale is not None:
            y = y * scale
        return y * y if square else y


class CallsScaled(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = Scaled()
        self.b = Scaled()

    def forward(self, x):
        return self.a(x) + self.a(x, 2.0) + self.b(x, scale=x, square=True)


def test_constant_arguments_are_traced_per_combination_met():
    module = CallsScaled()
    cell = _passes(module, parity.randn((3, 4)))
    assert len(cell.a._source.programs) >= 2  # scale=None and scale=2.0 (in eval mode)


def _decorated(forward):
    @functools.wraps(forward)
    def wrapper(*args, **kwargs):  # as transformers' deprecate_kwarg and can_return_tuple are
        return forward(*args, **kwargs)

    return wrapper


class TakesKwargs(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 4)

    @_decorated
    def forward(self, x, scale=1.0, **kwargs):
        y = self.fc(x) * scale
        return y * 2 if kwargs.get("double") else y


class PassesKwargs(torch.nn.Module):
    """Hugging Face's layers pass ``**kwargs`` down: here none, constants, and (``tensor=True``) a tensor."""

    def __init__(self, tensor=False):
        super().__init__()
        self.inner, self.tensor = TakesKwargs(), tensor

    def forward(self, x, **kwargs):
        extra = {"mask": x} if self.tensor else {}
        return self.inner(x, **kwargs) + self.inner(x, scale=0.5, double=True, **extra)


def test_what_kwargs_receives_is_traced_as_constant_arguments_are():
    cell = _passes(PassesKwargs(), parity.randn((3, 4)))
    assert len(cell.inner._source.programs) >= 2  # **kwargs empty, and {"double": True}


def test_a_tensor_passed_through_kwargs_is_refused():
    cell = parity.translate(PassesKwargs(tensor=True))
    with pytest.raises(
        ParityUnsupported,
        match=r"^inner \(test_translate_fx\.TakesKwargs\): forward's \*\*kwargs "
        r"receives mask, which are not constants",
    ):
        cell(mindspore.Tensor(np.ones((3, 4), np.float32)))


class EitherInput(torch.nn.Module):
    """Takes ``x`` or ``embeds``, as Hugging Face's models take ``input_ids`` or ``inputs_embeds``:
    the trace with forward's defaults (both None) fails, and torch.relu rules out running forward as
    it is, so it is traced when called, with the argument given."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 4)

    def forward(self, x=None, embeds=None):
        if (x is None) == (embeds is None):
            raise ValueError("give exactly one of x and embeds")
        return torch.relu(self.fc(x if x is not None else embeds))


def test_a_forward_its_defaults_cannot_trace_is_traced_with_the_arguments_it_is_called_with():
    cell = _passes(EitherInput(), parity.randn((3, 4)))
    with pytest.raises(ParityUnsupported, match=r"give exactly one of x and embeds"):
        cell()


class Output(dict):
    """A dict whose keys read as attributes, as transformers' ModelOutput."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


class ReturnsOutput(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 4)

    def forward(self, x):
        return Output(hidden=self.fc(x), cache=None)


class ReadsOutput(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = ReturnsOutput()

    def forward(self, x):
        return self.inner(x).hidden * 2


def test_a_child_output_of_a_dict_class_keeps_its_class_and_its_attributes_read():
    cell = _passes(ReadsOutput(), parity.randn((3, 4)))
    assert type(cell.inner(mindspore.Tensor(np.ones((3, 4), np.float32)))) is Output


# --- in place, weights, containers -----------------------------------------------------------


class InPlace(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 4)
        self.act = torch.nn.ReLU(inplace=True)

    def forward(self, x):
        y = self.fc(x)
        kept = y * 1
        F.relu(y, inplace=True)  # y itself changes: PyTorch's later reads see relu(y)
        y += kept
        z = self.fc(x)
        self.act(z)
        z.mul_(2)
        return y + z


def test_in_place_calls_are_seen_by_later_reads():
    _passes(InPlace(), parity.randn((3, 4)), grads=False)  # PyTorch refuses gradients through these


class Nested(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = torch.nn.ModuleList([Arithmetic(), Arithmetic()])
        self.scale = torch.nn.Parameter(torch.ones(6))
        self.register_buffer("shift", torch.arange(6.0) / 10)

    def forward(self, x):
        for block in self.blocks:
            x = block(x) * self.scale + self.shift
        return x


class MakesTensors(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.offsets = torch.arange(4.0)  # a plain attribute, neither parameter nor buffer

    def forward(self, x):
        return x * torch.tensor([1.0, -1.0, 2.0, 0.5]) + self.offsets


def test_tensors_forward_makes_or_reads_become_constants_and_the_module_is_left_alone():
    module = MakesTensors()
    before = set(vars(module))
    _passes(module, parity.randn((3, 4)))
    assert set(vars(module)) == before


def test_weight_names_follow_pytorch_attribute_paths():
    module = Nested()
    cell = _passes(module, parity.randn((3, 6)))
    assert sorted(name for name, _ in cell.parameters_and_names()) == sorted(
        name for name, _ in [*module.named_parameters(), *module.named_buffers()]
    )


class Tied(torch.nn.Module):
    """An output layer that shares the embedding's weight, as GPT-2's lm_head does."""

    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(10, 4)
        self.head = torch.nn.Linear(4, 10, bias=False)
        self.head.weight = self.emb.weight

    def forward(self, ids):
        return self.head(torch.relu(self.emb(ids)))


def test_a_parameter_held_at_two_places_is_one_parameter_in_the_cell():
    cell = _passes(Tied(), np.array([[1, 2, 3], [4, 5, 9]], np.int64))  # the gradient sums both uses on each side
    assert [name for name, _ in cell.parameters_and_names()] == ["emb.embedding_table"]
    assert cell.head.weight is cell.emb.embedding_table


class Block(torch.nn.ModuleDict):
    """A ModuleDict with a forward of its own, as torchvision's DenseNet blocks are."""

    def __init__(self):
        super().__init__({"first": torch.nn.Linear(3, 3), "second": torch.nn.Linear(6, 3)})

    def forward(self, x):
        features = [x]
        for layer in self.values():
            features.append(layer(torch.cat(features, 1)))
        return torch.cat(features, 1)


def test_a_container_with_its_own_forward_is_traced():
    _passes(Block(), parity.randn((2, 3)))


# --- errors -----------------------------------------------------------------------------------


class Factored(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 4)

    def forward(self, x):
        y = torch.geqrf(self.fc(x))[0]
        return y.abs().to_sparse(1)


def test_untranslated_calls_are_named_with_file_and_line():
    first, second = _line_of(Factored.forward, "geqrf"), _line_of(Factored.forward, "to_sparse")
    with pytest.raises(ParityUnsupported) as info:
        parity.translate(Factored())
    message = str(info.value)
    assert message.startswith("<root> (test_translate_fx.Factored): forward calls what has no MindSpore translation")
    assert f"geqrf at tests/test_translate_fx.py:{first}  (y = torch.geqrf(self.fc(x))[0])" in message
    assert f"Tensor.to_sparse at tests/test_translate_fx.py:{second}" in message


class FractionalNearest(torch.nn.Module):
    def forward(self, x):
        return F.interpolate(x, scale_factor=1.5, mode="nearest")


def test_a_call_mindspore_refuses_at_run_time_is_named_with_file_and_line():
    cell = parity.translate(FractionalNearest())
    line = _line_of(FractionalNearest.forward, "interpolate")
    with pytest.raises(
        ParityUnsupported,
        match=rf"^MindSpore could not run torch\.nn\.functional\.interpolate at "
        rf"tests/test_translate_fx\.py:{line} .*PyTorch samples by 1/scale_factor",
    ):
        cell(mindspore.Tensor(np.ones((1, 1, 5, 5), np.float32)))  # 7.5 rows: no size to sample by


def test_reading_an_untranslated_tensor_attribute_is_refused():
    class Device(torch.nn.Module):
        def forward(self, x):
            return x + x.device.index + x.is_leaf

    with pytest.raises(ParityUnsupported, match=r"reading \.index is not translated(.|\n)*reading \.is_leaf is not"):
        parity.translate(Device())


def test_a_form_of_to_that_is_not_translated_is_refused_with_file_and_line():
    class ToLayout(torch.nn.Module):
        def forward(self, x):
            return x.to(torch.strided)

    cell = parity.translate(ToLayout())
    line = _line_of(ToLayout.forward, "torch.strided")
    with pytest.raises(
        ParityUnsupported,
        match=rf"Tensor\.to at tests/test_translate_fx\.py:{line} .*"
        r"Tensor\.to\(torch\.strided\) is not translated",
    ):
        cell(mindspore.Tensor(np.ones((2, 2), np.float32)))
