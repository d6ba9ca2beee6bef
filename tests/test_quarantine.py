"""A quarantined parity check: its failure is a real mismatch (PyTorch's tanh GELU against MindSpore's
exact one), reported in full and quarantined. The quarantine file itself, on plain tests, needs no
framework: tests/nightly/test_quarantine.py."""

import pytest

from parity import options as opts

from nightly.test_quarantine import entry

pytestmark = pytest.mark.usefixtures("collect_inner_cells")  # tests/conftest.py: runs MindSpore in-process


def test_a_failing_parity_check_quarantined(pytester):
    pytester.makepyfile(
        test_gelu="""
        def test_fail(parity):
            import mindspore, torch

            parity.check(mindspore.nn.GELU(approximate=False), torch.nn.GELU(approximate="tanh"), parity.randn((2, 4)))
    """
    )
    pytester.path.joinpath("parity-quarantine.toml").write_text(
        entry("test_gelu.py::test_fail", reason="tanh GELU against the exact one", issue="#9")
    )
    result = pytester.runpytest("-p", "no:cacheprovider", opts.PARITY)
    assert result.ret == pytest.ExitCode.OK
    result.assert_outcomes(xfailed=1)
    result.stdout.fnmatch_lines(
        [
            "FAIL  test_gelu.py::test_fail: *",
            "quarantined failure test_gelu.py::test_fail: tanh GELU against the exact one (#9, until 2999-12-31)",
        ]
    )
