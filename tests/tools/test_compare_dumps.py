"""parity compare-dumps / parity.compare_dumps: two sets of saved tensors paired as check pairs
weights and judged with its metrics and tolerances, in execution order. Here every dump is numpy
arrays written by the test; checkpoints and PyTorch-saved tensors: tests/test_compare_dumps.py."""

import json
from pathlib import Path

import numpy as np
import pytest

import parity
from parity import ParityUsageError, Tolerance, cli

ROOT = Path(parity.__file__).resolve().parent.parent


def _rng(seed=0):
    return np.random.default_rng(seed)


def _save(folder: Path, arrays: dict) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, value in arrays.items():
        np.save(folder / f"{name}.npy", value)
    return folder


def _bn_weights(rng):
    return {
        "conv.weight": rng.standard_normal((4, 3, 3, 3)).astype(np.float32),
        "bn.w": rng.standard_normal(4).astype(np.float32),
        "bn.b": rng.standard_normal(4).astype(np.float32),
        "bn.mean": rng.standard_normal(4).astype(np.float32),
        "bn.var": rng.random(4).astype(np.float32),
        "fc.weight": rng.standard_normal((3, 4)).astype(np.float32),
        "fc.bias": rng.standard_normal(3).astype(np.float32),
    }


def _ms_names(w):
    return {
        "conv.weight": w["conv.weight"],
        "bn.gamma": w["bn.w"],
        "bn.beta": w["bn.b"],
        "bn.moving_mean": w["bn.mean"],
        "bn.moving_variance": w["bn.var"],
        "fc.weight": w["fc.weight"],
        "fc.bias": w["fc.bias"],
    }


def _torch_names(w):
    return {
        "conv.weight": w["conv.weight"],
        "bn.weight": w["bn.w"],
        "bn.bias": w["bn.b"],
        "bn.running_mean": w["bn.mean"],
        "bn.running_var": w["bn.var"],
        "bn.num_batches_tracked": np.array(3, np.int64),
        "fc.weight": w["fc.weight"],
        "fc.bias": w["fc.bias"],
    }


# -- npy folders -----------------------------------------------------------------------------------


def test_npy_folders_pair_gamma_beta_with_weight_bias(tmp_path):
    w = _bn_weights(_rng())
    a = _save(tmp_path / "ms", _ms_names(w))
    b = _save(tmp_path / "pt", _torch_names(w))
    result = parity.compare_dumps(a, b)
    assert result.passed and result.exit_code == 0
    pairs = {(row.a, row.b): row.how for row in result.rows}
    assert pairs[("bn.gamma", "bn.weight")] == "renamed"
    assert pairs[("bn.beta", "bn.bias")] == "renamed"
    assert pairs[("bn.moving_variance", "bn.running_var")] == "renamed"
    assert pairs[("conv.weight", "conv.weight")] == "same name"
    assert len(result.rows) == 7 and not result.unpaired_a and not result.unpaired_b
    assert result.reference == "B"  # A has MindSpore's names
    assert [(side, name) for side, name, _ in result.not_compared] == [("B", "bn.num_batches_tracked")]
    assert all(row.comparison.max_abs == 0 and row.comparison.cosine == pytest.approx(1.0) for row in result.rows)
    text = str(result)
    assert "ok: all 7 paired tensors within tolerance" in text
    assert "Judged by tolerance only" in text and "no rounding envelope" in text
    assert "float32 default (rtol=1.3e-06, atol=1e-05): 7 tensors" in text


def test_a_side_with_torch_names_is_the_reference_either_way_round(tmp_path):
    w = _bn_weights(_rng())
    a = _save(tmp_path / "pt", _torch_names(w))
    b = _save(tmp_path / "ms", _ms_names(w))
    result = parity.compare_dumps(a, b)
    assert result.passed and result.reference == "A"
    assert {(row.a, row.b) for row in result.rows} >= {("bn.weight", "bn.gamma"), ("bn.running_mean", "bn.moving_mean")}


def test_first_mismatch_is_first_in_execution_order_by_numeric_prefix(tmp_path):
    rng = _rng(1)
    values = [rng.standard_normal((2, i + 1)).astype(np.float32) for i in range(12)]
    a = _save(tmp_path / "a", {f"{i}_layer.out": v for i, v in enumerate(values)})
    changed = [v.copy() for v in values]
    changed[9][0, 0] += 0.5
    changed[10][1, 2] += 0.5  # "10_..." sorts before "9_..." by characters, not by number
    b = _save(tmp_path / "b", {f"{i}_layer.out": v for i, v in enumerate(changed)})
    result = parity.compare_dumps(a, b)
    assert [row.a for row in result.rows] == [f"{i}_layer.out" for i in range(12)]
    assert [row.a for row in result.failures] == ["9_layer.out", "10_layer.out"]
    assert result.first_mismatch.a == "9_layer.out" and result.exit_code == 1
    first = result.first_mismatch.comparison
    assert first.max_abs == pytest.approx(0.5) and first.max_abs_index == (0, 0) and first.mismatched == 1
    text = str(result)
    assert "FAIL: 2 of 12 paired tensors differ; first mismatch at A '9_layer.out'" in text
    assert text.count("<- first mismatch") == 1
    assert [line.split()[0] for line in text.splitlines() if "<- first mismatch" in line] == ["10"]  # row 10 = "9_..."
    assert "Greatest absolute difference: 0.5 at index (0, 0) (up to 1e-05 allowed)" in text
    assert "numeric prefixes" in result.a.order


def test_unpaired_names_come_with_the_nearest_name_and_name_map_entries(tmp_path):
    rng = _rng(2)
    q, k, v, out = (rng.standard_normal((4, 4)).astype(np.float32) for _ in range(4))
    a = _save(tmp_path / "a", {"enc.q.weight": q, "enc.k.weight": k, "enc.v.weight": v, "out": out})
    b = _save(tmp_path / "b", {"enc.q_proj.weight": q, "enc.k_proj.weight": k, "out": out})
    result = parity.compare_dumps(a, b)
    assert [row.a for row in result.rows] == ["out"] and all(row.passed for row in result.rows)
    assert not result.passed and result.exit_code == 1  # what did not pair fails the comparison
    assert [k.name for k in result.unpaired_a] == ["enc.k.weight", "enc.q.weight", "enc.v.weight"]
    assert [k.name for k in result.unpaired_b] == ["enc.k_proj.weight", "enc.q_proj.weight"]
    near = {k.name: k.near[0][0] for k in result.unpaired_a if k.near}
    assert near["enc.q.weight"] == "enc.q_proj.weight" and near["enc.k.weight"] == "enc.k_proj.weight"
    assert '"enc.q.weight" = "enc.q_proj.weight"' in result.suggestions
    text = str(result)
    assert "Unpaired in A: 3 tensors:" in text and "did you mean enc.q_proj.weight?" in text
    assert "2 tensors did not pair" not in text and "5 tensors did not pair" in text

    # The suggested entries, as a TOML name map, pair them (either side's name may come first).
    name_map = tmp_path / "map.toml"
    name_map.write_text('"enc.q.weight" = "enc.q_proj.weight"\n"enc.k_proj.weight" = "enc.k.weight"\n')
    mapped = parity.compare_dumps(a, b, name_map=name_map)
    assert {(row.a, row.b, row.how) for row in mapped.rows} >= {
        ("enc.q.weight", "enc.q_proj.weight", "name_map"),
        ("enc.k.weight", "enc.k_proj.weight", "name_map"),
    }
    assert [k.name for k in mapped.unpaired_a] == ["enc.v.weight"] and not mapped.passed
    allowed = parity.compare_dumps(a, b, name_map=name_map, allow_unpaired=True)
    assert allowed.passed and "1 tensor did not pair (allowed)" in str(allowed)


def test_a_name_map_entry_naming_no_tensor_is_a_usage_error(tmp_path):
    a = _save(tmp_path / "a", {"x": np.ones(2, np.float32)})
    b = _save(tmp_path / "b", {"y": np.ones(2, np.float32)})
    with pytest.raises(ParityUsageError, match=r"name_map: 'xx' names no tensor of A .*nearest: \['x'\]"):
        parity.compare_dumps(a, b, name_map={"xx": "y"})


def test_shapes_that_differ_under_one_name_fail_that_row(tmp_path):
    a = _save(tmp_path / "a", {"w": np.ones((2, 3), np.float32), "z": np.zeros(2, np.float32)})
    b = _save(tmp_path / "b", {"w": np.ones((3, 2), np.float32), "z": np.zeros(2, np.float32)})
    result = parity.compare_dumps(a, b)
    row = result.first_mismatch
    assert (row.a, row.comparison.problem, row.shape("A"), row.shape("B")) == ("w", "shape", (2, 3), (3, 2))
    assert "Shapes differ: A (2, 3) vs B (3, 2)" in str(result)


def test_tolerance_globs_name_their_source_and_an_unused_glob_is_an_error(tmp_path):
    a = _save(tmp_path / "a", {"act.0": np.ones(4, np.float32), "act.1": np.ones(4, np.float32)})
    b = _save(tmp_path / "b", {"act.0": np.full(4, 1.001, np.float32), "act.1": np.ones(4, np.float32)})
    assert not parity.compare_dumps(a, b).passed
    loose = parity.compare_dumps(a, b, tolerance={"act.0": Tolerance(1e-2, 1e-5)})
    assert loose.passed
    assert loose.rows[0].comparison.tolerance_source == "compare_dumps(tolerance=...)['act.0']"
    with pytest.raises(ParityUsageError, match="the glob 'akt.*' matches none"):
        parity.compare_dumps(a, b, tolerance={"akt.*": Tolerance(1e-2, 1e-5)})


# -- TroubleShooter and msprobe dumps --------------------------------------------------------------


def _api_dump(root: Path, framework: str, entries, perturb=()):
    """A TroubleShooter api_dump: root/rank0/{framework}_api_dump/*.npy and the info file beside it,
    one JSON list per line in execution order."""
    folder = root / "rank0" / f"{framework}_api_dump"
    folder.mkdir(parents=True)
    lines = []
    for name, value in entries:
        value = value + 0.25 if name in perturb else value
        np.save(folder / f"{name}.npy", value)
        lines.append(
            json.dumps(
                [
                    name,
                    0,
                    [],
                    "float32",
                    list(value.shape),
                    [float(value.max()), float(value.min()), float(value.mean())],
                ]
            )
        )
    (root / "rank0" / f"{framework}_api_dump_info.pkl").write_text("\n".join(lines) + "\n")
    return root


def _network(rng, dense: str):
    x = rng.standard_normal((2, 4)).astype(np.float32)
    h = rng.standard_normal((2, 3)).astype(np.float32)
    y = rng.standard_normal((2, 2)).astype(np.float32)
    return [
        (f"NN_{dense}_0_forward_input.0", x),
        (f"NN_{dense}_0_forward_output", h),
        ("NN_ReLU_0_forward_input.0", h),
        ("NN_ReLU_0_forward_output", np.maximum(h, 0)),
        (f"NN_{dense}_1_forward_input.0", np.maximum(h, 0)),
        (f"NN_{dense}_1_forward_output", y),
        ("Functional_softmax_0_forward_input.0", y),
        ("Functional_softmax_0_forward_output", np.exp(y)),
    ]


def test_troubleshooter_api_dumps_in_the_order_of_their_info_files(tmp_path):
    a = _api_dump(tmp_path / "ms_dump", "mindspore", _network(_rng(3), "Dense"))
    b = _api_dump(
        tmp_path / "pt_dump",
        "torch",
        _network(_rng(3), "Linear"),
        perturb={"NN_Linear_1_forward_output", "Functional_softmax_0_forward_output"},
    )
    result = parity.compare_dumps(a, b)
    assert (result.a.layout, result.a.framework, result.b.framework) == (
        "TroubleShooter api_dump",
        "mindspore",
        "torch",
    )
    assert result.reference == "B" and "mindspore_api_dump_info.pkl" in result.a.order
    assert result.a.description.startswith(f"{a} (TroubleShooter api_dump, MindSpore; 8 tensors in rank0")
    assert [row.b for row in result.rows] == [name for name, _ in _network(_rng(3), "Linear")]
    assert ("NN_Dense_0_forward_output", "NN_Linear_0_forward_output", "execution order") in {
        (row.a, row.b, row.how) for row in result.rows
    }
    # By name, Functional_softmax_0 would come first; in execution order NN_Dense_1 does.
    assert (result.first_mismatch.a, result.first_mismatch.b) == (
        "NN_Dense_1_forward_output",
        "NN_Linear_1_forward_output",
    )
    assert len(result.failures) == 2


def test_troubleshooter_api_mapping_csv_as_a_name_map(tmp_path, capsys):
    a = _api_dump(tmp_path / "ms_dump", "mindspore", _network(_rng(4), "Dense"))
    b = _api_dump(tmp_path / "pt_dump", "torch", _network(_rng(4), "Linear"))
    mapping = tmp_path / "ts_api_mapping.csv"
    mapping.write_text(
        "ORIGIN NET (mindspore),TARGET NET (pytorch)\nNN_Dense_0,NN_Linear_0\nNN_ReLU_0,NN_ReLU_0\n"
        "NN_Dense_1,NN_Linear_1\nFunctional_softmax_0,Functional_softmax_0\nTensor_view_0,\n"
    )
    assert cli.main(["compare-dumps", str(a), str(b), "--name-map", str(mapping), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    paired = {(t["a"], t["b"]): t["paired"] for t in data["tensors"]}
    assert paired[("NN_Dense_0_forward_input.0", "NN_Linear_0_forward_input.0")] == "name_map"
    assert paired[("NN_Dense_1_forward_output", "NN_Linear_1_forward_output")] == "name_map"
    assert len(paired) == 8 and data["passed"]


def test_ts_save_names_with_their_counters(tmp_path):
    """troubleshooter.save numbers its files in execution order: {id}_{name}[.{index}].npy; the two
    runs' counters need not agree, and the tensors pair in that order by kind and shape."""
    rng = _rng(5)
    x, y = rng.standard_normal((2, 3)).astype(np.float32), rng.standard_normal(5).astype(np.float32)
    a = _save(tmp_path / "a", {"0_ms_tensor.0": x, "1_ms_tensor.1": y})
    b = _save(tmp_path / "b", {"3_torch_tensor.0": x, "4_torch_tensor.1": y + 1})
    result = parity.compare_dumps(a, b)
    assert [(row.a, row.b) for row in result.rows] == [
        ("0_ms_tensor.0", "3_torch_tensor.0"),
        ("1_ms_tensor.1", "4_torch_tensor.1"),
    ]
    assert result.first_mismatch.a == "1_ms_tensor.1"


# -- JSON, exit codes, imports ---------------------------------------------------------------------


def test_json_shape(tmp_path, capsys):
    a = _save(
        tmp_path / "a",
        {
            "x": np.array([1.0, np.nan, 3.0], np.float32),
            "w": np.ones((2, 2), np.float32),
            "only_a": np.zeros(3, np.float32),
        },
    )
    b = _save(tmp_path / "b", {"x": np.array([1.0, 2.0, 3.0], np.float32), "w": np.ones((4,), np.float32)})
    assert cli.main(["compare-dumps", str(a), str(b), "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert set(data) == {
        "schema",
        "passed",
        "a",
        "b",
        "reference",
        "judged_by",
        "summary",
        "first_mismatch",
        "tensors",
        "unpaired",
        "not_compared",
        "name_map_suggestions",
        "notes",
    }
    assert data["schema"] == 1 and data["passed"] is False and data["judged_by"] == "tolerance"
    assert set(data["a"]) == {"path", "layout", "framework", "order", "tensors", "notes"}
    assert data["summary"] == {"paired": 2, "differ": 2, "unpaired_a": 1, "unpaired_b": 0, "allow_unpaired": False}
    assert data["first_mismatch"] == {"a": "w", "b": "w"}  # w.npy sorts before x.npy
    w, x = data["tensors"]
    assert (w["problem"], w["a_shape"], w["b_shape"]) == ("shape", [2, 2], [4])
    assert "max_abs" not in w
    assert x["nonfinite"] == {"a": 1, "b": 0, "disagreeing": 1} and x["margin"] == "inf"
    assert set(x) >= {
        "index",
        "a",
        "b",
        "paired",
        "passed",
        "a_dtype",
        "b_dtype",
        "tolerance",
        "total",
        "mismatched",
        "max_abs",
        "max_abs_index",
        "max_rel",
        "max_rel_index",
        "cosine",
    }
    assert x["tolerance"] == {"rtol": 1.3e-06, "atol": 1e-05, "source": "float32 default"}
    assert data["unpaired"]["a"] == [{"name": "only_a", "shape": [3], "dtype": "float32", "nearest": None}]


def test_cli_usage_errors_exit_2(tmp_path, capsys):
    a = _save(tmp_path / "a", {"x": np.ones(3, np.float32)})
    b = _save(tmp_path / "b", {"y": np.ones(4, np.float32)})
    assert cli.main(["compare-dumps", str(a), str(tmp_path / "missing")]) == 2
    assert "B " in capsys.readouterr().err
    assert cli.main(["compare-dumps", str(a), str(b)]) == 2
    err = capsys.readouterr().err
    assert "Nothing paired: A has 1 tensors and B 1" in err and "Unpaired in A: 1 tensor:" in err
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "x.npy").write_bytes(b"not a numpy file")
    assert cli.main(["compare-dumps", str(a), str(broken)]) == 2
    assert "numpy cannot read it as .npy" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert cli.main(["compare-dumps", str(a), str(tmp_path / "empty")]) == 2
    assert "no tensor files" in capsys.readouterr().err
    assert cli.main(["compare-dumps", str(a), str(a), "--tolerance", str(tmp_path / "tol.yaml")]) == 2
    assert "give a .toml or .json file" in capsys.readouterr().err


def test_cli_tolerance_file_names_its_source(tmp_path, capsys):
    a = _save(tmp_path / "a", {"x": np.ones(3, np.float32)})
    b = _save(tmp_path / "b", {"x": np.full(3, 1.0005, np.float32)})
    tolerance = tmp_path / "tolerance.toml"
    tolerance.write_text('"*" = { rtol = 1e-3, atol = 1e-5 }\n')
    assert cli.main(["compare-dumps", str(a), str(b)]) == 1
    capsys.readouterr()
    assert cli.main(["compare-dumps", str(a), str(b), "--tolerance", str(tolerance)]) == 0
    assert f"Tolerance: --tolerance {tolerance} (rtol=0.001, atol=1e-05): 1 tensor" in capsys.readouterr().out


def test_the_readme_example_is_what_the_command_prints(tmp_path, monkeypatch, capsys):
    page = ROOT / "docs" / "how-to" / "compare-dumps.md"
    readme = page.read_text(encoding="utf-8")
    section = readme[readme.index("# Comparing saved tensors") :]
    source = section[section.index("```python\n") + len("```python\n") :]
    source = source[: source.index("```")]
    command = "```text\n$ parity compare-dumps ms_dump torch_dump\n"
    shown = section[section.index(command) + len(command) :]
    shown = shown[: shown.index("```")]
    monkeypatch.chdir(tmp_path)
    exec(compile(source, str(page), "exec"), {})
    assert cli.main(["compare-dumps", "ms_dump", "torch_dump"]) == 1
    assert capsys.readouterr().out.strip().splitlines() == shown.strip().splitlines()


def test_fused_and_split_tensors_pair_part_by_part(tmp_path):
    rng = _rng(8)
    q, k, v, out = (rng.standard_normal((4, 4)).astype(np.float32) for _ in range(4))
    a = _save(tmp_path / "a", {"attn.qkv.weight": np.concatenate([q, k, v]), "attn.out.weight": out})
    (tmp_path / "b").mkdir()  # one archive: its keys in the order stored, q, k, v
    np.savez(
        tmp_path / "b" / "attn.npz",
        **{"attn.q.weight": q, "attn.k.weight": k, "attn.v.weight": v + 1, "attn.out.weight": out},
    )
    result = parity.compare_dumps(a, tmp_path / "b")
    assert [(row.a, row.b, row.passed) for row in result.rows] == [
        ("attn.qkv.weight", "attn.q.weight", True),
        ("attn.qkv.weight", "attn.k.weight", True),
        ("attn.qkv.weight", "attn.v.weight", False),
        ("attn.out.weight", "attn.out.weight", True),
    ]
    assert result.first_mismatch.how == "fused automatically, part 3 of 3 along axis 0"
    assert result.first_mismatch.comparison.max_abs == pytest.approx(1.0)
    text = str(result)
    assert "attn.qkv.weight = [attn.q.weight, attn.k.weight, attn.v.weight]" in text
    assert "Paired: fused automatically 3, same name 1" in text
    swapped = parity.compare_dumps(tmp_path / "b", a)
    assert [(row.a, row.how) for row in swapped.failures] == [
        ("attn.q.weight, attn.k.weight, attn.v.weight", "split automatically")
    ]


def test_a_partial_dump_fails_closed_unless_allowed(tmp_path, capsys):
    """A dump one of whose tensors is missing on the other side (a rank or a layer not dumped) is
    not a pass: the command exits 1 naming what did not pair, unless --allow-unpaired."""
    from parity.cli import main

    x = np.arange(6, dtype=np.float32)
    a = _save(tmp_path / "a", {"layer0.out": x, "layer1.out": x})
    b = _save(tmp_path / "b", {"layer0.out": x})
    assert main(["compare-dumps", str(a), str(b)]) == 1
    out = capsys.readouterr().out
    assert "FAIL: 1 tensor did not pair (listed below): the comparison covers part of the dumps only" in out
    assert "layer1.out" in out and "--allow-unpaired" in out
    assert main(["compare-dumps", str(a), str(b), "--allow-unpaired"]) == 0
    assert "ok: 1 paired tensor within tolerance; 1 tensor did not pair (allowed)" in capsys.readouterr().out
