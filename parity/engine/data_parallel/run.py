"""Data-parallel parity: the same model trained on each global batch in one process and across
workers, each on its shard with the gradients all-reduced (mean), in MindSpore and in PyTorch.

Four runs start from PyTorch's initial weights (written once to a job folder; MindSpore's through
the weight map): MindSpore in this process, MindSpore under ``msrun`` (collective backend
``mccl``, ``nn.DistributedGradReducer`` with ``gradients_mean``), PyTorch in this process and
PyTorch in worker processes (``torch.distributed`` over gloo, ``DistributedDataParallel``). Each
step's loss, applied gradients, parameters and buffers are compared around the cycle of four
pairs with the tolerance engine of :func:`parity.check`, and a tensor near or beyond its tolerance
against PyTorch's rounding envelope as :func:`parity.check_training` judges it (PyTorch's
single-process training again under rounding-level perturbations and in float64, here): one run
that is off fails exactly the two pairs it belongs to, which names it. Every worker reports a key
per row it trained on, so a worker that trained on the wrong rows (the full batch, another's
shard) is named as such.

Workers run as subprocesses of the caller with a time limit; their logs, msrun's included, stay in
a temporary folder that is removed afterwards.
"""

from __future__ import annotations

import os
import pickle
import shutil
import tempfile
import time
from collections import Counter
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch

from ...backends import framework_of
from ...backends import mindspore as msb
from ...backends import torch as tb
from ...errors import ParityMismatch, ParityUnsupported, ParityUsageError
from ...judge.envelope import Candidate, judge_envelope, near
from ...judge.metrics import ArrayPair, compare_pair
from ...judge.tolerance import ToleranceSpec
from ...options import MODE, parse_seed
from ...registry import diagnose
from ..diagnosis import messages
from ..factories import TRANSLATE, resolve
from ..settings import CheckOptions, Settings
from ..side_errors import framework_error
from ..training.loop import batch_list, refuse_dropout
from ..training.optimizers import Optimizers, Schedulers, losses_of
from ..training.reruns import TorchReruns
from . import worker
from .launch import LABELS, WHERE, Launch, environment, missing_launchers, wait_all
from .result import PAIRS, RUNS, DataParallelResult, DataParallelStep, failure_message

__all__ = [
    "DataParallelResult",
    "DataParallelStep",
    "run_data_parallel",
    "missing_launchers",
    "shard_findings",
    "RUNS",
    "PAIRS",
]

_KINDS = {"loss": "loss", "grad": "param grad", "param": "parameter", "buffer": "buffer"}

# The job: everything the workers need, checked here first.


def _dotted(factory, label: str, allow_translate: bool = False) -> str:
    """``"package.module:Name"`` for a factory the workers can import."""
    if allow_translate and factory == TRANSLATE:
        return TRANSLATE
    if isinstance(factory, str) and ":" in factory:
        resolve(factory, f"{WHERE} {label}")
        return factory
    if callable(factory):
        module, name = getattr(factory, "__module__", None), getattr(factory, "__qualname__", "")
        if module and module != "__main__" and "<" not in name:
            path = f"{module}:{name}"
            try:
                if resolve(path, label) is factory:
                    return path
            except ParityUsageError:
                pass
    shown = getattr(factory, "__qualname__", None) or repr(factory)
    raise ParityUsageError(
        f"{WHERE}: {label} must be importable by the workers, which are separate processes: give "
        f"'package.module:Name' or a module-level function or class; got {shown}"
        + (" (or parity.TRANSLATE)" if allow_translate else "")
    )


def _shards(shard) -> Dict[str, Optional[str]]:
    pair = shard if isinstance(shard, (tuple, list)) else (shard, shard)
    if len(pair) != 2:
        raise ParityUsageError(f"{WHERE}: shard=(ms_shard, torch_shard) takes two functions (or None)")
    return {fw: None if fn is None else _dotted(fn, f"shard ({LABELS[fw]})") for fw, fn in zip(worker.FRAMEWORKS, pair)}


def _positive(value, label: str, least: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise ParityUsageError(f"{WHERE}: {label} must be an integer >= {least}, got {value!r}")
    return value


def _batches(batches, steps: int, workers: int, seed: int):
    try:
        data, described = batch_list(batches, steps, seed)
    except ParityUsageError as exc:
        raise ParityUsageError(str(exc).replace("check_training()", WHERE)) from None
    arrays = {}
    for step, (inputs, target) in enumerate(data):
        named = [a for _, a in inputs.named()] + [target]
        rows = {np.shape(a)[0] if np.ndim(a) else None for a in named}
        if len(rows) != 1 or None in rows:
            raise ParityUsageError(
                f"{WHERE}: every input and the target of a batch must share the batch size (their "
                f"first dimension) to be sharded; step {step + 1} has "
                f"{[np.shape(a) for a in named]}"
            )
        (size,) = rows
        assert size is not None  # None was refused above
        if size % workers:
            raise ParityUsageError(
                f"{WHERE}: the global batch of step {step + 1} has {size} rows, which {workers} "
                "workers cannot share equally; give a batch size divisible by workers"
            )
        for i, a in enumerate(inputs.args):
            arrays[f"batch/{step}/arg{i}"] = a
        for name, a in inputs.kwargs.items():
            arrays[f"batch/{step}/kw:{name}"] = a
        arrays[f"batch/{step}/target"] = target
    return arrays, described


def _optimizer_spec(optimizer, module) -> Dict[str, object]:
    built = optimizer(module.parameters())
    if not isinstance(built, torch.optim.Optimizer):
        raise ParityUsageError(
            f"{WHERE}: the optimizer factory returned {type(built).__qualname__}, not a torch.optim.Optimizer"
        )
    names = {id(p): n for n, p in module.named_parameters()}
    klass = type(built)
    return {
        "class": f"{klass.__module__}:{klass.__qualname__}",
        "defaults": dict(built.defaults),
        "groups": [
            ([names[id(p)] for p in g["params"]], {k: v for k, v in g.items() if k != "params"})
            for g in built.param_groups
        ],
    }


def _check_call(
    ms_factory, torch_factory, batches, loss, optimizer, steps, workers, shard, name_map, ignore, seed, device
):
    """The job and its batches, from what can be checked before building anything."""
    if not callable(optimizer) or isinstance(optimizer, (tuple, list)):
        raise ParityUsageError(
            f"{WHERE}: optimizer must be a function of the parameters returning a torch.optim "
            "optimizer (lambda params: torch.optim.SGD(params, lr=0.1)); its MindSpore side is "
            "translated in every run"
        )
    if framework_of(loss) != "torch":
        raise ParityUsageError(
            f"{WHERE}: loss must be a PyTorch loss Module (translated to MindSpore in every run), "
            f"got {type(loss).__module__}.{type(loss).__qualname__}"
        )
    if isinstance(ignore, str) or not all(isinstance(p, str) for p in ignore):
        raise ParityUsageError(f"{WHERE}: ignore must be a list of tensor names or patterns, got {ignore!r}")
    job = {
        "mindspore": _dotted(ms_factory, "ms_factory", allow_translate=True),
        "torch": _dotted(torch_factory, "torch_factory"),
        "loss": loss,
        "name_map": name_map,
        "ignore": tuple(ignore),
        "seed": seed,
        "steps": steps,
        "shard": _shards(shard),
        "device": device,
    }
    try:
        pickle.dumps(job)
    except Exception as exc:
        raise ParityUsageError(f"{WHERE}: the loss or name_map cannot be sent to the workers (pickle: {exc})") from None
    arrays, described = _batches(batches, steps, workers, seed)
    return job, arrays, described


def _write_job(
    job_dir: str, job: dict, arrays: Dict[str, np.ndarray], optimizer
) -> Tuple[Dict[str, Any], Tuple[Any, Any]]:
    """Build both models here (usage errors before any worker trains), then write the job."""
    module = worker.torch_model(job, {})
    if framework_of(module) != "torch":
        raise ParityUsageError(
            f"{WHERE}: torch_factory {job['torch']!r} built {type(module).__qualname__}, not a torch.nn.Module"
        )
    arrays.update({f"init/{s.name}": tb.read(module, s.name) for s in tb.slots(module)})
    job["optimizer"] = _optimizer_spec(optimizer, module)
    cell, wmap = worker.mindspore_model(job, module, arrays)
    refuse_dropout(msb.refuse_dropout(cell), tb.dropout_layers(module))
    _refuse_unsupported(cell, module, job["device"])
    losses_of(job["loss"], job["device"])
    torch_opt = worker.torch_optimizer(job, module)
    _, opt_label = Optimizers(lambda params: torch_opt, cell, module).mindspore(torch_opt, wmap)
    np.savez(os.path.join(job_dir, worker.ARRAYS), **arrays)
    with open(os.path.join(job_dir, worker.JOB + ".part"), "wb") as handle:
        pickle.dump(job, handle)
    os.replace(os.path.join(job_dir, worker.JOB + ".part"), os.path.join(job_dir, worker.JOB))  # the workers' go
    labels = {
        "ms_type": type(cell).__name__,
        "torch_type": type(module).__name__,
        "optimizer": opt_label,
        "loss": f"{type(job['loss']).__name__} (translated)",
        "sync_free_norms": _batch_norms(module),
    }
    return labels, (module, wmap)


def _refuse_unsupported(cell, module, device: str) -> None:
    """Layers the registry knows not to run on ``device`` (SyncBatchNorm on CPU): refused before
    any worker trains, rather than crashing every worker."""
    found = [d for d in diagnose(cell, module, device=device) if d.entry.kind == "unsupported"]
    if found:
        raise ParityUnsupported(
            f"{WHERE}: "
            + "; ".join(
                f"'{d.path}': {d.entry.summary} (known mismatch {d.entry.id}, runs on {', '.join(d.entry.runs_on)})"
                for d in found
            )
        )


def _batch_norms(module) -> List[str]:
    """Paths of batch-norm layers that normalise each worker's shard on its own (not SyncBatchNorm)."""
    return [
        name
        for name, m in module.named_modules()
        if isinstance(m, torch.nn.modules.batchnorm._BatchNorm) and not isinstance(m, torch.nn.SyncBatchNorm)
    ]


def shard_findings(label: str, global_keys: np.ndarray, worker_keys: Sequence[np.ndarray], step: int) -> List[str]:
    """What went wrong with the rows ``label``'s workers trained on at ``step`` (1-based)."""
    expected = Counter(global_keys.tolist())
    row_of: Dict[Any, int] = {}
    for index, key in enumerate(global_keys.tolist()):
        row_of.setdefault(key, index)
    rows = len(global_keys)
    found: List[str] = []
    total: Counter = Counter()
    for rank, keys in enumerate(worker_keys):
        seen = Counter(keys.tolist())
        total += seen
        strangers = sum(n for k, n in seen.items() if k not in expected)
        if seen == expected:
            found.append(f"{label} worker {rank} trained on the full batch ({rows} rows) at step {step}, not its shard")
        elif strangers:
            found.append(
                f"{label} worker {rank} trained on {strangers} rows that are not in the global batch of step {step}"
            )
    if found:
        return found
    twice = sorted(row_of[k] for k, n in total.items() if k in expected and n > expected[k])
    never = sorted(row_of[k] for k, n in expected.items() if total[k] < n)
    if twice:
        found.append(f"{label} workers trained on rows {twice} of step {step} more than once between them")
    if never:
        found.append(f"{label} workers left rows {never} of step {step} untrained")
    sizes = [len(k) for k in worker_keys]
    if not found and len(set(sizes)) > 1:
        found.append(
            f"{label} workers trained on shards of unequal size {sizes} at step {step}: the mean of their "
            "gradients weights their rows unequally"
        )
    return found


def _load(path: str) -> Dict[str, np.ndarray]:
    with np.load(path) as loaded:
        return {k: loaded[k] for k in loaded.files}


def _entries(found: Dict[str, np.ndarray], kind: str, step: int) -> Dict[str, np.ndarray]:
    prefix = f"{kind}/{step}/"
    return {k[len(prefix) :]: v for k, v in found.items() if k.startswith(prefix)}


def _runs(job_dir: str, workers: int):
    """Each run's record per step: {"loss": float, "grad"/"param"/"buffer": {name: array}}, with
    the parallel runs' worker records kept apart for the row and agreement checks."""
    single = {fw: _load(worker.result_path(job_dir, fw, False, 0)) for fw in worker.FRAMEWORKS}
    parallel = {
        fw: [_load(worker.result_path(job_dir, fw, True, r)) for r in range(workers)] for fw in worker.FRAMEWORKS
    }
    return single, parallel


def _record(found: Dict[str, np.ndarray], step: int, loss: Optional[float] = None) -> Dict[str, Dict[str, Any]]:
    record: Dict[str, Dict[str, Any]] = {kind: _entries(found, kind, step) for kind in ("grad", "param", "buffer")}
    record["loss"] = {"loss": np.float32(found[f"loss/{step}"] if loss is None else loss)}
    return record


def _compare_records(run: dict, reference: dict, label: str, chain, skip_buffers: bool):
    """[(pair, comparison)] of ``run`` against ``reference``, in stage order; a pair's ``ms`` is
    the run's value and its ``torch`` the reference's, whichever framework each is."""
    found = []
    for kind in ("loss", "grad", "param", "buffer"):
        if kind == "buffer" and skip_buffers:
            continue
        for name, value in reference[kind].items():
            if name not in run[kind]:
                continue
            pair = ArrayPair(
                _KINDS[kind],
                name,
                name,
                name,
                label,
                np.asarray(run[kind][name]),
                np.asarray(value),
                name.rpartition(".")[0],
            )
            found.append((pair, compare_pair(pair, chain, check_dtype=kind != "buffer")))
    return found


def _compare_runs(job_dir: str, workers: int, steps: int, chain, arrays, sync_free_norms: List[str]):
    """The steps compared by tolerance, the row and agreement findings, and the tensors near or
    beyond their tolerance, as envelope candidates keyed (step, key), each with PyTorch single's value
    there, around which the rounding envelope is drawn."""
    single, parallel = _runs(job_dir, workers)
    shard: List[str] = []
    agreement: List[str] = []
    result_steps: List[DataParallelStep] = []
    close: List[Candidate] = []
    pairs = PAIRS if not sync_free_norms else (PAIRS[0], PAIRS[3])
    for step in range(steps):
        batch = worker.batch_arrays(arrays, step)
        global_keys = worker.row_keys(list(batch.values()))
        records: Dict[str, Dict[str, Dict[str, Any]]] = {}
        for fw in worker.FRAMEWORKS:
            label = LABELS[fw]
            found = [
                w
                for w in shard_findings(label, global_keys, [p[f"rows/{step}"] for p in parallel[fw]], step + 1)
                if not any(w.split(" at step")[0] in s for s in shard)
            ]
            shard += found
            mean_loss = float(np.mean([p[f"loss/{step}"] for p in parallel[fw]]))
            records[f"{label} single"] = _record(single[fw], step)
            records[f"{label} parallel"] = _record(parallel[fw][0], step, mean_loss)
            for rank in range(1, workers):
                other = _record(parallel[fw][rank], step)
                off = [
                    c
                    for _, c in _compare_records(
                        other, records[f"{label} parallel"], f"{label} worker {rank}", chain, True
                    )
                    if c.kind == "parameter" and not c.passed
                ]
                if off and not any(f"{label} worker {rank}'s" in a for a in agreement):
                    agreement.append(
                        f"{label} worker {rank}'s parameters left worker 0's at step {step + 1} "
                        f"('{off[0].name}', {messages.fmt(off[0].margin)}x allowed): the workers did not "
                        "apply the same all-reduced gradients"
                    )
        losses = {run: float(records[run]["loss"]["loss"]) for run in RUNS}
        result_steps.append(DataParallelStep(step + 1, losses, _compare_step(records, pairs, chain, step, close)))
    return result_steps, shard, agreement, close


def _compare_step(records: Dict[str, dict], pairs, chain, step: int, close: list):
    """Step ``step``'s (0-based) comparisons per pair "run vs reference", by tolerance; the ones near
    or beyond it are added to ``close`` as envelope candidates (see :func:`_envelope_verdicts`)."""
    compared = {
        f"{run} vs {ref}": _compare_records(records[run], records[ref], f"{run} vs {ref}", chain, False)
        for run, ref in pairs
    }
    reference = {_KINDS[kind]: values for kind, values in records["PyTorch single"].items()}
    for found in compared.values():
        for pair, c in found:
            if near(c, pair.torch.dtype.kind == "f") and pair.torch_name in reference[pair.kind]:
                close.append(
                    Candidate(
                        (step, pair.key), c, pair.ms, pair.torch, np.asarray(reference[pair.kind][pair.torch_name])
                    )
                )
    return {label: [c for _, c in found] for label, found in compared.items()}


def _envelope_verdicts(close, built, loss, optimizer, arrays, steps: int, seed: int, device: str) -> None:
    """Give the tensors near or beyond their tolerance their rounding-envelope verdict: PyTorch's
    single-process training again from the same start (:class:`parity.engine.training.reruns.TorchReruns`), its
    spread around PyTorch single's values standing for every run's. The parallel runs differ from
    the single ones by the order their gradients are summed in (the all-reduce), a rounding-level
    difference as well; under Adam a gradient at rounding level (a bias before a batch norm) takes
    either sign in every run, and the envelope sees it do so."""
    module, wmap = built
    data = []
    for step in range(steps):
        batch = worker.batch_arrays(arrays, step)
        data.append(worker.batch_rows(batch, np.arange(batch["target"].shape[0])))
    reruns = TorchReruns(
        module,
        loss,
        (Optimizers(optimizer, None, module), Schedulers(None, False)),
        data,
        steps,
        1,
        None,
        wmap,
        device,
        seed,
        tb.state_of(module),
    )
    reruns.rerun_for(judge_envelope, close, dtype=np.float64)


def _single(job_dir: str, framework: str) -> None:
    """The single-process run of ``framework``, here; what the framework raises becomes a usage error."""
    try:
        worker.run(job_dir, framework, 0, 1, parallel=False)
    except ParityUsageError:
        raise
    except Exception as exc:
        if framework == "mindspore":
            msb.recover()
        raise framework_error(LABELS[framework], exc, "the single-process training run") from None


def run_data_parallel(
    ms_factory,
    torch_factory,
    batches,
    *,
    loss,
    optimizer,
    steps: int = CheckOptions.data_parallel_steps,
    workers: int = CheckOptions.workers,
    shard=CheckOptions.shard,
    tolerance=CheckOptions.tolerance,
    name_map=CheckOptions.name_map,
    ignore=CheckOptions.ignore,
    seed=CheckOptions.seed,
    timeout: float = CheckOptions.timeout,
    settings: Settings = Settings(),
) -> DataParallelResult:
    """See :func:`parity.check_data_parallel`."""
    __tracebackhide__ = True
    started = time.monotonic()
    _positive(steps, "steps", 1)
    _positive(workers, "workers", 2)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
        raise ParityUsageError(f"{WHERE}: timeout must be a number of seconds > 0, got {timeout!r}")
    if settings.mode == "graph":
        raise ParityUnsupported(
            f"{WHERE} trains in PyNative mode only; the session's {MODE.flag}=graph asks for graph mode"
        )
    if settings.device != "CPU":
        raise ParityUnsupported(
            f"{WHERE} runs on CPU (msrun with mccl, torch.distributed with gloo); device "
            f"{settings.device!r} is not supported"
        )
    missing = missing_launchers()
    if missing:
        raise ParityUnsupported(f"{WHERE} cannot run here: " + "; ".join(missing))
    seed = parse_seed(seed, f"{WHERE[:-2]}(seed=...)")
    seed = seed if seed is not None else settings.resolved_seed
    chain = (ToleranceSpec.parse(tolerance, source=f"{WHERE[:-2]}(tolerance=...)"),) + settings.tolerances
    job, arrays, described = _check_call(
        ms_factory,
        torch_factory,
        batches,
        loss,
        optimizer,
        steps,
        workers,
        shard,
        name_map,
        ignore,
        seed,
        settings.device,
    )
    job_dir = tempfile.mkdtemp(prefix="parity-dp-")
    launches = [Launch(fw, job_dir, workers, timeout) for fw in worker.FRAMEWORKS]
    seconds: Dict[str, float] = {}
    try:
        env = environment(job_dir)
        for launch in launches:  # the workers start (importing their framework) while the job is written
            launch.start(env)
        labels, built = _write_job(job_dir, job, arrays, optimizer)
        seconds["job"] = round(time.monotonic() - launches[0].started, 1)
        for fw in worker.FRAMEWORKS:  # the single-process runs, here, while the workers join
            _single(job_dir, fw)
        seconds["single runs"] = round(time.monotonic() - launches[0].started - seconds["job"], 1)
        wait_all(launches)
        seconds.update({f"{launch.label} workers": round(launch.seconds, 1) for launch in launches})
        result_steps, shard_found, agreement, close = _compare_runs(
            job_dir, workers, steps, chain, arrays, labels["sync_free_norms"]
        )
        if close:
            started_envelope = time.monotonic()
            _envelope_verdicts(close, built, loss, optimizer, arrays, steps, seed, settings.device)
            seconds["rounding envelope"] = round(time.monotonic() - started_envelope, 1)
    finally:
        for launch in launches:
            launch.stop()
        shutil.rmtree(job_dir, ignore_errors=True)
    seconds["total"] = round(time.monotonic() - started, 1)
    notes = []
    if settings.mode == "both":
        notes.append(f"the session asked for both modes ({MODE.flag}=both); {WHERE} trained in PyNative mode only")
    if labels["sync_free_norms"]:
        notes.append(
            f"batch norm layers {labels['sync_free_norms']} normalise each worker's shard with its own "
            "statistics, so the parallel runs are compared with each other, not with the single-process "
            "runs (MindSpore's SyncBatchNorm has no CPU kernel: registry syncbatchnorm-cpu-unsupported)"
        )
    result = DataParallelResult(
        labels["ms_type"],
        labels["torch_type"],
        workers,
        result_steps,
        labels["optimizer"],
        labels["loss"],
        described,
        seed,
        shard_found,
        agreement,
        notes,
        messages.reproduce_line(settings.reproduce, seed, "parity.check_data_parallel"),
        seconds,
    )
    if not result.passed:
        causes = result.shard_findings + result.worker_findings
        raise ParityMismatch(failure_message(result), result, causes)
    return result
