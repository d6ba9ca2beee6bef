"""``parity convert``: a checkpoint of one framework converted for the other's model through the
weight map, reloaded and verified bit for bit (:mod:`.checkpoint`), and its report (:mod:`.report`)."""
