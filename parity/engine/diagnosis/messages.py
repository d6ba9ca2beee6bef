"""Text only: failure messages, layer tables and summary lines. The numbers come from the judge
(:mod:`parity.judge`) and the layer verdicts (:mod:`.verdicts`); nothing here computes one."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

from .verdicts import first_divergence

__all__ = [
    "failure_message",
    "structure_message",
    "reproduce_line",
    "summary_line",
    "result_line",
    "fmt",
    "metric_lines",
    "layer_lines",
    "device_lines",
    "own_error_lines",
    "nonfinite_lines",
]

_HEADLINE = "MindSpore and PyTorch outputs are not close!"
_SIDE_NAMES = {
    "output": "forward output",
    "input grad": "gradient of input",
    "param grad": "gradient of parameter",
    "buffer": "running statistic",
}


def fmt(value: float) -> str:
    """A number as a person reads it: few digits, no trailing noise."""
    if value != value:
        return "nan"
    if value in (float("inf"), float("-inf")):
        return "inf" if value > 0 else "-inf"
    return f"{value:.2g}" if value and (abs(value) < 1e-3 or abs(value) >= 1e4) else f"{value:.3g}"


def _index(index) -> str:
    return str(tuple(index)) if len(index) != 1 else f"({index[0]},)"


def _where(c, modes: Sequence[str] = ()) -> str:
    """The tensor, and ``modes``: the MindSpore modes it failed in, when the check ran in several."""
    name = f"{_SIDE_NAMES[c.kind]} '{c.name}'"
    if c.ms_name != c.torch_name:
        name += f" (MindSpore '{c.ms_name}')"
    if c.layer and c.kind == "buffer":
        name += f" of layer '{c.layer}'"
    if modes:
        return f"{name} ({' and '.join(modes)})"
    return f"{name}, {c.mode} mode" if c.mode != "pynative" else name


def _failed_modes(result, c) -> Tuple[str, ...]:
    """The modes in which ``c``'s tensor failed, when the check ran in more than one mode."""
    if len(result.modes) < 2:
        return ()
    return tuple(f.mode for f in result.failures if (f.kind, f.name) == (c.kind, c.name))


def _also_failing(result, first) -> List[str]:
    """The other failing tensors, each once, with the modes it failed in (when several ran)."""
    seen, others = {(first.kind, first.name)}, []
    for c in result.failures:
        if (c.kind, c.name) not in seen:
            seen.add((c.kind, c.name))
            others.append(c)
    if not others:
        return []
    shown = []
    for c in others[:5]:
        modes = _failed_modes(result, c)
        shown.append(f"{c.kind} '{c.name}' ({' and '.join(modes) + ', ' if modes else ''}{fmt(c.margin)}x)")
    more = f" and {len(others) - 5} more" if len(others) > 5 else ""
    return ["Also failing: " + ", ".join(shown) + more]


def _headline(c) -> str:
    if c.problem == "shape":
        return (
            f"{_SIDE_NAMES[c.kind].capitalize()} shapes differ: MindSpore {tuple(c.ms_shape)} vs "
            f"PyTorch {tuple(c.torch_shape)}"
        )
    if c.problem == "dtype":
        return f"{_SIDE_NAMES[c.kind].capitalize()} dtypes differ: MindSpore {c.ms_dtype} vs PyTorch {c.torch_dtype}"
    if c.nonfinite is not None and not c.nonfinite.agree:
        return "Non-finite values differ between MindSpore and PyTorch!"
    return _HEADLINE


def metric_lines(c, sides: Tuple[str, str] = ("MindSpore", "PyTorch")) -> List[str]:
    """The figures of a failing tensor; ``sides`` names the two compared (a data-parallel pair's
    run and reference)."""
    if c.problem is not None:
        return []
    t = c.tolerance
    lines = [
        f"Mismatched elements: {c.mismatched} / {c.total} ({100.0 * c.mismatched / max(c.total, 1):.1f}%)",
        f"Greatest absolute difference: {fmt(c.max_abs)} at index {_index(c.max_abs_index)} "
        f"(up to {fmt(t.atol)} allowed)",
        f"Greatest relative difference: {fmt(c.max_rel)} at index {_index(c.max_rel_index)} "
        f"(up to {fmt(t.rtol)} allowed)",
        f"Cosine similarity: {c.cosine:.6f}",
    ]
    nf = c.nonfinite
    if nf is not None:
        verdict = "both sides agree on them" if nf.agree else f"{nf.disagreeing} positions disagree"
        shown = ", ".join(_index(p) for p in nf.positions)
        lines.append(
            f"Non-finite: {sides[0]} {nf.ms_count}, {sides[1]} {nf.torch_count} NaN/Inf; {verdict}; at {shown}"
        )
    if c.envelope is not None:
        lines.append(envelope_line(c.envelope, sides))
    if c.golden is not None:
        lines.append(golden_line(c.golden))
    return lines


def _kind_table(result) -> List[str]:
    """One line per kind of compared tensor: how many failed and the worst margin."""
    lines = []
    for kind in ("output", "input grad", "param grad", "buffer"):
        group = [c for c in result.comparisons if c.kind == kind]
        if not group:
            continue
        failed = [c for c in group if not c.passed]
        worst = max(group, key=lambda c: c.margin)
        status = "FAIL" if failed else "ok"
        how = f"{worst.problem} differs" if worst.problem else f"at {fmt(worst.margin)}x allowed"
        lines.append(
            f"  {status:<5} {kind + 's':<12} {len(group) - len(failed)}/{len(group)} within tolerance; "
            f"worst '{worst.name}'{f' ({worst.mode})' if len(result.modes) > 1 else ''} {how}"
        )
    return lines


_CONTEXT = 3  # agreeing layers shown before the first divergence


def _layer_line(v, marker: str = "") -> str:
    types = v.ms_type if v.ms_type == v.torch_type or not v.torch_type else f"{v.ms_type}/{v.torch_type}"
    own = f"; own {fmt(v.own_margin)}x allowed" if v.own_margin is not None and not v.shapes_differ else ""
    return f"  {v.status:<10} {v.label:<28} {types:<22} {_layer_difference(v)}{own}{marker}"


_SIDES = {
    "mindspore": "on the MindSpore side only",
    "torch": "on the PyTorch side only",
    "both": "on each side where the other has none",
}


def nonfinite_lines(origin) -> List[str]:
    """Where NaN/Inf first appeared on one side only (a :class:`parity.engine.diagnosis.verdicts.NonFiniteOrigin`)."""
    if origin is None:
        return []
    if origin.step is not None:  # a training check: a step and stage, the tensors before it
        earlier = (
            "every tensor compared before it was finite on both sides"
            if origin.inputs_finite
            else "tensors compared before it had NaN/Inf on both sides alike"
        )
        what = f", '{origin.label}'" if origin.label and origin.label != origin.stage else ""
        return [
            f"Non-finite: first at step {origin.step}, stage '{origin.stage}'{what}, NaN/Inf "
            f"{_SIDES[origin.side]}; {earlier}"
        ]
    kind = "forward output of" if origin.direction == "forward" else "gradient flowing back out of"
    inputs = (
        "what flowed in was finite on both sides"
        if origin.inputs_finite
        else "what flowed in already had NaN/Inf (no layer was fed finite values and made them)"
    )
    return [f"Non-finite: first at {kind} '{origin.label or origin.layer}', NaN/Inf {_SIDES[origin.side]}; {inputs}"]


_OWN_SHOWN = 8  # layers with own error listed; the rest counted
_OWN_WHAT = {"forward": "output", "backward": "gradient", "buffer": "running statistics"}


def own_error_lines(layers) -> List[str]:
    """The layers whose own error is out of bounds (each fed PyTorch's inputs), in order, each
    with its known mismatches, apart from those whose error is only inherited."""
    if layers is None or not getattr(layers, "own_measured", False):
        return []
    own = layers.own_errors
    inherited = [v for v in layers.forward + layers.backward if v.own_status == "inherited"]
    measured = [d for d in ("forward", "backward") if any(v.own_margin is not None for v in getattr(layers, d))]
    firsts = [layers.first(direction)[0] for direction in measured]
    unfed = [f"'{v.label}'" for v in firsts if v is not None and v.own_margin is None and v.status == "FAIL"]
    unfed_line = (
        [
            f"Not fed: {', '.join(unfed)} (a call the two sides make differently, or a custom bprop): "
            "its own error is not measured"
        ]
        if unfed
        else []
    )
    if not own:
        return (
            [
                f"Own errors: none among the layers fed PyTorch's inputs; the {len(inherited)} layers out of "
                "bounds inherit their error from what flowed in"
            ]
            + unfed_line
            + [""]
        )
    rows: Dict[str, list] = {}  # one row per layer: its own figures in each direction
    for e in own:
        rows.setdefault(e.label or e.layer, []).append(e)
    count = f"{len(rows)} layer{'s' if len(rows) > 1 else ''}"
    lines = [f"Own errors, each layer fed PyTorch's inputs ({count}, in execution order):"]
    width = min(max(len(label) for label in rows), 40)
    for label, found in list(rows.items())[:_OWN_SHOWN]:
        what = ", ".join(f"{_OWN_WHAT[e.direction]} at {fmt(e.margin)}x allowed" for e in found)
        known = "; ".join(dict.fromkeys(_known(c) for e in found for c in e.causes)) or (
            "no known mismatch" if not any(e.unconfirmed for e in found) else "no confirmed known mismatch"
        )
        lines.append(f"  {label:<{width}}  {what}  ({known})")
    if len(rows) > _OWN_SHOWN:
        lines.append(f"  ... and {len(rows) - _OWN_SHOWN} more (Result.layers.own_errors)")
    ruled = list(dict.fromkeys(c for e in own for c in e.unconfirmed))
    if ruled:
        lines.append(
            f"Ruled out by replay ({len(ruled)}: the mismatch applied to PyTorch's layer does not reproduce MindSpore's output):"
        )
        lines += [f"  {c}" for c in ruled[:_OWN_SHOWN]]
        if len(ruled) > _OWN_SHOWN:
            lines.append(f"  ... and {len(ruled) - _OWN_SHOWN} more (Result.layers.own_errors[i].unconfirmed)")
    if inherited:
        lines.append(f"Inherited only: {len(inherited)} other layers out of bounds by what flowed into them")
    return lines + unfed_line + [""]


def _known(cause: str) -> str:
    """A cause's entry for the own-error table, and whether a replay confirmed it."""
    entry = cause.split(" at ", 1)[0]
    if "; confirmed: " in cause:
        return f"{entry}, confirmed"
    return f"{entry}, not confirmed" if "; not confirmed: " in cause else entry


def _layer_difference(v) -> str:
    """How a layer's outputs differ: their shapes where those differ, else the greatest |diff|
    (through the layout where the two hold one layout of the same values)."""
    ms, torch = v.ms_out_shapes, v.out_shapes
    if len(ms) == len(torch) and ms != torch:
        ms, torch = next((m, t) for m, t in zip(ms, torch) if m != t)
    if v.shapes_differ:
        return f"shapes differ: {_shape(ms)} vs {_shape(torch)}"
    if v.layout_differs:
        return f"max abs diff {fmt(v.max_abs)} (MindSpore's {_shape(ms)} as {_shape(torch)}: one layout)"
    return f"max abs diff {fmt(v.max_abs)}"


def _shape(shape) -> str:
    """A shape as a tuple, a list of several tensors' shapes as a list."""
    if isinstance(shape, tuple) and shape and isinstance(shape[0], (tuple, type(None))):
        return "[" + ", ".join(_shape(s) for s in shape) + "]"
    return str(tuple(shape)) if shape is not None else "None"


def layer_lines(verdicts, direction: str, *, verbose: int = 0) -> List[str]:
    """The compact table around the first divergence (every layer with ``-vv``)."""
    first, _ = first_divergence(verdicts)
    if first is None:
        return []
    order = "in execution order" if direction == "forward" else "in backward order"
    lines = [f"Layers, {direction}, {order}:"]
    at = verdicts.index(first)
    shown = verdicts if verbose >= 2 else verdicts[max(0, at - _CONTEXT) : at + 1]
    for v in shown:
        lines.append(_layer_line(v, "   <- first divergence" if v is first else ""))
    if verbose < 2:
        later = [v.status for v in verdicts[at + 1 :] if v.status != "ok"]
        if later:
            counts = ", ".join(
                f"{later.count(s)} {s}" for s in ("downstream", "contains", "FAIL", "unaligned") if later.count(s)
            )
            lines.append(f"  {'...':<10} {len(later)} later layers differ ({counts}; every layer with -vv)")
    return lines


def _divergence(result, first, verbose: int = 0) -> Tuple[str, List[str]]:
    """The Divergence line and the layer table, from the layer capture when there is one."""
    layers = getattr(result, "layers", None)
    if layers is not None:
        for direction in ("forward", "backward"):
            verdict, where = layers.first(direction)
            if verdict is not None:
                if where.startswith("'"):
                    kind = "forward output of" if direction == "forward" else "gradient flowing back out of"
                    text = f"first at {kind} {where}"
                else:
                    text = f"first in the {direction} pass, {where}"
                return text, layer_lines(getattr(layers, direction), direction, verbose=verbose)
    return f"first at {_where(first, _failed_modes(result, first))}", []


def failure_message(result, *, likely_causes: Sequence[str] = (), verbose: int = 0) -> str:
    """The full failure text, first divergence in execution order first."""
    if result.problem:
        return _structure_failure(result)
    failures = result.failures
    first = failures[0]
    modes = _failed_modes(result, first)
    divergence, table = _divergence(result, first, verbose)
    lines = [_headline(first), ""]
    if result.case:
        location = f"  ({result.location})" if result.location else ""
        lines.append(f"Case:       {result.case}{location}")
    lines.append(
        f"Pair:       mindspore {result.ms_type} <-> torch {result.torch_type}"
        f" ({'train' if result.train else 'eval'} mode)"
    )
    lines += device_lines(getattr(result, "device_setup", None))
    lines.append(f"Divergence: {divergence}")
    lines += nonfinite_lines(getattr(result, "first_nonfinite", None))
    if table or first.kind != "output":
        lines.append(f"Compared:   {_where(first, modes)}")
    if first.problem is None:
        figures = [f"In {first.mode} mode:"] if len(modes) > 1 else []
        lines += [""] + figures + metric_lines(first) + [f"Tolerance: {first.tolerance_source} ({first.tolerance})"]
    lines += ["", f"Compared tensors ({len(failures)} of {len(result.comparisons)} failed):"] + _kind_table(result)
    lines += _also_failing(result, first)
    lines.append("")
    if table:
        lines += table + [""]
    lines += own_error_lines(getattr(result, "layers", None))
    for cause in likely_causes:
        lines.append(f"Likely cause: {cause}")
    lines += _footer(result)
    return "\n".join(lines)


def _footer(result) -> List[str]:
    lines = [f"Weights: {result.weights}", f"Inputs: {result.inputs}"]
    lines += [f"Note: {note}" for note in result.notes]
    return lines + ["", f"Reproduce: {result.reproduce}"]


def _structure_failure(result) -> str:
    case = [f"Case:       {result.case}" + (f"  ({result.location})" if result.location else "")] if result.case else []
    pair = f"Pair:       mindspore {result.ms_type} <-> torch {result.torch_type}"
    device = device_lines(getattr(result, "device_setup", None))
    return "\n".join([result.problem, ""] + case + [pair] + device + [""] + _footer(result))


def device_lines(setup) -> List[str]:
    """The ``Device:`` line (a :class:`parity.judge.devices.DeviceSetup`'s), for a check that did not run
    on the CPU alone: MindSpore's float32 settings and where the PyTorch reference ran."""
    if setup is None or setup.device == "CPU":
        return []
    return [f"Device:     {setup.line}"]


def by_position_note(ms_paths: List[str], torch_paths: List[str]) -> str:
    """MindSpore's outputs compared with PyTorch's by position (a tuple against a dict)."""
    pairs = ", ".join(f"{m} ~ {t}" for m, t in list(zip(ms_paths, torch_paths))[:4])
    more = f" and {len(ms_paths) - 4} more" if len(ms_paths) > 4 else ""
    return (
        f"the outputs were paired by position: one side returns a tuple and the other a dict or "
        f"ModelOutput of as many tensors ({pairs}{more})"
    )


def structure_message(ms_paths: List[str], torch_paths: List[str]) -> str:
    only_ms = [p for p in ms_paths if p not in torch_paths]
    only_torch = [p for p in torch_paths if p not in ms_paths]
    return (
        f"Output structures differ: MindSpore returns {len(ms_paths)} tensors {ms_paths}, "
        f"PyTorch returns {len(torch_paths)} {torch_paths}"
        + (f"\nIn MindSpore only: {only_ms}" if only_ms else "")
        + (f"\nIn PyTorch only: {only_torch}" if only_torch else "")
    )


def result_line(result) -> str:
    """``str(Result)``: the verdict, the worst tensor and its margin, and where it diverged first."""
    pair = (
        f"mindspore {result.ms_type} <-> torch {result.torch_type} "
        f"({'train' if result.train else 'eval'}, {' and '.join(result.modes)})"
    )
    if result.problem:
        return f"FAIL: {pair}; {result.problem.splitlines()[0]}"
    failures, total = result.failures, len(result.comparisons)
    parts = [f"{total - len(failures)} of {total} tensors within tolerance"]
    worst = result.worst
    if worst is not None:
        if worst.problem:
            how = f"{worst.problem} differs"
        elif worst.nonfinite is not None and not worst.nonfinite.agree:
            how = "NaN/Inf positions differ"
        else:
            how = f"at {fmt(worst.margin)}x allowed"
        mode = f" ({worst.mode})" if len(result.modes) > 1 else ""
        parts.append(f"worst {worst.kind} '{worst.name}'{mode} {how}")
    judged = [c for c in result.comparisons if c.noise_judged]
    if judged:
        parts.append(f"{len(judged)} noise-judged (beyond the tolerance, inside PyTorch's rounding envelope)")
    if failures:
        parts.append(f"divergence {_divergence(result, failures[0])[0]}")
    return f"{'FAIL' if failures else 'ok'}: {pair}; " + "; ".join(parts)


def reproduce_line(prefix: str, seed: int, call: str = "parity.check") -> str:
    if prefix:
        return f"{prefix} --parity-seed={seed}"
    return f"{call}(..., seed={seed})"


def summary_line(name: str, result: Optional[Any], error: str = "", *, expected: bool = False) -> str:
    """One line of the run summary: status, case, worst margin. ``expected``: a strict xfail."""
    status = "xfail" if expected else "FAIL "
    if result is None:
        return f"ERROR {name}: {error}"
    problem = getattr(result, "problem", "")
    if problem:
        return f"{status} {name}: {problem.splitlines()[0]}"
    worst = result.worst
    status = "ok   " if result.passed else status
    parallel = hasattr(result, "workers")  # a data-parallel result: the worst tensor's pair of runs too
    where = f" ({worst.kind} '{worst.name}'{f', {worst.mode}' if parallel else ''})" if worst is not None else ""
    judged = [c for c in result.comparisons if c.noise_judged]
    noise = ""
    if judged:
        shown = max(judged, key=lambda c: c.envelope.tolerance_margin)
        noise = (
            f"; noise-judged: {len(judged)} tensor{'s' if len(judged) > 1 else ''} beyond the tolerance "
            f"but inside PyTorch's rounding envelope (e.g. '{shown.name}' at "
            f"{fmt(shown.envelope.tolerance_margin)}x the tolerance alone)"
        )
    found = _parallel_finding(result) if parallel and not result.passed else ""
    return f"{status} {name}: worst margin {fmt(result.worst_margin)}x allowed{where}{noise}{found}"


def _parallel_finding(result) -> str:
    """What a failed data-parallel check found first: wrong rows, workers apart, or the runs that disagree."""
    found = (result.shard_findings + result.worker_findings)[:1] or [result.disagreeing]
    return f"; {found[0]}" if found[0] else ""


def golden_line(g) -> str:
    """How a half-precision tensor fared against the float64 golden (see parity.judge.golden)."""
    verdict = "within" if g.margin <= 1.0 else "beyond"
    ties = (
        (
            f"; {g.flips} elements jump in PyTorch's own mirrored runs (ReLU/max-pool ties), so the tensor is "
            "judged by its L2 error alone, PyTorch's counting those jumps"
        )
        if g.flips
        else ""
    )
    return (
        f"Float64 golden ({g.dtype}): MindSpore's error {verdict} {g.factor:g}x PyTorch's own "
        f"({fmt(g.margin)}x allowed at worst): relative L2 {fmt(g.ms_error)} vs {fmt(g.torch_error)}, greatest "
        f"element {fmt(g.ms_max)} vs {fmt(g.torch_max)} (of the golden's greatest magnitude; PyTorch's counted "
        f"at least {fmt(g.floor)}){ties}"
    )


def envelope_line(e, sides: Tuple[str, str] = ("MindSpore", "PyTorch")) -> str:
    """How a tensor fared against PyTorch's rounding envelope. ``sides``: the two compared, where
    they are not MindSpore against PyTorch (a data-parallel pair: its run and reference)."""
    runs = f"{e.draws} perturbed runs" + (" and float64" if e.float64 else "")
    flips = f"; {e.flips} elements flip between runs (ReLU/max-pool near-ties)" if e.flips else ""
    verdict = f"{e.outside} elements outside it" if e.outside else "every element inside it"
    if e.outside and e.flips and e.steady is not None:
        verdict += f", {e.steady} of them flipped in none of PyTorch's runs"
    return (
        f"Rounding envelope: {verdict} (allowed: tolerance + {e.factor:g}x PyTorch's own spread over {runs}; "
        f"{fmt(e.margin)}x allowed at worst); relative error {_error_of(sides)} {fmt(e.ms_error)} vs "
        f"PyTorch's spread {fmt(e.spread)}{flips}"
    )


def _error_of(sides: Tuple[str, str]) -> str:
    """Whose relative error the envelope line gives: MindSpore's against PyTorch, or a run's
    against its reference."""
    return "MindSpore" if sides == ("MindSpore", "PyTorch") else f"of {sides[0]} to {sides[1]}"


def unused_note(candidates, spreads) -> Optional[str]:
    """Where a rerun of PyTorch's was not finite and its own run is (see
    :class:`parity.judge.envelope.Spread`), the judged tensors and element counts, and the runs."""
    found, runs = [], []
    for c in candidates:
        spread = (spreads or {}).get(c.key)
        count = getattr(spread, "unused_count", 0)
        if count and spread is not None:
            found.append(f"{c.key[1]!r} ({count} of {c.comparison.total})")
            runs += [r for r in spread.unused_runs if r not in runs]
    if not found:
        return None
    shown = ", ".join(found[:5]) + (f" and {len(found) - 5} more" if len(found) > 5 else "")
    named = " and ".join("float64 run" if r == "float64" else "perturbed runs" for r in runs)
    return (
        f"PyTorch's {named} for the rounding envelope were not finite where its own run is, at elements of "
        f"{shown}: there those runs were left out of the envelope (they would allow any difference, or none), and "
        "those elements were judged on PyTorch's other runs"
    )


GRAPH_HOOKS_NOTE = "GRAPH mode has no layer hooks: layers were compared in an extra PYNATIVE pass"


def changed_note(label: str, names: List[str]) -> str:
    """What ``label``'s forward changed in place among its inputs (``names``)."""
    shown = ", ".join(repr(n) for n in names)
    other = "MindSpore" if label == "PyTorch" else "PyTorch"
    return (
        f"{label}'s forward changed input {shown} in place. Each side ran on its own copy of every input and "
        "the arrays given to the check were left as they were, so the verdict holds; but code that reads "
        f"{'that input' if len(names) == 1 else 'those inputs'} after the call sees the change with {label}, "
        f"not with {other} unless its forward does the same"
    )


def unmatched_hooks_note(unmatched: List[str]) -> str:
    """MindSpore backward hook calls without a forward record, which were not compared."""
    return (
        f"{len(unmatched)} MindSpore backward hook calls had no forward record and "
        f"were not compared: {sorted(set(unmatched))[:5]}"
    )


def narrowed_gradient_note(name: str, narrow: str, ms_dtype: str, torch_dtype: str) -> str:
    """An input's gradient compared in the narrower of the dtypes parity gave the two sides."""
    return (
        f"the gradient of {name} is compared in {narrow}: parity gave that input to "
        f"MindSpore as {ms_dtype} and to PyTorch as {torch_dtype} (each side's "
        f"own precision), and the {'PyTorch' if narrow == ms_dtype else 'MindSpore'} "
        "gradient was rounded to it"
    )
