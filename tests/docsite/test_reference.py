"""The reference pages hold every command, flag, pytest option and ini key as ``--help`` prints
them today: a new flag, or changed help, fails here until ``python tests/docsite/helps.py`` writes
the pages anew."""

from __future__ import annotations

import pytest

from docsite.helps import BEGIN, ROOT, generated

PAGES = ["docs/reference/cli.md", "docs/reference/options.md"]


@pytest.mark.parametrize("page", PAGES)
def test_the_generated_help_is_current(page, tmp_path):
    path = ROOT / page
    text = path.read_text(encoding="utf-8")
    assert BEGIN.split("{")[0] in text
    assert generated(path, tmp_path) == text, f"{page} is out of date: run python tests/docsite/helps.py"
