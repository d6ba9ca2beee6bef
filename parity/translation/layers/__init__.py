"""The framework's own layers: each ``torch.nn`` layer parity translates has a builder that reads the
layer's attributes and builds the ``mindspore.nn`` Cell with the equivalent arguments, one module
per family (``activation``, ``attention``, ``conv``, ``linear``, ``loss``, ``norm``, ``pool``,
``recurrent``, ``shape``, and ``weight_norm`` for a layer under weight normalisation). Where
MindSpore has no Cell, or its Cell falls short of an argument, the family defines one, which the
known-mismatch registry names as the fix. :mod:`.table` holds the class-to-builder table, the
``Context`` a builder gets and the argument converters the families share.

May import: the frameworks, :mod:`parity.errors`, and (inside a builder) the tree walk
:mod:`parity.translation.modules` for a layer's own children.
"""

from __future__ import annotations

# Importing a family registers its builders, in this order.
from . import activation, attention, conv, linear, loss, norm, pool, recurrent, shape, weight_norm  # noqa: F401
