"""Recorded references: PyTorch's side of a check run once and written down (:mod:`.record`,
``parity.record``), and MindSpore checked against it later without PyTorch (:mod:`.replay`,
``parity.check(ms_cell, "path/to/reference")``). :mod:`.store` reads and writes a reference (a
folder of ``reference.json`` and ``reference.safetensors``) and computes its content key;
:mod:`.side` answers what the engine asks of PyTorch from the recording; :mod:`.passes` runs
MindSpore's side as :mod:`parity.engine.passes` does. Only :mod:`.record` imports PyTorch.

May import what the engine may, and :mod:`parity.files` (the reference's two files are written
whole and read bounded through it)."""
