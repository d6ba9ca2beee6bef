"""The known-mismatch registry without running a framework: validation with file:line, rules,
applicability, lint, the ledger, and the generated document being up to date."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from parity.registry import Ledger, RegistryError, docs, lint, load, rules
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


# ---------------------------------------------------------------- rules


def test_conv_rule_translates_padding():
    entry = load().get("conv2d-pad-mode-default")
    assert entry.translate_kwargs({"padding": 1}) == {"pad_mode": "pad", "padding": 1}
    assert entry.translate_kwargs({"padding": (1, 2)}) == {"pad_mode": "pad", "padding": (1, 1, 2, 2)}
    assert entry.translate_kwargs({"padding": "same"}) == {"pad_mode": "same", "padding": 0}
    assert entry.translate_kwargs({}) == {"pad_mode": "pad", "padding": 0}  # PyTorch's default from `arguments`


def test_rules_of_other_families():
    registry = load()
    assert registry.get("batchnorm2d-momentum-convention").translate_kwargs({"momentum": 0.3}) == {
        "momentum": pytest.approx(0.7)
    }
    assert registry.get("gelu-approximate-default").translate_kwargs({"approximate": "tanh"}) == {"approximate": True}
    pool = registry.get("maxpool2d-stride-default")
    assert pool.translate_kwargs({"kernel_size": 3}, defaults={"stride": None}) == {"stride": 3}
    upsample = registry.get("upsample-scale-factor-unsupported")
    assert upsample.translate_kwargs(
        {"scale_factor": 2.0, "mode": "bilinear"}, defaults={"align_corners": None}, input_shape=(2, 3, 5, 7)
    )["size"] == (10, 14)


def test_rule_needing_a_missing_argument_says_which():
    entry = load().get("mint-conv2d-cpu-unsupported")
    with pytest.raises(
        RegistryError,
        match=r"mint\.toml:\d+: entry 'mint-conv2d-cpu-unsupported': rule .* "
        r"needs torch\.in_channels",
    ):
        entry.translate_kwargs({})


@pytest.mark.parametrize(
    "source",
    [
        "__import__('os')",
        "torch.__class__",
        "(lambda: 1)()",
        "torch",
        "open('x')",
        "[x for x in (1,)]",
        "len(x=1)",
        "ms.a",
    ],
)
def test_rule_language_rejects(source):
    with pytest.raises(rules.RuleError):
        rules.check_expression(source, frozenset({"torch"}))


def test_rule_language_evaluates():
    value = {"padding": (1, 2), "dim": None}.__getitem__
    assert rules.evaluate("pad4(torch.padding)", {"torch": value}) == (1, 1, 2, 2)
    assert rules.evaluate("-1 if torch.dim is None else torch.dim", {"torch": value}) == -1
    assert rules.evaluate("len(input_shape) - 1", {}, {"input_shape": (2, 3)}) == 1
    assert rules.referenced("torch.a + max(torch.b, 1)", "torch") == {"a", "b"}


# ---------------------------------------------------------------- applicability


def test_applies_versions_devices_modes():
    registry = load()
    conv = registry.get("conv2d-pad-mode-default")
    assert conv.applies("2.10.0", "2.13.0+cpu", "CPU")
    assert not conv.applies("2.6.0", "2.13.0", "CPU")
    assert conv.applies(None, None, "Ascend")
    mint = registry.get("mint-conv2d-cpu-unsupported")
    assert mint.applies("2.10.0", "2.13.0", "CPU") and not mint.applies("2.10.0", "2.13.0", "Ascend")
    noop = registry.get("mint-optim-sgd-pynative-noop")
    assert noop.applies(device="CPU", mode="pynative") and not noop.applies(device="CPU", mode="graph")
    assert registry.applicable(mindspore_version="2.10.0", torch_version="2.13.0", device="CPU")


# ---------------------------------------------------------------- lint


def test_lint_unset_default_names_argument_and_fix():
    issues = lint("mindspore.nn.Conv2d", {"in_channels": 3, "out_channels": 4, "kernel_size": 3})
    by_id = {i.entry_id: i for i in issues}
    assert set(by_id) == {"conv2d-pad-mode-default", "conv2d-has-bias-default"}
    message = str(by_id["conv2d-pad-mode-default"])
    assert (
        "built without pad_mode" in message and "pad_mode='same'" in message and "fix: pass pad_mode='pad'" in message
    )


def test_lint_with_torch_kwargs_gives_concrete_values():
    issues = lint(
        "mindspore.nn.Conv2d",
        {"in_channels": 3, "out_channels": 4, "kernel_size": 3, "has_bias": True},
        torch_kwargs={"in_channels": 3, "out_channels": 4, "kernel_size": 3, "padding": 1},
    )
    assert [str(i).split(" (known")[0] for i in issues] == [
        "mindspore.nn.Conv2d is built without pad_mode: MindSpore's default pad_mode='same' differs "
        "(PyTorch padding=1); write pad_mode='pad', padding=1"
    ]


def test_lint_wrong_value_against_rule():
    issues = lint(
        "mindspore.nn.BatchNorm2d",
        {"num_features": 3, "momentum": 0.1},
        torch_kwargs={"num_features": 3, "momentum": 0.1},
    )
    assert len(issues) == 1 and "write momentum=0.9" in str(issues[0])
    assert lint("mindspore.nn.BatchNorm2d", {"num_features": 3}) == []  # 0.9 and 0.1 agree


def test_lint_acknowledged_and_unknown_ids():
    kwargs = {"in_channels": 3, "out_channels": 4, "kernel_size": 3, "pad_mode": "pad", "has_bias": False}
    assert lint("mindspore.nn.Conv2d", kwargs, {"conv2d-has-bias-default"}) == []
    issues = lint("mindspore.nn.Conv2d", kwargs, {"conv2d-has-bias-defualt"})
    assert "did you mean 'conv2d-has-bias-default'" in str(issues[0])


def test_lint_equal_defaults_under_other_names_are_quiet():
    assert lint("mindspore.nn.Conv2d", {"pad_mode": "pad", "has_bias": True}) == []  # group=1 == groups=1
    assert lint("mindspore.nn.Dropout", {}) == []  # keep_prob=0.5 keeps what p=0.5 drops


def test_lint_takes_case_factory_paths_and_classes():
    assert [i.entry_id for i in lint("mindspore.nn:GELU", {})] == ["gelu-approximate-default"]
    assert lint("cases.models.conv_relu:MSConvReLU", {"pad_mode": "pad"}) == []  # a user model: nothing known


def test_lint_unsupported_on_device():
    issues = lint("mindspore.mint.nn.Conv2d", {"in_channels": 3}, device="CPU")
    assert [i.entry_id for i in issues] == ["mint-conv2d-cpu-unsupported"]
    assert lint("mindspore.mint.nn.Conv2d", {"in_channels": 3}, device="Ascend") == []


# ---------------------------------------------------------------- ledger


def test_ledger_reports_stale_entries():
    ledger = Ledger()
    ledger.record("gelu-approximate-default", "t.py::a", triggered=True)
    ledger.record("conv2d-pad-mode-default", "t.py::b", triggered=False)
    other = Ledger()
    other.record("conv2d-pad-mode-default", "t.py::c", triggered=False)
    ledger.merge(other)
    assert ledger.stale() == {"conv2d-pad-mode-default": ["t.py::b", "t.py::c"]}
    assert ledger.summary_lines(strict=True) == [
        "known mismatches: 2 acknowledged, 1 showed, 1 stale",
        "ERROR stale conv2d-pad-mode-default: did not show in t.py::b and 1 more; the mismatch may be fixed upstream",
    ]


# ---------------------------------------------------------------- the generated document


def test_doc_is_up_to_date():
    expected = docs.render(load(), docs.read_measured())
    current = docs.DOC_PATH.read_text(encoding="utf-8") if docs.DOC_PATH.exists() else ""
    assert current == expected, "docs/known-mismatches.md is out of date: run `python -m parity.registry docs`"


def test_measurements_match_the_entries():
    """Like syrupy's unused snapshots: every self-tested entry is measured, nothing else is."""
    measured = set(docs.read_measured()["entries"])
    tested = {e.id for e in load() if e.selftest is not None}
    assert measured == tested, (
        f"unmeasured: {sorted(tested - measured)}; orphaned: {sorted(measured - tested)}; "
        "run `python -m parity.mismatch_checks measure`"
    )


def test_doc_rows_and_family_table():
    text = docs.render(load(), docs.read_measured())
    for entry in load():
        assert f"| [`{entry.id}`](#{entry.id}) |" in text
    assert "| `mindspore.mint.nn.Conv2d` | `torch.nn.Conv2d` | Ascend | no kernel |" in text
    assert "| `mindspore.mint.nn.GroupNorm` | `torch.nn.GroupNorm` | Ascend | runs, agrees |" in text


def test_data_files_are_packaged():
    assert DATA_DIR.name == "mismatches" and sorted(p.name for p in DATA_DIR.glob("*.toml"))


def test_an_api_whose_package_fails_to_import_resolves_to_none(tmp_path, monkeypatch):
    """transformers raises RuntimeError on import where torchvision's CPU build cannot load: the
    diagnosis must go on without the llm entries rather than lose every likely cause."""
    from parity.registry import store

    (tmp_path / "brokenpkg").mkdir()
    (tmp_path / "brokenpkg" / "__init__.py").write_text("")
    (tmp_path / "brokenpkg" / "layers.py").write_text(
        "raise RuntimeError('operator torchvision::nms does not exist')\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    import brokenpkg  # noqa: F401  (resolve_api only looks into packages already imported)

    assert store.resolve_api("brokenpkg.layers.Attention") is None
    monkeypatch.delitem(sys.modules, "brokenpkg")
