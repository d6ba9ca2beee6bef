"""parity.plot_training and ``parity run --plot``: the HTML file, read back with html.parser."""

import math
import sys
from html.parser import HTMLParser

import mindspore
import pytest
import torch

import parity
from parity import cli
from parity.nightly.plot import BOTTOM, HEIGHT, TOP, _margin_chart

BATCHES = [(parity.randn((4, 4)), parity.randint((4,), 0, 3)), (parity.randn((4, 4)), parity.randint((4,), 0, 3))]


def _net():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.BatchNorm1d(6), torch.nn.ReLU(), torch.nn.Linear(6, 3))


class _Svg(HTMLParser):
    """Every element's attributes, by tag; the text of <td> cells; whether anything is left open."""

    def __init__(self):
        super().__init__()
        self.tags, self.cells, self.open = {}, [], []
        self._in_td = False

    def handle_starttag(self, tag, attrs):
        self.tags.setdefault(tag, []).append(dict(attrs))
        if tag not in ("meta", "line", "rect", "polyline", "circle"):
            self.open.append(tag)
        self._in_td = tag == "td"

    def handle_startendtag(self, tag, attrs):
        self.tags.setdefault(tag, []).append(dict(attrs))

    def handle_endtag(self, tag):
        if tag in ("meta", "line", "rect", "polyline", "circle"):
            return
        assert self.open and self.open[-1] == tag, f"</{tag}> closes <{self.open[-1] if self.open else None}>"
        self.open.pop()
        self._in_td = False

    def handle_data(self, data):
        if self._in_td:
            self.cells.append(data)


def _parse(path):
    page = _Svg()
    page.feed(path.read_text(encoding="utf-8"))
    page.close()
    assert page.open == []
    return page


def _series(page):
    return {p["data-series"]: p for p in page.tags["polyline"]}


def _points(polyline):
    return [tuple(map(float, xy.split(","))) for xy in polyline["points"].split()]


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


def test_margin_scale_is_logarithmic_and_an_exact_zero_sits_on_the_floor():
    page = _Svg()
    page.feed(_margin_chart([1, 2, 3, 4], [0.0, 1e-3, 1.0, 1e2], [False, False, False, True]))
    (points,) = [_points(p) for p in page.tags["polyline"]]
    ys = [y for _, y in points]
    assert ys[0] == pytest.approx(HEIGHT - BOTTOM)  # 0: the bottom edge
    assert ys[3] == pytest.approx(TOP)  # the greatest margin: the top edge
    # one decade is one decade: 1e-3 -> 1 spans 3 of the 5 decades 1e-3 .. 1e2
    assert (ys[1] - ys[2]) / (ys[1] - ys[3]) == pytest.approx(3 / 5)
    assert not math.isclose(ys[0], ys[1])


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


def test_plot_takes_a_training_result_only(tmp_path):
    with pytest.raises(parity.ParityUsageError, match="takes the TrainingResult of parity.check_training"):
        parity.plot_training({"ms_losses": [1.0]}, tmp_path / "loss.html")


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


def test_cli_plot_must_be_a_folder(tmp_path, capsys):
    (tmp_path / "taken").write_text("")
    assert cli.main(["run", str(tmp_path), "--plot", str(tmp_path / "taken")]) == 2
    assert "--plot" in capsys.readouterr().err
