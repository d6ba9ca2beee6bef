"""Catalogue cases (``parity.catalogue``) as written and loaded, without a framework: ``parity list``
reads the catalogue importing neither, a dotted path needs its colon, a case is located at the line
that made it, and two case files of one module name are not confused. Training cases' losses and
optimizers built from their paths: tests/test_listing.py."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from parity import Training, randint, randn
from parity.errors import ParityUsageError

ROOT = Path(__file__).resolve().parents[2]
BATCHES = [(randn((2, 4)), randint((2,), 0, 3))]


def test_listing_the_catalogue_imports_no_framework():
    code = (
        "import sys\nfrom parity import cli\n"
        "code = cli.main(['list', 'cases'])\n"
        "print(code, sorted({m.split('.')[0] for m in sys.modules} & {'torch', 'mindspore'}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    *items, last = out.stdout.strip().splitlines()
    assert last == "0 []", f"listing imported {last}; {out.stderr}"
    assert len(items) > 200 and all("::" in item for item in items)
    assert "cases/training/loops.py::ResNetGuide[training]" in items
    assert "cases/translated/loss.py::BCEWithLogitsLoss_pos_weight[eval]" in items


def test_a_path_without_a_colon_is_refused_when_the_case_is_written():
    with pytest.raises(
        ParityUsageError,
        match=r"Training optimizer: a dotted path is 'package.module:Name', "
        r"got 'torch.optim.Adam'",
    ):
        Training(BATCHES, loss="torch.nn:MSELoss", optimizer="torch.optim.Adam")
    with pytest.raises(ParityUsageError, match=r"Training loss: .* got 'torch.nn.MSELoss'"):
        Training(BATCHES, loss=("m:loss", "torch.nn.MSELoss"), optimizer=None)


def test_a_case_made_through_a_helper_is_located_at_the_line_that_called_it(tmp_path):
    """A case file that builds its cases through helpers of its own (the zoo's, the fault
    catalogue's) is located at the module-level line that called the helper, not at the helper's
    ``ParityCase(``; a case written directly, at its own line."""
    import importlib.util

    source = (
        "from parity import ParityCase, randn\n"
        "\n"
        "def _inner(name):\n"
        "    return ParityCase(name, mindspore='a.b:c', torch='a.b:d', inputs=randn((2,)))\n"
        "\n"
        "def _outer(name):\n"
        "    return _inner(name)\n"
        "\n"
        "Helped = _outer('Helped')\n"
        "Direct = ParityCase('Direct', mindspore='a.b:c', torch='a.b:d', inputs=randn((2,)))\n"
    )
    path = tmp_path / "helped_cases.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("helped_cases", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert (module.Helped.line, module.Direct.line) == (9, 10)


def test_two_catalogue_files_with_one_module_name_are_not_confused(tmp_path, monkeypatch):
    from parity.catalogue import load_cases

    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.delitem(sys.modules, "samename_cases", raising=False)
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "samename_cases.py").write_text(
            "from parity import ParityCase, randn\n"
            f"Case_{folder} = ParityCase('Case_{folder}', mindspore='m:M', torch='t:T', inputs=randn((2,)))\n"
        )
    assert [c.name for c in load_cases(tmp_path / "a" / "samename_cases.py")] == ["Case_a"]
    with pytest.raises(
        ParityUsageError, match=r"module name 'samename_cases' is already taken by .*a.samename_cases\.py"
    ):
        load_cases(tmp_path / "b" / "samename_cases.py")
    sys.modules.pop("samename_cases", None)
