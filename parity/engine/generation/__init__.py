"""Generation parity: :func:`parity.check_generation`, greedy decoding on both sides from the same
prompt, every step's logits judged as :func:`parity.check` judges a tensor.

Modules: ``run`` (the decoding steps, judged, and the failing step localised), ``result``
(framework-free: the nightly records read it) and ``messages`` (text only). May import what the
rest of the engine may, and the check's modules (check, pairing, passes, diagnosis).
"""
