"""Machine-readable records of a run (``--parity-report=PATH``): JSON lines, schema 1.

The file holds one ``environment`` record (the fingerprint: versions, device, host, commit) and
one ``check`` record per check: a ``parity.check``/``check_training``/``check_data_parallel`` call
made through the ``parity`` fixture, or one catalogue item's run. A record is a JSON-serialisable
dict built where the check ran (an xdist worker too) and kept in the item's stash; it travels to
the process that writes the file in the test report's ``user_properties`` under
:data:`RECORD_KEY`, so that each record is written exactly once. Numbers that are not finite are written as the strings ``"inf"``,
``"-inf"`` and ``"nan"`` (the file is strict JSON); :func:`read_records` reads them back as floats.
docs/report-format.md describes every field. Nothing here imports a framework.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import math
import numbers
import os
import platform
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, Iterator, List, Optional, Sequence, Tuple, Union, cast

import pytest

from .. import files
from ..engine.data_parallel.result import RUNS, DataParallelResult
from ..errors import ParityMismatch, ParityUnsupported, ParityUsageError
from ..judge import devices
from . import environment
from .schema import check_fields

if TYPE_CHECKING:
    from ..engine.blocks.result import BlockCheck, BlocksResult
    from ..engine.diagnosis.verdicts import LayerTable, LayerVerdict
    from ..engine.generation.result import GenerationResult
    from ..engine.result import Result, WeightReport
    from ..engine.settings import Settings
    from ..engine.shapes.result import ShapeCheck, ShapesResult
    from ..engine.training.result import TrainingResult
    from ..judge.envelope import Envelope
    from ..judge.golden import Golden
    from ..judge.metrics import Comparison

    # What a check returns, told apart by its fields (see _result_fields).
    CheckResult = Union[Result, TrainingResult, DataParallelResult, GenerationResult, ShapesResult, BlocksResult]

__all__ = [
    "SCHEMA",
    "RECORD_KEY",
    "VERDICTS",
    "CUT_SHORT",
    "check_record",
    "lost_record",
    "fingerprint",
    "read_records",
    "RecordFile",
    "recording",
    "attach",
    "carried",
    "item_records",
    "jsonable",
]

SCHEMA = 1
RECORD_KEY = "parity-record"  # the user property a check record travels in
CHECKS_KEY = "parity-checks"  # how many checks the report's phase made (a scalar, for JUnit)
VERDICTS = ("pass", "fail", "xfail", "error", "unsupported", "crashed", "interrupted")
CUT_SHORT = ("crashed", "interrupted")  # a test that never finished: its checks' records went with it
_CAUSE = "Likely cause: "
_RECORDS = pytest.StashKey[List[Dict[str, Any]]]()
_SENT = pytest.StashKey[int]()
# Fields that hold floats: "inf"/"-inf"/"nan" there are read back as floats.
_FLOATS = frozenset(
    {
        "max_abs",
        "max_rel",
        "cosine",
        "margin",
        "rtol",
        "atol",
        "ms_error",
        "spread",
        "tolerance_margin",
        "whole_margin",
        "worst_margin",
        "duration",
        "out_margin",
        "out_error",
        "in_margin",
        "ms_loss",
        "torch_loss",
        "factor",
        "mindspore_single",
        "mindspore_parallel",
        "torch_single",
        "torch_parallel",
    }
)


# -- check records ----------------------------------------------------------------------------


def _verdict(result: Optional[CheckResult], error: Optional[BaseException]) -> str:
    if isinstance(error, ParityMismatch):
        return "fail"
    if isinstance(error, ParityUnsupported):
        return "unsupported"
    if error is not None:
        return "error"
    assert result is not None  # a check that raised nothing returned its result
    return "pass" if result.passed else "fail"


def _shape(shape: Optional[Sequence[int]]) -> Optional[List[int]]:
    return None if shape is None else [int(n) for n in shape]


def _envelope(e: Optional[Envelope]) -> Optional[Dict[str, Any]]:
    if e is None:
        return None
    return {
        "passed": e.passed,
        "margin": e.margin,
        "outside": e.outside,
        "total": e.total,
        "ms_error": e.ms_error,
        "spread": e.spread,
        "flips": e.flips,
        "steady": e.steady,
        "factor": e.factor,
        "draws": e.draws,
        "float64": e.float64,
        "tolerance_margin": e.tolerance_margin,
        "whole_margin": e.whole_margin,
        "judged_whole": e.judged_whole,
    }


def _golden(g: Optional[Golden]) -> Optional[Dict[str, Any]]:
    """The half-precision judge (parity.judge.golden.Golden), where it ran."""
    if g is None:
        return None
    return {
        "passed": g.passed,
        "dtype": g.dtype,
        "margin": g.margin,
        "factor": g.factor,
        "floor": g.floor,
        "ms_error": g.ms_error,
        "torch_error": g.torch_error,
        "ms_max": g.ms_max,
        "torch_max": g.torch_max,
        "flips": g.flips,
        "tolerance_margin": g.tolerance_margin,
    }


def tensor_record(c: Comparison, step: Optional[int] = None) -> Dict[str, Any]:
    """One compared tensor (a :class:`parity.judge.metrics.Comparison`). Figures that were not measured
    (the shapes or dtypes differed) are ``None``."""
    measured = c.problem is None
    nf = c.nonfinite
    record: Dict[str, Any] = {
        "kind": c.kind,
        "name": c.name,
        "ms_name": c.ms_name,
        "torch_name": c.torch_name,
        "mode": c.mode,
        "layer": c.layer or None,
        "ms_shape": _shape(c.ms_shape),
        "torch_shape": _shape(c.torch_shape),
        "ms_dtype": c.ms_dtype,
        "torch_dtype": c.torch_dtype,
        "passed": c.passed,
        "problem": c.problem,
        "total": c.total,
        "mismatched": c.mismatched,
        "max_abs": c.max_abs if measured else None,
        "max_abs_index": list(c.max_abs_index) if measured else None,
        "max_rel": c.max_rel if measured else None,
        "max_rel_index": list(c.max_rel_index) if measured else None,
        "cosine": c.cosine if measured and c.total else None,
        "margin": c.margin if measured else None,
        "tolerance": {"rtol": c.tolerance.rtol, "atol": c.tolerance.atol},
        "tolerance_source": c.tolerance_source,
        "nonfinite": None
        if nf is None
        else {"ms": nf.ms_count, "torch": nf.torch_count, "disagreeing": nf.disagreeing, "positions": nf.positions},
        "noise_judged": c.noise_judged,
        "envelope": _envelope(c.envelope),
        "golden": _golden(c.golden),
    }
    if step is not None:
        record["step"] = step
    return record


def _table(layers: Optional[object]) -> Optional[LayerTable]:
    """A result's ``layers``: the engine keeps a LayerTable there (typed ``object`` on its side)."""
    return cast("Optional[LayerTable]", layers)


def _first_divergence(layers: Optional[LayerTable]) -> Optional[Dict[str, Any]]:
    """The first divergent layer forward and backward, where the layers were captured."""
    if layers is None:
        return None
    found: Dict[str, Optional[Dict[str, Any]]] = {}
    for direction in ("forward", "backward"):
        verdict, where = layers.first(direction)
        found[direction] = (
            None
            if verdict is None
            else {
                "layer": verdict.path,
                "ms_layer": verdict.ms_path,
                "ms_type": verdict.ms_type,
                "torch_type": verdict.torch_type,
                "status": verdict.status,
                "where": where,
                "max_abs": verdict.max_abs,
                "out_margin": verdict.out_margin,
                "out_error": verdict.out_error,
                **_own(verdict),
            }
        )
    return found


def _own(verdict: LayerVerdict) -> Dict[str, Any]:
    """A layer's own error (fed PyTorch's inputs; see parity.engine.diagnosis.own), where it was measured."""
    return {
        "own_error": getattr(verdict, "own_error", None),
        "own_margin": getattr(verdict, "own_margin", None),
        "own_status": getattr(verdict, "own_status", ""),
    }


def _own_errors(layers: Optional[LayerTable]) -> Optional[List[Dict[str, Any]]]:
    """The layers whose own error is out of bounds, in order, with their likely causes; ``None``
    where own errors were not measured (a passing check, or no layer capture)."""
    if layers is None or not getattr(layers, "own_measured", False):
        return None
    return [e.as_dict() for e in layers.own_errors]


def _first_nonfinite(result: CheckResult) -> Optional[Dict[str, Any]]:
    origin = getattr(result, "first_nonfinite", None)  # parity.engine.diagnosis.verdicts.NonFiniteOrigin
    if origin is None:
        return None
    record: Dict[str, Any] = origin.as_dict()
    return record


def _layers(layers: Optional[LayerTable]) -> Optional[Dict[str, List[Dict[str, Any]]]]:
    """Every captured layer call's figures, forward in execution order and backward in backward
    order (the per-layer table of the message, whole); ``None`` without a layer capture."""
    if layers is None:
        return None
    return {
        direction: [
            {
                "layer": v.path,
                "ms_layer": v.ms_path,
                "call": v.call,
                "ms_type": v.ms_type,
                "torch_type": v.torch_type,
                "status": v.status,
                "in_margin": v.in_margin,
                "out_margin": v.out_margin,
                "out_error": v.out_error,
                "max_abs": v.max_abs,
                **_own(v),
            }
            for v in getattr(layers, direction)
        ]
        for direction in ("forward", "backward")
    }


def _training(result: TrainingResult) -> Dict[str, Any]:
    first = result.first_failure
    return {
        "optimizer": result.optimizer,
        "loss": result.loss,
        "batches": result.batches,
        "losses": [{"step": s.step, "ms_loss": s.ms_loss, "torch_loss": s.torch_loss} for s in result.steps],
        "first_failure": None if first is None else {"step": first[0], "kind": first[1].kind, "name": first[1].name},
    }


def _data_parallel(result: DataParallelResult) -> Dict[str, Any]:
    """A data-parallel check's runs, pairs, losses and findings (parity.engine.data_parallel.run)."""
    first = result.first_failure
    pairs = list(dict.fromkeys(p for s in result.steps for p in s.pairs))
    return {
        "workers": result.workers,
        "runs": list(RUNS),
        "pairs": pairs,
        "optimizer": result.optimizer,
        "loss": result.loss,
        "batches": result.batches,
        "losses": [{"step": s.step, **{_run_key(run): s.losses[run] for run in RUNS}} for s in result.steps],
        "failing_pairs": result.failing_pairs,
        "disagreeing": result.disagreeing or None,
        "shard_findings": list(result.shard_findings),
        "worker_findings": list(result.worker_findings),
        "first_failure": None
        if first is None
        else {"step": first[0], "pair": first[1], "kind": first[2].kind, "name": first[2].name},
        "seconds": dict(result.seconds),
    }


def _run_key(run: str) -> str:
    """``"MindSpore single"`` -> ``"mindspore_single"``."""
    return run.lower().replace(" ", "_").replace("pytorch", "torch")


def _parallel_fields(result: DataParallelResult) -> Dict[str, Any]:
    tensors = [tensor_record(c, s.step) for s in result.steps for c in s.comparisons]
    margins: List[float] = [t["margin"] for t in tensors if t["margin"] is not None]
    return {
        "pair": {"mindspore": result.ms_type, "torch": result.torch_type},
        "train": True,
        "modes": ["pynative"],
        "seed": result.seed,
        "worst_margin": max(margins, default=None),
        "tensors": tensors,
        "data_parallel": _data_parallel(result),
        "inputs": result.batches,
        "notes": list(result.notes),
        "reproduce": result.reproduce or None,
    }


def _generation(result: GenerationResult) -> Dict[str, Any]:
    first = result.first_difference
    return {
        "use_cache": result.use_cache,
        "steps": len(result.steps),
        "ms_tokens": result.ms_tokens.tolist(),
        "torch_tokens": result.torch_tokens.tolist(),
        "first_difference": None if first is None else {"step": first[0], "row": first[1]},
        "differences": [
            {
                "step": d.step,
                "row": d.row,
                "ms_token": d.ms_token,
                "torch_token": d.torch_token,
                "gap": d.gap,
                "allowed": d.allowed,
                "near_tie": d.near_tie,
            }
            for d in result.differences
        ],
    }


def _generation_fields(result: GenerationResult) -> Dict[str, Any]:
    tensors = [tensor_record(s.comparison, s.step) for s in result.steps]
    margins: List[float] = [t["margin"] for t in tensors if t["margin"] is not None]
    weights = cast("WeightReport", result.weights)  # typed object on the engine's side
    return {
        "pair": {"mindspore": result.ms_type, "torch": result.torch_type},
        "train": False,
        "modes": ["pynative"],
        "seed": result.seed,
        "worst_margin": max(margins, default=None),
        "tensors": tensors,
        "first_divergence": _first_divergence(_table(result.layers)),
        "generation": _generation(result),
        "weights": {"direction": weights.direction, "mapped": weights.total, "verified": weights.verified},
        "inputs": result.prompt,
        "notes": list(result.notes),
        "reproduce": result.reproduce or None,
    }


def _shape_result(shape: ShapeCheck) -> Optional[Result]:
    """One shape's check result: a Result (typed ``object`` on the engine's side)."""
    return cast("Optional[Result]", shape.result)


def _shapes_fields(result: ShapesResult) -> Dict[str, Any]:
    tensors = [
        {**tensor_record(c), "shape": s.index}
        for s in result.shapes
        if (checked := _shape_result(s)) is not None
        for c in checked.comparisons
    ]
    margins: List[float] = [t["margin"] for t in tensors if t["margin"] is not None]
    first = next((r for r in map(_shape_result, result.shapes) if r is not None), None)
    return {
        "pair": {"mindspore": result.ms_type, "torch": result.torch_type},
        "train": first.train if first is not None else None,
        "modes": list(result.modes),
        "seed": first.seed if first is not None else None,
        "worst_margin": max(margins, default=None),
        "tensors": tensors,
        "notes": list(result.notes),
        "shapes": [
            {
                "index": s.index,
                "inputs": s.inputs,
                "passed": s.passed,
                "compiled": s.compiled,
                "worst_margin": checked.worst_margin if (checked := _shape_result(s)) is not None else None,
                "error": s.error or None,
            }
            for s in result.shapes
        ],
        "signature": None
        if result.signature is None
        else [{"shape": list(dims), "dtype": dtype} for dims, dtype in result.signature],
    }


def _block_result(block: BlockCheck) -> Result:
    """One block's check result: a Result (typed ``Any`` on the engine's side)."""
    return cast("Result", block.result)


def _in_block(c: Comparison, block: BlockCheck, prefix: str) -> Dict[str, Any]:
    """A block's tensor, named with the block's prefix (a parameter: its checkpoint key), so that
    each block's tensors keep their own names across runs."""
    return {**tensor_record(c), "name": prefix.format(i=block.index) + c.name, "block": block.index}


def _blocks_fields(result: BlocksResult) -> Dict[str, Any]:
    tensors = [_in_block(c, b, result.prefix) for b in result.blocks for c in _block_result(b).comparisons]
    margins: List[float] = [t["margin"] for t in tensors if t["margin"] is not None]
    first = _block_result(result.blocks[0])
    weights = first.weights
    grad = result.end_to_end_grad
    return {
        "pair": {"mindspore": result.ms_type, "torch": result.torch_type},
        "train": first.train,
        "modes": list(first.modes),
        "seed": first.seed,
        "worst_margin": max(margins, default=None),
        "tensors": tensors,
        "notes": list(result.notes),
        "weights": {"direction": weights.direction, "mapped": weights.total, "verified": weights.verified},
        "inputs": first.inputs,
        "blocks": {
            "count": len(result.blocks),
            "prefix": result.prefix,
            "failing": result.failing_blocks,
            "end_to_end": tensor_record(result.end_to_end),
            "end_to_end_grad": None if grad is None else tensor_record(grad),
            "per_block": [
                {
                    "index": b.index,
                    "passed": b.passed,
                    "worst_margin": _block_result(b).worst_margin,
                    "chained": tensor_record(b.chained),
                    "chained_grads": [_in_block(c, b, result.prefix) for c in b.chained_grads],
                    "cpu_s": b.forward_time.cpu + b.backward_time.cpu,
                    "wall_s": b.forward_time.wall + b.backward_time.wall,
                }
                for b in result.blocks
            ],
        },
    }


def _result_fields(result: CheckResult) -> Dict[str, Any]:
    if isinstance(result, DataParallelResult):
        return _parallel_fields(result)
    if hasattr(result, "failing_blocks"):  # parity.engine.blocks.result.BlocksResult
        return _blocks_fields(cast("BlocksResult", result))
    if hasattr(result, "signature"):  # parity.engine.shapes.result.ShapesResult
        return _shapes_fields(cast("ShapesResult", result))
    if hasattr(result, "use_cache"):  # parity.engine.generation.result.GenerationResult
        return _generation_fields(cast("GenerationResult", result))
    training = hasattr(result, "steps")
    # typed views of the one result: only the one that ``training`` names is read
    trained, checked = cast("TrainingResult", result), cast("Result", result)
    tensors = (
        [tensor_record(c, s.step) for s in trained.steps for c in s.comparisons]
        if training
        else [tensor_record(c) for c in checked.comparisons]
    )
    margins: List[float] = [t["margin"] for t in tensors if t["margin"] is not None]
    weights = checked.weights  # both kinds hold a WeightReport
    return {
        "pair": {"mindspore": checked.ms_type, "torch": checked.torch_type},
        "train": True if training else checked.train,
        "modes": [trained.mode] if training else list(checked.modes),
        "seed": checked.seed,
        "reference": None if training else checked.reference,
        "worst_margin": max(margins, default=None),
        "problem": checked.problem or None,
        "tensors": tensors,
        "first_divergence": None if training else _first_divergence(_table(checked.layers)),
        "layers": None if training else _layers(_table(checked.layers)),
        "own_errors": None if training else _own_errors(_table(checked.layers)),
        "first_nonfinite": _first_nonfinite(result),
        "training": _training(trained) if training else None,
        "weights": {"direction": weights.direction, "mapped": weights.total, "verified": weights.verified},
        "inputs": trained.batches if training else checked.inputs,
        "notes": list(result.notes),
        "reproduce": result.reproduce or None,
        "repro": getattr(result, "repro", None),  # the standalone repro's test file (--parity-repro)
    }


def check_record(
    *,
    nodeid: str,
    case: str,
    call: str,
    index: int,
    device: str,
    seed: int,
    duration: float,
    result: Optional[CheckResult] = None,
    error: Optional[BaseException] = None,
) -> Dict[str, Any]:
    """The record of one check: its ``result`` (a Result, TrainingResult, DataParallelResult or
    GenerationResult; a
    mismatch's own when ``error`` is one), or only the ``error`` where the check raised before
    comparing. ``seed`` is the one the check would use, for a check that has no result."""
    if result is None and isinstance(error, ParityMismatch):
        result = cast("CheckResult", error.result)  # a mismatch carries its check's result
    message = str(error) if error is not None else ""
    record: Dict[str, Any] = {
        "schema": SCHEMA,
        "type": "check",
        "nodeid": nodeid,
        "case": case,
        "call": call,
        "index": index,
        "verdict": _verdict(result, error),
        "device": device,
        "pair": None,
        "train": None,
        "modes": [],
        "seed": seed,
        "reference": None,
        "worst_margin": None,
        "problem": None,
        "tensors": [],
        "first_divergence": None,
        "layers": None,
        "training": None,
        "data_parallel": None,
        "generation": None,
        "shapes": None,
        "signature": None,
        "blocks": None,
        "weights": None,
        "inputs": None,
        "notes": [],
        "reproduce": None,
        "repro": None,
        "device_setup": None,
    }
    if result is not None:
        record.update(_result_fields(result))
        setup = getattr(result, "device_setup", None)
        record["device_setup"] = setup.as_record() if setup is not None else None
    record.update(
        {
            "likely_causes": list(
                getattr(error, "likely_causes", None)
                or [line[len(_CAUSE) :] for line in message.splitlines() if line.startswith(_CAUSE)]
            ),
            "error": None if error is None else {"type": type(error).__name__, "message": message},
            "duration": duration,
            "worker": os.environ.get("PYTEST_XDIST_WORKER"),
        }
    )
    return _json_record(record)


class _Lost(Exception):
    pass


def lost_record(
    *, nodeid: str, verdict: str, message: str, index: int, device: str, seed: int, worker: Optional[str]
) -> Dict[str, Any]:
    """The record of a test that never finished (``verdict`` ``"crashed"``: its xdist worker died
    under it; ``"interrupted"``: the run was stopped while it ran). What its checks found was lost
    with it; the record stands for the whole test (``call`` ``"test"``)."""
    if verdict not in CUT_SHORT:
        raise ValueError(f"lost_record: verdict {verdict!r} is not one of {CUT_SHORT}")
    record = check_record(
        nodeid=nodeid,
        case=nodeid,
        call="test",
        index=index,
        device=device,
        seed=seed,
        duration=0.0,
        error=_Lost(message),
    )
    record.update(
        verdict=verdict,
        worker=worker,
        error={"type": "WorkerCrashed" if verdict == "crashed" else "Interrupted", "message": message},
    )
    return record


def _json_record(record: Dict[str, Any]) -> Dict[str, Any]:
    """:func:`jsonable` of a record: a dict comes back a dict."""
    return cast(Dict[str, Any], jsonable(record))


def jsonable(value: object) -> Any:
    """``value`` as strict JSON takes it: lists for tuples, Python numbers for numpy's, and the
    strings "inf", "-inf" and "nan" for floats that are not finite."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        value = float(value)
        return value if math.isfinite(value) else ("nan" if value != value else "inf" if value > 0 else "-inf")
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    return str(value)


# -- where records are made and how they leave the item -----------------------------------------


class _Recorded:
    result: Optional[CheckResult] = None


@contextlib.contextmanager
def recording(node: pytest.Item, settings: Settings, *, call: str, case: str) -> Iterator[_Recorded]:
    """Time the check run in the block and keep its record in ``node``'s stash: set ``.result``
    on what this yields when the check returns; an exception is recorded as it leaves."""
    __tracebackhide__ = True
    recorded, started = _Recorded(), time.perf_counter()
    fields: Dict[str, Any] = dict(
        nodeid=node.nodeid, case=case, call=call, device=settings.device, seed=settings.resolved_seed
    )
    kept = node.stash.setdefault(_RECORDS, [])
    try:
        yield recorded
    except Exception as exc:
        kept.append(check_record(index=len(kept), duration=time.perf_counter() - started, error=exc, **fields))
        raise
    if recorded.result is not None:
        kept.append(
            check_record(index=len(kept), duration=time.perf_counter() - started, result=recorded.result, **fields)
        )


def item_records(item: pytest.Item) -> List[Dict[str, Any]]:
    """Every record the item's checks made so far."""
    return item.stash.get(_RECORDS, [])


def attach(item: pytest.Item, report: pytest.TestReport, *, records: bool) -> None:
    """Hand the records made since the last phase to this phase's ``report``: an expected failure
    (xfail) turns its failed checks' verdicts to ``xfail``; ``records`` puts each record in the
    report's user properties under :data:`RECORD_KEY`."""
    kept = item_records(item)
    start = item.stash.get(_SENT, 0)
    new = kept[start:]
    item.stash[_SENT] = len(kept)
    if not new:
        return
    if report.skipped and hasattr(report, "wasxfail"):
        for record in new:
            if record["verdict"] in ("fail", "unsupported"):
                record["verdict"] = "xfail"
    report.user_properties.append((CHECKS_KEY, len(new)))
    if records:
        report.user_properties.extend((RECORD_KEY, record) for record in new)


def carried(report: object) -> List[Dict[str, Any]]:
    """The check records a report carries."""
    return [value for key, value in getattr(report, "user_properties", ()) if key == RECORD_KEY]


# -- the environment and the file -------------------------------------------------------------


def fingerprint(
    *, root: Path, device: str, seed: Optional[str], mode: Optional[str], workers: Optional[object] = None
) -> Dict[str, Any]:
    """The run's environment record: versions, the device, the host, the commit at ``root``,
    and the run's own options (as given: ``None`` where left to defaults)."""
    host = environment.cpu()
    accelerator = environment.accelerator(device)
    versions = environment.versions()
    versions.update({key: accelerator.pop(key) for key in ("cann", "ascend_driver", "nvidia_driver")})
    reference = devices.planned_reference(device, versions.get("torch_npu"))
    return _json_record(
        {
            "schema": SCHEMA,
            "type": "environment",
            # to the microsecond: two runs a second apart are two runs (parity report's history keys on it)
            "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="microseconds"),
            "versions": versions,
            **accelerator,  # the device and its name
            "torch_reference": reference,
            "host": {
                "name": platform.node(),
                "platform": platform.platform(),
                "cpu_model": host["model"],
                "arch": host["arch"],
                "cores": host["cores"],
                "cpu_flags": host["flags"],
            },
            "git": environment.git_state(root),
            "rootdir": str(root),
            "run": {"seed": seed, "mode": mode, "device": device, "xdist_workers": workers},
        }
    )


class RecordFile:
    """The JSON-lines file being written; each record is flushed as it arrives, so that a run cut
    short leaves what it had."""

    def __init__(self, path: Path, where: str) -> None:
        if path.is_dir():
            raise ParityUsageError(f"{where}: {path} is a folder; give the path of the file to write")
        if not path.parent.is_dir():
            raise ParityUsageError(f"{where}: folder {path.parent} does not exist")
        files.check_destination(path, f"{where}:")  # a FIFO or a device, a read-only file or folder
        try:
            self._file = path.open("w", encoding="utf-8")
        except OSError as exc:
            raise ParityUsageError(f"{where}: cannot write {path}: {exc.strerror}") from None
        self.path = path

    def write(self, record: Dict[str, Any]) -> None:
        self._file.write(json.dumps(record, allow_nan=False, separators=(",", ":")) + "\n")
        self._file.flush()

    def close(self) -> None:
        self._file.close()


_NOT_FINITE = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}


def _floats(record: Dict[str, Any]) -> Dict[str, Any]:
    for key, value in record.items():
        if key in _FLOATS and isinstance(value, str) and value in _NOT_FINITE:
            record[key] = _NOT_FINITE[value]
    return record


def read_records(path: Union[str, "os.PathLike[str]"]) -> Tuple[Dict[str, Any], List[Dict[str, Any]]]:
    """The environment record and the check records of a ``--parity-report`` file, in the order
    written (the order reports arrived: under xdist not the collection order). Record types this
    schema does not know are left out, for files written by later versions of schema 1."""
    path = Path(path)
    environment_record: Optional[Dict[str, Any]] = None
    checks: List[Dict[str, Any]] = []
    for number, line in files.text_lines(path, "report file"):
        if not line.strip():
            continue
        try:
            record = json.loads(line, object_hook=_floats)
        except (ValueError, RecursionError) as exc:
            reason = exc.msg if isinstance(exc, json.JSONDecodeError) else type(exc).__name__
            raise ParityUsageError(f"{path}:{number}: not a JSON record ({reason})") from None
        if not isinstance(record, dict) or record.get("schema") != SCHEMA:
            found = record.get("schema") if isinstance(record, dict) else None
            raise ParityUsageError(f"{path}:{number}: record schema {found!r}; this parity reads schema {SCHEMA}")
        if record.get("type") == "environment":
            if environment_record is not None:
                raise ParityUsageError(
                    f"{path}:{number}: a second environment record; a report holds one "
                    "run (merge shard reports rather than concatenating them)"
                )
            check_fields(record, f"{path}:{number}", VERDICTS)
            environment_record = record
        elif record.get("type") == "check":
            check_fields(record, f"{path}:{number}", VERDICTS)
            checks.append(record)
    if environment_record is None:
        raise ParityUsageError(f"{path}: no environment record; not a file written by --parity-report")
    return environment_record, checks
