"""Hostile inputs to ``parity convert``: planted links, read-only files and folders, signals, stale
leftovers, empty and wrong-kind files, and casts that lose values. What is promised is in
docs/reliability.md ("Files"); each test names the promise it holds to."""

import os
import signal
import stat
import threading
import time

import mindspore as ms
import numpy as np
import pytest
import torch
from mindspore import nn as msnn

import parity
from parity import ParityUsageError, files
from parity.tools.convert.checkpoint import ConversionError, cast_loss


def torch_linear(seed=0, dtype=torch.float32):
    torch.manual_seed(seed)
    return torch.nn.Linear(3, 2).to(dtype)


def save(module, path):
    torch.save(module.state_dict(), path)
    return path


def entries(folder):
    return sorted(p.name for p in folder.iterdir())


@pytest.fixture
def victim(tmp_path):
    """A file of the user's that no conversion may touch: its bytes and its mode are checked."""
    path = tmp_path / "precious.txt"
    path.write_text("do not touch")
    path.chmod(0o640)
    return path


def untouched(path):
    return path.read_text() == "do not touch" and stat.S_IMODE(path.stat().st_mode) == 0o640


# -- private temporaries -----------------------------------------------------------------------------


@pytest.mark.parametrize("dst_name", ["net.ckpt", "net.safetensors"])
def test_links_planted_at_guessable_names_are_never_followed(tmp_path, victim, dst_name):
    src = save(torch_linear(), tmp_path / "net.pth")
    stem, suffix = dst_name.split(".")
    planted = [f".{stem}.{pid}.partial.{suffix}" for pid in range(os.getpid() - 2, os.getpid() + 50)]
    planted += [f"{stem}.tmp", f".{stem}.{os.getpid()}.partial.tmp", f"{dst_name}.tmp"]
    for name in planted:
        (tmp_path / name).symlink_to(victim)
    report = parity.convert_checkpoint(src, msnn.Dense(3, 2), tmp_path / dst_name)
    assert report.written and report.verified == 2
    assert untouched(victim)
    assert all((tmp_path / name).is_symlink() for name in planted)
    assert entries(tmp_path) == sorted(planted + ["net.pth", dst_name, "precious.txt"])


def test_the_written_checkpoint_is_an_ordinary_file_and_converting_again_needs_no_force(tmp_path):
    src = save(torch_linear(), tmp_path / "net.pth")
    dst = tmp_path / "net.ckpt"
    parity.convert_checkpoint(src, msnn.Dense(3, 2), dst)
    mode = stat.S_IMODE(dst.stat().st_mode)
    assert mode & stat.S_IWUSR, f"MindSpore's read-only mode {oct(mode)} leaked to the destination"
    assert parity.convert_checkpoint(save(torch_linear(1), src), msnn.Dense(3, 2), dst).written


@pytest.mark.parametrize("dst_name", ["net.ckpt", "net.safetensors"])
def test_a_read_only_destination_is_replaced_only_with_force(tmp_path, dst_name):
    src = save(torch_linear(), tmp_path / "net.pth")
    dst = tmp_path / dst_name
    dst.write_bytes(b"the user's old file")
    dst.chmod(0o444)
    with pytest.raises(ParityUsageError, match="exists and is read-only; make it writable, or pass --force"):
        parity.convert_checkpoint(src, msnn.Dense(3, 2), dst)
    assert dst.read_bytes() == b"the user's old file"
    assert parity.convert_checkpoint(src, msnn.Dense(3, 2), dst, force=True).written
    assert dst.read_bytes() != b"the user's old file"


def test_the_command_line_refuses_a_read_only_destination_and_says_force(tmp_path, monkeypatch, capsys):
    from parity import cli

    monkeypatch.chdir(tmp_path)
    (tmp_path / "hostile_factory.py").write_text("import torch\ndef module():\n    return torch.nn.Linear(3, 2)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    ms.save_checkpoint(msnn.Dense(3, 2), str(tmp_path / "cell.ckpt"))
    (tmp_path / "out.pth").write_bytes(b"old")
    (tmp_path / "out.pth").chmod(0o400)
    assert cli.main(["convert", "cell.ckpt", "out.pth", "--module", "hostile_factory:module"]) == 2
    assert "out.pth: exists and is read-only" in capsys.readouterr().err
    assert cli.main(["convert", "cell.ckpt", "out.pth", "--module", "hostile_factory:module", "--force"]) == 0
    assert torch.load(tmp_path / "out.pth", weights_only=True).keys() == {"weight", "bias"}


@pytest.mark.parametrize("dst_name", ["folder.ckpt", "folder.pth"])
def test_a_destination_that_is_a_folder_is_refused(tmp_path, dst_name):
    (tmp_path / dst_name).mkdir()
    if dst_name.endswith(".ckpt"):
        src, model = save(torch_linear(), tmp_path / "net.pth"), msnn.Dense(3, 2)
    else:
        src, model = tmp_path / "cell.ckpt", torch_linear()
        ms.save_checkpoint(msnn.Dense(3, 2), str(src))
    with pytest.raises(ParityUsageError, match=f"{dst_name}: a folder; give the path of the file to write"):
        parity.convert_checkpoint(src, model, tmp_path / dst_name)
    assert entries(tmp_path / dst_name) == []


def test_a_read_only_folder_is_refused_clearly_in_every_format(tmp_path, unprivileged):
    ms.save_checkpoint(msnn.Dense(3, 2), str(tmp_path / "cell.ckpt"))
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    code = """if True:
        import json, torch, parity
        from parity import files
        found = {}
        for name in ("out.pth", "out.bin", "out.safetensors"):
            try:
                parity.convert_checkpoint("cell.ckpt", torch.nn.Linear(3, 2), "locked/" + name)
                found[name] = "written"
            except parity.ParityUsageError as exc:
                found[name] = str(exc)
        try:
            files.write_text("locked/page.html", "x", "--html")
        except parity.ParityUsageError as exc:
            found["page.html"] = str(exc)
        print(json.dumps(found))"""
    found = unprivileged(code, tmp_path)
    for name in ("out.pth", "out.bin", "out.safetensors", "page.html"):
        assert found[name].endswith(f"locked/{name}: the folder locked is not writable"), found
    assert entries(locked) == []


# -- signals and leftovers ---------------------------------------------------------------------------


@pytest.mark.parametrize("number, raised", [(signal.SIGTERM, SystemExit), (signal.SIGINT, KeyboardInterrupt)])
def test_a_signal_during_the_write_leaves_nothing_and_the_old_destination(tmp_path, monkeypatch, number, raised):
    from parity.backends import checkpoints

    if threading.current_thread() is not threading.main_thread():
        pytest.skip(
            "this runner calls tests outside the main thread, where no signal handler can be installed "
            "(the same case from outside: test_a_process_stopped_by_a_signal_removes_its_private_folder)"
        )

    ms.save_checkpoint(msnn.Dense(3, 2), str(tmp_path / "cell.ckpt"))
    dst = tmp_path / "out.pth"
    dst.write_bytes(b"yesterday's file")
    real = checkpoints.save_state_file

    def interrupted(arrays, path):
        real(arrays, path)
        os.kill(os.getpid(), number)  # delivered here, half-way: the file is written, not yet moved
        time.sleep(5)

    monkeypatch.setattr(checkpoints, "save_state_file", interrupted)
    before = signal.getsignal(number)
    with pytest.raises(raised):
        parity.convert_checkpoint(tmp_path / "cell.ckpt", torch_linear(), dst)
    assert signal.getsignal(number) is before
    assert entries(tmp_path) == ["cell.ckpt", "out.pth"] and dst.read_bytes() == b"yesterday's file"


_WRITER = """if True:
    import sys, time
    from pathlib import Path
    from parity import files
    with files.private_folder(Path(sys.argv[1]), "destination") as folder:
        (folder / "converted.ckpt").write_bytes(b"x" * 1_000_000)
        print(folder, flush=True)
        time.sleep(60)
"""


def _writer(tmp_path):
    """A process half-way through writing ``tmp_path/net.ckpt``, and its private folder."""
    import subprocess
    import sys

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, PYTHONPATH=root)
    child = subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(tmp_path / "net.ckpt")], stdout=subprocess.PIPE, text=True, env=env
    )
    return child, tmp_path / os.path.basename(child.stdout.readline().strip())


@pytest.mark.parametrize("number", [signal.SIGTERM, signal.SIGINT])
def test_a_process_stopped_by_a_signal_removes_its_private_folder(tmp_path, number):
    child, folder = _writer(tmp_path)
    assert folder.is_dir() and folder.name.startswith(files.PRIVATE_PREFIX)
    child.send_signal(number)
    assert child.wait(30) != 0
    child.stdout.close()
    assert entries(tmp_path) == []


def test_what_kill_9_leaves_is_one_private_folder_which_a_later_run_removes(tmp_path, monkeypatch, victim):
    child, folder = _writer(tmp_path)
    child.kill()
    child.wait(30)
    child.stdout.close()
    assert entries(tmp_path) == sorted([folder.name, "precious.txt"])  # the destination was never touched
    monkeypatch.setattr(files, "_STARTED", time.time() + 1)  # a run that starts after the kill
    src = save(torch_linear(), tmp_path / "net.pth")
    assert parity.convert_checkpoint(src, msnn.Dense(3, 2), tmp_path / "net.ckpt").written
    assert entries(tmp_path) == ["net.ckpt", "net.pth", "precious.txt"] and untouched(victim)


def _left_by_killed_process(folder, pid, age=3600):
    path = folder / f"{files.PRIVATE_PREFIX}{pid}-abcd1234{files.PRIVATE_SUFFIX}"
    path.mkdir()
    (path / "converted.ckpt").write_bytes(b"x" * 1000)
    old = time.time() - age
    os.utime(path, (old, old))
    return path


def _dead_pid():
    pid = 4_000_000  # above Linux's default pid_max; checked
    while True:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return pid
        except PermissionError:
            pass
        pid -= 1


def test_what_a_killed_conversion_left_is_removed_by_the_next_and_nothing_else(tmp_path, victim):
    dead = _dead_pid()
    stale = _left_by_killed_process(tmp_path, dead)
    living = _left_by_killed_process(tmp_path, os.getppid())  # its writer still runs: kept
    fresh = _left_by_killed_process(tmp_path, dead - 1, age=-60)  # changed after this process started: kept
    lookalike = tmp_path / f"{files.PRIVATE_PREFIX}{dead}-abcd1234{files.PRIVATE_SUFFIX}.ckpt"
    lookalike.write_text("a user's file with a similar name")  # not the pattern: kept
    linked = tmp_path / f"{files.PRIVATE_PREFIX}{dead - 2}-efgh5678{files.PRIVATE_SUFFIX}"
    linked.symlink_to(tmp_path)  # a link, not a folder: kept, never followed
    user_folder = tmp_path / f".parity-{dead}-abcd1234"  # no suffix: not the pattern
    user_folder.mkdir()
    src = save(torch_linear(), tmp_path / "net.pth")
    assert parity.convert_checkpoint(src, msnn.Dense(3, 2), tmp_path / "net.ckpt").written
    assert not stale.exists()
    assert living.is_dir() and fresh.is_dir() and lookalike.is_file() and linked.is_symlink() and user_folder.is_dir()
    assert untouched(victim)


def test_stale_folders_of_another_user_are_kept(tmp_path, monkeypatch):
    stale = _left_by_killed_process(tmp_path, _dead_pid())
    monkeypatch.setattr(os, "geteuid", lambda: os.stat(stale).st_uid + 1)
    assert files.remove_stale(tmp_path) == [] and stale.is_dir()


# -- sources -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["empty.ckpt", "empty.safetensors"])
def test_an_empty_mindspore_checkpoint_says_empty(tmp_path, name):
    (tmp_path / name).write_bytes(b"")
    with pytest.raises(ParityUsageError, match=f"{name}: an empty file, not a checkpoint"):
        parity.convert_checkpoint(tmp_path / name, torch_linear(), tmp_path / "out.pth")
    assert entries(tmp_path) == [name]


def test_an_empty_pytorch_file_and_a_fifo_source_are_refused(tmp_path):
    (tmp_path / "empty.pth").write_bytes(b"")
    with pytest.raises(ParityUsageError, match="empty.pth: an empty file"):
        parity.convert_checkpoint(tmp_path / "empty.pth", msnn.Dense(3, 2), tmp_path / "out.ckpt")
    os.mkfifo(tmp_path / "pipe.pth")
    with pytest.raises(ParityUsageError, match=r"pipe.pth: a FIFO \(named pipe\), not a regular file"):
        parity.convert_checkpoint(tmp_path / "pipe.pth", msnn.Dense(3, 2), tmp_path / "out.ckpt")
    assert not (tmp_path / "out.ckpt").exists()


# -- casts -------------------------------------------------------------------------------------------


def _with(tensors, path):
    torch.save(tensors, path)
    return path


def test_a_float64_weight_that_overflows_float32_is_refused_and_nothing_written(tmp_path):
    weight = torch.full((2, 3), 1e300, dtype=torch.float64)
    src = _with({"weight": weight, "bias": torch.zeros(2, dtype=torch.float64)}, tmp_path / "huge.pth")
    with pytest.raises(ConversionError) as caught:
        parity.convert_checkpoint(src, msnn.Dense(3, 2), tmp_path / "out.ckpt")
    text = str(caught.value)
    assert "weight float64 -> float32: 6 of 6 finite values become Inf (largest magnitude 1e+300" in text
    assert "--allow-cast" in text and not (tmp_path / "out.ckpt").exists()


def test_allowed_lossy_casts_are_never_called_bit_identical(tmp_path):
    src = _with(
        {"weight": torch.full((2, 3), 1e300, dtype=torch.float64), "bias": torch.zeros(2, dtype=torch.float64)},
        tmp_path / "huge.pth",
    )
    report = parity.convert_checkpoint(src, msnn.Dense(3, 2), tmp_path / "out.ckpt", allow_cast=True)
    text = str(report)
    assert report.written and report.lossy == 1
    assert "1/2 tensors converted and verified bit-identical" in text
    assert "1 more cast with loss (allow_cast) and verified only as cast: not the source's values" in text
    assert "LOST: weight float64 -> float32: 6 of 6 finite values become Inf" in text


def test_an_integer_tensor_into_a_float_parameter_is_refused(tmp_path):
    src = _with({"weight": torch.randint(0, 2**31, (2, 3)), "bias": torch.zeros(2)}, tmp_path / "ids.pth")
    with pytest.raises(
        ConversionError, match="weight int64 -> float32: a cast of integer values into a floating-point tensor"
    ):
        parity.convert_checkpoint(src, msnn.Dense(3, 2), tmp_path / "out.ckpt")


def test_rounding_to_a_narrower_float_is_allowed_and_said(tmp_path):
    src = _with(
        {"weight": torch.full((2, 3), 0.1, dtype=torch.float64), "bias": torch.zeros(2, dtype=torch.float64)},
        tmp_path / "tenths.pth",
    )
    report = parity.convert_checkpoint(src, msnn.Dense(3, 2), tmp_path / "out.ckpt")
    assert report.lossy == 0 and "rounded: weight float64 -> float32: 6 of 6 values rounded" in str(report)


@pytest.mark.parametrize(
    "values, dtype, kind, said",
    [
        (np.array([1e-30, 1.0], np.float32), np.float16, "lossy", "1 of 2 non-zero values become 0"),
        (np.array([70000.0], np.float32), np.float16, "lossy", "1 of 1 finite values become Inf"),
        (np.array([300], np.int64), np.int8, "lossy", "1 of 1 values do not fit int8 and wrap around"),
        (np.array([1.5], np.float32), np.int32, "lossy", "a cast of floating-point values into a integer tensor"),
        (np.array([np.inf, np.nan, 2.0], np.float64), np.float32, "exact", ""),
        (np.array([3], np.int32), np.int64, "exact", ""),
    ],
)
def test_cast_loss_names_what_would_be_lost(values, dtype, kind, said):
    found_kind, found = cast_loss(values, np.dtype(dtype))
    assert found_kind == kind and said in found
