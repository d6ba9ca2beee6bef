"""One layout of the same values: two shapes that hold the same elements in C order, one merging
neighbouring axes the other keeps apart (tokens ``(N, H*W, C)`` against a grid ``(N, H, W, C)``, a
pooled output flattened ``(N, C)`` against ``(N, C, 1, 1)``). A MindSpore port often keeps such
a tensor in the other layout between layers; compared through the layout, its values are its own."""

from __future__ import annotations

from typing import Any, Sequence

__all__ = ["one_layout", "in_layout"]


def one_layout(a: Sequence[int], b: Sequence[int]) -> bool:
    """Whether shapes ``a`` and ``b`` differ and hold the same values in C order by merging or
    splitting neighbouring axes, each merged group standing against a single axis of the other
    side, with more than one group (else any reshape would pass: ``(6, 4)`` is not ``(4, 6)``)."""
    a, b = [n for n in a if n != 1], [n for n in b if n != 1]
    if a == b:
        return True  # they differ by axes of size 1 only
    i = j = groups = 0
    while i < len(a) and j < len(b):
        left, right, i_start, j_start = a[i], b[j], i, j
        while left != right:
            if left < right and i + 1 < len(a):
                i += 1
                left *= a[i]
            elif right < left and j + 1 < len(b):
                j += 1
                right *= b[j]
            else:
                return False
        if i != i_start and j != j_start:
            return False  # both sides split this group: another arrangement, not one layout
        i, j, groups = i + 1, j + 1, groups + 1
    return i == len(a) and j == len(b) and groups > 1


def in_layout(array: Any, shape: Sequence[int]) -> Any:
    """``array`` reshaped to ``shape`` where the two are :func:`one_layout`; as it is otherwise."""
    if tuple(array.shape) != tuple(shape) and one_layout(tuple(array.shape), tuple(shape)):
        return array.reshape(tuple(shape))
    return array
