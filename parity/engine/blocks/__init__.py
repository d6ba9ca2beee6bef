"""A model checked block by block: :func:`parity.check_blocks`, for models larger than memory.
Each block pair is built, loaded with its own weights from the checkpoints, checked as
:func:`parity.check` checks it (fed PyTorch's output of the block before), and freed before the
next; MindSpore's own outputs are chained as well, to say how far its error grows over the blocks,
and with gradients the backward is chained from the last block to the first.

Modules: ``run`` (the forward walk, the failure message), ``load`` (one block pair built and its
weights read), ``checkpoint`` (one file, or a sharded checkpoint through its index), ``backward``
(the backward walk) and ``result`` (framework-free). May import what the rest of the engine may,
and :mod:`parity.engine.check`.
"""
