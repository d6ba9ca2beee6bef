"""``parity scan``: the PyTorch APIs a codebase uses (:mod:`.source`, from syntax trees; optionally
:mod:`.runtime`, one traced forward/backward), each given a status from the translation tables and
the registry (:mod:`.status`, reading :mod:`.torch_source` and ``parity/translation`` as text),
walked and summed by :mod:`.scanner` and reported by :mod:`.report`. Imports no framework."""
