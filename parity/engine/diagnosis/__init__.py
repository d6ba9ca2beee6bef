"""What a check runs only on a failure (or with ``localize=True``): layer capture and alignment,
each layer call's verdict, each layer's own error, the registry's likely causes, the message, and
standalone repros.

Modules: ``recording`` (the layer calls captured, MindSpore's compared as they come),
``alignment`` (which layer is which across the frameworks), ``verdicts`` (a layer call's verdict,
the first divergence, the first NaN/Inf, the layer table), ``own`` (each layer fed PyTorch's
inputs), ``causes`` (the registry's known mismatches), ``messages`` (text only) and ``repro/``.
``verdicts`` and ``messages`` import no framework (the nightly records read them).

May import: what the engine may; the engine's check modules (passes, inputs, side_errors), never
the variants (training, data parallelism, generation, shapes).
"""
