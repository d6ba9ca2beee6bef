"""``parity.judge.metrics``: numbers only. Every expected value here is computed from the arrays with numpy,
independently of the implementation's own arithmetic."""

import math

import numpy as np
import pytest

from parity import Tolerance
from parity.judge.metrics import Comparison, compare_arrays, structural_problem

FP32 = Tolerance(1.3e-6, 1e-5)


def reference_and_perturbed():
    rng = np.random.default_rng(0)
    ref = rng.standard_normal((3, 4, 5)).astype(np.float32)
    ms = ref.copy()
    ms[1, 2, 3] += 0.25  # the greatest absolute difference
    ms[0, 0, 1] += 2e-5  # over atol, far under the greatest
    ms[2, 1, 0] += 1e-6  # within tolerance
    ref[2, 3, 4] = 1e-4  # a tiny reference value: the greatest relative difference
    ms[2, 3, 4] = 1e-4 + 5e-3
    return ms, ref


def test_metrics_match_an_independent_computation():
    ms, ref = reference_and_perturbed()
    got = compare_arrays(ms, ref, FP32)
    a, b = ms.astype(np.float64), ref.astype(np.float64)
    diff = np.abs(a - b)
    allowed = FP32.atol + FP32.rtol * np.abs(b)
    rel = diff / np.abs(b)

    assert got["total"] == 60
    assert got["mismatched"] == int((diff > allowed).sum()) == 3
    assert got["max_abs"] == pytest.approx(diff.max())
    assert got["max_abs_index"] == (1, 2, 3)
    assert got["max_rel"] == pytest.approx(rel.max())
    assert got["max_rel_index"] == (2, 3, 4)
    assert got["cosine"] == pytest.approx(a.ravel() @ b.ravel() / (np.linalg.norm(a) * np.linalg.norm(b)))
    assert got["margin"] == pytest.approx((diff / allowed).max())
    assert got["nonfinite"] is None


def test_identical_arrays_have_no_mismatch():
    ref = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
    got = compare_arrays(ref.copy(), ref, FP32)
    assert (got["mismatched"], got["max_abs"], got["margin"]) == (0, 0.0, 0.0)
    assert got["cosine"] == pytest.approx(1.0)


def test_margin_is_one_exactly_at_the_boundary():
    ref = np.array([2.0], np.float64)
    tol = Tolerance(0.25, 0.5)
    at_limit = compare_arrays(ref + 1.0, ref, tol)  # |diff| == atol + rtol*|ref| == 1.0
    over = compare_arrays(ref + 1.5, ref, tol)
    assert (at_limit["mismatched"], at_limit["margin"]) == (0, pytest.approx(1.0))
    assert (over["mismatched"], over["margin"]) == (1, pytest.approx(1.5))


def test_relative_difference_against_zero_is_infinite():
    got = compare_arrays(np.array([0.0, 1e-3]), np.array([0.0, 0.0]), FP32)
    assert got["max_rel"] == math.inf
    assert got["max_rel_index"] == (1,)


def test_exact_tolerance_for_integers():
    got = compare_arrays(np.array([1, 2, 3]), np.array([1, 2, 4]), Tolerance(0, 0))
    assert (got["mismatched"], got["max_abs"], got["max_abs_index"]) == (1, 1.0, (2,))
    assert got["margin"] == math.inf


def test_booleans_compare():
    got = compare_arrays(np.array([True, False, True]), np.array([True, True, True]), Tolerance(0, 0))
    assert (got["mismatched"], got["max_abs_index"]) == (1, (1,))


def test_scalars_and_empty_arrays():
    scalar = compare_arrays(np.array(1.5, np.float32), np.array(1.0, np.float32), FP32)
    assert (scalar["total"], scalar["max_abs_index"], scalar["max_abs"]) == (1, (), 0.5)
    assert compare_arrays(np.zeros((0, 3)), np.zeros((0, 3)), FP32) == {"total": 0}


def test_complex_values_compare_their_imaginary_parts():
    got = compare_arrays(np.array([1 + 1j], np.complex64), np.array([1 + 2j], np.complex64), FP32)
    assert got["mismatched"] == 1


# -- NaN and Inf -------------------------------------------------------------------------------


def test_agreeing_nan_and_inf_are_ignored_and_recorded():
    ref = np.array([[1.0, np.nan, 3.0], [np.inf, 5.0, -np.inf]], np.float32)
    ms = ref.copy()
    ms[1, 1] += 1e-6
    got = compare_arrays(ms, ref, FP32)
    nf = got["nonfinite"]
    assert nf.agree
    assert (nf.ms_count, nf.torch_count, nf.disagreeing) == (3, 3, 0)
    assert nf.positions == ((0, 1), (1, 0), (1, 2))
    assert got["mismatched"] == 0
    assert math.isfinite(got["margin"]) and got["margin"] < 1
    assert got["max_abs_index"] == (1, 1)


@pytest.mark.parametrize(
    "ms_value, ref_value",
    [
        (np.nan, 1.0),  # NaN on one side only
        (1.0, np.nan),
        (np.inf, -np.inf),  # both infinite, opposite signs
        (np.inf, np.nan),
    ],
)
def test_disagreeing_non_finite_values_fail(ms_value, ref_value):
    ref = np.array([0.5, ref_value, 2.0, np.nan], np.float32)
    ms = np.array([0.5, ms_value, 2.0, np.nan], np.float32)
    got = compare_arrays(ms, ref, FP32)
    nf = got["nonfinite"]
    assert not nf.agree
    assert nf.disagreeing == 1
    assert nf.positions == ((1,),)  # only the disagreeing position, not the agreeing NaN at 3
    assert nf.ms_count == int((~np.isfinite(ms)).sum())
    assert nf.torch_count == int((~np.isfinite(ref)).sum())
    assert got["mismatched"] == 1
    assert got["margin"] == math.inf


def test_non_finite_positions_are_capped():
    ms = np.full(20, np.nan, np.float32)
    nf = compare_arrays(ms, np.zeros(20, np.float32), FP32)["nonfinite"]
    assert nf.disagreeing == 20
    assert len(nf.positions) == 5


# -- structure ---------------------------------------------------------------------------------


def test_structural_problems():
    f32 = np.zeros((2, 3), np.float32)
    assert structural_problem(np.zeros((3, 2), np.float32), f32) == "shape"
    assert structural_problem(np.zeros((2, 3), np.float64), f32) == "dtype"
    assert structural_problem(np.zeros((2, 3), np.float64), f32, check_dtype=False) is None
    assert structural_problem(f32.copy(), f32) is None


# -- verdicts ----------------------------------------------------------------------------------


def comparison(**fields):
    base = dict(
        kind="param grad",
        name="fc.weight",
        ms_name="fc.weight",
        torch_name="fc.weight",
        mode="pynative",
        ms_shape=(2,),
        torch_shape=(2,),
        ms_dtype="float32",
        torch_dtype="float32",
        tolerance=FP32,
        tolerance_source="float32 default",
    )
    return Comparison(**{**base, **fields})


def test_verdicts():
    assert comparison(mismatched=0).passed
    assert not comparison(mismatched=1).passed
    assert not comparison(problem="shape").passed
