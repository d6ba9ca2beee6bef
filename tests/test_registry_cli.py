"""The two command lines: ``python -m parity.registry`` (data only) and
``python -m parity.mismatch_checks`` (self-tests on the installed frameworks)."""

import pytest

from parity.mismatch_checks.__main__ import main as checks_main
from parity.registry import load
from parity.registry.__main__ import main as registry_main


def test_registry_check_and_list(capsys):
    assert registry_main(["check"]) == 0
    assert capsys.readouterr().out.startswith(f"{len(load())} entries and ")
    assert registry_main(["list"]) == 0
    assert "gelu-approximate-default" in capsys.readouterr().out


def test_registry_no_longer_runs_self_tests(capsys):
    with pytest.raises(SystemExit) as info:
        registry_main(["selftest"])
    assert info.value.code == 2
    assert "invalid choice: 'selftest'" in capsys.readouterr().err


def test_selftest_command_prints_one_line_per_entry_and_a_total(capsys):
    assert checks_main(["selftest", "gelu-approximate-default", "softplus-missing"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("ok          gelu-approximate-default: before outputs: ")
    assert lines[1].startswith("ok          softplus-missing: before AttributeError: ")
    assert lines[2].startswith("2 entries in ") and lines[2].endswith("s: 2 ok")


def test_selftest_command_with_an_unknown_id(capsys):
    assert checks_main(["selftest", "gelu-aproximate-default"]) == 1
    assert (
        "no known mismatch 'gelu-aproximate-default'; did you mean 'gelu-approximate-default'"
        in capsys.readouterr().err
    )
