"""Attention: ``MultiheadAttention``, ``TransformerEncoderLayer``, ``TransformerDecoderLayer``,
``TransformerEncoder``, ``TransformerDecoder``.

MindSpore facts (mindspore 2.10, ``mindspore/nn/layer/transformer.py``, a port of PyTorch 2.0's):

* ``nn.MultiheadAttention(embed_dim, num_heads, dropout, has_bias, add_bias_kv, add_zero_attn,
  kdim, vdim, batch_first)`` keeps PyTorch's parameter names and layouts: the packed
  ``in_proj_weight (3E, E)``/``in_proj_bias``, or ``q/k/v_proj_weight`` when ``kdim``/``vdim``
  differ, ``out_proj.weight/bias``, ``bias_k/bias_v (1, 1, E)``. It returns
  ``(output, weights)``, or ``(output,)`` for ``need_weights=False`` where PyTorch returns
  ``(output, None)`` (torchvision's ViT writes ``x, _ = self.self_attention(x, x, x,
  need_weights=False)``), and it takes no ``is_causal``: :class:`MultiheadAttention` closes both gaps.
* The layers name the feed-forward ``dense1``/``dense2`` (PyTorch ``linear1``/``linear2``): parity
  pairs them in definition order. Their ``activation`` is ``"relu"`` or ``"gelu"`` (exact GELU,
  ``ops.gelu``'s default); PyTorch's ``F.relu``/``F.gelu``/``nn.ReLU()``/``nn.GELU()`` map to those,
  anything else has no counterpart, nor has ``bias=False``.
* ``nn.TransformerEncoder/Decoder(layer, num_layers, norm)`` rebuild ``num_layers`` layers from the
  given layer's arguments (weights are copied afterwards, as everywhere).
"""

from __future__ import annotations

from typing import Optional, Tuple

import mindspore as ms
import torch
import torch.nn.functional as F
from mindspore import Tensor, nn, ops

from .table import Context, translates

__all__ = ["MultiheadAttention"]


class MultiheadAttention(nn.MultiheadAttention):
    """``mindspore.nn.MultiheadAttention`` returning what PyTorch's returns: ``(output, weights)``,
    or ``(output, None)`` for ``need_weights=False`` (MindSpore: ``(output,)``), and taking
    PyTorch's ``is_causal`` as PyTorch does: ``attn_mask`` is required with it, and where PyTorch
    hands the hint to scaled-dot-product attention in place of ``attn_mask`` (``need_weights=False``,
    no ``key_padding_mask``) the causal mask (target i sees sources 0..i) replaces ``attn_mask`` here too.
    Compiles in GRAPH mode, so it raises only Python's own exceptions."""

    def construct(
        self,
        query: Tensor,
        key: Tensor,
        value: Tensor,
        key_padding_mask: Optional[Tensor] = None,
        need_weights: bool = True,
        attn_mask: Optional[Tensor] = None,
        average_attn_weights: bool = True,
        is_causal: bool = False,
    ) -> Tuple[Tensor, Optional[Tensor]]:
        if is_causal:
            if attn_mask is None:
                raise ValueError("MultiheadAttention: is_causal=True needs attn_mask (PyTorch raises too)")
            if key_padding_mask is None and not need_weights:
                attn_mask = self._causal_mask(query, key)
        found = super().construct(query, key, value, key_padding_mask, need_weights, attn_mask, average_attn_weights)
        if need_weights:
            return found
        return found[0], None

    def _causal_mask(self, query, key):
        if self.bias_k is not None or self.add_zero_attn:
            raise ValueError(
                "MultiheadAttention: is_causal=True with add_bias_kv or add_zero_attn has no translation: "
                "PyTorch's causal mask then covers the added keys too"
            )
        seq = 1 if self.batch_first and query.ndim == 3 else 0
        targets, sources = query.shape[seq], key.shape[seq]
        future = ops.triu(ops.ones((targets, sources), ms.float32), 1) > 0
        return ops.zeros((targets, sources), query.dtype).masked_fill(future, float("-inf"))


@translates(torch.nn.MultiheadAttention)
def multihead_attention(module: torch.nn.MultiheadAttention, ctx: Context) -> nn.Cell:
    return MultiheadAttention(
        module.embed_dim,
        module.num_heads,
        dropout=float(module.dropout),
        has_bias=module.in_proj_bias is not None,
        add_bias_kv=module.bias_k is not None,
        add_zero_attn=module.add_zero_attn,
        kdim=module.kdim,
        vdim=module.vdim,
        batch_first=module.batch_first,
    )


def _activation(module, ctx: Context) -> str:
    act = module.activation
    if act is F.relu or type(act) is torch.nn.ReLU:
        return "relu"
    if act is F.gelu or type(act) is torch.nn.GELU and act.approximate == "none":
        return "gelu"
    raise ctx.unsupported(f"activation {act!r}: MindSpore's transformer layers take only relu and exact gelu")


def _layer_kwargs(module, ctx: Context) -> dict:
    ctx.require(module.linear1.bias is not None, "bias=False: MindSpore's transformer layers always have biases")
    attn = module.self_attn
    return dict(
        d_model=attn.embed_dim,
        nhead=attn.num_heads,
        dim_feedforward=module.linear1.out_features,
        dropout=float(module.dropout.p),
        activation=_activation(module, ctx),
        layer_norm_eps=float(module.norm1.eps),
        batch_first=attn.batch_first,
        norm_first=module.norm_first,
    )


@translates(torch.nn.TransformerEncoderLayer)
def encoder_layer(module: torch.nn.TransformerEncoderLayer, ctx: Context) -> nn.Cell:
    return nn.TransformerEncoderLayer(**_layer_kwargs(module, ctx))


@translates(torch.nn.TransformerDecoderLayer)
def decoder_layer(module: torch.nn.TransformerDecoderLayer, ctx: Context) -> nn.Cell:
    return nn.TransformerDecoderLayer(**_layer_kwargs(module, ctx))


def _stack(module, ctx: Context, layer_type, stack_type):
    from ..modules import translate_module

    layers = list(module.layers)
    ctx.require(
        all(type(layer) is layer_type for layer in layers),
        f"layers other than {layer_type.__name__} have no MindSpore counterpart",
    )
    first = translate_module(layers[0], ctx.child("layers.0", layers[0]))
    norm = None if module.norm is None else translate_module(module.norm, ctx.child("norm", module.norm))
    return stack_type(first, len(layers), norm=norm)


@translates(torch.nn.TransformerEncoder)
def encoder(module: torch.nn.TransformerEncoder, ctx: Context) -> nn.Cell:
    return _stack(module, ctx, torch.nn.TransformerEncoderLayer, nn.TransformerEncoder)


@translates(torch.nn.TransformerDecoder)
def decoder(module: torch.nn.TransformerDecoder, ctx: Context) -> nn.Cell:
    return _stack(module, ctx, torch.nn.TransformerDecoderLayer, nn.TransformerDecoder)
