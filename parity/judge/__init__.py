"""The judge: numbers only. Whether two arrays agree, and how far apart they may be.

Owns the comparison metrics (:mod:`.metrics`: :class:`~.metrics.Comparison`, ``compare_pair``),
tolerances and their sources (:mod:`.tolerance`, per device :mod:`.devices`), dtypes
(:mod:`.dtypes`, bfloat16 through ``ml_dtypes``), the rounding envelope (:mod:`.envelope`) and the
golden judge of half precision (:mod:`.golden`). Every caller (``check``, ``check_training``,
``check_data_parallel``, ``compare-dumps``) says what it has, its tensors and a way to run PyTorch
again; the judge says how each tensor is judged and why.

May import: numpy, ``ml_dtypes``, the standard library and :mod:`parity.errors`. Never a framework,
pytest, or message and report code.
"""
