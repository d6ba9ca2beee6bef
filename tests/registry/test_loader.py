"""The known-mismatch data as loaded: the shipped files, validation with file:line (every problem at
once), and the data files in the package. Rules, lint, the ledger and the generated document have
their own modules here."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from parity.registry import RegistryError, load
from parity.registry.loader import DATA_DIR
from parity.registry.schema import KINDS

GOOD = """\
schema = 1

[[mismatch]]
id = "{id}"
kind = "default"
torch = "torch.nn.GELU"
mindspore = "mindspore.nn.GELU"
family = "nn"
summary = "tanh by default"
fix = "pass approximate=False"
arguments = [{{ torch = "approximate", torch_default = "none", mindspore = "approximate", mindspore_default = true }}]
rule = {{ approximate = "torch.approximate == 'tanh'" }}
versions = {{ mindspore = ">=2.7", torch = ">=2.0" }}
devices = ["CPU"]
reason = "r"
reference = "https://example.org/GELU.html"
selftest_skip = "not here"
"""


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def problems(tmp_path: Path, *texts: str) -> str:
    paths = [write(tmp_path, f"f{i}.toml", t) for i, t in enumerate(texts)]
    with pytest.raises(RegistryError) as info:
        load(paths)
    return str(info.value)


def line_of(text: str, needle: str) -> int:
    return next(i + 1 for i, line in enumerate(text.splitlines()) if needle in line)


# ---------------------------------------------------------------- the shipped data


def test_shipped_registry_loads():
    registry = load()
    assert len(registry) >= 40
    assert {e.kind for e in registry} <= set(KINDS)
    assert {e.family for e in registry} == {"nn", "mint", "llm"}
    assert all(e.reference.startswith("https://") and e.reason for e in registry)
    assert registry.available, "the mint family/device table needs [[available]] records"


def test_load_is_cached():
    assert load() is load()


def test_every_entry_is_self_tested_or_says_why():
    for entry in load():
        assert entry.selftest is not None or entry.selftest_skip, entry.id


def test_get_and_for_api():
    registry = load()
    assert registry.get("gelu-approximate-default").torch == "torch.nn.GELU"
    with pytest.raises(RegistryError, match="did you mean 'gelu-approximate-default'"):
        registry.get("gelu-aproximate-default")
    ids = {e.id for e in registry.for_api(mindspore_api="mindspore.nn.Conv2d")}
    assert {"conv2d-pad-mode-default", "conv2d-has-bias-default"} <= ids
    assert all(e.torch == "torch.nn.Conv2d" for e in registry.for_api(torch_api="torch.nn.Conv2d"))
    assert registry.for_api(torch_api="torch.nn.Conv2d", mindspore_api="mindspore.nn.Dense") == []


# ---------------------------------------------------------------- validation, with file:line


def test_valid_temp_file_loads(tmp_path):
    registry = load([write(tmp_path, "ok.toml", GOOD.format(id="gelu-x"))])
    entry = registry.get("gelu-x")
    assert entry.location.endswith("ok.toml:4")
    assert entry.arguments[0].mindspore_default is True


def test_missing_id_names_the_table_line(tmp_path):
    text = GOOD.format(id="x").replace('id = "x"\n', "")
    message = problems(tmp_path, text)
    assert f"f0.toml:{line_of(text, '[[mismatch]]')}: mismatch #1: missing required key 'id'" in message


def test_duplicate_id_across_files(tmp_path):
    message = problems(tmp_path, GOOD.format(id="same"), GOOD.format(id="same"))
    assert "f1.toml:4: entry 'same': duplicate id 'same' (first at " in message and "f0.toml:4)" in message


def test_unknown_kind_at_its_line(tmp_path):
    text = GOOD.format(id="k").replace('kind = "default"', 'kind = "typo"')
    message = problems(tmp_path, text)
    assert f"f0.toml:{line_of(text, 'kind = ')}: entry 'k': unknown kind 'typo'" in message


def test_bad_specifier(tmp_path):
    text = GOOD.format(id="v").replace('">=2.7"', '"2.x+"')
    message = problems(tmp_path, text)
    assert f"f0.toml:{line_of(text, 'versions = ')}: entry 'v': versions.mindspore '2.x+' is not a PEP 440" in message


def test_unknown_rule_name(tmp_path):
    text = GOOD.format(id="r").replace("torch.approximate == 'tanh'", "tanh_of(torch.approximate)")
    message = problems(tmp_path, text)
    assert f"f0.toml:{line_of(text, 'rule = ')}: entry 'r': rule approximate: unknown name 'tanh_of'" in message


def test_all_problems_reported_at_once(tmp_path):
    text = GOOD.format(id="Bad Id").replace('family = "nn"', 'family = "mint"').replace("https://", "http://")
    message = problems(tmp_path, text)
    assert message.startswith("3 problems in the mismatch registry:")
    assert "must be lowercase words joined by '-'" in message
    assert "family 'mint' does not match 'mindspore.nn.GELU'" in message
    assert "reference must be an https:// URL" in message


def test_unknown_key_and_missing_selftest(tmp_path):
    text = GOOD.format(id="u").replace('selftest_skip = "not here"', 'refrence = "x"')
    message = problems(tmp_path, text)
    assert f"f0.toml:{line_of(text, 'refrence')}: entry 'u': unknown key 'refrence'" in message
    assert "give a [mismatch.selftest] or say why not in selftest_skip" in message


def test_bad_selftest(tmp_path):
    text = GOOD.format(id="s").replace(
        'selftest_skip = "not here"',
        """
        [mismatch.selftest]
        torch_kwargs = {}
        ms_kwargs = {}
        inputs = [{ normal = [2, 3] }]
        differs_in = "colour"
        """,
    )
    message = problems(tmp_path, text)
    assert f"f0.toml:{line_of(text, '[mismatch.selftest]')}: entry 's': selftest.differs_in must be one of" in message


def test_invalid_toml_reports_the_decoder_line(tmp_path):
    message = problems(tmp_path, 'schema = 1\n\n[[mismatch]]\nid = "x"\nkind = \n')
    assert "f0.toml:5: invalid TOML" in message


def test_schema_key_required(tmp_path):
    assert "f0.toml:1: needs `schema = 1`" in problems(
        tmp_path, GOOD.format(id="a").replace("schema = 1", "schema = 2")
    )


def test_layout_transform(tmp_path):
    text = GOOD.format(id="l").replace('devices = ["CPU"]', 'devices = ["CPU"]\nlayout = { weight = "permute(1, 0)" }')
    entry = load([write(tmp_path, "l.toml", text)]).get("l")
    import numpy as np

    assert entry.to_mindspore_layout("weight", np.zeros((2, 3))).shape == (3, 2)
    assert entry.to_mindspore_layout("bias", np.zeros(2)).shape == (2,)
    bad = text.replace("permute(1, 0)", "transpose(w)")
    assert "layout weight = 'transpose(w)': expected 'permute(i, j, ...)'" in problems(tmp_path, bad)


def test_none_and_arrays_convert(tmp_path):
    text = GOOD.format(id="n").replace('torch_default = "none"', 'torch_default = "None"')
    entry = load([write(tmp_path, "n.toml", text)]).get("n")
    assert entry.arguments[0].torch_default is None


def test_data_files_are_packaged():
    assert DATA_DIR.name == "mismatches" and sorted(p.name for p in DATA_DIR.glob("*.toml"))


def test_replay_reads_and_its_expressions_are_checked(tmp_path):
    replay = (
        'replay = { set = { approximate = "ms.approximate" }, pad = "same_pads(input_shape, 3, 2, 1)", value = "0" }'
    )
    text = GOOD.format(id="p").replace('devices = ["CPU"]', f'devices = ["CPU"]\n{replay}')
    entry = load([write(tmp_path, "p.toml", text)]).get("p")
    assert (dict(entry.replay_set), entry.replay_pad, entry.replay_value) == (
        {"approximate": "ms.approximate"},
        "same_pads(input_shape, 3, 2, 1)",
        "0",
    )
    assert load([write(tmp_path, "g.toml", GOOD.format(id="g"))]).get("g").replay_set == {}
    cases = {
        'replay = { set = { approximate = "gelu_of(ms.approximate)" } }': "replay.set.approximate: unknown name 'gelu_of'",
        'replay = { sets = { approximate = "ms.approximate" } }': "replay must be a table with keys set, pad, value",
        'replay = { set = { approximate = "ms.approximate" }, value = "0" }': "replay.value is the padding's value",
        "replay = { pad = 3 }": "replay.pad must be a string expression, got 3",
        "replay = { set = {} }": "replay must set an attribute or pad the input",
    }
    for line, expected in cases.items():
        bad = GOOD.format(id="b").replace('devices = ["CPU"]', f'devices = ["CPU"]\n{line}')
        assert f"f0.toml:{line_of(bad, 'replay = ')}: entry 'b': {expected}" in problems(tmp_path, bad)
