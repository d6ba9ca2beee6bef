"""The flat layout can hide a wheel that lacks files: build the wheel and compare it with the tree."""

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


# What a clean clone does not hold: environments, caches and earlier builds.
NOT_SOURCE = shutil.ignore_patterns(
    ".git",
    ".venv*",
    ".tox",
    "build",
    "dist",
    "_build",
    "*.egg-info",
    "__pycache__",
    ".*_cache",
    ".hypothesis",
    ".parity",
)


def test_the_wheel_holds_every_module_data_file_and_entry_point(tmp_path):
    # setuptools writes build/ and *.egg-info beside the sources it builds: build from a copy, so the
    # checkout (which other tests watch for stray files) gains nothing.
    source = tmp_path / "source"
    shutil.copytree(ROOT, source, ignore=NOT_SOURCE)
    wheels = tmp_path / "wheels"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            str(source),
            "-w",
            str(wheels),
        ],
        check=True,
        capture_output=True,
    )
    (wheel,) = wheels.glob("pytest_parity-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    expected = {
        p.relative_to(ROOT).as_posix()
        for p in (ROOT / "parity").rglob("*")
        if p.suffix in (".py", ".toml") and "__pycache__" not in p.parts
    }
    assert expected - names == set()
    assert any(n.startswith("parity/data/mismatches/") for n in names)
    assert "parity/py.typed" in names  # type checkers read the package's annotations (PEP 561)
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    text = zipfile.ZipFile(wheel).read(entry_points).decode()
    assert "parity = parity.plugin" in text and "parity = parity.cli:main" in text
