"""The path the known-mismatch registry's fixes give for ``EmbeddingPaddingIdx``
(``replacement = "parity.translation.linear:EmbeddingPaddingIdx"``), kept for them and for the users
who follow them: the Cell is defined in :mod:`.layers.linear`."""

from __future__ import annotations

from .layers.linear import EmbeddingPaddingIdx

__all__ = ["EmbeddingPaddingIdx"]
