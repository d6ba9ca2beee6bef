"""MindSpore's mixed precision as parity uses it: ``auto_mixed_precision`` on a copy of the Cell,
and where O1's rewrite cast a Cell's own code to a half dtype. MindSpore is imported when a
function is called."""

from __future__ import annotations

import functools
from typing import Dict

__all__ = ["mixed_precision", "half_casts"]


def mixed_precision(model, level: str, dtype: str):
    """``mindspore.amp.auto_mixed_precision(copy, level, dtype)`` on a deep copy of ``model``: the
    level rewrites or re-flags the Cells it is given (O1 swaps their classes, O2 and O3 set
    ``to_float`` and replace normalisation layers), and ``model`` is left as it was. O1 writes the
    code of each rewritten Cell into ``./rewritten_network/`` and imports it from there: it is run
    from a folder of parity's own, kept for the process (the code is read again by :func:`half_casts`)."""
    import copy
    import os

    import mindspore as ms
    from mindspore import amp

    here = os.getcwd()
    os.chdir(_rewrite_folder())
    try:
        return amp.auto_mixed_precision(copy.deepcopy(model), level, getattr(ms, dtype))
    finally:
        os.chdir(here)


@functools.lru_cache(maxsize=None)
def _rewrite_folder() -> str:
    import atexit
    import shutil
    import tempfile

    folder = tempfile.mkdtemp(prefix="parity-amp-")
    atexit.register(shutil.rmtree, folder, True)
    return folder


def half_casts(model, dtype: str) -> Dict[str, str]:
    """Path -> ``dtype`` for every sub-Cell whose own ``construct`` casts to ``dtype`` (O1 writes
    ``amp_cast(x, mindspore.float16)`` into the code of each Cell it converts, and casts the result
    back to float32, so the Cell's output dtype does not show it)."""
    import inspect

    found = {}
    for path, cell in model.cells_and_names():
        try:
            source = inspect.getsource(type(cell).construct)
        except (OSError, TypeError):
            continue
        if "amp_cast(" in source and f"mindspore.{dtype})" in source:
            found[path] = dtype
    return found
