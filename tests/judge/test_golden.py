"""The golden judge of half-precision tensors (``parity.judge.golden``): numbers only. Half-precision
pairs judged against the float64 golden end to end: tests/test_half_precision.py."""

import numpy as np

from parity.judge.golden import GOLDEN_FACTOR, golden_verdict


def test_golden_judge_rule():
    golden = np.linspace(-1.0, 1.0, 101)
    torch_side = golden + 1e-4 * np.cos(np.arange(101))
    close = golden_verdict(golden + 3e-4 * np.sin(np.arange(101)), torch_side, golden, "float16", 5.0)
    assert close.passed and 0 < close.margin <= 1
    far = golden_verdict(golden * 1.05, torch_side, golden, "float16", 50.0)
    assert not far.passed and far.l2_margin > 1 and far.factor == GOLDEN_FACTOR
    exact = golden_verdict(golden.astype(np.float16), golden.astype(np.float16), golden, "float16", 2.0)
    assert exact.torch_error > 0 and exact.passed  # rounding to float16 itself is within the floor
