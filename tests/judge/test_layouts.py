"""One layout of the same values (parity.judge.layouts): shapes that merge or split neighbouring axes."""

import numpy as np
import pytest

from parity.judge.layouts import in_layout, one_layout


@pytest.mark.parametrize(
    "a, b",
    [
        ((2, 256, 32), (2, 16, 16, 32)),  # tokens against a grid
        ((2, 1280), (2, 1280, 1, 1)),  # a pooled output flattened
        ((2, 12), (2, 3, 4)),  # heads merged
        ((2, 3), (1, 2, 3)),
    ],
)
def test_shapes_that_merge_neighbouring_axes_are_one_layout(a, b):
    assert one_layout(a, b) and one_layout(b, a)


@pytest.mark.parametrize(
    "a, b",
    [
        ((6, 4), (4, 6)),  # as many elements, one group split both ways: another arrangement
        ((2, 32, 256), (2, 16, 16, 32)),  # channels first against channels last
        ((2, 4, 3), (2, 3, 4)),
        ((24,), (2, 3, 4)),  # one group only: any reshape would pass
        ((2, 3), (2, 4)),
    ],
)
def test_other_arrangements_are_not(a, b):
    assert not one_layout(a, b) and not one_layout(b, a)


def test_in_layout_reshapes_only_one_layout():
    grid = np.arange(2 * 4 * 4 * 3.0).reshape(2, 4, 4, 3)
    tokens = in_layout(grid, (2, 16, 3))
    assert tokens.shape == (2, 16, 3) and np.shares_memory(tokens, grid)
    assert in_layout(grid, (2, 3, 4, 4)) is grid
