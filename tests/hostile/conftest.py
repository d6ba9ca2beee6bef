"""Shared by the hostile-input suite: a way to run code without the privileges that would hide a
permission problem.

The suite may run as root, which writes into read-only folders and reads unreadable files. For the
permission cases :func:`unprivileged` runs a Python snippet with every capability dropped
(``setpriv --bounding-set=-all --inh-caps=-all``): still uid 0 and the owner of the test's files,
but subject to their modes. Where that is not possible the case is skipped, saying why.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _drop_command():
    if os.geteuid() != 0:
        return []  # an ordinary user: the modes already hold
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        return None
    probe = subprocess.run(
        [
            setpriv,
            "--bounding-set=-all",
            "--inh-caps=-all",
            sys.executable,
            "-c",
            "print(open('/proc/self/status').read().split('CapEff:')[1].split()[0])",
        ],
        capture_output=True,
        text=True,
    )
    if probe.returncode != 0 or int(probe.stdout.strip() or "1", 16) != 0:
        return None
    return [setpriv, "--bounding-set=-all", "--inh-caps=-all"]


_DROP = _drop_command()


@pytest.fixture
def unprivileged():
    """``run(code, cwd) -> dict``: run ``code`` (which prints one JSON object last) in a fresh
    interpreter without capabilities, with this checkout first on the path."""
    if _DROP is None:
        pytest.skip(
            "running as root and capabilities cannot be dropped here (no setpriv, or the container "
            "forbids it): permission cases need a process that file modes bind"
        )

    def run(code: str, cwd: Path) -> dict:
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
        done = subprocess.run(
            _DROP + [sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stderr[-3000:]
        return json.loads(done.stdout.strip().splitlines()[-1])

    return run
