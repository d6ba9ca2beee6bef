"""Hostile inputs to the readers of many files, ``parity compare-dumps`` and ``parity scan``:
thousands of files under a small descriptor limit, FIFOs and links to devices named like tensor or
source files, links that lead nowhere or cannot be followed, oversized sources. Promises in
docs/reliability.md ("Files": bounded reads)."""

import os
import resource
import threading

import numpy as np
import pytest

import parity
from parity import ParityUsageError
from parity.tools.scan import scanner


def within(seconds, call):
    """``call()``'s result, or a failure if it has not returned within ``seconds`` (a hang)."""
    box = {}

    def run():
        try:
            box["value"] = call()
        except BaseException as exc:  # handed to the test's thread
            box["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still running after {seconds} s: it waits on something it should refuse"
    if "error" in box:
        raise box["error"]
    return box["value"]


def dump(folder, count=3, dtype=np.float32, start=0):
    folder.mkdir(exist_ok=True)
    for i in range(start, start + count):
        np.save(folder / f"layer{i}.npy", np.full((2,), i, dtype))
    return folder


@pytest.fixture
def few_descriptors():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(128, hard), hard))
    yield 128
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


# -- compare-dumps: descriptors -------------------------------------------------------------------------


def test_hundreds_of_files_each_side_read_under_a_small_descriptor_limit(tmp_path, few_descriptors):
    a, b = dump(tmp_path / "a", 400), dump(tmp_path / "b", 400)
    result = parity.compare_dumps(a, b)
    assert len(result.rows) == 400 and result.passed


def test_a_corrupt_file_among_many_is_the_one_blamed(tmp_path, few_descriptors):
    a, b = dump(tmp_path / "a", 300), dump(tmp_path / "b", 300)
    (b / "layer217.npy").write_bytes(b"\x93NUMPY garbage")
    with pytest.raises(ParityUsageError, match=r"B .*layer217\.npy: numpy cannot read it as \.npy"):
        parity.compare_dumps(a, b)


# -- compare-dumps: what is not a regular file ----------------------------------------------------------


def test_a_fifo_given_as_a_side_is_refused_without_waiting(tmp_path):
    os.mkfifo(tmp_path / "pipe.npy")
    with pytest.raises(ParityUsageError, match=r"A .*pipe\.npy: a FIFO \(named pipe\), not a regular file"):
        within(10, lambda: parity.compare_dumps(tmp_path / "pipe.npy", dump(tmp_path / "b")))


def test_a_link_to_dev_zero_given_as_a_side_is_refused(tmp_path):
    (tmp_path / "zero.npy").symlink_to("/dev/zero")
    with pytest.raises(ParityUsageError, match=r"B .*zero\.npy: a character device, not a regular file"):
        within(10, lambda: parity.compare_dumps(dump(tmp_path / "a"), tmp_path / "zero.npy"))


def test_fifos_devices_and_broken_links_in_a_folder_are_noted_not_read(tmp_path):
    a, b = dump(tmp_path / "a"), dump(tmp_path / "b")
    os.mkfifo(b / "layer7.npy")
    (b / "layer8.npy").symlink_to("/dev/zero")
    (b / "layer9.pth").symlink_to(tmp_path / "gone.pth")
    result = within(10, lambda: parity.compare_dumps(a, b))
    assert len(result.rows) == 3 and result.passed
    text = str(result)
    assert "Note (B): layer7.npy: a FIFO (named pipe), not a regular file; not read" in text
    assert "Note (B): layer8.npy: a link to /dev/zero, a character device, not a regular file; not read" in text
    assert f"Note (B): layer9.pth: a link to {tmp_path / 'gone.pth'} that cannot be followed (No such file" in text


def test_a_broken_link_given_as_a_side_says_where_it_points(tmp_path):
    (tmp_path / "a.npy").symlink_to(tmp_path / "elsewhere.npy")
    with pytest.raises(ParityUsageError, match=r"a\.npy: a link to .*elsewhere\.npy, which does not exist"):
        parity.compare_dumps(tmp_path / "a.npy", dump(tmp_path / "b"))


def test_a_link_whose_target_cannot_be_read_is_noted(tmp_path, unprivileged):
    dump(tmp_path / "a")
    b = dump(tmp_path / "b")
    locked = tmp_path / "locked"
    locked.mkdir()
    np.save(locked / "hidden.npy", np.zeros(2, np.float32))
    locked.chmod(0o000)
    (b / "layer5.npy").symlink_to(locked / "hidden.npy")
    code = """if True:
        import json, parity
        print(json.dumps(str(parity.compare_dumps("a", "b"))))"""
    try:
        text = unprivileged(code, tmp_path)
    finally:
        locked.chmod(0o700)
    assert "Note (B): layer5.npy: a link to" in text and "that cannot be followed (Permission denied); not read" in text


# -- compare-dumps: what the text says --------------------------------------------------------------------


def test_dtypes_that_differ_are_said_in_the_text_when_the_values_agree(tmp_path):
    a, b = dump(tmp_path / "a", dtype=np.float32), dump(tmp_path / "b", dtype=np.float64)
    result = parity.compare_dumps(a, b)
    assert result.passed
    assert (
        "Dtypes differ: 3 pairs, A float32 vs B float64 (layer0, layer1, layer2); values compared as they are"
        in str(result)
    )


@pytest.mark.parametrize(
    "kind, reason",
    [
        ("npy", "B by default: neither side says its framework"),
        ("ckpt", "B by default: both sides are MindSpore's"),
        ("pth", "B by default: both sides are PyTorch's"),
    ],
)
def test_the_reference_reason_is_true_when_both_sides_are_alike(tmp_path, kind, reason):
    a, b = tmp_path / f"a.{kind}", tmp_path / f"b.{kind}"
    values = {"w": np.ones(2, np.float32)}
    if kind == "npy":
        np.save(a, values["w"]), np.save(b, values["w"])
    elif kind == "ckpt":
        import mindspore as ms

        for path in (a, b):
            ms.save_checkpoint([{"name": "w", "data": ms.Tensor(values["w"])}], str(path))
    else:
        import torch

        for path in (a, b):
            torch.save({"w": torch.ones(2)}, path)
    result = parity.compare_dumps(a, b)
    assert result.reference == "B" and result.reference_reason == reason
    assert f"Reference: B ({reason})" in str(result)


def test_the_reference_reason_when_one_side_is_known_to_be_mindspore(tmp_path):
    import mindspore as ms

    ms.save_checkpoint([{"name": "w", "data": ms.Tensor(np.ones(2, np.float32))}], str(tmp_path / "b.ckpt"))
    np.save(tmp_path / "w.npy", np.ones(2, np.float32))
    result = parity.compare_dumps(tmp_path / "w.npy", tmp_path / "b.ckpt")
    assert result.reference == "A" and result.reference_reason == "the side that is not MindSpore's; B is MindSpore's"


# -- scan ------------------------------------------------------------------------------------------------


def _project(tmp_path):
    root = tmp_path / "project"
    root.mkdir()
    (root / "model.py").write_text("import torch\nx = torch.relu(torch.ones(2))\n")
    return root


def test_scan_skips_a_fifo_and_a_link_to_dev_zero_named_py_and_says_why(tmp_path):
    root = _project(tmp_path)
    os.mkfifo(root / "pipe.py")
    (root / "zero.py").symlink_to("/dev/zero")
    report = within(20, lambda: scanner.scan(root))
    skipped = dict(report.skipped)
    assert skipped[str(root / "pipe.py")] == "a FIFO (named pipe), not a regular file; give a file"
    assert skipped[str(root / "zero.py")] == "a character device, not a regular file; give a file"
    assert any(api.api == "torch.relu" for api in report.apis)


def test_scan_refuses_a_fifo_given_by_name(tmp_path):
    os.mkfifo(tmp_path / "pipe.py")
    with pytest.raises(ParityUsageError, match=r"pipe\.py: a FIFO \(named pipe\), not a regular file"):
        within(10, lambda: scanner.scan(tmp_path / "pipe.py"))


def test_scan_skips_a_source_over_the_size_limit(tmp_path, monkeypatch):
    root = _project(tmp_path)
    (root / "generated.py").write_text("x = 1\n" * 100)
    monkeypatch.setattr(scanner, "SIZE_LIMIT", 200)
    report = scanner.scan(root)
    assert dict(report.skipped)[str(root / "generated.py")] == "600 bytes, over the limit of 200 bytes"


def test_scan_skips_an_unreadable_source_and_says_so(tmp_path, unprivileged):
    root = _project(tmp_path)
    (root / "secret.py").write_text("import torch\n")
    (root / "secret.py").chmod(0o000)
    code = """if True:
        import json
        from parity.tools.scan.scanner import scan
        print(json.dumps(dict(scan("project").skipped)))"""
    skipped = unprivileged(code, tmp_path)
    assert skipped == {"project/secret.py": "Permission denied"}


def test_a_bare_file_named_like_a_mindspore_parameter_decides_nothing(tmp_path):
    """Two folders of plain arrays, one holding a file named ``beta``: neither holds MindSpore's
    parameter names, and the reason says what decided (B by default), not that A has them."""
    a, b = tmp_path / "a", tmp_path / "b"
    for folder, names in ((a, ("beta", "alpha")), (b, ("gamma_x", "alpha"))):
        folder.mkdir()
        for name in names:
            np.save(folder / f"{name}.npy", np.ones(2, np.float32))
    result = parity.compare_dumps(a, b)
    assert result.reference == "B" and result.reference_reason == "B by default: neither side says its framework"


def test_mindspore_parameter_names_are_named_as_the_reason(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    for folder, leaf in ((a, "weight"), (b, "gamma")):
        folder.mkdir()
        np.save(folder / f"norm.{leaf}.npy", np.ones(2, np.float32))
    result = parity.compare_dumps(a, b)
    assert result.reference == "A"
    assert result.reference_reason == "B holds names only MindSpore gives its parameters ('norm.gamma'), A none"
    assert f"Reference: A ({result.reference_reason})" in str(result)
