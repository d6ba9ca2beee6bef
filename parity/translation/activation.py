"""The path the known-mismatch registry's fixes give for the activation Cells
(``replacement = "parity.translation.activation:SELU"``, "use parity.translation.activation.ELU"),
kept for them and for the users who follow them: the Cells are defined in :mod:`.layers.activation`."""

from __future__ import annotations

from .layers.activation import ELU, SELU, Mish, Softplus, Tanh, Tanhshrink, elu_with_alpha, tanh

__all__ = ["ELU", "SELU", "Softplus", "Tanh", "Tanhshrink", "Mish", "tanh", "elu_with_alpha"]
