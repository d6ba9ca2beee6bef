"""The record of a data-parallel check (:mod:`parity.engine.data_parallel.run`) and its failure message."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

from ...judge.metrics import Comparison
from ..diagnosis import messages
from ..result import Steps, Verdicts

__all__ = ["DataParallelResult", "DataParallelStep", "RUNS", "PAIRS", "disagreeing", "failure_message"]

RUNS = ("MindSpore single", "MindSpore parallel", "PyTorch single", "PyTorch parallel")
# The cycle of pairs (run, reference): each run is in exactly two.
PAIRS = (
    ("MindSpore single", "PyTorch single"),
    ("MindSpore parallel", "MindSpore single"),
    ("PyTorch parallel", "PyTorch single"),
    ("MindSpore parallel", "PyTorch parallel"),
)
_SPOKEN = {
    "loss": "loss",
    "param grad": "applied gradient of",
    "parameter": "parameter after the update",
    "buffer": "buffer",
}


@dataclass
class DataParallelStep:
    """One optimizer step: each run's loss (a parallel run's is the mean of its workers'), and per
    pair "run vs reference" the tensors compared after the step, in stage order."""

    step: int
    losses: Dict[str, float]
    pairs: Dict[str, List[Comparison]]

    @property
    def comparisons(self) -> List[Comparison]:
        return [c for group in self.pairs.values() for c in group]


@dataclass
class DataParallelResult(Steps, Verdicts):
    """Everything a data-parallel check compared, step by step and pair by pair."""

    ms_type: str
    torch_type: str
    workers: int
    steps: List[DataParallelStep]
    optimizer: str
    loss: str
    batches: str
    seed: int
    shard_findings: List[str] = field(default_factory=list)  # workers that trained on the wrong rows
    worker_findings: List[str] = field(default_factory=list)  # workers whose parameters left worker 0's
    notes: List[str] = field(default_factory=list)
    reproduce: str = ""
    seconds: Dict[str, float] = field(default_factory=dict)  # wall time of each launch and of the whole check

    @property
    def comparisons(self) -> List[Comparison]:
        return [c for s in self.steps for c in s.comparisons]

    @property
    def passed(self) -> bool:
        return not self.shard_findings and not self.worker_findings and all(c.passed for c in self.comparisons)

    @property
    def failing_pairs(self) -> List[str]:
        return [
            pair
            for pair in dict.fromkeys(p for s in self.steps for p in s.pairs)
            if any(not c.passed for s in self.steps for c in s.pairs.get(pair, []))
        ]

    @property
    def first_failure(self) -> Optional[Tuple[int, str, Comparison]]:
        """(step, pair, comparison) of the first tensor out of tolerance, in step, pair and stage order."""
        for s in self.steps:
            for pair, group in s.pairs.items():
                for c in group:
                    if not c.passed:
                        return s.step, pair, c
        return None

    @property
    def disagreeing(self) -> str:
        """Which of the four runs disagree, in words ("" when every pair agrees)."""
        return disagreeing(
            [_runs_of(p) for p in self.failing_pairs],
            [_runs_of(p) for p in (self.steps[0].pairs if self.steps else ())],
        )

    def __str__(self) -> str:
        total, failures = len(self.comparisons), self.failures
        head = (
            f"{'ok' if self.passed else 'FAIL'}: mindspore {self.ms_type} <-> torch {self.torch_type} "
            f"({self.workers} workers, {len(self.steps)} steps); {total - len(failures)} of {total} tensors "
            f"within tolerance over {len(self.steps[0].pairs) if self.steps else 0} pairs of runs"
        )
        worst = self.worst
        parts = (
            [f"worst {worst.kind} '{worst.name}' ({worst.mode}) at {messages.fmt(worst.margin)}x allowed"]
            if worst is not None
            else []
        )
        if self.noise_judged:
            parts.append(
                f"{len(self.noise_judged)} noise-judged (beyond the tolerance, inside PyTorch's rounding envelope)"
            )
        parts += self.shard_findings[:1] + ([self.disagreeing] if self.disagreeing else [])
        return "; ".join([head] + parts)


def _runs_of(pair: str) -> Tuple[str, str]:
    """The two runs of a pair's label ("MindSpore single vs PyTorch single")."""
    first, _, second = pair.partition(" vs ")
    return first, second


def disagreeing(failing_pairs: Sequence[Tuple[str, str]], compared_pairs: Sequence[Tuple[str, str]]) -> str:
    """Name the runs that disagree from the pairs that failed among those compared."""
    failing, compared = set(failing_pairs), set(compared_pairs)
    if not failing:
        return ""
    runs = {r for pair in compared for r in pair}
    for run in sorted(runs):
        touching = {p for p in compared if run in p}
        if len(touching) > 1 and failing == touching:
            return f"{run} disagrees with the other three runs"
    single = {p for p in compared if all(r.endswith("single") for r in p)}
    parallel = {p for p in compared if all(r.endswith("parallel") for r in p)}
    mixed = compared - single - parallel
    if failing == mixed and mixed:
        return "the two parallel runs agree with each other, not with the single-process runs"
    if failing == single | parallel and single and parallel:
        return "MindSpore and PyTorch disagree, in one process and in parallel alike"
    return "these pairs disagree: " + "; ".join(" vs ".join(p) for p in sorted(failing))


def where(c: Comparison) -> str:
    return "loss" if c.kind == "loss" else f"{_SPOKEN[c.kind]} '{c.name}'"


def pair_table(result: DataParallelResult) -> List[str]:
    """Per pair of runs: the worst tensor of each step."""
    lines = ["Pairs of runs (worst tensor per step, difference / allowed):"]
    pairs = list(dict.fromkeys(p for s in result.steps for p in s.pairs))
    width = max(len(p) for p in pairs)
    for pair in pairs:
        cells, failed = [], False
        for s in result.steps:
            group = s.pairs[pair]
            worst = max(group, key=lambda c: c.margin)
            failed |= not all(c.passed for c in group)
            cells.append(f"step {s.step} {messages.fmt(worst.margin)}x '{worst.name}'")
        lines.append(f"  {'FAIL' if failed else 'ok':<5} {pair:<{width}}  " + "; ".join(cells))
    return lines


def loss_table(result: DataParallelResult) -> List[str]:
    lines = [
        "Losses (a parallel run's: the mean of its workers'):",
        "  step  " + "  ".join(f"{run:<18}" for run in RUNS),
    ]
    for s in result.steps:
        lines.append(f"  {s.step:<4}  " + "  ".join(f"{s.losses[run]:<18.8g}" for run in RUNS))
    return lines


def failure_message(result: DataParallelResult) -> str:
    first = result.first_failure
    if result.shard_findings:
        head = f"Data parallelism did not split the global batch: {result.shard_findings[0]}"
    elif result.worker_findings:
        head = f"Data-parallel workers disagree: {result.worker_findings[0]}"
    else:
        head = f"Data-parallel training does not match! {result.disagreeing[0].upper()}{result.disagreeing[1:]}"
    lines = [
        head,
        "",
        f"Pair:       mindspore {result.ms_type} <-> torch {result.torch_type} (train mode, pynative)",
        f"Runs:       {', '.join(RUNS)}; {result.workers} workers each (msrun with mccl; torch.distributed "
        "with gloo, DistributedDataParallel)",
        f"Optimizer:  {result.optimizer}",
        f"Loss:       {result.loss}",
    ]
    if result.disagreeing:
        lines.append(f"Disagree:   {result.disagreeing}")
    lines += [f"Rows:       {finding}" for finding in result.shard_findings]
    lines += [f"Workers:    {finding}" for finding in result.worker_findings]
    if first is not None:
        step, pair, c = first
        lines += [f"Divergence: first at step {step} of {len(result.steps)}, {pair}, {where(c)}", ""]
        if c.problem is None:
            run, reference = pair.split(" vs ")
            lines += messages.metric_lines(c, (run, reference)) + [f"Tolerance: {c.tolerance_source} ({c.tolerance})"]
        else:
            lines.append(
                f"{c.problem.capitalize()}s differ: {c.ms_shape or c.ms_dtype} vs {c.torch_shape or c.torch_dtype}"
            )
    lines += [""] + pair_table(result) + loss_table(result) + [""]
    lines += [f"Batches: {result.batches}"] + [f"Note: {note}" for note in result.notes]
    return "\n".join(lines + ["", f"Reproduce: {result.reproduce}"])
