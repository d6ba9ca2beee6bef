"""``parity doctor`` without the frameworks: the version facts and their fixes, the registry's list
of what MindSpore cannot run on the CPU for a given release, the supported ranges against the
``frameworks`` extra, and the whole report where neither framework is installed (as in .venv-core).
The report on the real frameworks: tests/test_doctor.py."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from parity import __version__
from parity.cli import main
from parity.registry.store import load
from parity.tools.doctor import probe
from parity.tools.doctor.probe import SUPPORTED, Framework, missing_on_cpu, version_facts

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]


def test_the_supported_ranges_are_the_frameworks_extra():
    extra = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    declared = dict(re.match(r"([a-z]+)(.*)", requirement).groups() for requirement in extra["frameworks"])
    assert declared == SUPPORTED


def test_version_and_its_package_metadata_agree(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["--version"])
    assert stop.value.code == 0
    assert capsys.readouterr().out == f"parity {__version__} (pytest-parity)\n"
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
    assert __version__ == declared


@pytest.mark.parametrize(
    "mindspore, torch, numpy, bad, fixes",
    [
        ("2.10.0", "2.13.0", "1.26.4", [], []),
        (
            "2.6.0",
            "2.13.0",
            "1.26.4",
            ["MindSpore 2.6.0 is outside the supported range >=2.7,<2.11"],
            ['"mindspore>=2.7,<2.11"'],
        ),
        ("2.10.0", "1.13.1", "1.26.4", ["PyTorch 1.13.1 is outside"], ['"torch>=2.0,<3"']),
        (None, "2.13.0", "1.26.4", ["MindSpore is not installed"], ['"pytest-parity[frameworks]"']),
        ("2.10.0", "2.13.0", "2.1.0", ["numpy 2.1.0: MindSpore 2.10.0 is built against numpy 1.x"], ['"numpy<2"']),
        ("2.10.0rc1", "2.13.0+cpu", "1.26.4", [], []),
    ],
)
def test_version_facts_say_what_is_wrong_and_what_to_install(mindspore, torch, numpy, bad, fixes):
    facts = version_facts([Framework("mindspore", mindspore), Framework("torch", torch)], numpy)
    wrong = [f for f in facts if not f.ok]
    assert [f.text[: len(b)] for f, b in zip(wrong, bad)] == bad and len(wrong) == len(bad)
    assert all(any(fix in f.fix for f in wrong) for fix in fixes)
    assert any(f.text.startswith("a supported pair:") for f in facts) == (not bad or "numpy" in bad[0])


def test_missing_on_cpu_follows_the_registry_and_the_installed_release():
    groups = dict(missing_on_cpu("2.10.0", "2.13.0"))
    assert "nn.Dense" in groups["bfloat16 only"] and "mint.nn.Conv2d" in groups["every dtype"]
    entries = [
        e
        for e in load()
        if e.kind == "unsupported" and "CPU" in e.devices and len(e.devices) < 3 and e.applies("2.10.0")
    ]
    assert sum(len(apis) for apis in groups.values()) == len({(e.mindspore, e.dtypes) for e in entries})
    # an entry whose range starts after the release is not listed for it (registry: starts at 2.9)
    leaky = load().get("bfloat16-leakyrelu-cpu-unsupported")
    assert not leaky.applies("2.8.0") and leaky.applies("2.10.0")
    assert "nn.LeakyReLU" not in dict(missing_on_cpu("2.8.0", "2.13.0"))["bfloat16 only"]
    assert "nn.LeakyReLU" in groups["bfloat16 only"]


def test_without_either_framework_the_report_says_what_to_install_and_exits_1(monkeypatch, capsys):
    real = probe._version
    monkeypatch.setattr(probe, "_version", lambda name: None if name in ("mindspore", "torch") else real(name))
    assert main(["doctor"]) == 1
    out = capsys.readouterr().out
    assert out.startswith(f"parity {__version__} on Python ")
    for line in (
        "  --  MindSpore is not installed (parity supports >=2.7,<2.11)",
        "  --  PyTorch is not installed (parity supports >=2.0,<3)",
        "  --  CPU    MindSpore: MindSpore is not installed; PyTorch is not installed",
        "To install",
        '  pip install "pytest-parity[frameworks]"',
        "parity doctor: checks cannot run here until the Frameworks lines are ok",
    ):
        assert line in out.splitlines(), line
    # the registry is still read, and its data files are named
    assert f"  ok  {len(load())} known mismatches and " in out
    assert "Known missing on the CPU (the registry, for any MindSpore (none installed)):" in out
