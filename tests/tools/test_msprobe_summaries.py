"""parity compare-dumps on msprobe's statistics and md5 dumps: real dumps of a small PyTorch model and
its MindSpore counterpart (tests/data/msprobe, written by make_dumps.py there), and hand-written
dump.json files for what those do not show."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import parity
from parity import ParityUsageError, cli
from parity.tools.dumps.statistics import PROOF, SummaryComparison

ROOT = Path(parity.__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "msprobe"


def _dump(folder: Path, data: dict, framework="pytorch", construct=None) -> Path:
    folder.mkdir(parents=True)
    (folder / "dump.json").write_text(
        json.dumps({"task": "statistics", "level": "L0", "framework": framework, "dump_data_dir": None, "data": data})
    )
    if construct is not None:
        (folder / "construct.json").write_text(json.dumps(construct))
    return folder


def _stat(values, dtype="torch.float32", **extra):
    values = np.asarray(values, np.float32)
    return {
        "type": "torch.Tensor",
        "dtype": dtype,
        "shape": list(values.shape),
        "Max": float(values.max()),
        "Min": float(values.min()),
        "Mean": float(values.mean()),
        "Norm": float(np.linalg.norm(values)),
        **extra,
    }


def test_real_statistics_dumps_of_the_same_model_agree():
    result = parity.compare_dumps(DATA / "ms_statistics", DATA / "torch_statistics")
    assert isinstance(result, SummaryComparison) and result.passed and result.exit_code == 0
    assert (result.a.framework, result.b.framework, result.a.mode, result.reference) == (
        "mindspore",
        "torch",
        "statistics",
        "B",
    )
    assert len(result.rows) == 16 and not result.unpaired_a and not result.unpaired_b
    # Rows in PyTorch's execution order: children before the module that encloses them, then backward.
    labels = [row.reference.label for row in result.rows]
    assert labels[:6] == [
        "fc1 forward",
        "blocks.0.fc forward",
        "blocks.0.norm forward",
        "blocks.0 forward",
        "blocks forward",
        "head forward",
    ]
    assert labels.index("head backward") < labels.index("blocks.0.norm backward") < labels.index("fc1 backward")
    norm = result.rows[2]
    assert (norm.a.name, norm.b.name) == (
        "Cell.blocks.0.norm.LayerNorm.forward.0",
        "Module.blocks.0.norm.LayerNorm.forward.0",
    )
    # gamma/beta pair with weight/bias; every tensor pairs.
    assert [(t.a.slot, t.b.slot) for t in norm.tensors] == [
        ("input_args.0", "input_args.0"),
        ("output.0", "output.0"),
        ("parameters.gamma", "parameters.weight"),
        ("parameters.beta", "parameters.bias"),
    ]
    assert all(not row.unpaired for row in result.rows)
    assert [n.path for n in result.enclosing(norm)] == ["blocks.0", "blocks"]
    # Rounding differs between the frameworks, yet every statistic is well inside its bound.
    assert 0 < max(row.margin for row in result.rows) < 0.1


def test_the_injected_fault_is_named_at_its_node(capsys):
    a, b = DATA / "ms_statistics_fault", DATA / "torch_statistics"
    assert cli.main(["compare-dumps", str(a), str(b)]) == 1
    out = capsys.readouterr().out
    assert "first in execution order: blocks.0.norm forward" in out
    assert "First mismatch: blocks.0.norm forward in blocks.0 (Block) < blocks (Sequential)" in out
    assert "  A 'Cell.blocks.0.norm.LayerNorm.forward.0' vs B 'Module.blocks.0.norm.LayerNorm.forward.0'" in out
    assert all(line in out for line in PROOF)
    result = parity.compare_dumps(a, b)
    first = result.first_mismatch
    assert first.reference.label == "blocks.0.norm forward"
    # Its input agrees (the fault is the LayerNorm's own), its output does not.
    by_slot = {t.a.slot: t for t in first.tensors}
    assert by_slot["input_args.0"].passed and not by_slot["output.0"].passed
    assert by_slot["output.0"].margin > 100
    # What the fault cannot reach stays within bounds: the head's backward does not depend on it.
    assert [row.reference.label for row in result.rows if row.passed] == [
        "fc1 forward",
        "blocks.0.fc forward",
        "head backward",
    ]


def test_md5_dumps_name_the_first_node_whose_bits_differ(capsys):
    result = parity.compare_dumps(DATA / "ms_md5", DATA / "torch_md5")
    assert result.passed and result.a.mode == result.b.mode == "md5"
    first = result.first_bit_difference
    assert first.reference.label == "fc1 forward"
    # The input and the copied weights are bit-identical; the Dense/Linear output is not.
    assert {t.a.slot: t.same_bits for t in first.tensors} == {
        "input_args.0": True,
        "output.0": False,
        "parameters.weight": True,
        "parameters.bias": True,
    }
    assert first.status == "bits differ"
    assert cli.main(["compare-dumps", str(DATA / "ms_md5"), str(DATA / "torch_md5"), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["judged_by"] == "statistics" and data["first_mismatch"] is None
    assert data["first_checksum_difference"] == {
        "node": "fc1 forward",
        "a": "Cell.fc1.Dense.forward.0",
        "b": "Module.fc1.Linear.forward.0",
    }
    assert data["nodes"][0]["tensors"][0]["same_bits"] is True


def test_a_dump_against_itself_has_the_same_bits_everywhere():
    result = parity.compare_dumps(DATA / "torch_md5", DATA / "torch_md5")
    assert result.reference == "B" and result.first_bit_difference is None
    assert {row.status for row in result.rows} == {"same bits"} and max(row.margin for row in result.rows) == 0
    assert "Checksums: every paired tensor has the same bits on both sides" in str(result)


def test_md5_against_statistics_compares_statistics_only():
    result = parity.compare_dumps(DATA / "ms_statistics_fault", DATA / "torch_md5")
    assert result.first_mismatch.reference.label == "blocks.0.norm forward"
    assert result.first_bit_difference is None and {row.same_bits for row in result.rows} == {None}


def test_nonfinite_shapes_and_api_nodes(tmp_path):
    x = [[1.0, 2.0], [3.0, 4.0]]
    a = _dump(
        tmp_path / "a",
        {
            "Functional.linear.0.forward": {"input_args": [_stat(x)], "output": [_stat(x)]},
            "Module.fc.Linear.forward.0": {"input_args": [_stat(x)], "output": [_stat([1.0, 2.0])]},
            "Module.act.ReLU.forward.0": {"output": [dict(_stat(x), Max=float("nan"))]},
            "Module.only_a.ReLU.forward.0": {"output": [_stat(x)]},
        },
    )
    b = _dump(
        tmp_path / "b",
        {
            "Functional.linear.0.forward": {"input_args": [_stat(x)], "output": [_stat(x)]},
            "Module.fc.Linear.forward.0": {"input_args": [_stat(x)], "output": [_stat(x)]},
            "Module.act.ReLU.forward.0": {"output": [_stat(x)]},
        },
    )
    result = parity.compare_dumps(a, b)
    assert [(row.reference.label, row.status) for row in result.rows] == [
        ("Functional.linear forward", "within"),
        ("fc forward", "FAIL"),
        ("act forward", "FAIL"),
    ]
    assert [t.problem for t in result.rows[1].tensors] == [None, "shape"]
    assert result.rows[2].tensors[0].problem == "nonfinite"
    assert result.unpaired_a == ["Module.only_a.ReLU.forward.0"]
    text = str(result)
    assert "output.0: shapes differ: A (2,) vs B (2, 2)" in text
    assert "Note (A): no construct.json beside dump.json" in text


def test_tolerance_file_and_usage_errors(tmp_path, capsys):
    x = np.linspace(-1, 1, 8, dtype=np.float32)
    a = _dump(tmp_path / "a", {"Module.fc.Linear.forward.0": {"output": [_stat(x * 1.001)]}})
    b = _dump(tmp_path / "b", {"Module.fc.Linear.forward.0": {"output": [_stat(x)]}})
    assert not parity.compare_dumps(a, b).passed
    loose = parity.compare_dumps(a, b, tolerance={"fc.*": (1e-2, 1e-4)})
    assert loose.passed and loose.rows[0].tensors[0].tolerance_source == "compare_dumps(tolerance=...)['fc.*']"
    with pytest.raises(ParityUsageError, match="name map pairs saved tensors"):
        parity.compare_dumps(a, b, name_map={"x": "y"})
    (tmp_path / "npy").mkdir()
    np.save(tmp_path / "npy" / "x.npy", x)
    assert cli.main(["compare-dumps", str(a), str(tmp_path / "npy")]) == 2
    assert "B " + str(tmp_path / "npy") + ": no msprobe dump.json in it or below it" in capsys.readouterr().err
    other = _dump(tmp_path / "other", {"Module.head.Linear.forward.0": {"output": [_stat(x)]}})
    with pytest.raises(ParityUsageError, match="Nothing paired: A has 1 nodes and B 1"):
        parity.compare_dumps(a, other)


def test_the_fixtures_are_what_make_dumps_writes():
    """Each fixture holds msprobe's dump.json and construct.json only, as the script keeps them."""
    script = (DATA / "make_dumps.py").read_text(encoding="utf-8")
    for name in ("torch_statistics", "torch_md5", "ms_statistics", "ms_md5", "ms_statistics_fault"):
        assert f'"{name}"' in script
        folder = DATA / name / "step0" / "proc0"
        assert sorted(p.name for p in folder.iterdir()) == ["construct.json", "dump.json"]
        record = json.loads((folder / "dump.json").read_text())
        assert record["task"] == "statistics" and record["level"] == "L0"


def test_a_single_dump_json_file_is_read(tmp_path):
    folder = tmp_path / "copy"
    shutil.copytree(DATA / "torch_statistics" / "step0" / "proc0", folder)
    result = parity.compare_dumps(folder / "dump.json", DATA / "ms_statistics")
    assert result.passed and result.reference == "A" and result.a.record == "dump.json"


def test_the_readme_example_is_what_the_command_prints(monkeypatch, capsys):
    readme = (ROOT / "docs" / "how-to" / "compare-dumps.md").read_text(encoding="utf-8")
    section = readme[readme.index("## msprobe's statistics and md5 dumps") :]
    command = "```text\n$ parity compare-dumps "
    shown = section[section.index(command) + len(command) :]
    shown = shown[: shown.index("```")]
    args, _, shown = shown.partition("\n")
    monkeypatch.chdir(ROOT)
    assert cli.main(["compare-dumps", *args.split()]) == 1
    assert capsys.readouterr().out.strip().splitlines() == shown.strip().splitlines()
    assert (
        "First checksum difference: fc1 forward (A 'Cell.fc1.Dense.forward.0' vs B 'Module.fc1.Linear.forward.0'): "
        "output.0" in str(parity.compare_dumps(DATA / "ms_md5", DATA / "torch_md5"))
    )


def test_a_folder_of_several_dumps_says_which_to_give(tmp_path, capsys):
    for rank in ("rank0", "rank1"):
        shutil.copytree(DATA / "torch_statistics" / "step0" / "proc0", tmp_path / "run" / "step0" / rank)
    assert cli.main(["compare-dumps", str(tmp_path / "run"), str(DATA / "ms_statistics")]) == 2
    assert (
        "2 msprobe dump.json files below it (step0/rank0/dump.json, step0/rank1/dump.json); give the folder of one"
        in capsys.readouterr().err
    )
    assert parity.compare_dumps(tmp_path / "run" / "step0" / "rank1", DATA / "ms_statistics").passed


def test_summary_dumps_import_no_framework():
    code = (
        "import sys\nfrom parity import cli\n"
        "code = cli.main(['compare-dumps', sys.argv[1], sys.argv[2]])\n"
        "print(code, sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'mindspore')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(DATA / "ms_statistics_fault"), str(DATA / "torch_md5")],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
    )
    assert out.stdout.strip().splitlines()[-1] == "1 []", out.stdout + out.stderr
