"""The device profiles' numbers (``parity.judge.devices``) are the dtype defaults of the narrower types
that a device computes float32 in. The profiles against MindSpore's own settings: tests/test_devices.py."""

try:
    import tomllib
except ImportError:  # Python < 3.11
    import tomli as tomllib

from parity.judge import devices
from parity.judge.tolerance import DTYPE_DEFAULTS, Tolerance


def test_profile_numbers_are_the_dtype_defaults_of_the_narrower_types():
    with devices.PROFILES_PATH.open("rb") as file:
        data = tomllib.load(file)
    for kind, entry in data["float32_computed_in"].items():
        assert Tolerance(entry["rtol"], entry["atol"]) == DTYPE_DEFAULTS[kind], kind
    narrower = set(data["Ascend"]["precision_mode"].values()) | {data["Ascend"]["hf32"], data["Ascend"]["unknown"]}
    assert narrower - {"float32"} <= set(data["float32_computed_in"])
