"""The rounding envelope (``parity.judge.envelope``): how far MindSpore may be from PyTorch given how
far PyTorch's own reruns moved, which elements flipped, and how few reruns decide a verdict. Numbers
only, as in test_metrics.py."""

import math

import numpy as np
import pytest

from parity.judge.envelope import ENVELOPE_DRAWS, HEADROOM, Candidate, Envelope, envelope_metrics, judge_envelope
from parity.judge.metrics import compare_arrays, relative_error

from .test_metrics import FP32, comparison


def test_the_envelope_allows_tolerance_plus_factor_times_spread_per_element():
    ref = np.array([1.0, 2.0, 0.0, 4.0], np.float32)
    spread = np.array([1e-4, 0.0, 0.0, 0.0])
    ms = ref + np.array([1.5e-4, 0.0, 0.0, 0.0], np.float32)  # 15x the atol alone
    margin, outside, ms_error, spread_error, flips, steady = envelope_metrics(
        ms, ref, spread, FP32, 2.0, np.zeros(4, bool)
    )
    allowed = FP32.atol + FP32.rtol * 1.0 + 2.0 * 1e-4
    assert (outside, flips) == (0, 0)
    assert margin == pytest.approx(1.5e-4 / allowed, rel=1e-3)
    assert ms_error == pytest.approx(1.5e-4 / np.linalg.norm(ref), rel=1e-3)
    assert spread_error == pytest.approx(1e-4 / np.linalg.norm(ref), rel=1e-3)
    # The same difference where PyTorch itself did not move is outside.
    margin, outside, *_ = envelope_metrics(ms[::-1].copy(), ref[::-1].copy(), spread, FP32, 2.0, np.zeros(4, bool))
    assert outside == 1 and margin > 1


def test_an_element_that_jumps_in_one_run_of_a_mirrored_pair_is_a_flip():
    from parity.judge.envelope import jumps

    base = np.array([0.5, -0.25, 1.0, 0.75, 0.0], np.float32)
    plus = np.array([1e-5, -2e-5, 0.3, 1e-9, 0.0])  # element 2 jumped under +u only: a mask flipped
    minus = np.array([-1e-5, 2e-5, 0.0, 3e-9, 0.0])  # the rest moved back (linear), or not at all
    assert jumps(plus, minus, base).tolist() == [False, False, True, False, False]
    *_, flips, steady = envelope_metrics(base, base, np.abs(plus), FP32, 2.0, jumps(plus, minus, base))
    assert (flips, steady) == (1, 0)


def envelope(**fields):
    base = dict(draws=4, float64=True, factor=2.0, margin=0.4, outside=0, ms_error=1e-6, spread=1e-6)
    return Envelope(**{**base, **fields})


def test_the_envelope_verdict_replaces_the_tolerance_verdict():
    assert comparison(mismatched=7, envelope=envelope()).passed
    assert comparison(mismatched=7, envelope=envelope()).noise_judged
    assert not comparison(mismatched=0, envelope=envelope()).noise_judged  # within tolerance anyway
    assert not comparison(mismatched=7, envelope=envelope(outside=3, margin=9.0)).passed


def test_a_tensor_whose_runs_flip_masks_is_judged_whole():
    flipped = envelope(outside=1, margin=40.0, flips=5, ms_error=3e-4, spread=2e-4)
    assert flipped.judged_whole and comparison(mismatched=1, envelope=flipped).passed
    too_far = envelope(outside=1, margin=40.0, flips=5, ms_error=5e-4, spread=2e-4)
    assert not too_far.passed
    smooth = envelope(outside=1, margin=40.0, flips=0, ms_error=1e-9, spread=2e-4)
    assert not smooth.passed  # no flips in PyTorch's runs: every element must be inside


def test_only_flipped_elements_and_a_few_others_may_be_judged_whole():
    """A flip is no licence for the rest of the tensor: the elements outside that jumped in none
    of PyTorch's runs must be few (ResNet-50 with MindSpore's own nn.Adam: 306,101 of a conv
    weight's 2,359,296 were, against 218,823 flips, and it passed as a whole)."""
    base = dict(margin=40.0, ms_error=3e-4, spread=2e-4, total=2_359_296)
    assert envelope(outside=2_400, steady=2_359, flips=5, **base).judged_whole  # 0.1% of the tensor
    assert not envelope(outside=2_400, steady=2_360, flips=5, **base).passed
    # half as many as flipped, up to 5% of the tensor
    assert envelope(outside=9_000, steady=6_146, flips=20_000, **base).judged_whole
    assert not envelope(outside=11_000, steady=10_001, flips=20_000, **base).passed
    assert envelope(outside=110_000, steady=100_000, flips=2_000_000, **base).judged_whole
    broken = envelope(outside=318_456, steady=306_101, flips=218_823, **base)
    assert broken.whole_margin is None and not broken.passed and broken.final_margin == 40.0
    small = dict(base, total=256)
    assert envelope(outside=4, steady=4, flips=22, **small).judged_whole  # another CPU's ties
    assert envelope(outside=4, steady=3, flips=1, **small).judged_whole  # a few, in a small tensor
    assert not envelope(outside=4, steady=4, flips=1, **small).passed
    assert not envelope(outside=61, steady=61, flips=1, **small).passed
    assert not envelope(outside=1, steady=1, flips=0, **small).passed  # no flips: nothing excused


def test_disagreeing_non_finite_values_fail_even_within_the_envelope():
    nf = compare_arrays(np.array([np.nan], np.float32), np.array([1.0], np.float32), FP32)["nonfinite"]
    assert not comparison(mismatched=0, nonfinite=nf, envelope=envelope()).passed


def test_relative_error_is_the_relative_l2_norm_over_finite_values():
    ref = np.array([3.0, 4.0, np.nan])
    value = np.array([3.0, 4.5, 1.0])
    assert relative_error(value, ref) == pytest.approx(0.5 / 5.0)
    assert relative_error(np.zeros(2), np.zeros(2)) == 0.0
    assert relative_error(np.ones(2), np.zeros(2)) == math.inf


def test_the_margin_shown_is_the_nearer_route_to_passing():
    # Every element inside, the tensor far inside as a whole: the whole-tensor margin is the headroom.
    inside = envelope(margin=0.7, outside=0, ms_error=1e-7, spread=1e-5, total=20480)
    assert inside.final_margin == pytest.approx(1e-7 / 2e-5)
    # Too many elements outside for a large tensor, and no flips: element by element only.
    many = envelope(margin=3.0, outside=50, ms_error=1e-7, spread=1e-5, total=20480)
    assert many.whole_margin is None and many.final_margin == 3.0 and not many.passed
    # A few outside in a large tensor, well inside as a whole: passes, judged whole.
    few = envelope(margin=3.0, outside=3, ms_error=1e-7, spread=1e-5, total=20480)
    assert few.judged_whole and few.passed and few.final_margin < 1


def _judged(ms, ref, key="t"):
    c = comparison(ms_shape=ref.shape, torch_shape=ref.shape, **compare_arrays(ms, ref, FP32))
    return Candidate(key, c, ms, ref)


def _runs(ref, scales, seed=0):
    """A rerun function whose perturbed runs move ``ref`` by ``scales[draw]`` (relative), mirrored,
    and whose float64 run by a tenth of the first; it records what it was asked for."""
    asked = []

    def rerun(spec):
        asked.append(spec)
        if spec.cast is not None:
            return [(key, ref * (1 + 0.1 * scales[0])) for key in spec.keys]
        signs = np.where(np.random.default_rng(seed + spec.draw).random(ref.shape) < 0.5, -1.0, 1.0)
        value = (ref * (1 + np.sign(spec.ulps) * scales[spec.draw] * signs)).astype(ref.dtype)
        return [(key, value) for key in spec.keys]

    return rerun, asked


def test_the_envelope_asks_no_more_runs_than_decide_a_verdict():
    ref = np.random.default_rng(1).standard_normal(1000).astype(np.float32)
    inside = ref * (1 + 3e-6 * np.sign(np.random.default_rng(2).standard_normal(1000))).astype(np.float32)
    far = ref + np.float32(1.0)  # a fault: no rounding reaches it
    cheap, faulty = _judged(inside, ref, "inside"), _judged(far, ref, "fault")
    rerun, asked = _runs(ref, [1e-5, 1e-5])
    judge_envelope([cheap, faulty], rerun)
    # The first pair decides the close tensor; the fault takes every run, and fails.
    assert [(s.draw, s.cast, s.keys) for s in asked] == [
        (0, None, {"inside", "fault"}),
        (0, None, {"inside", "fault"}),
        (1, None, {"fault"}),
        (1, None, {"fault"}),
        (None, "float64", {"fault"}),
    ]
    assert cheap.comparison.passed and cheap.comparison.margin <= HEADROOM
    assert (cheap.comparison.envelope.draws, cheap.comparison.envelope.float64) == (2, False)
    assert not faulty.comparison.passed
    assert (faulty.comparison.envelope.draws, faulty.comparison.envelope.float64) == (4, True)


def test_an_early_verdict_is_the_whole_envelopes_verdict():
    """Every further run only widens the spread: a tensor decided early passes with every run too,
    at no more than the margin shown; one left open gets exactly the whole envelope's verdict."""
    seen = set()
    for seed in range(12):
        rng = np.random.default_rng(seed)
        ref = rng.standard_normal(500).astype(np.float32)
        ms = (ref * (1 + rng.uniform(0, 2e-5) * rng.standard_normal(500))).astype(np.float32)
        scales = list(rng.uniform(2e-6, 3e-5, 2))
        early, whole = _judged(ms, ref), _judged(ms, ref)
        judge_envelope([early], _runs(ref, scales, seed)[0])
        judge_envelope([whole], _runs(ref, scales, seed)[0], adaptive=False)
        assert early.comparison.passed == whole.comparison.passed
        assert early.comparison.margin >= whole.comparison.margin
        if early.comparison.envelope.draws < ENVELOPE_DRAWS:
            assert early.comparison.margin <= HEADROOM
        else:
            assert early.comparison.margin == whole.comparison.margin
        seen.add((early.comparison.envelope.draws, whole.comparison.passed))
    assert seen == {(2, True), (4, True), (4, False)}  # decided early, passed late, failed


@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan])
def test_a_rerun_not_finite_where_pytorch_is_finite_is_left_out_there(bad):
    """PyTorch's float64 run turned a few elements non-finite (``finfo(float64).min`` cast to
    float32 in a softmax: -inf, then NaN): the float64 run is not used at those elements (an Inf
    spread would let any value pass), they are judged on the perturbed runs, and are counted."""
    ref = np.random.default_rng(3).standard_normal(1000).astype(np.float32)
    far = ref.copy()
    far[:3] += np.float32(1.0)  # a fault exactly where the float64 run is not finite
    faulty = _judged(far, ref, "fault")
    perturbed, _ = _runs(ref, [1e-5, 1e-5])

    def rerun(spec):
        if spec.cast is None:
            return perturbed(spec)
        value = ref.astype(np.float64)
        value[:5] = bad
        return [(key, value) for key in spec.keys]

    spreads = judge_envelope([faulty], rerun)
    envelope = faulty.comparison.envelope
    assert envelope.float64 and envelope.unused == 5 and spreads["fault"].unused_runs == ["float64"]
    assert envelope.outside == 3 and not faulty.comparison.passed
    assert np.isfinite(spreads["fault"].values).all()
