"""``parity convert``'s usage errors before any tensor is read: a bad name-map file. Conversions of
real checkpoints: tests/test_convert.py."""

import pytest

import parity
from parity import ParityUsageError
from parity.tools.convert.checkpoint import load_name_map


def test_a_bad_name_map_file_is_a_usage_error(tmp_path):
    (tmp_path / "map.toml").write_text("a = [1, 2]\n")
    with pytest.raises(ParityUsageError, match="a value is a MindSpore name, or a table with one of fuse"):
        load_name_map(tmp_path / "map.toml")
    (tmp_path / "map.yaml").write_text("a: b\n")
    with pytest.raises(ParityUsageError, match="give a .toml or .json file"):
        load_name_map(tmp_path / "map.yaml")
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(ParityUsageError, match="cannot parse it"):
        load_name_map(tmp_path / "bad.json")
    (tmp_path / "fuse.toml").write_text('"qkv.weight" = {fuse = ["q.weight", "k.weight"], axis = 0}\n')
    assert load_name_map(tmp_path / "fuse.toml") == {"qkv.weight": parity.fuse(["q.weight", "k.weight"])}
