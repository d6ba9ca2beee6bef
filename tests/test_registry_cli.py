"""``python -m parity.mismatch_checks``: self-tests on the installed frameworks. The registry's own
command line, ``python -m parity.registry`` (data only), needs no framework: tests/registry/test_cli.py."""

from parity.mismatch_checks.__main__ import main as checks_main


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
