"""``parity report``'s command line (``parity.nightly.cli``): bad input is a usage error, with nothing
written to stdout. Reports of real runs: tests/test_report_page.py."""

import re
from pathlib import Path

import pytest

from parity import cli


def report(pytester, capsys, *args):
    """``parity report`` in this process, from pytester's folder (its working folder): (exit status,
    what it printed)."""
    assert Path.cwd() == pytester.path
    capsys.readouterr()
    status = cli.main(["report", *[str(a) for a in args]])
    return status, capsys.readouterr()


@pytest.mark.parametrize(
    "args, message",
    [
        (
            ["run.jsonl"],
            "parity report: nothing to write; give --html OUT.html, --markdown OUT.md or --save-baseline DIR",
        ),
        (["nowhere.jsonl", "--html", "x.html"], "nowhere.jsonl: no such report file"),
        (
            ["not_a_report.jsonl", "--html", "x.html"],
            "not_a_report.jsonl:1: record schema None; this parity reads schema 1",
        ),
        (
            ["run.jsonl", "--html", "no/such/folder/x.html"],
            "--html no/such/folder/x.html: folder no/such/folder does not exist",
        ),
        (
            ["run.jsonl", "--markdown", "x.md", "--drift", "0.5"],
            "--drift: the drift factor must be a finite number greater than 1, got '0.5'",
        ),
        (["run.jsonl", "--markdown", "x.md", "--baseline", "."], "--baseline: . holds no baseline.jsonl*"),
    ],
)
def test_bad_input_is_a_usage_error(pytester, capsys, args, message):
    pytester.makefile(
        ".jsonl",
        run='{"schema": 1, "type": "environment", "created": "2026-01-01T00:00:00+00:00"}',
        not_a_report='{"hello": 1}',
    )
    status, out = report(pytester, capsys, *args)
    assert status == 2 and out.out == ""
    assert re.fullmatch(re.escape(f"parity: error: {message}").replace(r"\*", ".*"), out.err.strip())
