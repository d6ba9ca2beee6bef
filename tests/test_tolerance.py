"""The dtype defaults are PyTorch's own: those of ``torch.testing.assert_close``. The rest of the
tolerance's tests need no framework: tests/judge/test_tolerance.py."""

import pytest
import torch

from parity.judge.tolerance import DTYPE_DEFAULTS


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64", "complex64", "complex128"])
def test_dtype_defaults_are_those_of_assert_close(dtype):
    from torch.testing._comparison import default_tolerances

    expected = default_tolerances(torch.empty(1, dtype=getattr(torch, dtype)))
    assert (DTYPE_DEFAULTS[dtype].rtol, DTYPE_DEFAULTS[dtype].atol) == expected
