"""Training parity: :func:`parity.check_training`, the same optimizer steps on both sides compared
step by step (the loss, every parameter gradient, the optimizer state, the parameters after the
update, the running statistics), judged as :func:`parity.check` judges.

Modules: ``loop`` (the steps, side by side), ``steps`` (what one step left, compared), ``optimizers``
(optimizers, schedulers, losses and their translation), ``loss_scale``, ``half`` (half-precision
training), ``reruns`` (PyTorch's training again for the judges), ``result`` and ``messages``.
May import: the judge, the weights, the backends, the registry, the translation, and the engine's
check modules (check, settings, pairing, passes, inputs, side_errors, diagnosis). Only ``result``
is framework-free (``parity.TrainingResult``, the nightly records and plots read it); this
``__init__`` imports nothing.
"""
