"""Text only: the failure message of :func:`parity.check_generation`."""

from __future__ import annotations

from typing import List, Optional, Tuple

from ..diagnosis import messages
from .result import GenerationResult

__all__ = ["failure_message"]


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
    lines += messages.metric_lines(c) + [f"Tolerance: {c.tolerance_source} ({c.tolerance})"]
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
