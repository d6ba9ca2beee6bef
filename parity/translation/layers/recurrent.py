"""Recurrent layers: ``RNN``, ``LSTM``, ``GRU``.

MindSpore facts (mindspore 2.10, ``mindspore/nn/layer/rnns.py``): ``nn.RNN/LSTM/GRU(input_size,
hidden_size, num_layers, has_bias, batch_first, dropout, bidirectional)`` (``nonlinearity`` for RNN)
keep PyTorch's parameter names (``weight_ih_l0``, ``bias_hh_l1_reverse``...), shapes and gate order
(LSTM i, f, g, o; GRU r, z, n: the Ascend kernel reorders internally, CPU/GPU use them as
stored), so no layout transform is needed. ``construct(x, hx=None, seq_length=None)`` returns
``(output, h_n)`` or ``(output, (h_n, c_n))`` like PyTorch. The kernel is chosen when the Cell is
built, from the device then set: build for the device you run on. ``proj_size`` (LSTM
projections) has no counterpart. Inter-layer ``dropout`` is random: compare in eval mode.
"""

from __future__ import annotations

from typing import Any, Dict, Union

import torch
from mindspore import nn

from .table import Context, translates

__all__ = []

_CELLS = {torch.nn.RNN: nn.RNN, torch.nn.LSTM: nn.LSTM, torch.nn.GRU: nn.GRU}


@translates(*_CELLS)
def recurrent(module: Union[torch.nn.RNN, torch.nn.LSTM, torch.nn.GRU], ctx: Context) -> nn.Cell:
    ctx.require_default("proj_size", 0, "MindSpore's nn.LSTM has no projection")
    kwargs: Dict[str, Any] = dict(
        num_layers=module.num_layers,
        has_bias=module.bias,
        batch_first=module.batch_first,
        dropout=float(module.dropout),
        bidirectional=module.bidirectional,
    )
    if ctx.kind is torch.nn.RNN:
        kwargs["nonlinearity"] = module.nonlinearity
    return _CELLS[ctx.layer_class](module.input_size, module.hidden_size, **kwargs)
