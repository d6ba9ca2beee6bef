"""parity.plot_training and ``parity run --plot``: the HTML file, read back with html.parser. The
margin chart's scale and the usage errors need no framework: tests/nightly/test_plot.py."""

import sys

import mindspore
import pytest
import torch

import parity
from parity import cli

from nightly.test_plot import _points, _Svg  # the page's parser, shared with the plot's framework-free tests

BATCHES = [(parity.randn((4, 4)), parity.randint((4,), 0, 3)), (parity.randn((4, 4)), parity.randint((4,), 0, 3))]


def _net():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.BatchNorm1d(6), torch.nn.ReLU(), torch.nn.Linear(6, 3))


def _parse(path):
    page = _Svg()
    page.feed(path.read_text(encoding="utf-8"))
    page.close()
    assert page.open == []
    return page


def _series(page):
    return {p["data-series"]: p for p in page.tags["polyline"]}


@pytest.fixture(scope="module")
def passed():
    model = _net()
    return parity.check_training(
        parity.translate(model),
        model,
        BATCHES,
        loss=torch.nn.CrossEntropyLoss(),
        optimizer=lambda p: torch.optim.SGD(p, lr=0.5, momentum=0.9),
        steps=4,
    )


def test_plot_holds_both_loss_curves_and_the_margins_of_every_step(passed, tmp_path):
    path = parity.plot_training(passed, tmp_path / "loss.html")
    text = path.read_text(encoding="utf-8")
    assert "<script" not in text and "http://" not in text.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "https://" not in text
    page = _parse(path)
    series = _series(page)
    assert set(series) == {"loss MindSpore", "loss PyTorch", "worst margin"}
    worst = [max(c.margin for c in s.comparisons) for s in passed.steps]
    for name, values in (
        ("loss MindSpore", passed.ms_losses),
        ("loss PyTorch", passed.torch_losses),
        ("worst margin", worst),
    ):
        assert [float(v) for v in series[name]["data-values"].split()] == values
        assert len(_points(series[name])) == len(passed.steps) == 4
    # each curve is drawn where its numbers say: a greater loss sits higher (smaller y), steps left to right
    for name, values in (("loss MindSpore", passed.ms_losses), ("loss PyTorch", passed.torch_losses)):
        points = _points(series[name])
        assert [x for x, _ in points] == sorted(x for x, _ in points)
        order = sorted(range(4), key=lambda i: values[i])
        assert [points[i][1] for i in order] == sorted((y for _, y in points), reverse=True)
    assert passed.torch_losses[0] != passed.torch_losses[3]  # the curve is not flat: the check above means something
    # every margin of a passing run lies below the dashed line at 1 (the tolerance)
    allowed = float(next(line for line in page.tags["line"] if line.get("class") == "allowed")["y1"])
    assert all(y > allowed for _, y in _points(series["worst margin"]))
    assert f"{passed.ms_losses[2]:.9g}" in page.cells and f"{passed.torch_losses[2]:.9g}" in page.cells


def test_plot_of_a_failed_check_marks_the_failing_steps_above_the_line(tmp_path):
    model = _net()
    with pytest.raises(parity.ParityMismatch) as info:
        parity.check_training(
            parity.translate(model),
            model,
            BATCHES,
            loss=torch.nn.CrossEntropyLoss(),
            steps=2,
            optimizer=(lambda p: mindspore.nn.SGD(p, learning_rate=0.11), lambda p: torch.optim.SGD(p, lr=0.1)),
        )
    page = _parse(parity.plot_training(info.value.result, tmp_path / "failed.html"))
    allowed = float(next(line for line in page.tags["line"] if line.get("class") == "allowed")["y1"])
    margins = _points(_series(page)["worst margin"])
    assert len(margins) == 2 and all(y < allowed for _, y in margins)
    assert sum(c.get("fill") == "#d62728" for c in page.tags["circle"]) == 2
    assert any(cell.startswith("FAIL ") for cell in page.cells)


@pytest.mark.parametrize(
    "target, message",
    [
        ("folder", "is a folder; give a file name"),
        ("missing/loss.html", "does not exist; create it first"),
    ],
)
def test_plot_path_errors(passed, tmp_path, target, message):
    (tmp_path / "folder").mkdir()
    with pytest.raises(parity.ParityUsageError, match=message):
        parity.plot_training(passed, tmp_path / target)


CATALOGUE = """
import torch
from parity import TRANSLATE, ParityCase, Training, randint, randn


def torch_net():
    return torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.BatchNorm1d(6), torch.nn.Linear(6, 3))


Trains = ParityCase("Trains", mindspore=TRANSLATE, torch=torch_net,
                    training=Training([(randn((4, 4)), randint((4,), 0, 3))], loss=torch.nn.CrossEntropyLoss(),
                                      steps=3, optimizer=lambda p: torch.optim.SGD(p, lr=0.1)))
Forward = ParityCase("Forward", mindspore=TRANSLATE, torch=torch_net, inputs=randn((2, 4)))
"""


@pytest.fixture
def imported_here(monkeypatch):
    """The catalogue loader imports case files by module name onto sys.path: undo both, so that a
    later run in this process that loads another ``loops.py`` imports its own."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    assert "loops" not in sys.modules
    yield
    sys.modules.pop("loops", None)


def test_cli_run_plot_writes_one_file_per_training_item(tmp_path, capsys, imported_here):
    (tmp_path / "loops.py").write_text(CATALOGUE)
    out = tmp_path / "plots" / "nested"
    assert cli.main(["run", str(tmp_path / "loops.py"), "--plot", str(out)]) == 0
    assert [p.name for p in out.iterdir()] == ["Trains_training.html"]  # the forward item draws nothing
    assert f"plot {out / 'Trains_training.html'}" in capsys.readouterr().out
    assert len(_points(_series(_parse(out / "Trains_training.html"))["loss PyTorch"])) == 3
