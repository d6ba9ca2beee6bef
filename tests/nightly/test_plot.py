"""The training plot (``parity.nightly.plot``) without a check to run: the margin chart's scale, read
back with html.parser, and what ``parity.plot_training`` and ``parity run --plot`` refuse. Plots of
real training checks: tests/test_plot.py."""

import math
from html.parser import HTMLParser

import pytest

import parity
from parity import cli
from parity.nightly.plot import BOTTOM, HEIGHT, TOP, _margin_chart


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


def _points(polyline):
    return [tuple(map(float, xy.split(","))) for xy in polyline["points"].split()]


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


def test_plot_takes_a_training_result_only(tmp_path):
    with pytest.raises(parity.ParityUsageError, match="takes the TrainingResult of parity.check_training"):
        parity.plot_training({"ms_losses": [1.0]}, tmp_path / "loss.html")


def test_cli_plot_must_be_a_folder(tmp_path, capsys):
    (tmp_path / "taken").write_text("")
    assert cli.main(["run", str(tmp_path), "--plot", str(tmp_path / "taken")]) == 2
    assert "--plot" in capsys.readouterr().err
