"""Sphinx configuration: the Markdown pages through MyST, the public API through autodoc, the furo
theme. `make docs` builds it with warnings as errors and every reference checked (-W -n)."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's parity, whichever is installed

import parity  # noqa: E402

project = "pytest-parity"
author = "pytest-parity contributors"
copyright = "pytest-parity contributors"
release = version = parity.__version__

extensions = ["myst_parser", "sphinx.ext.autodoc"]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "index"
exclude_patterns = ["_build"]
# `[text](page.md#a-heading)` links: an anchor for every heading down to ###.
myst_heading_anchors = 4
myst_enable_extensions = ["colon_fence"]
# Code blocks in the pages are examples, some of them failure messages: no highlighting guesses.
highlight_language = "none"

html_theme = "furo"
html_title = f"pytest-parity {release}"

autodoc_member_order = "bysource"
# Types are told in the docstrings; annotations name private helpers (and forward references that
# only resolve inside their module).
autodoc_typehints = "none"
autodoc_default_options = {"members": True, "undoc-members": False}

# Types of other projects, which this documentation does not hold and cannot link to offline.
nitpick_ignore_regex = [
    ("py:.*", r"(mindspore|torch|numpy|np|npt|ml_dtypes|hypothesis|pytest|_pytest|packaging)(\..*)?"),
    # the standard library's: no inventory to link them to offline
    ("py:.*", r"(os|pathlib|typing|collections\.abc|datetime)\..*"),
]
