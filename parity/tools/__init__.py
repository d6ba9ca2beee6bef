"""The migration tools beside the check, each with its command line under ``parity``:
``convert`` (checkpoints between the frameworks, through the weight map), ``scan`` (which PyTorch
APIs a codebase uses, and what parity knows of each) and ``dumps`` (``compare-dumps``: saved
tensors of both sides, paired and judged).

May import: the engine, the weights, the judge, the registry, the backends (lazily) and
:mod:`parity.errors`. Nothing imports the tools but :mod:`parity.cli` and :mod:`parity`'s API.
"""
