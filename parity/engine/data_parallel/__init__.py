"""Data parallelism: :func:`parity.check_data_parallel`, the same model trained in one process and
across workers, in MindSpore (``msrun``, ``mccl``) and PyTorch (gloo, DDP), four runs compared.

Modules: ``run`` (the check, in the caller's process), ``launch`` (the launchers), ``worker`` (one
worker process: ``python -m parity.engine.data_parallel.worker``, which imports both frameworks
as it starts) and ``result`` (framework-free: the nightly records read it). May import what the
rest of the engine may, and the training modules (loop, optimizers, reruns).
"""
