"""Generation parity: :func:`parity.check_generation`, greedy decoding on both sides from the same
prompt, the logits of every step judged as :func:`parity.check` judges a tensor.

At each step both sides are fed the same sequence: the prompt and the tokens PyTorch chose so far
(with a cache, only the newest token). Each side's next token is the argmax of its last position's
logits. Until the sides first pick different tokens this is both sides' own greedy decoding; after
it, both go on from PyTorch's tokens, so that every step's logits are compared on the same input
and ``ms_tokens`` keeps MindSpore's own choices. A step's logits are compared by tolerance and,
near or beyond it, against PyTorch's rounding envelope (:mod:`parity.judge.envelope`: PyTorch's
step again in float64 and with every weight and layer output moved by a few ulps). A token that
differs where the two logits are within what the envelope allows of each other is a near-tie,
reported, not a failure.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Optional, Tuple

import numpy as np

from ..errors import ParityInternalError, ParityMismatch, ParityUsageError
from ..judge.devices import profile as device_profile
from ..judge.envelope import NOISE_FACTOR, Candidate, judge_envelope, near
from ..judge.metrics import ArrayPair, Comparison, compare_pair
from ..judge.tolerance import ToleranceSpec
from ..options import parse_seed
from .check import check_pair
from .diagnosis import messages
from .inputs import Inputs, materialize
from .pairing import map_pair_weights, set_weights
from .passes import draw_seed
from .result import Verdicts
from .settings import DEFAULT_SEED, Settings
from .side_errors import framework_error

__all__ = ["GenerationResult", "GenerationStep", "TokenDifference", "run_generation"]


@dataclass(frozen=True)
class TokenDifference:
    """A token the sides chose differently. It is a near-tie, reported and not a failure, where
    PyTorch's own rounding could have chosen either: the gap between PyTorch's logits of the two
    tokens is within what the tolerance and PyTorch's rounding envelope allow the two logits."""

    step: int
    row: int
    ms_token: int
    torch_token: int
    gap: float  # PyTorch's logit of its token minus its logit of MindSpore's
    allowed: float  # how far the two logits may move: their allowances added

    @property
    def near_tie(self) -> bool:
        return self.gap <= self.allowed


@dataclass
class GenerationStep:
    """One decoding step: the last position's logits compared, and each side's tokens (per row)."""

    step: int
    comparison: Comparison
    ms_tokens: List[int]
    torch_tokens: List[int]


@dataclass
class GenerationResult(Verdicts):
    """Everything a generation check compared, step by step (steps counted from 1)."""

    ms_type: str
    torch_type: str
    steps: List[GenerationStep]
    prompt: str
    seed: int
    use_cache: bool
    weights: object
    differences: List[TokenDifference] = field(default_factory=list)
    reproduce: str = ""
    notes: List[str] = field(default_factory=list)
    layers: Optional[object] = None  # the layer table of the first failing step, when it was localised

    @property
    def comparisons(self) -> List[Comparison]:
        return [s.comparison for s in self.steps]

    @property
    def ms_tokens(self) -> np.ndarray:
        """MindSpore's chosen tokens, (batch, steps)."""
        return np.array([s.ms_tokens for s in self.steps], np.int64).T

    @property
    def torch_tokens(self) -> np.ndarray:
        """PyTorch's chosen tokens, (batch, steps)."""
        return np.array([s.torch_tokens for s in self.steps], np.int64).T

    @property
    def near_ties(self) -> List[TokenDifference]:
        return [d for d in self.differences if d.near_tie]

    @property
    def first_difference(self) -> Optional[Tuple[int, int]]:
        """(step, row) of the first token the sides chose differently (a near-tie too), or None."""
        return (self.differences[0].step, self.differences[0].row) if self.differences else None

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.comparisons) and all(d.near_tie for d in self.differences)

    def __str__(self) -> str:
        worst = self.worst
        parts = [
            f"{len(self.steps)} steps x {len(self.steps[0].torch_tokens) if self.steps else 0} rows",
            f"worst logits at step {self.comparisons.index(worst) + 1}, {messages.fmt(worst.margin)}x allowed"
            if worst is not None
            else "nothing compared",
        ]
        if self.near_ties:
            parts.append(
                f"{len(self.near_ties)} near-tie(s), first at step {self.near_ties[0].step}, "
                f"row {self.near_ties[0].row}"
            )
        return (
            f"{'ok' if self.passed else 'FAIL'}: mindspore {self.ms_type} <-> torch {self.torch_type} "
            f"(greedy, {'with' if self.use_cache else 'without'} cache); " + "; ".join(parts)
        )


def run_generation(
    ms_model,
    torch_model,
    prompt,
    *,
    max_new_tokens: int = 8,
    weights="copy",
    name_map=None,
    tolerance=None,
    seed=None,
    use_cache=False,
    ms_step=None,
    settings: Settings = Settings(),
) -> GenerationResult:
    """See :func:`parity.check_generation`. Both models are put in eval mode for the check and
    left in the mode they were in."""
    __tracebackhide__ = True
    check_pair(ms_model, torch_model)
    from ..backends import mindspore as msb
    from ..backends import torch as tb

    restore_ms, restore_torch = msb.train_flags(ms_model), tb.train_flags(torch_model)
    try:
        return _run(
            ms_model,
            torch_model,
            prompt,
            max_new_tokens,
            weights,
            name_map,
            tolerance,
            seed,
            use_cache,
            ms_step,
            settings,
        )
    finally:
        restore_ms()
        restore_torch()
        msb.release_graphs()


def _validate(max_new_tokens, use_cache, ms_step) -> None:
    if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int) or max_new_tokens < 1:
        raise ParityUsageError(f"check_generation(): max_new_tokens must be an integer >= 1, got {max_new_tokens!r}")
    if not isinstance(use_cache, bool):
        raise ParityUsageError(f"check_generation(): use_cache must be True or False, got {use_cache!r}")
    if use_cache and not callable(ms_step):
        raise ParityUsageError(
            "check_generation(use_cache=True) needs ms_step=fn(ms_model, input_ids, cache) -> "
            "(logits, cache): the MindSpore model's own cache convention (cache is None at the "
            "first step); PyTorch's side follows Hugging Face's past_key_values"
        )
    if ms_step is not None and not callable(ms_step):
        raise ParityUsageError(
            f"check_generation(): ms_step must be a function (ms_model, input_ids, cache) -> "
            f"(logits, cache), got {type(ms_step).__qualname__}"
        )


def _prompt(prompt, seed: int) -> Tuple[np.ndarray, str]:
    data = materialize(prompt, seed)
    arrays = list(data.args) + list(data.kwargs.values())
    if len(arrays) != 1 or arrays[0].dtype.kind not in "iu" or arrays[0].ndim != 2 or not arrays[0].size:
        shown = ", ".join(f"{a.dtype}{list(a.shape)}" for a in arrays)
        raise ParityUsageError(
            f"check_generation(): prompt must be one integer array of token ids, (batch, length) "
            f"with both at least 1 (parity.randint((2, 8), 0, vocab) or a numpy array), got {shown}"
        )
    return arrays[0].astype(np.int64), data.describe(seed)


def _run(
    ms_model, torch_model, prompt, max_new_tokens, weights, name_map, tolerance, seed, use_cache, ms_step, settings
) -> GenerationResult:
    __tracebackhide__ = True
    from ..backends import mindspore as msb
    from ..backends import torch as tb
    from ..backends.device import setup as device_setup

    _validate(max_new_tokens, use_cache, ms_step)
    seed = parse_seed(seed, "check_generation(seed=...)")
    seed = seed if seed is not None else settings.seed if settings.seed is not None else DEFAULT_SEED
    mode = settings.mode if settings.mode in ("pynative", "graph") else "pynative"
    chain = (ToleranceSpec.parse(tolerance, source="check_generation(tolerance=...)"),) + settings.tolerances
    msb.prepare(seed=seed, device=settings.device)
    tb.prepare(seed=seed, device=settings.device)
    chain += (device_profile(device_setup(settings.device)),)
    ids, described = _prompt(prompt, seed)
    wmap = map_pair_weights(ms_model, torch_model, name_map, settings.device)
    wreport = set_weights(weights, wmap, ms_model, torch_model)
    msb.set_train(ms_model, False)
    tb.set_train(torch_model, False)
    decoder = _Decoder(ms_model, torch_model, use_cache, ms_step, settings.device, mode)
    steps, differences, sequence = [], [], ids
    for step in range(1, max_new_tokens + 1):
        ms_logits, torch_logits = decoder.step(sequence)
        pair = ArrayPair("output", f"logits[step {step}]", "logits", "logits", mode, ms_logits, torch_logits)
        c = compare_pair(pair, chain, check_dtype=True)
        ms_pick, torch_pick = ms_logits.argmax(axis=-1), torch_logits.argmax(axis=-1)
        spread = None
        if near(c, torch_logits.dtype.kind == "f") or (ms_pick != torch_pick).any():
            spread = _judge(c, pair, torch_model, sequence, seed, settings.device)
        differences += _differences(step, c, torch_logits, ms_pick, torch_pick, spread)
        steps.append(GenerationStep(step, c, ms_pick.tolist(), torch_pick.tolist()))
        sequence = np.concatenate([sequence, torch_pick[:, None].astype(np.int64)], axis=1)
    result = GenerationResult(
        type(ms_model).__name__,
        type(torch_model).__name__,
        steps,
        described,
        seed,
        use_cache,
        wreport,
        differences,
        reproduce=messages.reproduce_line(settings.reproduce, seed, "parity.check_generation"),
    )
    if settings.mode == "both":
        result.notes.append(
            "decoded in PYNATIVE mode only: each step's sequence is one token longer, which GRAPH "
            "mode would compile again at every step"
        )
    if use_cache:
        result.notes.append(
            "with a cache: each step feeds the newest token only; PyTorch's rounding envelope and "
            "the layer localisation rerun the whole sequence without a cache"
        )
    if not result.passed:
        first = _first_failure(result)
        result.layers = _localise(ms_model, torch_model, wmap, chain, steps, ids, first, seed, settings.device, ms_step)
        raise ParityMismatch(failure_message(result, first), result)
    return result


class _Decoder:
    """Both sides' next-step logits on a sequence, with or without their caches."""

    def __init__(self, ms_model, torch_model, use_cache, ms_step, device, mode):
        self.ms_model, self.torch_model, self.use_cache, self.ms_step = ms_model, torch_model, use_cache, ms_step
        self.device, self.mode = device, mode
        self.ms_cache = self.torch_cache = None
        self.fed = 0  # tokens each cache holds

    def step(self, sequence: np.ndarray):
        from ..backends import mindspore as msb
        from ..backends import torch as tb

        new = sequence[:, self.fed :] if self.use_cache else sequence
        try:
            torch_logits, self.torch_cache = tb.decode(
                self.torch_model, new, cache=self.torch_cache, use_cache=self.use_cache, device=self.device
            )
        except ParityUsageError:
            raise
        except Exception as exc:
            raise framework_error("PyTorch", exc, "a decoding step") from None
        try:
            ms_logits, cache = msb.decode(self.ms_model, new, cache=self.ms_cache, step=self.ms_step, mode=self.mode)
            self.ms_cache = cache if self.use_cache else None
        except ParityUsageError:
            raise
        except Exception as exc:
            msb.recover()
            raise framework_error("MindSpore", exc, "a decoding step") from None
        self.fed = sequence.shape[1]
        if ms_logits.shape != torch_logits.shape:
            raise ParityMismatch(
                f"Logits shapes differ: MindSpore {tuple(ms_logits.shape)} vs PyTorch "
                f"{tuple(torch_logits.shape)} (the last position's, batch x vocab)"
            )
        return ms_logits, torch_logits


def _judge(c: Comparison, pair: ArrayPair, torch_model, sequence: np.ndarray, seed: int, device: str):
    """Judge the step's logits against PyTorch's rounding envelope (whatever their margin: a token
    that differs needs the spread), and return the spread."""
    from ..backends import torch as tb

    tolerance_margin, judged = c.margin, near(c, True)
    state = {}

    def rerun(spec):
        if spec.cast is not None:
            module = state.setdefault("float64", tb.float64_copy(torch_model))
            return [("logits", tb.decode(module, sequence, device=device)[0])]
        tb.prepare(seed=seed, device=device)
        with tb.perturbed(torch_model, seed=draw_seed(seed, spec.draw), ulps=spec.ulps):
            return [("logits", tb.decode(torch_model, sequence, device=device)[0])]

    spread = judge_envelope([Candidate("logits", c, pair.ms, pair.torch)], rerun, adaptive=False)["logits"]
    if not judged:  # far inside its tolerance: judged by it alone, as check judges it
        c.envelope, c.margin = None, tolerance_margin
    return spread


def _differences(step, c, torch_logits, ms_pick, torch_pick, spread) -> List[TokenDifference]:
    """The rows whose tokens differ, with PyTorch's gap between the two tokens' logits and what the
    tolerance and PyTorch's envelope allow the two (their allowances added)."""
    found = []
    for row in np.flatnonzero(ms_pick != torch_pick):
        a, b = int(torch_pick[row]), int(ms_pick[row])
        values = torch_logits[row, [a, b]].astype(np.float64)
        allowed = c.tolerance.atol + c.tolerance.rtol * np.abs(values)
        if spread is not None:
            allowed = allowed + NOISE_FACTOR * spread.values[row, [a, b]].astype(np.float64)
        found.append(TokenDifference(step, int(row), b, a, float(values[0] - values[1]), float(allowed.sum())))
    return found


def _first_failure(result: GenerationResult) -> Tuple[int, Optional[int]]:
    """(step, row) of the first failure: a token that is no near-tie, or logits out of bounds (row None)."""
    for s in result.steps:
        differ = [d.row for d in result.differences if d.step == s.step and not d.near_tie]
        if differ:
            return s.step, differ[0]
        if not s.comparison.passed:
            return s.step, None
    raise ParityInternalError("a failing generation check has no failing step")


def _localise(ms_model, torch_model, wmap, chain, steps, prompt, first, seed, device, ms_step):
    """The layer table of the failing step's forward on its whole sequence (one captured pass per
    side, as a failing check localises); None where the capture itself fails."""
    from ..backends import mindspore as msb
    from ..backends import torch as tb
    from .diagnosis.recording import Recording
    from .passes import Passes

    step = first[0]
    tokens = np.array([s.torch_tokens for s in steps[: step - 1]], np.int64).T.reshape(prompt.shape[0], step - 1)
    sequence = np.concatenate([prompt, tokens], axis=1)
    data = Inputs((sequence,), {}, {"input[0]": f"int64{list(sequence.shape)} (the step's sequence)"})
    run = Passes(
        ms_model, torch_model, data, wmap, chain, grads=False, train=False, seed=seed, device=device, capture=True
    )
    try:
        with tb.capture(torch_model, run.torch_recording, backward=False):
            tb.decode(torch_model, sequence, device=device)
        recording = Recording(run.localizer.on_forward, run.localizer.on_backward)
        with msb.capture(ms_model, recording, backward=False) as layers:
            msb.decode(ms_model, sequence, step=ms_step)
            layers.flush()
        run.ms_recording = recording
        return run.layer_verdicts()
    except Exception:  # localisation helps the message; it never hides the failure
        msb.recover()
        return None


def failure_message(result: GenerationResult, first: Tuple[int, Optional[int]]) -> str:
    step, row = first
    s = result.steps[step - 1]
    c = s.comparison
    if row is not None:
        a, b = s.torch_tokens[row], s.ms_tokens[row]
        headline = (
            f"MindSpore and PyTorch do not generate the same! Step {step}, row {row}: MindSpore chose token "
            f"{b}, PyTorch token {a}"
        )
    else:
        headline = f"MindSpore and PyTorch do not generate the same! The logits of step {step} are not close"
    lines = [
        headline,
        "",
        f"Pair:       mindspore {result.ms_type} <-> torch {result.torch_type} (eval mode, "
        f"greedy, {'with' if result.use_cache else 'without'} cache)",
        f"Divergence: first at step {step} of {len(result.steps)}" + (f", row {row}" if row is not None else ""),
        "",
    ]
    if row is not None:
        d = next(d for d in result.differences if (d.step, d.row) == (step, row))
        lines.append(
            f"Tokens: MindSpore {d.ms_token}, PyTorch {d.torch_token}; PyTorch's logits of the two are "
            f"{messages.fmt(d.gap)} apart, beyond the {messages.fmt(d.allowed)} that the tolerance and PyTorch's "
            "rounding envelope allow them (no near-tie)"
        )
    lines += messages._metrics(c) + [f"Tolerance: {c.tolerance_source} ({c.tolerance})"]
    layer_lines = _layer_lines(result)
    if layer_lines:
        lines += [""] + layer_lines
    lines += [
        "",
        "Tokens (rows x steps):",
        f"  MindSpore {result.ms_tokens.tolist()}",
        f"  PyTorch   {result.torch_tokens.tolist()}",
    ]
    lines += [
        f"Near-tie: step {t.step}, row {t.row}: MindSpore {t.ms_token}, PyTorch {t.torch_token}, PyTorch's "
        f"logits {messages.fmt(t.gap)} apart, within {messages.fmt(t.allowed)}"
        for t in result.near_ties
    ]
    lines += ["", f"Weights: {result.weights}", f"Prompt: {result.prompt}"]
    lines += [f"Note: {note}" for note in result.notes]
    return "\n".join(lines + ["", f"Reproduce: {result.reproduce}"])


def _layer_lines(result: GenerationResult) -> List[str]:
    """The failing step's first divergent layer and the table around it, from its captured pass."""
    if result.layers is None:
        return []
    verdict, where = result.layers.first("forward")
    if verdict is None:
        return ["Layers: every captured layer agrees on this step's sequence"]
    return [
        f"Layer: first divergence at the forward output of {where}"
        if where.startswith("'")
        else f"Layer: first divergence {where}"
    ] + messages.layer_lines(result.layers.forward, "forward")
