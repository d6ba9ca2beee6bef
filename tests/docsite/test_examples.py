"""Every Python example of the documentation site (docs/**/*.md) runs, as written on its page.

A page's examples run in order in one fresh folder, which is also on ``sys.path``: an example whose
first line names a file (``# models.py: ...``) is written there, for the examples after it to import,
and one named ``test_*.py`` is run there by pytest with ``--parity`` and must pass. Any other example
is executed. An HTML comment just before an example says more, where needed:

- ``<!-- example: raises NAME -->``: the example ends in the exception NAME (what the page shows);
- ``<!-- example: run by tests/PATH -->``: a test of its own runs it from this page and checks what
  it prints or writes (that test must read the page).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
BLOCK = re.compile(r"(?:<!-- example: (?P<how>[^>]*?) -->\n+)?^```python\n(?P<code>.*?)^```", re.S | re.M)
FILE = re.compile(r"#\s*(?P<name>[\w/]+\.py)\b")


def pages():
    return sorted(p for p in DOCS.rglob("*.md") if "_build" not in p.parts)


def examples(page):
    """(line, how, code) of each Python example of ``page``."""
    text = page.read_text(encoding="utf-8")
    return [(text.count("\n", 0, m.start("code")) + 1, m["how"] or "", m["code"]) for m in BLOCK.finditer(text)]


def _name(page):
    return page.relative_to(ROOT).as_posix()


def _file(code):
    first = code.splitlines()[0] if code.strip() else ""
    found = FILE.match(first)
    return found["name"] if found else None


def _pytest(folder, name):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), str(folder)]))
    return subprocess.run(
        [sys.executable, "-m", "pytest", "--parity", "-p", "no:cacheprovider", "-q", name],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_the_site_has_examples():
    assert sum(len(examples(p)) for p in pages()) >= 20


# Pages whose examples train, launch workers or run Hypothesis take over ten seconds each.
SLOW_PAGES = (
    "docs/how-to/data-parallel.md",
    "docs/how-to/large-models.md",
    "docs/how-to/tolerances.md",
    "docs/how-to/property-based.md",
    "docs/explanation/registry.md",
    "docs/tutorials/llm-port.md",
    "docs/tutorials/resnet-migration.md",
)


def _pages():
    for page in pages():
        if examples(page):
            slow = _name(page) in SLOW_PAGES
            yield pytest.param(page, id=_name(page), marks=[pytest.mark.slow] if slow else [])


@pytest.mark.parametrize("page", list(_pages()))
def test_every_example_on_the_page_runs(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    before = set(sys.modules)
    try:
        for line, how, code in examples(page):
            _run(page, line, how, code, tmp_path)
    finally:
        for name in set(sys.modules) - before:  # the page's own modules (models.py...), not the frameworks'
            if str(tmp_path) in str(getattr(sys.modules[name], "__file__", "") or ""):
                del sys.modules[name]


def _run(page, line, how, code, folder):
    where = f"{_name(page)}:{line}"
    if how.startswith("run by "):
        test = ROOT / how[len("run by ") :]
        assert test.is_file(), f"{where}: {test} does not exist"
        assert page.name in test.read_text(encoding="utf-8"), f"{where}: {test} never reads {page.name}"
        return
    name = _file(code)
    if name is not None:
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(code, encoding="utf-8")
        if Path(name).name.startswith("test_"):
            done = _pytest(folder, name)
            assert done.returncode == 0, f"{where}: pytest --parity {name}\n{done.stdout}\n{done.stderr}"
        return
    scope = {"__name__": "__example__"}
    if how.startswith("raises "):
        expected = how.split()[1]
        with pytest.raises(Exception) as info:
            exec(compile(code, where, "exec"), scope)
        assert type(info.value).__name__ == expected, f"{where}: raised {info.value!r}, the page says {expected}"
        return
    assert not how, f"{where}: unknown example comment {how!r}"
    exec(compile(code, where, "exec"), scope)
