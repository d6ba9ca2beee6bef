"""``parity compare-dumps``: two sets of saved tensors (numpy, TroubleShooter and msprobe dumps,
checkpoints) read (:mod:`.files`), paired by name (:mod:`.names`), judged by tolerance
(:mod:`.compare`) and reported (:mod:`.report`); the command line in :mod:`.cli`."""
