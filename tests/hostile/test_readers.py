"""Hostile content in the files parity reads back: ``--parity-report`` records, quarantine and
durations files, dump records, name maps; and what the Markdown summary copies from test ids.
Every case ends in a usage error naming the file, the line and the field (exit status 2, no
traceback, no pytest INTERNALERROR), or in inert text. Promises in docs/reliability.md ("Readers")."""

import json
import os
import re

import numpy as np
import pytest
import torch
from mindspore import nn as msnn

import parity
from parity import ParityUsageError, cli
from parity.nightly.markdown import render
from parity.nightly.records import SCHEMA, read_records
from parity.nightly.runs import Run
from parity.plugin.fleet import DURATIONS, QUARANTINE

ENVIRONMENT = {"schema": SCHEMA, "type": "environment", "created": "2026-01-01T00:00:00+00:00"}
CHECK = {
    "schema": SCHEMA,
    "type": "check",
    "nodeid": "t.py::test_a",
    "index": 0,
    "verdict": "pass",
    "tensors": [{"kind": "output", "name": "out", "mode": "pynative", "margin": 0.1, "passed": True}],
}


def write(path, *records):
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records))
    return path


def report(tmp_path, capsys, *args):
    """(exit status, stderr) of ``parity report`` run in ``tmp_path``."""
    here = os.getcwd()
    os.chdir(tmp_path)
    try:
        status = cli.main(["report", *args])
    finally:
        os.chdir(here)
    return status, capsys.readouterr().err


# -- report records ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "check, complaint",
    [
        ({k: v for k, v in CHECK.items() if k != "nodeid"}, "run.jsonl:2: a check record without 'nodeid'"),
        ({k: v for k, v in CHECK.items() if k != "verdict"}, "run.jsonl:2: a check record without 'verdict'"),
        (dict(CHECK, verdict=5), "run.jsonl:2: field 'verdict' must be a string or null, got 5"),
        (dict(CHECK, verdict="great"), "run.jsonl:2: verdict 'great' is none of pass, fail"),
        (dict(CHECK, index="first"), "run.jsonl:2: field 'index' must be an integer or null, got 'first'"),
        (dict(CHECK, index=True), "run.jsonl:2: field 'index' must be an integer or null, got True"),
        (dict(CHECK, index=-3), "run.jsonl:2: field 'index' must not be negative, got -3"),
        (dict(CHECK, modes="pynative"), "run.jsonl:2: field 'modes' must be a list of strings or null"),
        (dict(CHECK, error="boom"), "run.jsonl:2: field 'error' must be an object or null, got 'boom'"),
        (dict(CHECK, error={"type": 3}), "run.jsonl:2: field 'error.type' must be a string or null, got 3"),
        (dict(CHECK, first_divergence={"forward": "conv"}), "field 'first_divergence.forward' must be an object"),
        (
            dict(CHECK, tensors=[{"margin": "big"}]),
            "run.jsonl:2: field 'tensors[1].margin' must be a number or null, got 'big'",
        ),
        (dict(CHECK, tensors=[1, 2]), "run.jsonl:2: field 'tensors' must be a list of objects or null"),
        (dict(CHECK, worst_margin="huge"), "run.jsonl:2: field 'worst_margin' must be a number or null, got 'huge'"),
    ],
)
def test_a_record_with_a_missing_field_or_a_wrong_type_is_named_by_line_and_field(tmp_path, capsys, check, complaint):
    write(tmp_path / "run.jsonl", ENVIRONMENT, check)
    status, err = report(tmp_path, capsys, "run.jsonl", "--markdown", "out.md")
    assert status == 2 and complaint in err and "Traceback" not in err
    assert not (tmp_path / "out.md").exists()


def test_an_environment_field_of_the_wrong_type_is_named(tmp_path):
    write(tmp_path / "run.jsonl", dict(ENVIRONMENT, git={"commit": 7}), CHECK)
    with pytest.raises(ParityUsageError, match=r"run.jsonl:1: field 'git.commit' must be a string or null, got 7"):
        read_records(tmp_path / "run.jsonl")


def test_a_binary_file_is_named_with_its_line(tmp_path, capsys):
    (tmp_path / "run.jsonl").write_bytes(json.dumps(ENVIRONMENT).encode() + b"\n\x00\xff\xfe binary\n")
    status, err = report(tmp_path, capsys, "run.jsonl", "--markdown", "out.md")
    assert status == 2 and "run.jsonl:2: not UTF-8 text (byte 0xff at column 2); is it a binary file?" in err


@pytest.mark.parametrize(
    "line, complaint",
    [
        ('{"schema": 1, "type": "check", "nodeid": "t.py::a", "verd', "run.jsonl:3: not a JSON record"),
        ("[" * 100_000, "run.jsonl:3: not a JSON record (RecursionError)"),
        ('{"schema": 1, "type": "check", "nodeid": "t.py::a", "verdict": "pass", "max_abs": "lots"}', None),
    ],
)
def test_a_file_cut_short_or_nested_too_deep_is_refused(tmp_path, line, complaint):
    write(tmp_path / "run.jsonl", ENVIRONMENT, CHECK, line)
    if complaint is None:  # a string in a float field that is no spelling of inf or nan stays a string
        _, checks = read_records(tmp_path / "run.jsonl")
        assert checks[1]["max_abs"] == "lots"
        return
    with pytest.raises(ParityUsageError, match=complaint.replace("(", r"\(").replace(")", r"\)")):
        read_records(tmp_path / "run.jsonl")


def test_a_fifo_as_a_report_file_is_refused_without_waiting(tmp_path, capsys):
    os.mkfifo(tmp_path / "run.jsonl")
    status, err = report(tmp_path, capsys, "run.jsonl", "--markdown", "out.md")
    assert status == 2 and "run.jsonl: a FIFO (named pipe), not a regular file" in err


@pytest.mark.parametrize("flag, name", [("--markdown", "out.md"), ("--html", "page.html")])
def test_an_output_that_is_a_fifo_or_a_folder_is_refused_before_reading(tmp_path, capsys, flag, name):
    write(tmp_path / "run.jsonl", ENVIRONMENT, CHECK)
    os.mkfifo(tmp_path / name)
    status, err = report(tmp_path, capsys, "run.jsonl", flag, name)
    assert status == 2 and f"{flag} {name}: a FIFO (named pipe); give the path of a regular file to write" in err
    (tmp_path / name).unlink()
    (tmp_path / name).mkdir()
    status, err = report(tmp_path, capsys, "run.jsonl", flag, name)
    assert status == 2 and f"{flag} {name}: a folder; give the path of the file to write" in err


def test_unwritable_outputs_are_usage_errors(tmp_path, unprivileged):
    write(tmp_path / "run.jsonl", ENVIRONMENT, CHECK)
    (tmp_path / "locked").mkdir()
    (tmp_path / "locked").chmod(0o555)
    (tmp_path / "old.md").write_text("yesterday")
    (tmp_path / "old.md").chmod(0o444)
    code = """if True:
        import contextlib, io, json
        from parity import cli
        found = {}
        for args in (["--markdown", "locked/out.md"], ["--html", "locked/page.html"], ["--markdown", "old.md"],
                     ["--save-baseline", "locked/base"]):
            err = io.StringIO()
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                status = cli.main(["report", "run.jsonl", *args])
            found[args[1]] = [status, err.getvalue()]
        print(json.dumps(found))"""
    found = unprivileged(code, tmp_path)
    assert found["locked/out.md"] == [2, "parity: error: --markdown locked/out.md: the folder locked is not writable\n"]
    assert found["locked/page.html"] == [
        2,
        "parity: error: --html locked/page.html: the folder locked is not writable\n",
    ]
    assert found["old.md"][0] == 2 and "old.md: exists and is read-only" in found["old.md"][1]
    assert found["locked/base"] == [
        2,
        "parity: error: baseline folder locked/base: cannot create it: Permission denied\n",
    ]
    assert (tmp_path / "old.md").read_text() == "yesterday" and os.listdir(tmp_path / "locked") == []


# -- quarantine and durations files, through pytest ------------------------------------------------------------


@pytest.fixture
def project(pytester):
    pytester.makepyfile(test_q="def test_ok():\n    pass\n")
    return pytester


def test_a_non_utf8_quarantine_file_is_a_usage_error_not_an_internal_error(project):
    project.path.joinpath("q.toml").write_bytes(b'[[quarantine]]\ncase = "test_q.py::test_ok"\nreason = "\xe9t\xe9"\n')
    result = project.runpytest(f"{QUARANTINE}=q.toml")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "ERROR: cannot read the quarantine file *q.toml:3: not UTF-8 text (byte 0xe9 at "
            "column 11); is it a binary file?"
        ]
    )
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()


def test_a_quarantine_fifo_and_a_binary_durations_file_are_usage_errors(project):
    os.mkfifo(project.path / "q.toml")
    result = project.runpytest(f"{QUARANTINE}=q.toml")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: cannot read the quarantine file *q.toml: a FIFO (named pipe), not a regular*"])
    project.path.joinpath("d.jsonl").write_bytes(b"\x89PNG\r\n\x1a\n")
    result = project.runpytest(f"{DURATIONS}=d.jsonl", "--parity-shard=1/2")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: cannot read durations from *d.jsonl:1: not UTF-8 text (byte 0x89*"])
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()


# -- dump records ---------------------------------------------------------------------------------------


def test_a_binary_troubleshooter_record_and_a_binary_msprobe_record_name_their_line(tmp_path):
    for side in ("a", "b"):
        folder = tmp_path / side / "torch_api_dump"
        folder.mkdir(parents=True)
        np.save(folder / "x.npy", np.ones(2, np.float32))
    (tmp_path / "a" / "torch_api_dump_info.pkl").write_bytes(b'["x.npy"]\n\x80\x04\x95 pickled\n')
    with pytest.raises(ParityUsageError, match=r"dump record .*torch_api_dump_info\.pkl:2: not UTF-8 text"):
        parity.compare_dumps(tmp_path / "a", tmp_path / "b")
    folder = tmp_path / "c" / "dump_tensor_data"
    folder.mkdir(parents=True)
    np.save(folder / "x.npy", np.ones(2, np.float32))
    (tmp_path / "c" / "dump.json").write_bytes(b'{"data": \xff}')
    with pytest.raises(ParityUsageError, match=r"dump record .*dump\.json:1: not UTF-8 text"):
        parity.compare_dumps(tmp_path / "c", tmp_path / "b")


# -- the Markdown summary ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "nodeid, shown",
    [
        ("t.py::test[<script>alert(1)</script>]", "t.py::test[&lt;script>alert(1)&lt;/script>]"),
        ('t.py::test[<img src=x onerror="steal()">]', 't.py::test[&lt;img src=x onerror="steal()">]'),
        ("t.py::test[<!-- hidden -->]", "t.py::test[&lt;!-- hidden -->]"),
        ("t.py::test[a|b]", "t.py::test[a\\|b]"),
        ("t.py::test[a\nb &amp; &#60;]", "t.py::test[a b &amp;amp; &amp;#60;]"),
        ("t.py::test[x<y & a<-b]", "t.py::test[x&lt;y & a<-b]"),
    ],
)
def test_the_markdown_summary_shows_test_ids_as_text_never_as_html(nodeid, shown):
    failing = dict(CHECK, nodeid=nodeid, verdict="fail", likely_causes=["<b>bold</b> cause"])
    text = render(Run(ENVIRONMENT, [failing], ("run.jsonl",), notes=["<iframe src=x>"]))
    row = next(line for line in text.splitlines() if line.startswith("| t.py::"))
    assert row.startswith(f"| {shown} | fail |") and "&lt;b>bold&lt;/b> cause" in row
    assert "> **Note:** &lt;iframe src=x>" in text
    assert not re.search(r"<[A-Za-z/!?]", text)  # no tag, comment or declaration anywhere


# -- name maps -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "rules, complaint",
    [
        (
            [(r"^weight$", "weight"), (r"^wieght$", "bias")],
            r"name_map rule 2 \('\^wieght\$', 'bias'\) maps nothing: it matches no PyTorch name \(they are weight, bias\)",
        ),
        (
            [(r".*", r"\g<0>"), (r"^bias$", "bias")],
            r"name_map rule 2 \('\^bias\$', 'bias'\) maps nothing: every name it matches \(bias\) is taken by an earlier rule",
        ),
        ([(r"(weight", "weight")], r"name_map rule 1 \('\(weight', 'weight'\): not a regular expression"),
        ([(r"^weight$", "weight", "extra")], r"name_map rule 1 .*: a rule is a \(regex, replacement\) pair of strings"),
        ([(r"^(weight)$", r"\2")], r"name_map rule 1 \('\^\(weight\)\$', '\\\\2'\): bad replacement"),
    ],
)
def test_a_regex_name_map_rule_that_does_nothing_or_cannot_work_is_refused(rules, complaint):
    with pytest.raises(ParityUsageError, match=complaint):
        parity.transfer_weights(torch.nn.Linear(3, 2), msnn.Dense(3, 2), name_map=rules)


# -- never executed ---------------------------------------------------------------------------------------


class _Payload:
    """Unpickling this runs ``marker.touch()``: a stand-in for any code a file could carry."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def test_a_pickle_that_runs_code_is_refused_in_every_format_and_runs_nothing(tmp_path):
    import pickle

    marker = tmp_path / "ran"
    torch.save({"weight": _Payload(marker)}, tmp_path / "evil.pth")
    np.save(tmp_path / "evil.npy", np.array([_Payload(marker)], dtype=object), allow_pickle=True)
    (tmp_path / "ts" / "torch_api_dump").mkdir(parents=True)
    np.save(tmp_path / "ts" / "torch_api_dump" / "x.npy", np.ones(2, np.float32))
    (tmp_path / "ts" / "torch_api_dump_info.pkl").write_bytes(pickle.dumps(_Payload(marker)))
    assert not marker.exists()
    with pytest.raises(ParityUsageError, match=r"evil\.pth: torch\.load\(weights_only=True\) cannot read it"):
        parity.convert_checkpoint(tmp_path / "evil.pth", msnn.Dense(3, 2), tmp_path / "out.ckpt")
    with pytest.raises(ParityUsageError, match=r"evil\.npy: numpy cannot read it as \.npy"):
        parity.compare_dumps(tmp_path / "evil.npy", tmp_path / "ts" / "torch_api_dump" / "x.npy")
    with pytest.raises(ParityUsageError, match=r"torch_api_dump_info\.pkl:1: not UTF-8 text"):
        parity.compare_dumps(tmp_path / "ts", tmp_path / "ts" / "torch_api_dump" / "x.npy")
    assert not marker.exists() and not (tmp_path / "out.ckpt").exists()


def test_scan_reads_code_and_never_runs_it(tmp_path):
    from parity.tools.scan.scanner import scan

    marker = tmp_path / "ran"
    (tmp_path / "evil.py").write_text(f"import torch\nopen({str(marker)!r}, 'w')\nx = torch.zeros(1)\n")
    report = scan(tmp_path / "evil.py")
    assert any(api.api == "torch.zeros" for api in report.apis) and not marker.exists()


# -- name map and tolerance files --------------------------------------------------------------------------


def test_name_map_and_tolerance_files_that_are_fifos_or_not_utf8_are_refused(tmp_path):
    from parity.tools.dumps.cli import load_tolerance
    from parity.tools.dumps.names import load_pairs

    os.mkfifo(tmp_path / "names.csv")
    with pytest.raises(ParityUsageError, match=r"name map .*names\.csv: a FIFO \(named pipe\), not a regular file"):
        load_pairs(tmp_path / "names.csv")
    (tmp_path / "names.json").write_bytes(b'[["a", "b"],\n ["\xff", "c"]]')
    with pytest.raises(ParityUsageError, match=r"name map .*names\.json:2: not UTF-8 text \(byte 0xff at column 4\)"):
        load_pairs(tmp_path / "names.json")
    (tmp_path / "tol.toml").write_bytes(b"rtol = 1e-3\natol = \xfe\n")
    with pytest.raises(ParityUsageError, match=r"--tolerance .*tol\.toml:2: not UTF-8 text"):
        load_tolerance(tmp_path / "tol.toml")
    (tmp_path / "deep.json").write_text("[" * 100_000)
    with pytest.raises(ParityUsageError, match=r"name map .*deep\.json: cannot parse it"):
        load_pairs(tmp_path / "deep.json")
