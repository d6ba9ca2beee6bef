"""The call table: how each PyTorch function and Tensor method a traced ``forward`` calls is
computed in MindSpore. One module per topic, each with its ``FUNCTIONS`` and ``METHODS`` at module
level (``parity scan`` reads them from the source): :mod:`.shapes` and :mod:`.views`,
:mod:`.indexing`, :mod:`.arithmetic` (with :mod:`.einsum`), :mod:`.linalg`, :mod:`.reductions`,
:mod:`.ordering`, :mod:`.routing`, :mod:`.scatters`, :mod:`.convolution`, :mod:`.creation`, :mod:`.casts`, :mod:`.complex`,
:mod:`.activations`, :mod:`.elementwise`, :mod:`.pointwise`, :mod:`.special`, :mod:`.functional`
(layers as functions), :mod:`.pooling`, :mod:`.strides`, :mod:`.losses` and :mod:`.python` (``getattr``,
assertions, Python's own functions); :mod:`.arguments` reads PyTorch's arguments for all of them,
and :mod:`.table` gathers the one table and looks calls up in it.

May import: the frameworks, :mod:`parity.translation.layers.activation` (the accurate ``tanh`` and
``elu``) and :mod:`parity.errors`.
"""

from __future__ import annotations

from .complex import as_tensor
from .table import FALLBACKS, FUNCTIONS, METHODS, api_name, function_for, is_inplace, method_for

__all__ = ["FUNCTIONS", "METHODS", "FALLBACKS", "function_for", "method_for", "is_inplace", "api_name", "as_tensor"]
