"""The translated catalogue: each case builds a ``torch.nn`` layer and compares it with
``parity.translate`` of itself (``mindspore=TRANSLATE``), forward and gradients, one case per
interesting argument combination. ``xfail`` cases are features MindSpore cannot match on CPU."""
