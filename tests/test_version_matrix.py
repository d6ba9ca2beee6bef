"""tox.ini's version matrix against the registry and the pins: every release a registry range starts
at is one the matrix runs (a range is what the matrix measured), and `make` stays on the newest."""

import configparser
import re
from pathlib import Path

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from parity.registry import load

ROOT = Path(__file__).resolve().parents[1]


def _matrix():
    """env name -> the MindSpore version its deps pin."""
    config = configparser.ConfigParser(interpolation=None)
    config.read(ROOT / "tox.ini")
    envs = [name.strip() for name in config["tox"]["env_list"].split(",")]
    pins = dict(re.findall(r"^\s*(\w+): mindspore==(\S+)$", config["testenv"]["deps"], re.MULTILINE))
    assert sorted(pins) == sorted(envs), (envs, pins)
    return {env: Version(pins[env]) for env in envs}


def _frameworks_range(name: str) -> SpecifierSet:
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    return SpecifierSet(re.search(rf'"{name}(>=[^"]+)"', text).group(1))


def test_the_matrix_covers_every_minor_release_the_package_allows():
    versions = _matrix().values()
    allowed = _frameworks_range("mindspore")
    assert all(allowed.contains(v) for v in versions)
    minors = [(2, minor) for minor in range(30) if allowed.contains(Version(f"2.{minor}.0"))]
    assert sorted({v.release[:2] for v in versions}) == minors == [(2, 7), (2, 8), (2, 9), (2, 10)]


def test_make_installs_the_newest_release_of_the_matrix():
    pinned = re.search(r"^mindspore==(\S+)$", (ROOT / "constraints.txt").read_text(), re.MULTILINE).group(1)
    assert Version(pinned) == max(_matrix().values())


def test_every_registry_range_starts_at_a_release_the_matrix_runs():
    measured = {(v.major, v.minor) for v in _matrix().values()}
    for entry in load():
        for spec in entry.versions.get("mindspore", SpecifierSet()):
            if spec.operator == ">=":
                start = Version(spec.version)
                assert (start.major, start.minor) in measured, (
                    f"{entry.location}: {entry.id} starts at MindSpore {spec.version}, which tox.ini does not run"
                )
