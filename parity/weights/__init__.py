"""Weights: the map between a Cell's and a Module's parameters and buffers, and the copy.

Owns pairing by name and by structure (:mod:`.pairing`), layouts for one tensor made of several
of the other side's, transposed or reshaped (:mod:`.layouts`: ``parity.fuse``/``transpose``/
``reshape``), and the map, the copy and its verification (:mod:`.transfer`).

May import: the judge, the backends (lazily) and :mod:`parity.errors`.
"""


# The flat layout's parity.weights module, whose names now live in .transfer (see parity._moved).
_OLD_NAMES = ("Pair", "WeightMap", "WeightReport", "map_weights", "copy_weights", "fill_weights", "TORCH_ONLY",
               "NOT_PERSISTENT")


def __getattr__(name):
    """``parity.weights.X`` of the flat layout, for the old module's public names only (a
    submodule's name must reach the import system untouched)."""
    if name not in _OLD_NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    from .._moved import warn

    warn(f"{__name__}.{name}", f"{__name__}.transfer.{name}")
    return getattr(importlib.import_module(".transfer", __name__), name)
