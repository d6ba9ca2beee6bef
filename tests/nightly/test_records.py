"""The report file of ``--parity-report`` and its loader: a missing folder is a usage error; non-finite
numbers come back as floats, unknown record types are skipped, and what is not one run is refused.
The records that real checks write: tests/test_records.py."""

import json

import pytest

from parity.errors import ParityUsageError
from parity.nightly.records import SCHEMA, read_records
from parity.plugin import REPORT


def test_a_report_in_a_missing_folder_is_a_usage_error(pytester):
    result = pytester.runpytest(f"{REPORT}=nowhere/run.jsonl")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{REPORT}: folder *nowhere does not exist*"])


def write(path, *records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


ENVIRONMENT = {"schema": SCHEMA, "type": "environment"}


def test_read_records_restores_non_finite_numbers_and_skips_unknown_types(tmp_path):
    check = {
        "schema": SCHEMA,
        "type": "check",
        "nodeid": "t.py::t",
        "verdict": "pass",
        "worst_margin": "inf",
        "tensors": [{"name": "nan", "margin": "inf", "max_abs": "nan", "tolerance": {"rtol": 0.0, "atol": 0.0}}],
    }
    environment, records = read_records(
        write(tmp_path / "r.jsonl", ENVIRONMENT, check, {"schema": SCHEMA, "type": "later"})
    )
    assert environment == ENVIRONMENT and len(records) == 1
    tensor = records[0]["tensors"][0]
    assert records[0]["worst_margin"] == float("inf") and tensor["margin"] == float("inf")
    assert tensor["max_abs"] != tensor["max_abs"] and tensor["name"] == "nan"


@pytest.mark.parametrize(
    "lines, complaint",
    [
        ([{"schema": 2, "type": "environment"}], "r.jsonl:1: record schema 2; this parity reads schema 1"),
        ([ENVIRONMENT, ENVIRONMENT], "r.jsonl:2: a second environment record"),
        ([{"schema": SCHEMA, "type": "check", "nodeid": "t.py::t", "verdict": "pass"}], "no environment record"),
    ],
)
def test_read_records_rejects_what_is_not_one_run(tmp_path, lines, complaint):
    with pytest.raises(ParityUsageError, match=complaint):
        read_records(write(tmp_path / "r.jsonl", *lines))
