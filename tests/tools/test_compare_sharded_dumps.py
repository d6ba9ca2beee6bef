"""parity compare-dumps on sharded dumps: a small MLP run on one device, and the same run computed
shard by shard 2-way tensor-parallel (column-parallel first layer, row-parallel second with partial
sums) and 4 ranks tp=2 x pp=2, each rank's tensors computed from its own shards, saved per rank and
reassembled by a layout file. A dropped shard, a dropped rank, an empty rank, a copy that differs
and shards that do not stitch each fail naming the rank and the tensor."""

import json
from pathlib import Path

import numpy as np
import pytest

import parity
from parity import cli
from parity.errors import ParityUsageError

TP_RULES = """
[[tensor]]
match = "fc1.*"
split = {dim = 0, group = "tp"}

[[tensor]]
match = "hidden"
split = {dim = 1, group = "tp"}

[[tensor]]
match = "fc2.weight"
split = {dim = 1, group = "tp"}

[[tensor]]
match = "fc2.partial"
partial = "tp"
"""
STAGE0 = ("x", "fc1.weight", "fc1.bias", "hidden")


def _weights():
    rng = np.random.default_rng(11)
    return {
        "x": rng.standard_normal((4, 6)).astype(np.float32),
        "fc1.weight": rng.standard_normal((8, 6)).astype(np.float32),
        "fc1.bias": rng.standard_normal(8).astype(np.float32),
        "fc2.weight": rng.standard_normal((5, 8)).astype(np.float32),
        "fc2.bias": rng.standard_normal(5).astype(np.float32),
    }


def _forward(t, w1, b1, w2):
    """One rank's share of the MLP: relu(x W1^T + b1), then its (partial) product with W2^T."""
    hidden = np.maximum(t["x"] @ w1.T + b1, 0)
    return hidden, hidden @ w2.T


def _single(t):
    hidden, partial = _forward(t, t["fc1.weight"], t["fc1.bias"], t["fc2.weight"])
    return {**t, "hidden": hidden, "fc2.partial": partial, "output": partial + t["fc2.bias"]}


def _tp_ranks(t, tp):
    """Each tp rank's tensors, computed from its own shards; the output after the all-reduce."""
    ranks = []
    for r in range(tp):
        rows = slice(r * 8 // tp, (r + 1) * 8 // tp)
        w1, b1, w2 = t["fc1.weight"][rows], t["fc1.bias"][rows], t["fc2.weight"][:, rows]
        hidden, partial = _forward(t, w1, b1, w2)
        ranks.append({"x": t["x"], "fc1.weight": w1, "fc1.bias": b1, "hidden": hidden, "fc2.weight": w2})
        ranks[-1].update({"fc2.bias": t["fc2.bias"], "fc2.partial": partial})
    reduced = sum(rank["fc2.partial"] for rank in ranks) + t["fc2.bias"]
    for rank in ranks:
        rank["output"] = reduced
    return ranks


def _save(folder: Path, tensors):
    folder.mkdir(parents=True)
    for name, value in tensors.items():
        np.save(folder / f"{name}.npy", value)


@pytest.fixture
def runs(tmp_path):
    t = _weights()
    _save(tmp_path / "whole", _single(t))
    tp = _tp_ranks(t, 2)
    for r, tensors in enumerate(tp):
        _save(tmp_path / "tp2" / f"rank{r}", tensors)
    # tp=2 x pp=2: rank = tp + 2 * pp; stage 0 runs fc1, stage 1 runs fc2.
    for pp in range(2):
        for r, tensors in enumerate(tp):
            _save(
                tmp_path / "tp2pp2" / f"rank{r + 2 * pp}",
                {k: v for k, v in tensors.items() if (k in STAGE0) == (pp == 0)},
            )
    (tmp_path / "tp2.toml").write_text("groups = {tp = 2}\n" + TP_RULES)
    (tmp_path / "tp2pp2.toml").write_text('ranks = 4\ngroups = {tp = 2, pp = 2}\nstage = "pp"\n' + TP_RULES)
    return tmp_path


def test_whole_against_tensor_parallel(runs):
    result = parity.compare_dumps(runs / "whole", runs / "tp2", layout_b=runs / "tp2.toml")
    assert result.passed and len(result.rows) == 8 and not result.unpaired
    assert result.b.layout == "sharded folder, 2 ranks (tp=2)"
    assert "rank1: 8 tensors read from rank1" in result.b.notes


def test_a_sharded_folder_without_its_layout_points_at_one(runs):
    with pytest.raises(
        ParityUsageError,
        match=r"2 folders below it hold tensor files \(rank0, rank1\); they look like the ranks of a sharded run \(2 rank folders\): compare it whole with --layout-b FILE",
    ):
        parity.compare_dumps(runs / "whole", runs / "tp2")


def test_two_layouts_of_one_run(runs, capsys):
    code = cli.main(
        [
            "compare-dumps",
            str(runs / "tp2"),
            str(runs / "tp2pp2"),
            "--layout-a",
            str(runs / "tp2.toml"),
            "--layout-b",
            str(runs / "tp2pp2.toml"),
            "--json",
        ]
    )
    report = json.loads(capsys.readouterr().out)
    assert code == 0
    notes = report["b"]["notes"]
    assert "rank0: 4 tensors read from rank0" in notes and "rank3: 4 tensors read from rank3" in notes
    assert "8 whole tensors reassembled from 4 ranks by --layout-b " + str(runs / "tp2pp2.toml") in notes


def test_a_changed_shard_is_found(runs):
    path = runs / "tp2pp2" / "rank3" / "fc2.weight.npy"
    np.save(path, np.load(path) * 1.01)
    result = parity.compare_dumps(runs / "whole", runs / "tp2pp2", layout_b=runs / "tp2pp2.toml")
    assert not result.passed and [row.a for row in result.failures] == ["fc2.weight"]


def _error(runs, which="tp2pp2", **kwargs):
    with pytest.raises(ParityUsageError) as info:
        parity.compare_dumps(runs / "whole", runs / which, layout_b=runs / f"{which}.toml", **kwargs)
    return str(info.value)


def test_a_dropped_shard_fails_naming_it(runs):
    (runs / "tp2pp2" / "rank1" / "fc1.weight.npy").unlink()
    message = _error(runs)
    assert "'fc1.weight' is missing from rank 1 (held by rank 0)" in message


def test_a_dropped_rank_fails_naming_it(runs):
    for path in (runs / "tp2pp2" / "rank2").iterdir():
        path.unlink()
    assert "rank2: " in _error(runs) and "no tensor files" in _error(runs)
    (runs / "tp2pp2" / "rank2").rmdir()
    assert "no folder for rank 2 of the 4 ranks" in _error(runs)


def test_copies_that_differ_fail(runs):
    path = runs / "tp2" / "rank1" / "x.npy"
    np.save(path, np.load(path) + 1)
    assert "'x': the copy on rank1 differs from the one on rank0" in _error(runs, "tp2")


def test_shards_that_do_not_stitch_fail(runs):
    path = runs / "tp2" / "rank1" / "fc1.weight.npy"
    np.save(path, np.load(path)[:, :5])
    assert "'fc1.weight': the tp shards do not stitch along dim 0" in _error(runs, "tp2")


def test_a_tensor_on_two_stages_fails(runs):
    np.save(runs / "tp2pp2" / "rank2" / "x.npy", np.load(runs / "tp2pp2" / "rank0" / "x.npy"))
    assert "'x' is on pp stages 0, 1" in _error(runs)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("groups = {tp = 0}", "groups.tp: a size is a whole number >= 1, not 0"),
        ('groups = {tp = 2}\nstage = "pp"', "stage = 'pp' names no group (tp)"),
        ("ranks = 3\ngroups = {tp = 2}", "ranks = 3, but the groups' sizes multiply to 2"),
        ('groups = {tp = 2}\n[[tensor]]\nmatch = "x"\nsplit = {dim = 0}', "tensor[0]: split = {dim = N, group = NAME}"),
        ('groups = {tp = 2}\n[[tensor]]\nmatch = "x"\nshard = "tp"', "tensor[0]: unknown key 'shard'"),
        ('groups = {tp = 2}\n[[tensor]]\nmatch = "x"\npartial = "ep"', "tensor[0]: partial: 'ep' is not a group"),
    ],
)
def test_bad_layouts_say_where(runs, text, expected):
    (runs / "tp2.toml").write_text(text)
    assert expected in _error(runs, "tp2")


def test_msprobe_step_rank_layout(runs):
    """msprobe writes DIR/step0/rank{N}/dump_tensor_data/*.npy with dump.json beside it."""
    t = _weights()
    names = {"x": "Functional.linear.0.forward.input.0", "hidden": "Functional.relu.0.forward.output.0"}
    for r, tensors in enumerate(_tp_ranks(t, 2)):
        data = runs / "msprobe" / "step0" / f"rank{r}" / "dump_tensor_data"
        data.mkdir(parents=True)
        for name, dumped in names.items():
            np.save(data / f"{dumped}.npy", tensors[name])
        record = {
            "framework": "pytorch",
            "data": {k: {"output": [{"data_name": v + ".npy"}]} for k, v in names.items()},
        }
        (data.parent / "dump.json").write_text(json.dumps(record))
    (runs / "msprobe.toml").write_text(
        'groups = {tp = 2}\n[[tensor]]\nmatch = "*relu*"\nsplit = {dim = 1, group = "tp"}\n'
    )
    whole = _single(t)
    _save(runs / "ms_whole", {v: whole[k] for k, v in names.items()})
    result = parity.compare_dumps(runs / "ms_whole", runs / "msprobe", layout_b=runs / "msprobe.toml")
    assert result.passed and len(result.rows) == 2
    assert result.b.layout == "sharded msprobe dump, 2 ranks (tp=2)" and result.b.framework == "torch"
    assert "rank1: 2 tensors read from step0/rank1/dump_tensor_data" in result.b.notes


def test_the_how_to_example(tmp_path, monkeypatch, capsys):
    """docs/how-to/compare-dumps.md's sharded example runs and prints what the page shows (its
    figures aside: a matmul's rounding differs between hosts)."""
    page = Path(parity.__file__).resolve().parent.parent / "docs" / "how-to" / "compare-dumps.md"
    section = page.read_text(encoding="utf-8")
    section = section[section.index("## Sharded runs") :]
    source = section[section.index("```python\n") + len("```python\n") :]
    source = source[: source.index("```")]
    command = "```text\n$ parity compare-dumps single tp2 --layout-b tp2.toml\n"
    shown = section[section.index(command) + len(command) :]
    shown = shown[: shown.index("```")].strip().splitlines()
    monkeypatch.chdir(tmp_path)
    exec(compile(source, str(page), "exec"), {})
    assert cli.main(["compare-dumps", "single", "tp2", "--layout-b", "tp2.toml"]) == 0
    printed = capsys.readouterr().out.strip().splitlines()
    table = [line for line in shown if line.startswith("  ")]
    assert [line for line in printed if not line.startswith("  ")] == [line for line in shown if line not in table]
    assert [line.split()[:4] for line in printed if line.startswith("  ")] == [line.split()[:4] for line in table]


def test_experts_per_rank_from_a_json_layout(tmp_path):
    """Four experts, two per ep rank, each expert's output computed on the rank that holds it."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((3, 6)).astype(np.float32)
    experts = rng.standard_normal((4, 6, 6)).astype(np.float32)
    _save(tmp_path / "whole", {"x": x, "experts.weight": experts, "experts.out": np.einsum("td,edf->etf", x, experts)})
    for r in range(2):
        mine = experts[2 * r : 2 * r + 2]
        _save(
            tmp_path / "ep2" / f"rank{r}",
            {"x": x, "experts.weight": mine, "experts.out": np.einsum("td,edf->etf", x, mine)},
        )
    layout = {"groups": {"ep": 2}, "tensor": [{"match": "experts.*", "experts": {"dim": 0, "group": "ep"}}]}
    (tmp_path / "ep2.json").write_text(json.dumps(layout))
    result = parity.compare_dumps(tmp_path / "whole", tmp_path / "ep2", layout_b=tmp_path / "ep2.json")
    assert result.passed and [row.shape("B") for row in result.rows if row.b == "experts.out"] == [(4, 3, 6)]
    (tmp_path / "ep2" / "rank1" / "experts.out.npy").unlink()
    with pytest.raises(ParityUsageError, match=r"'experts.out' is missing from rank 1 \(held by rank 0\)"):
        parity.compare_dumps(tmp_path / "whole", tmp_path / "ep2", layout_b=tmp_path / "ep2.json")


def test_a_layout_on_a_folder_without_ranks(runs):
    with pytest.raises(ParityUsageError, match=r"no rank folders \(rank0, rank1, \.\.\.\) in it"):
        parity.compare_dumps(runs / "whole", runs / "whole", layout_b=runs / "tp2.toml")
