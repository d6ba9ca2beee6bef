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

from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from ...backends import mindspore as msb
from ...backends import torch as tb
from ...backends.device import setup as device_setup
from ...errors import ParityInternalError, ParityMismatch, ParityUsageError
from ...judge.devices import profile as device_profile
from ...judge.envelope import NOISE_FACTOR, Candidate, judge_envelope, near
from ...judge.metrics import ArrayPair, Comparison, compare_pair
from ...judge.tolerance import ToleranceSpec
from ...options import parse_seed
from ..check import check_pair
from ..diagnosis import messages
from ..diagnosis.recording import Recording
from ..inputs import Inputs, materialize
from ..pairing import map_pair_weights, set_weights
from ..passes import Passes, draw_seed
from ..settings import DEFAULT_SEED, CheckOptions, Settings
from ..side_errors import framework_error
from .messages import failure_message
from .result import GenerationResult, GenerationStep, TokenDifference

__all__ = ["run_generation"]


def run_generation(
    ms_model,
    torch_model,
    prompt,
    *,
    max_new_tokens: int = CheckOptions.max_new_tokens,
    weights=CheckOptions.weights,
    name_map=CheckOptions.name_map,
    ignore=CheckOptions.ignore,
    tolerance=CheckOptions.tolerance,
    seed=CheckOptions.seed,
    use_cache=CheckOptions.use_cache,
    ms_step=CheckOptions.ms_step,
    settings: Settings = Settings(),
) -> GenerationResult:
    """See :func:`parity.check_generation`. Both models are put in eval mode for the check and
    left in the mode they were in."""
    __tracebackhide__ = True
    check_pair(ms_model, torch_model)
    restore_ms, restore_torch = msb.train_flags(ms_model), tb.train_flags(torch_model)
    try:
        return _run(
            ms_model,
            torch_model,
            prompt,
            max_new_tokens,
            weights,
            name_map,
            ignore,
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
    ms_model,
    torch_model,
    prompt,
    max_new_tokens,
    weights,
    name_map,
    ignore,
    tolerance,
    seed,
    use_cache,
    ms_step,
    settings,
) -> GenerationResult:
    __tracebackhide__ = True
    _validate(max_new_tokens, use_cache, ms_step)
    seed = parse_seed(seed, "check_generation(seed=...)")
    seed = seed if seed is not None else settings.seed if settings.seed is not None else DEFAULT_SEED
    mode = settings.mode if settings.mode in ("pynative", "graph") else "pynative"
    chain = (ToleranceSpec.parse(tolerance, source="check_generation(tolerance=...)"),) + settings.tolerances
    msb.prepare(seed=seed, device=settings.device)
    tb.prepare(seed=seed, device=settings.device)
    chain += (device_profile(device_setup(settings.device)),)
    ids, described = _prompt(prompt, seed)
    wmap = map_pair_weights(ms_model, torch_model, name_map, settings.device, ignore)
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
            spread = _envelope_spread(c, pair, torch_model, sequence, seed, settings.device)
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


def _envelope_spread(c: Comparison, pair: ArrayPair, torch_model, sequence: np.ndarray, seed: int, device: str):
    """Judge the step's logits against PyTorch's rounding envelope (whatever their margin: a token
    that differs needs the spread), and return the spread."""
    tolerance_margin, judged = c.margin, near(c, True)
    state: Dict[str, Any] = {}

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
