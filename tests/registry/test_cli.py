"""``python -m parity.registry``: the data's own command line (check, list). The self-tests' command
line, ``python -m parity.mismatch_checks``, runs the frameworks: tests/test_registry_cli.py."""

import pytest

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
