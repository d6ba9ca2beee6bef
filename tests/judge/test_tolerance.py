"""Tolerances are a validated type; dtype defaults are the documented ones (assert_close's: PyTorch
itself is asked in tests/test_tolerance.py); overrides resolve from the most specific source, and
every resolved tolerance names where it came from."""

import dataclasses
import math

import pytest

from parity import ParityUsageError, Tolerance
from parity.judge.tolerance import DTYPE_DEFAULTS, ToleranceSpec, dtype_default, resolve

CALL = "check(tolerance=...)"
MARKER = "@pytest.mark.parity(tolerance=...)"


# -- the type ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "rtol, atol, bad",
    [
        (-1e-3, 1e-5, "rtol"),
        (1e-3, -1e-5, "atol"),
        (math.nan, 1e-5, "rtol"),
        (1e-3, math.inf, "atol"),
        (True, 1e-5, "rtol"),
        (1e-3, False, "atol"),
        ("1e-3", 1e-5, "rtol"),
        (1e-3, None, "atol"),
    ],
)
def test_invalid_tolerances_are_usage_errors_naming_the_field(rtol, atol, bad):
    with pytest.raises(ParityUsageError, match=f"Tolerance {bad} must be"):
        Tolerance(rtol, atol)


def test_tolerance_needs_both_values():
    with pytest.raises(TypeError, match="atol"):
        Tolerance(1e-3)  # pylint: disable=no-value-for-parameter
    with pytest.raises(TypeError, match="rtol"):
        Tolerance(atol=1e-3)  # pylint: disable=no-value-for-parameter


@pytest.mark.parametrize("value", [(1e-3,), (1e-3, 1e-5, 0.0), {"rtol": 1e-3}, 0.1, "loose"])
def test_anything_but_both_values_is_refused_when_parsed(value):
    with pytest.raises(ParityUsageError, match="rtol"):
        ToleranceSpec.parse(value)


def test_zero_and_integers_are_valid():
    assert Tolerance(0, 0) == Tolerance(0.0, 0.0)


def test_tolerance_is_frozen_and_prints_compactly():
    tol = Tolerance(1.3e-6, 1e-5)
    with pytest.raises(dataclasses.FrozenInstanceError):
        tol.rtol = 1.0
    assert str(tol) == "rtol=1.3e-06, atol=1e-05"


# -- dtype defaults ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "dtype, rtol, atol",
    [
        ("float32", 1.3e-6, 1e-5),
        ("float16", 1e-3, 1e-5),
        ("bfloat16", 1.6e-2, 1e-5),
    ],
)
def test_documented_dtype_defaults(dtype, rtol, atol):
    assert dtype_default(dtype) == (Tolerance(rtol, atol), f"{dtype} default")


@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8", "bool"])
def test_integer_dtypes_compare_exactly(dtype):
    assert dtype_default(dtype) == (Tolerance(0.0, 0.0), f"{dtype}: exact")


# -- parsing -----------------------------------------------------------------------------------


@pytest.mark.parametrize("value", [Tolerance(1e-3, 1e-4), (1e-3, 1e-4), [1e-3, 1e-4], {"rtol": 1e-3, "atol": 1e-4}])
def test_one_tolerance_for_everything(value):
    spec = ToleranceSpec.parse(value)
    assert spec.lookup(("anything",)) == (Tolerance(1e-3, 1e-4), CALL)


def test_none_says_nothing():
    assert ToleranceSpec.parse(None).lookup(("output",)) is None


def test_glob_keys_must_be_strings():
    with pytest.raises(ParityUsageError, match="name globs"):
        ToleranceSpec.parse({3: Tolerance(1e-3, 1e-3)})


def test_a_bad_override_names_its_glob_and_source():
    with pytest.raises(ParityUsageError, match=r"@pytest\.mark\.parity\(tolerance=\.\.\.\)\['fc\.\*'\]"):
        ToleranceSpec.parse({"fc.*": 0.5}, source=MARKER)


# -- globs -------------------------------------------------------------------------------------

LOOSE, MIDDLE, TIGHT = Tolerance(1e-1, 1e-1), Tolerance(1e-2, 1e-2), Tolerance(1e-4, 1e-4)


@pytest.fixture
def layered():
    return ToleranceSpec.parse({"*": LOOSE, "features.*": MIDDLE, "features.3.*": TIGHT})


def test_most_specific_glob_wins(layered):
    assert layered.lookup(("features.3.weight",)) == (TIGHT, f"{CALL}['features.3.*']")
    assert layered.lookup(("features.1.weight",)) == (MIDDLE, f"{CALL}['features.*']")
    assert layered.lookup(("fc.weight",)) == (LOOSE, CALL)


def test_most_specific_glob_wins_whatever_the_order_written():
    spec = ToleranceSpec.parse({"features.3.*": TIGHT, "*": LOOSE, "features.*": MIDDLE})
    assert spec.lookup(("features.3.bias",))[0] == TIGHT


def test_a_glob_matches_either_sides_name():
    spec = ToleranceSpec.parse({"bn.gamma": TIGHT})
    # (name, MindSpore name, PyTorch name) as the runner passes them
    assert spec.lookup(("bn.weight", "bn.gamma", "bn.weight")) == (TIGHT, f"{CALL}['bn.gamma']")
    assert spec.lookup(("bn.bias", "bn.beta", "bn.bias")) is None


def test_globs_without_a_default_say_nothing_elsewhere():
    spec = ToleranceSpec.parse({"output*": TIGHT})
    assert spec.lookup(("output",)) == (TIGHT, f"{CALL}['output*']")
    assert spec.lookup(("fc.weight",)) is None


def test_a_key_equal_to_a_tensor_name_matches_it():
    spec = ToleranceSpec.parse({"output[1]": TIGHT})
    assert spec.lookup(("output[1]",)) == (TIGHT, f"{CALL}['output[1]']")


# -- the chain: call > marker > dtype default --------------------------------------------------


def test_call_beats_marker_beats_dtype_default():
    call = ToleranceSpec.parse({"fc.*": TIGHT})
    marker = ToleranceSpec.parse({"*": MIDDLE, "conv.*": LOOSE}, source=MARKER)
    chain = (call, marker)
    assert resolve(chain, ("fc.weight",), "float32") == (TIGHT, f"{CALL}['fc.*']")
    assert resolve(chain, ("conv.weight",), "float32") == (LOOSE, f"{MARKER}['conv.*']")
    assert resolve(chain, ("output",), "float32") == (MIDDLE, MARKER)
    assert resolve((call,), ("output",), "float16") == (DTYPE_DEFAULTS["float16"], "float16 default")


def test_a_call_default_shadows_marker_globs():
    chain = (ToleranceSpec.parse(TIGHT), ToleranceSpec.parse({"conv.*": LOOSE}, source=MARKER))
    assert resolve(chain, ("conv.weight",), "float32") == (TIGHT, CALL)


def test_empty_chain_falls_back_to_the_dtype_default():
    assert resolve((), ("output",), "float32") == (Tolerance(1.3e-6, 1e-5), "float32 default")
    assert resolve((ToleranceSpec.parse(None),), ("x",), "int64") == (Tolerance(0, 0), "int64: exact")
