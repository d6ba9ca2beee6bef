"""One run of a data-parallel check (:mod:`parity.engine.data_parallel.run`): ``python -m parity.engine.data_parallel.worker
JOB_DIR mindspore|torch`` in a worker process, or :func:`run` in the caller's process for the
single-process runs.

Every run builds the model from the job's factories, loads PyTorch's initial weights from the job
folder (MindSpore's through the weight map), takes its rows of each global batch and trains. It
writes, per step, the loss, the gradient the optimizer applied, the parameters after the update,
the buffers and a key per row it trained on, as ``<framework>-<single|parallel>-<rank>.npz``.

msrun starts the command once per worker and once more as its scheduler (``MS_ROLE=MS_SCHED``),
which spends its life inside ``mindspore.communication.init``. PyTorch workers are started by
:mod:`parity.engine.data_parallel.run` with ``RANK`` and ``WORLD_SIZE`` and meet through a file store in the
job folder.
"""

from __future__ import annotations

import datetime
import hashlib
import inspect
import os
import pickle
import socket
import sys
import time
import traceback
from typing import Dict, List, Sequence

import mindspore as ms
import numpy as np
import torch.distributed as dist
from mindspore import communication, nn
from torch.nn.parallel import DistributedDataParallel

from ...backends import mindspore as msb
from ...backends import torch as tb
from ...errors import ParityUsageError
from ...translation import translate
from ...weights.layouts import by_torch_name, torch_layout
from ...weights.transfer import copy_weights
from ..compared import buffers_of
from ..factories import TRANSLATE, resolve
from ..inputs import Inputs
from ..pairing import map_pair_weights
from ..training.optimizers import Optimizers, losses_of

JOB = "job.pkl"
ARRAYS = "arrays.npz"
FRAMEWORKS = ("mindspore", "torch")


def result_path(job_dir: str, framework: str, parallel: bool, rank: int) -> str:
    return os.path.join(job_dir, f"{framework}-{'parallel' if parallel else 'single'}-{rank}.npz")


def error_path(job_dir: str, framework: str, rank: int) -> str:
    return os.path.join(job_dir, f"error-{framework}-{rank}.txt")


def pid_path(job_dir: str, framework: str, pid: int) -> str:
    return os.path.join(job_dir, f"pid-{framework}-{pid}")


def strided(rank: int, world: int, rows: int) -> List[int]:
    """The default shard: rows ``rank, rank + world, ...``, as ``torch.utils.data.DistributedSampler
    (shuffle=False)`` deals them."""
    return list(range(rank, rows, world))


def row_keys(arrays: Sequence[np.ndarray]) -> np.ndarray:
    """A 64-bit key per row (leading index) of ``arrays`` taken together: the rows a run trained on,
    recognisable in the global batch."""
    rows = arrays[0].shape[0]
    keys = np.empty(rows, np.uint64)
    for i in range(rows):
        digest = hashlib.blake2b(digest_size=8)
        for array in arrays:
            digest.update(np.ascontiguousarray(array[i]).tobytes())
        keys[i] = int.from_bytes(digest.digest(), "little")
    return keys


def batch_arrays(arrays, step: int) -> Dict[str, np.ndarray]:
    """Step ``step``'s global batch as written by :mod:`parity.engine.data_parallel.run`: ``arg<i>``, ``kw:<name>``
    and ``target``, in that order."""
    prefix = f"batch/{step}/"
    return {key[len(prefix) :]: arrays[key] for key in arrays if key.startswith(prefix)}


def _shard(job, framework: str, rank: int, world: int, rows: int) -> np.ndarray:
    path = job["shard"][framework]
    if path is None:
        return np.asarray(strided(rank, world, rows), np.int64)
    picked = resolve(path, f"check_data_parallel() shard ({framework})")(rank, world, rows)
    try:
        index = np.asarray(list(picked), np.int64)
    except (TypeError, ValueError):
        raise ParityUsageError(
            f"check_data_parallel(): the shard function {path} returned {picked!r} for worker "
            f"{rank} of {world}; it must return row indices of the global batch"
        ) from None
    if index.ndim != 1 or (index.size and (index.min() < 0 or index.max() >= rows)):
        raise ParityUsageError(
            f"check_data_parallel(): the shard function {path} returned rows outside 0..{rows - 1} "
            f"for worker {rank} of {world}: {index.tolist()}"
        )
    return index


def batch_rows(batch: Dict[str, np.ndarray], rows: np.ndarray):
    """The inputs and the target of rows ``rows`` of a global batch (as :func:`batch_arrays` reads it)."""
    args = tuple(batch[f"arg{i}"][rows] for i in range(sum(k.startswith("arg") for k in batch)))
    kwargs = {k[3:]: v[rows] for k, v in batch.items() if k.startswith("kw:")}
    return Inputs(args, kwargs, {}), batch["target"][rows]


def _build(path: str, label: str):
    try:
        return resolve(path, f"check_data_parallel() {label}")()
    except ParityUsageError:
        raise
    except Exception as exc:  # the user's factory failed: say which, without a deep traceback
        raise ParityUsageError(
            f"check_data_parallel(): building {label} {path!r} failed: {type(exc).__name__}: {exc}"
        ) from None


def torch_model(job, arrays):
    """PyTorch's model with the job's initial weights, in train mode."""
    tb.prepare(seed=job["seed"], device=job["device"])
    model = _build(job["torch"], "torch_factory")
    for key in arrays:
        if key.startswith("init/"):
            tb.write(model, key[5:], arrays[key])
    tb.set_train(model, True)
    return model


def torch_optimizer(job, model):
    """The PyTorch optimizer the caller's factory built, again over ``model``'s parameters."""
    klass = resolve(job["optimizer"]["class"], "check_data_parallel() optimizer")
    named = dict(model.named_parameters())
    groups = [{**hyper, "params": [named[n] for n in names]} for names, hyper in job["optimizer"]["groups"]]
    accepted = inspect.signature(klass).parameters
    return klass(groups, **{k: v for k, v in job["optimizer"]["defaults"].items() if k in accepted})


def mindspore_model(job, torch_module, arrays):
    """MindSpore's model (built or translated) with PyTorch's initial weights, and the weight map."""
    msb.prepare(seed=job["seed"], device=job["device"])
    if job["mindspore"] == TRANSLATE:
        cell = translate(torch_module, device=job["device"])
    else:
        cell = _build(job["mindspore"], "ms_factory")
    wmap = map_pair_weights(cell, torch_module, job["name_map"], job["device"], job["ignore"])
    copy_weights(wmap, {k[5:]: v for k, v in arrays.items() if k.startswith("init/")}, cell, to_torch=False)
    msb.set_train(cell, True)
    return cell, wmap


class _Applied:
    """The MindSpore optimizer as the train step calls it, the gradients all-reduced first (mean
    over the workers, ``nn.DistributedGradReducer``) when there is a reducer; keeps what it applied."""

    def __init__(self, optimizer, reducer):
        self.optimizer, self.reducer, self.last = optimizer, reducer, ()

    def __getattr__(self, name):
        return getattr(self.optimizer, name)

    def __call__(self, grads):
        if self.reducer is not None:
            grads = self.reducer(tuple(grads))
        self.last = tuple(g.asnumpy().copy() for g in grads)
        return self.optimizer(grads)


def _train_mindspore(job, arrays, rank, world, parallel, record):
    module = torch_model(job, arrays)
    cell, wmap = mindspore_model(job, module, arrays)
    ms_loss, _, _ = losses_of(job["loss"], job["device"])
    torch_opt = torch_optimizer(job, module)
    ms_opt, _ = Optimizers(lambda params: torch_opt, cell, module).mindspore(torch_opt, wmap)
    reducer = None
    if parallel:
        ms.set_auto_parallel_context(parallel_mode=ms.ParallelMode.DATA_PARALLEL, gradients_mean=True)
        reducer = nn.DistributedGradReducer(ms_opt.parameters)
    applied = _Applied(ms_opt, reducer)
    trainer = msb.TrainStep(cell, ms_loss, applied, accumulate=1, clip_grad_norm=None, mode="pynative")
    groups = by_torch_name(wmap.trainable_pairs())
    for step in range(job["steps"]):
        micro, keys = _micro(job, arrays, "mindspore", step, rank, world)
        loss, _ = trainer.step([micro])
        grads = dict(zip(trainer.names, applied.last))
        params = {p.ms: msb.read(cell, p.ms) for p in wmap.trainable_pairs()}
        record(
            step,
            loss,
            keys,
            {name: torch_layout(g, grads) for name, g in groups.items()},
            {name: torch_layout(g, params) for name, g in groups.items()},
            buffers_of(msb, cell, wmap, "ms"),
        )


def _train_torch(job, arrays, rank, world, parallel, record):
    module = torch_model(job, arrays)
    optimizer = torch_optimizer(job, module)
    stepped = module
    if parallel:
        stepped = DistributedDataParallel(module)
    trainer = tb.TrainStep(stepped, job["loss"], optimizer, accumulate=1, clip_grad_norm=None, device=job["device"])
    trainable = [n for n, p in module.named_parameters() if p.requires_grad]
    buffers = [n for n, _ in module.named_buffers()]
    for step in range(job["steps"]):
        micro, keys = _micro(job, arrays, "torch", step, rank, world)
        loss, grads = trainer.step([micro])
        grads = {n.removeprefix("module.") if parallel else n: g for n, g in grads.items()}
        record(
            step,
            loss,
            keys,
            grads,
            {n: tb.read(module, n) for n in trainable},
            {n: tb.read(module, n) for n in buffers},
        )


def _micro(job, arrays, framework, step, rank, world):
    """This run's (inputs, target) of step ``step`` and the keys of the rows it holds."""
    batch = batch_arrays(arrays, step)
    rows = batch["target"].shape[0]
    index = _shard(job, framework, rank, world, rows) if world > 1 else np.arange(rows)
    inputs, target = batch_rows(batch, index)
    return (inputs, target), row_keys([a for _, a in inputs.named()] + [target])


def _limit() -> float:
    """The caller's time limit for the workers (``check_data_parallel(timeout=...)``), in seconds."""
    return float(os.environ.get("PARITY_DP_TIMEOUT", "600"))


def _wait_for_job(job_dir: str) -> None:
    """Workers start while the caller writes the job; it is complete once ``job.pkl`` exists."""
    limit = _limit()
    deadline = time.monotonic() + limit
    while not os.path.exists(os.path.join(job_dir, JOB)):
        if time.monotonic() > deadline:
            raise ParityUsageError(f"no job was written to {job_dir} within {limit:g} s")
        time.sleep(0.1)


def run(job_dir: str, framework: str, rank: int, world: int, parallel: bool) -> str:
    """Train as the job says and write what every step left; returns the file written."""
    _wait_for_job(job_dir)
    with open(os.path.join(job_dir, JOB), "rb") as handle:
        job = pickle.load(handle)
    with np.load(os.path.join(job_dir, ARRAYS)) as loaded:
        arrays = {k: loaded[k] for k in loaded.files}
    found: Dict[str, np.ndarray] = {}

    def record(step, loss, keys, grads, params, buffers):
        found[f"loss/{step}"] = np.float64(loss)
        found[f"rows/{step}"] = keys
        for kind, values in (("grad", grads), ("param", params), ("buffer", buffers)):
            for name, value in values.items():
                found[f"{kind}/{step}/{name}"] = np.asarray(value)

    train = _train_mindspore if framework == "mindspore" else _train_torch
    train(job, arrays, rank, world, parallel, record)
    path = result_path(job_dir, framework, parallel, rank)
    np.savez(path + ".part.npz", **found)
    os.replace(path + ".part.npz", path)
    return path


# The worker process.


def _wait_for_scheduler() -> None:
    """Wait until msrun's scheduler listens before joining: a worker that knocks too early is
    retried by MindSpore at long intervals (measured: up to 15 s late)."""
    host, port = os.environ.get("MS_SCHED_HOST"), os.environ.get("MS_SCHED_PORT")
    if os.environ.get("MS_ROLE") != "MS_WORKER" or not host or not port:
        return
    deadline = time.monotonic() + _limit()
    while time.monotonic() < deadline:
        try:
            socket.create_connection((host, int(port)), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)


def _join_mindspore():
    """(rank, world) of this msrun worker once MindSpore's CPU collective backend (mccl) is up;
    None for msrun's scheduler, whose work is done when ``init`` returns."""
    _wait_for_scheduler()
    ms.set_device("CPU")
    communication.init("mccl")
    if os.environ.get("MS_ROLE") == "MS_SCHED":
        return None
    return communication.get_rank(), communication.get_group_size()


def _join_torch(job_dir: str):
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    dist.init_process_group(
        "gloo",
        init_method="file://" + os.path.join(job_dir, "torch-store"),
        rank=rank,
        world_size=world,
        timeout=datetime.timedelta(seconds=_limit()),
    )
    return rank, world


def main(argv: Sequence[str]) -> int:
    job_dir, framework = argv
    with open(pid_path(job_dir, framework, os.getpid()), "w"):
        pass
    rank = int(os.environ.get("RANK_ID", os.environ.get("RANK", "0")))
    try:
        joined = _join_mindspore() if framework == "mindspore" else _join_torch(job_dir)
        if joined is None:
            return 0
        rank, world = joined
        run(job_dir, framework, rank, world, parallel=True)
    except ParityUsageError as exc:
        _report(job_dir, framework, rank, f"{type(exc).__name__}: {exc}")
        return 1
    except BaseException as exc:  # noqa: B902 - the parent reads the error file, whatever happened
        _report(job_dir, framework, rank, _described(exc))
        return 1
    if framework == "torch":  # leave together: a peer that closes its sockets while the other still
        try:  # the results are written: a failure to leave costs nothing
            dist.barrier()
            dist.destroy_process_group()
        except Exception:  # noqa: BLE001
            pass
    return 0


def _described(exc: BaseException) -> str:
    """The exception and the last frames it came through, innermost last."""
    frames = traceback.extract_tb(exc.__traceback__)[-3:]
    where = [f"  at {f.filename}:{f.lineno} in {f.name}" for f in frames]
    return "".join(traceback.format_exception_only(type(exc), exc)).strip() + "\n" + "\n".join(where)


def _report(job_dir: str, framework: str, rank: int, text: str) -> None:
    with open(error_path(job_dir, framework, rank), "w", encoding="utf-8") as handle:
        handle.write(text)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
