"""The path the known-mismatch registry's fixes give for the loss Cells
(``replacement = "parity.translation.loss:CrossEntropyLossInt64"``), kept for them and for the users
who follow them: the Cells are defined in :mod:`.layers.loss`."""

from __future__ import annotations

from .layers.loss import BCEWithLogitsLoss, CrossEntropyLossInt64

__all__ = ["CrossEntropyLossInt64", "BCEWithLogitsLoss"]
