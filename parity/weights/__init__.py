"""Weights: the map between a Cell's and a Module's parameters and buffers, and the copy.

Owns pairing by name (:mod:`.pairing`) and by structure (:mod:`.structure`), layouts for one
tensor made of several of the other side's, transposed or reshaped (:mod:`.layouts`:
``parity.fuse``/``transpose``/``reshape``), and the map, the copy and its verification
(:mod:`.transfer`).

May import: the judge, the backends (lazily) and :mod:`parity.errors`.
"""
