"""parity.check_data_parallel: a model trained on each global batch in one process and across two
workers (MindSpore under msrun with mccl, PyTorch over gloo), four runs compared step by step.

The workers are separate processes: they import the factories below as ``test_data_parallel:<name>``
(this folder is on the import path they inherit). Three tests launch real workers (about 35 s each
on a loaded 2-core machine, most of it MindSpore's import and cluster start in three processes);
the rest run no worker.
"""

from __future__ import annotations

import os
import tempfile

import numpy as np
import pytest
import torch

import parity
from parity.engine.data_parallel import launch
from parity.engine.data_parallel.result import PAIRS, RUNS, disagreeing
from parity.engine.data_parallel.run import shard_findings
from parity.engine.data_parallel.worker import row_keys, strided

MISSING = launch.missing_launchers()
needs_launchers = pytest.mark.skipif(bool(MISSING), reason="; ".join(MISSING))

BATCHES = [(parity.randn((8, 6)), parity.randint((8,), 0, 3))]
TRAINING = {"loss": torch.nn.CrossEntropyLoss(), "optimizer": lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9)}
# Adam's first steps follow the sign of each gradient: a gradient at rounding level (the bias before a
# batch norm, which the norm takes out again) becomes a parameter difference the size of lr.
ADAM = {"loss": torch.nn.CrossEntropyLoss(), "optimizer": lambda p: torch.optim.Adam(p, lr=1e-2)}


def mlp():
    return torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3))


def bn_mlp():
    return torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.BatchNorm1d(8), torch.nn.ReLU(), torch.nn.Linear(8, 3))


def full_batch_on_worker_1(rank, world, rows):
    """A broken data pipeline: worker 1 forgets to shard."""
    return range(rows) if rank == 1 else strided(rank, world, rows)


def torch_conv():
    return torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.Flatten(), torch.nn.Linear(16, 3))


def mint_conv():
    import mindspore

    return mindspore.nn.SequentialCell(
        mindspore.mint.nn.Conv2d(3, 4, 3), mindspore.nn.Flatten(), mindspore.nn.Dense(16, 3)
    )


def failing_on_worker_1(rank, world, rows):
    if rank == 1:
        raise KeyError("worker 1 has no shard")
    return strided(rank, world, rows)


@pytest.fixture
def job_folder(tmp_path, monkeypatch):
    """Job folders (msrun's logs included) under tmp_path; afterwards none is left, no process of
    them runs, and the current folder gained nothing. (torch puts its own cache folder there too.)"""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    before = set(os.listdir())
    yield tmp_path
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith("parity-dp-")] == []
    assert set(os.listdir()) == before
    assert _processes_naming(str(tmp_path)) == []


def _processes_naming(path: str):
    found = []
    for pid in (int(n) for n in os.listdir("/proc") if n.isdigit()):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                if path.encode() in handle.read():
                    found.append(pid)
        except OSError:
            pass
    return found


@needs_launchers
def test_two_workers_train_as_one_process(job_folder):
    result = parity.check_data_parallel(parity.TRANSLATE, mlp, BATCHES, **TRAINING)
    assert result.passed, result
    assert [s.step for s in result.steps] == [1, 2]
    assert list(result[1].pairs) == [f"{a} vs {b}" for a, b in PAIRS]
    for step in result.steps:
        for pair, compared in step.pairs.items():
            kinds = [c.kind for c in compared]
            assert kinds == ["loss"] + ["param grad"] * 4 + ["parameter"] * 4, pair
        # the mean of the shards' mean losses is the global batch's mean loss
        assert step.losses["MindSpore parallel"] == pytest.approx(step.losses["MindSpore single"], rel=1e-6)
        assert step.losses["PyTorch parallel"] == pytest.approx(step.losses["PyTorch single"], rel=1e-6)
    assert result[2].losses["PyTorch single"] < result[1].losses["PyTorch single"]
    assert str(result).startswith("ok: mindspore SequentialCell <-> torch Sequential (2 workers, 2 steps)")
    assert {"MindSpore workers", "PyTorch workers", "total"} <= set(result.seconds)
    # every tensor well within its tolerance: no rounding envelope was drawn
    assert all(c.envelope is None for c in result.comparisons)
    assert "rounding envelope" not in result.seconds


@needs_launchers
def test_batch_norm_under_adam_passes_inside_the_rounding_envelope(job_folder):
    result = parity.check_data_parallel(parity.TRANSLATE, bn_mlp, BATCHES, **ADAM)
    assert result.passed, result
    assert list(result[1].pairs) == [f"{a} vs {b}" for a, b in (PAIRS[0], PAIRS[3])]
    for pair in result[1].pairs:
        bias = next(c for c in result[1].pairs[pair] if c.kind == "parameter" and c.name == "0.bias")
        assert bias.envelope is not None and bias.envelope.tolerance_margin > 10, (pair, bias)
        assert bias.margin <= 1.0
    assert result.noise_judged and "noise-judged (beyond the tolerance, inside PyTorch's rounding envelope)" in str(
        result
    )
    assert "rounding envelope" in result.seconds


@needs_launchers
def test_a_worker_on_the_full_batch_is_named(job_folder):
    with pytest.raises(parity.ParityMismatch) as caught:
        parity.check_data_parallel(parity.TRANSLATE, mlp, BATCHES, shard=(None, full_batch_on_worker_1), **ADAM)
    message, result = str(caught.value), caught.value.result
    assert message.startswith(
        "Data parallelism did not split the global batch: PyTorch worker 1 trained on the "
        "full batch (8 rows) at step 1, not its shard\n"
    )
    assert "Disagree:   PyTorch parallel disagrees with the other three runs" in message
    assert "Divergence: first at step 1 of 2, PyTorch parallel vs PyTorch single, loss" in message
    assert result.shard_findings == ["PyTorch worker 1 trained on the full batch (8 rows) at step 1, not its shard"]
    assert result.failing_pairs == ["PyTorch parallel vs PyTorch single", "MindSpore parallel vs PyTorch parallel"]
    assert caught.value.likely_causes == result.shard_findings
    # judged against PyTorch's rounding envelope too, and far outside it
    step, pair, first = result.first_failure
    assert first.envelope is not None and first.envelope.margin > 100
    assert "Rounding envelope: 1 elements outside it" in message


@needs_launchers
def test_a_worker_that_raises_is_a_usage_error_with_its_message(job_folder):
    expected = (
        r"a PyTorch worker failed\.\nPyTorch worker 1:\n    KeyError: 'worker 1 has no shard'\n"
        r"(      at .*\n)*      at .*test_data_parallel"
    )
    with pytest.raises(parity.ParityUsageError, match=expected):
        parity.check_data_parallel(parity.TRANSLATE, mlp, BATCHES, shard=(None, failing_on_worker_1), **TRAINING)


@needs_launchers
def test_a_layer_known_not_to_run_on_cpu_is_refused_and_the_started_workers_stopped(job_folder):
    batches = [(parity.randn((4, 3, 4, 4)), parity.randint((4,), 0, 3))]
    with pytest.raises(
        parity.ParityUnsupported,
        match=r"'0': mindspore.mint.nn.Conv2d has no CPU kernel .*known "
        r"mismatch mint-conv2d-cpu-unsupported, runs on Ascend",
    ):
        parity.check_data_parallel(mint_conv, torch_conv, batches, **TRAINING)


def _single_runs(job_dir, *, ms_lr=None, ms_loss=None):
    """bn_mlp trained under Adam in this process only, as check_data_parallel's single-process runs
    (PyTorch's as given; MindSpore's with ``ms_lr`` or ``ms_loss`` instead, where given), and both
    steps of MindSpore single vs PyTorch single judged as the check judges them."""
    import pickle

    from parity.engine.data_parallel import run as distributed
    from parity.engine.data_parallel import worker
    from parity.engine.settings import Settings
    from parity.judge.tolerance import ToleranceSpec

    job, arrays, _ = distributed._check_call(
        parity.TRANSLATE, bn_mlp, BATCHES, ADAM["loss"], ADAM["optimizer"], 2, 2, None, None, (), 1234, "CPU"
    )
    _, built = distributed._write_job(str(job_dir), job, arrays, ADAM["optimizer"])
    distributed._single(str(job_dir), "torch")
    if ms_lr is not None:
        job["optimizer"]["groups"][0][1]["lr"] = ms_lr
    job["loss"] = ms_loss if ms_loss is not None else job["loss"]
    with open(job_dir / worker.JOB, "wb") as handle:
        pickle.dump(job, handle)
    distributed._single(str(job_dir), "mindspore")
    runs = {
        f"{launch.LABELS[fw]} single": distributed._load(worker.result_path(str(job_dir), fw, False, 0))
        for fw in worker.FRAMEWORKS
    }
    chain = (ToleranceSpec.parse(None, source="test"),) + Settings().tolerances
    close, steps = [], []
    for step in range(2):
        records = {run: distributed._record(found, step) for run, found in runs.items()}
        steps.append(distributed._compare_step(records, (PAIRS[0],), chain, step, close)[" vs ".join(PAIRS[0])])
    before = max(c.margin for group in steps for c in group)
    distributed._envelope_verdicts(close, built, ADAM["loss"], ADAM["optimizer"], arrays, 2, 1234, "CPU")
    return before, [c for group in steps for c in group]


def test_the_single_runs_of_batch_norm_under_adam_agree_inside_the_rounding_envelope(tmp_path):
    before, compared = _single_runs(tmp_path)
    assert before > 10  # by tolerance alone, the bias before the batch norm is far off
    assert all(c.passed for c in compared), [c for c in compared if not c.passed]
    assert any(c.noise_judged and c.name == "0.bias" for c in compared)


@pytest.mark.parametrize(
    "fault",
    [{"ms_lr": 1.1e-2}, {"ms_loss": torch.nn.CrossEntropyLoss(label_smoothing=0.1)}],
    ids=["wrong-lr", "wrong-loss"],
)
def test_a_real_fault_stays_outside_the_rounding_envelope(tmp_path, fault):
    _, compared = _single_runs(tmp_path, **fault)
    failed = [c for c in compared if not c.passed]
    assert failed and all(c.envelope is not None for c in failed)
    assert max(c.envelope.margin for c in failed) > 10


def test_missing_launcher_is_unsupported(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(launch, "_interpreter_scripts", lambda: str(tmp_path))
    with pytest.raises(parity.ParityUnsupported, match=r"cannot run here: MindSpore's launcher msrun is neither in "):
        parity.check_data_parallel(parity.TRANSLATE, mlp, BATCHES, **TRAINING)


def test_missing_gloo_is_unsupported(monkeypatch):
    monkeypatch.setattr(torch.distributed, "is_gloo_available", lambda: False)
    with pytest.raises(parity.ParityUnsupported, match=r"no gloo collective backend"):
        parity.check_data_parallel(parity.TRANSLATE, mlp, BATCHES, **TRAINING)


def test_factories_must_be_importable_by_the_workers():
    with pytest.raises(
        parity.ParityUsageError,
        match=r"torch_factory must be importable by the workers, which are "
        r"separate processes: .* got .*<locals>.<lambda>",
    ):
        parity.check_data_parallel(parity.TRANSLATE, lambda: mlp(), BATCHES, **TRAINING)


def test_ignore_is_a_list_of_names_and_reaches_every_run_s_weight_map(tmp_path):
    from parity.engine.data_parallel import run as distributed

    with pytest.raises(
        parity.ParityUsageError, match=r"ignore must be a list of tensor names or patterns, got '0.bias'"
    ):
        parity.check_data_parallel(parity.TRANSLATE, mlp, BATCHES, ignore="0.bias", **TRAINING)
    job, arrays, _ = distributed._check_call(
        parity.TRANSLATE,
        mlp,
        BATCHES,
        TRAINING["loss"],
        TRAINING["optimizer"],
        2,
        2,
        None,
        None,
        ("no_such.*",),
        1,
        "CPU",
    )
    with pytest.raises(parity.ParityUsageError, match=r"ignore=\['no_such\.\*'\]: 'no_such\.\*' names no tensor"):
        distributed._write_job(str(tmp_path), job, arrays, TRAINING["optimizer"])  # before any worker starts


def test_a_batch_the_workers_cannot_share_equally_is_refused():
    batches = [(parity.randn((7, 6)), parity.randint((7,), 0, 3))]
    with pytest.raises(parity.ParityUsageError, match=r"step 1 has 7 rows, which 2 workers cannot share equally"):
        parity.check_data_parallel(parity.TRANSLATE, mlp, batches, **TRAINING)


@pytest.mark.parametrize("run", RUNS)
def test_one_run_off_fails_exactly_its_two_pairs(run):
    failing = [p for p in PAIRS if run in p]
    assert disagreeing(failing, PAIRS) == f"{run} disagrees with the other three runs"


def test_other_patterns_of_failing_pairs():
    assert disagreeing([], PAIRS) == ""
    assert disagreeing([PAIRS[1], PAIRS[2]], PAIRS) == (
        "the two parallel runs agree with each other, not with the single-process runs"
    )
    assert disagreeing([PAIRS[0], PAIRS[3]], PAIRS) == (
        "MindSpore and PyTorch disagree, in one process and in parallel alike"
    )
    assert disagreeing([PAIRS[0]], PAIRS) == "these pairs disagree: MindSpore single vs PyTorch single"


def test_shard_findings_name_what_each_worker_trained_on():
    rows = np.arange(16, dtype=np.float32).reshape(8, 2)
    keys = row_keys([rows])
    shards = [keys[strided(r, 2, 8)] for r in range(2)]
    assert shard_findings("MindSpore", keys, shards, 1) == []
    assert shard_findings("MindSpore", keys, [shards[0], keys], 2) == [
        "MindSpore worker 1 trained on the full batch (8 rows) at step 2, not its shard"
    ]
    assert shard_findings("PyTorch", keys, [keys[:5], keys[4:]], 1) == [
        "PyTorch workers trained on rows [4] of step 1 more than once between them"
    ]
    assert shard_findings("PyTorch", keys, [keys[:3], keys[4:]], 1) == [
        "PyTorch workers left rows [3] of step 1 untrained"
    ]
    assert shard_findings("PyTorch", keys, [keys[:5], keys[5:]], 1) == [
        "PyTorch workers trained on shards of unequal size [5, 3] at step 1: the mean of their gradients weights "
        "their rows unequally"
    ]
    strangers = row_keys([rows + 100.0])[:4]
    assert shard_findings("PyTorch", keys, [shards[0], strangers], 1) == [
        "PyTorch worker 1 trained on 4 rows that are not in the global batch of step 1"
    ]


def _aborting_workers(job_dir, results):
    """A PyTorch launch whose two 'workers' abort (SIGABRT, as gloo's teardown can), rank r having
    written its results first when ``results[r]``."""
    import sys

    from parity.engine.data_parallel import worker

    for rank, written in enumerate(results):
        if written:
            np.savez(worker.result_path(str(job_dir), "torch", True, rank), loss=np.zeros(1))
    run = launch.Launch("torch", str(job_dir), 2, timeout=60)
    run.logs = [str(job_dir / f"torch-{r}.log") for r in range(2)]
    for log in run.logs:
        run.processes.append(
            run._popen(
                [sys.executable, "-c", "import os; print('terminate called'); os.abort()"], dict(os.environ), log
            )
        )
    for process in run.processes:
        process.wait(timeout=60)
    return run


def test_a_torch_worker_that_aborts_after_writing_its_results_has_lost_nothing(tmp_path):
    assert _aborting_workers(tmp_path, [True, True]).done()


def test_a_torch_worker_that_aborts_before_its_results_fails_the_check_showing_its_log(tmp_path):
    with pytest.raises(parity.ParityUsageError, match=r"a PyTorch worker failed.\nEnd of torch-1.log:\n    terminate"):
        _aborting_workers(tmp_path, [True, False]).done()


def test_the_workers_import_path_holds_no_package_folder(tmp_path, monkeypatch):
    """MindSpore's amp O1 rewrite leaves mindspore/nn/layer on sys.path; first on a worker's
    PYTHONPATH its math.py stood for `math`, and every MindSpore worker failed to start."""
    import mindspore.nn

    layer = os.path.dirname(mindspore.nn.layer.__file__)
    monkeypatch.setattr("sys.path", [*__import__("sys").path, layer])
    paths = launch.environment(str(tmp_path))["PYTHONPATH"].split(os.pathsep)
    assert layer not in paths
    assert all(not os.path.isfile(os.path.join(p, "__init__.py")) for p in paths)
    assert os.path.dirname(os.path.dirname(parity.__file__)) in paths  # the roots stay
