"""A custom Module's ``forward`` as a program MindSpore runs: :mod:`.concrete` runs the Module on
example inputs and traces it with ``torch.fx`` while computing every node in PyTorch, each Python
decision kept as a guard; :mod:`.graph` turns a traced program (or a symbolic trace, without
examples) into a Cell that runs its nodes through the call table; :mod:`.wrapped` traces into the
functions a library keeps out of ``torch.fx`` with ``torch.fx.wrap`` when they are called.

May import: the call table (:mod:`parity.translation.calls`), the layer table's ``Context``, the
frameworks and :mod:`parity.errors`.
"""
