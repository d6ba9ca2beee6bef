"""The plugin's options (``parity.options``): ``--help`` shows each with its choices and the ini key,
and a bad value on the command line is a usage error before any test runs."""

import hypothesis  # noqa: F401  imported here, the hypothesis plugin's import survives each in-process run
import pytest

from parity import options as opts

PARITY = opts.PARITY


def test_help_shows_the_options(pytester):
    result = pytester.runpytest("--help")
    assert result.ret == 0
    result.stdout.fnmatch_lines(
        ["*MindSpore <-> PyTorch parity*", f"*{PARITY} *"] + [f"*{option.flag}*" for option in opts.OPTIONS],
        consecutive=False,
    )
    text = result.stdout.str()
    for option in opts.OPTIONS:
        assert option.help.split(":")[0][:30] in text
        for choice in option.choices or ():
            assert choice in text
    result.stdout.fnmatch_lines(["*parity_cases*"])


@pytest.mark.parametrize(
    "value, why",
    [("abc", "seed must be an integer, got 'abc'"), ("-3", "seed must be between 0 and 2\\*\\*63 - 1, got -3")],
)
def test_a_bad_parity_seed_on_the_command_line_is_a_usage_error(pytester, value, why):
    from parity.options import SEED

    pytester.makepyfile("def test_nothing(): pass")
    result = pytester.runpytest(f"{SEED.flag}={value}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.re_match_lines([f".*{SEED.flag}: {why}"])
    assert "Traceback" not in result.stderr.str()


@pytest.mark.parametrize("flag, value", [("--parity-mode", "fast"), ("--parity-device", "TPU")])
def test_bad_choices_on_the_command_line_are_usage_errors(pytester, flag, value):
    pytester.makepyfile("def test_nothing(): pass")
    result = pytester.runpytest(f"{flag}={value}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*argument {flag}: invalid choice: '{value}'*"])
