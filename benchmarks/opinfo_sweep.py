"""How much of PyTorch's own operator database ``parity.translate`` covers.

PyTorch tests its backends against ``torch.testing._internal.common_methods_invocations.op_db``
(one ``OpInfo`` per operator, each with sample inputs; importing it needs ``expecttest``). This
sweep wraps each operator, on its first usable float32 CPU sample, as a one-call ``torch.nn.Module``
whose tensors (the input, tensor arguments, tensors in a list argument) are the module's inputs,
translates it with those inputs (``parity.translate(module, inputs)``) and checks the Cell against
the module (``parity.check``, with gradients where the OpInfo says the operator has them).

Run from the repository root::

    python benchmarks/opinfo_sweep.py                                   # the whole op_db
    python benchmarks/opinfo_sweep.py --ops add,matmul,softmax
    python benchmarks/opinfo_sweep.py --limit 50 --json sweep.json
    python benchmarks/opinfo_sweep.py --modules all --table docs/reference/translation-coverage.md

Each operator ends in one category (``CATEGORIES``):

* ``passed``: translated, and ``check`` passes;
* ``mismatch``: translated, and ``check`` finds different numbers (a translator or MindSpore bug);
* ``error``: translated, but the Cell or the check raises something other than a refusal;
* ``no_cpu_kernel``: MindSpore has the operator but raises on the CPU ("kernel ... unregistered",
  or an unsupported data type);
* ``no_counterpart``: MindSpore has no such operator (``NO_COUNTERPART``, a declared list);
* ``not_translated``: the translator does not know the operator yet;
* ``random``: the OpInfo draws random numbers or returns uninitialised memory (``RANDOM``, a declared
  list): there is nothing to compare, so it is never run and stays out of the shares;
* ``unusable``: no usable float32 sample (counted, never run).

A sample is usable when the wrapper can take it (float32 tensors, none empty, no generator),
PyTorch runs it (with gradients on every tensor input where the OpInfo has gradients) and not every
output is empty or all NaN/Inf; the sweep takes the first usable sample of the first 20 and says
why when none is.

Each operator runs under a time limit (``--timeout``, ``signal.alarm``), so that one cannot hang
the sweep. A measurement, not a test: ``tests/test_opinfo_sweep.py`` runs a dozen operators.
"""

from __future__ import annotations

import argparse
import json
import re
import signal
import sys
import time
import warnings
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Tuple

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # `python benchmarks/opinfo_sweep.py` puts benchmarks/ first, not the root
    sys.path.insert(0, str(ROOT))

CATEGORIES = (
    "passed",
    "mismatch",
    "error",
    "no_cpu_kernel",
    "no_counterpart",
    "not_translated",
    "random",
    "unusable",
)

LABELS = {
    "passed": "translated, check passes",
    "mismatch": "translated, check fails (numbers differ)",
    "error": "translated, but raises when run or checked",
    "no_cpu_kernel": "no MindSpore CPU kernel",
    "no_counterpart": "no MindSpore counterpart",
    "not_translated": "not yet translated",
    "random": "draws random or uninitialised values",
    "unusable": "sample unusable here",
}

# Operators MindSpore has no counterpart for (of any name, on any device), so that no translation
# can exist; a refusal of one of these is `no_counterpart`, of any other `not_translated`.
NO_COUNTERPART = frozenset(
    {
        "torch._C._linalg.linalg_householder_product",
        "torch._C._linalg.linalg_ldl_factor",
        "torch._C._linalg.linalg_ldl_factor_ex",
        "torch._C._linalg.linalg_ldl_solve",
        "torch._C._linalg.linalg_lu_factor_ex",
        "torch._C._linalg.linalg_tensorinv",
        "torch._C._linalg.linalg_tensorsolve",
        "torch._C._special.special_airy_ai",
        "torch._C._special.special_scaled_modified_bessel_k0",
        "torch._C._special.special_scaled_modified_bessel_k1",
        "torch._C._special.special_spherical_bessel_j0",
        "torch._C._special.special_chebyshev_polynomial_t",
        "torch._C._special.special_chebyshev_polynomial_u",
        "torch._C._special.special_chebyshev_polynomial_v",
        "torch._C._special.special_chebyshev_polynomial_w",
        "torch._C._special.special_shifted_chebyshev_polynomial_t",
        "torch._C._special.special_shifted_chebyshev_polynomial_u",
        "torch._C._special.special_shifted_chebyshev_polynomial_v",
        "torch._C._special.special_shifted_chebyshev_polynomial_w",
        "torch._C._special.special_hermite_polynomial_h",
        "torch._C._special.special_hermite_polynomial_he",
        "torch._C._special.special_laguerre_polynomial_l",
        "torch._C._special.special_legendre_polynomial_p",
        "torch._C._special.special_modified_bessel_i0",
        "torch._C._special.special_modified_bessel_i1",
        "torch._C._special.special_modified_bessel_k0",
        "torch._C._special.special_modified_bessel_k1",
        "torch._C._special.special_bessel_j0",
        "torch._C._special.special_bessel_j1",
        "torch._C._special.special_bessel_y0",
        "torch._C._special.special_bessel_y1",
    }
)

# Operators whose OpInfo draws random numbers or returns uninitialised memory: two frameworks' values
# cannot be compared, so they are `random`, never run, and stay out of the shares' denominators.
RANDOM = frozenset(
    {
        "bernoulli",
        "cauchy",
        "empty_like",
        "exponential",
        "geometric",
        "log_normal",
        "multinomial",
        "new_empty",
        "new_empty_strided",
        "nn.functional.fractional_max_pool2d",
        "nn.functional.fractional_max_pool3d",
        "nn.functional.rrelu",
        "normal",
        "rand_like",
        "randint_like",
        "randn_like",
        "uniform",
    }
)

_CALLS = "has no MindSpore translation:"
_TORCH_REFUSES = "The PyTorch side raised"
_NO_KERNEL = re.compile(r"has no (\w+ )?kernel|unregistered|Unsupported data type|not support(ed)? on CPU|CPU operator")


class _Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise _Timeout()


class OpModule:
    """Factory of the one-call module: ``forward(*tensors)`` puts its tensors back where the sample
    had them (positional arguments, a list argument's items, keyword arguments) and calls the op."""

    @staticmethod
    def build(fn, args: List[Any], kwargs: Dict[str, Any]):
        import torch

        slots: List[Tuple[str, Any, Optional[int]]] = []  # (where, key, index in a list)
        tensors: List[Any] = []
        for i, a in enumerate(args):
            if isinstance(a, torch.Tensor):
                slots.append(("arg", i, None))
                tensors.append(a)
            elif isinstance(a, (list, tuple)) and a and all(isinstance(t, torch.Tensor) for t in a):
                for j, t in enumerate(a):
                    slots.append(("arg", i, j))
                    tensors.append(t)
        for k, v in kwargs.items():
            if isinstance(v, torch.Tensor):
                slots.append(("kw", k, None))
                tensors.append(v)

        name = getattr(fn, "__name__", "")
        method = name if name and getattr(torch.Tensor, name, None) is fn else None

        class Op(torch.nn.Module):
            def forward(self, *ts):
                a = [list(x) if isinstance(x, (list, tuple)) else x for x in args]
                kw = dict(kwargs)
                for (where, key, index), t in zip(slots, ts):
                    box = a if where == "arg" else kw
                    if index is None:
                        box[key] = t
                    else:
                        box[key][index] = t
                if method == "__rdiv__":  # Python 3 writes it ``other / self`` (torch.fx cannot trace the method)
                    return a[1] / a[0]
                if method is not None:  # a Tensor method (``Tensor.__getitem__``): called as one, as models do
                    return getattr(a[0], method)(*a[1:], **kw)
                return fn(*a, **kw)

        return Op(), tensors


def _usable(sample) -> Optional[str]:
    """Why a sample cannot be run by the sweep, or None."""
    import torch

    leaves = [sample.input, *sample.args, *sample.kwargs.values()]
    flat = [t for x in leaves for t in (x if isinstance(x, (list, tuple)) else [x])]
    tensors = [t for t in flat if isinstance(t, torch.Tensor)]
    if not tensors:
        return "no tensor input"
    if any(t.dtype != torch.float32 for t in tensors):
        return f"a non-float32 tensor input ({sorted({str(t.dtype) for t in tensors if t.dtype != torch.float32})})"
    if any(t.layout != torch.strided for t in tensors):
        return "a sparse tensor input"
    if any(t.numel() == 0 for t in tensors):
        return "an empty tensor input"
    if any(isinstance(x, torch.Generator) for x in flat) or "generator" in sample.kwargs:
        return "takes a generator"
    return None


def samples(op, count: int) -> Iterator[Any]:
    import torch

    for i, s in enumerate(op.sample_inputs("cpu", torch.float32, requires_grad=False)):
        if i >= count:
            return
        yield s


def classify_refusal(text: str) -> Tuple[str, str]:
    """(category, reason) of a ``ParityUnsupported`` raised by ``translate`` or ``check``."""
    listed = text.partition(_CALLS)[2].splitlines() if _CALLS in text else []
    calls = [line.strip().rsplit(" at ", 1)[0] for line in listed if line.startswith("  ") and line.strip()]
    if calls:
        if all(c in NO_COUNTERPART for c in calls):
            return "no_counterpart", ", ".join(calls)
        return "not_translated", ", ".join(c for c in calls if c not in NO_COUNTERPART)
    first = text.strip().splitlines()[0]
    if _NO_KERNEL.search(text):
        return "no_cpu_kernel", first
    if "no MindSpore counterpart" in text:
        return "no_counterpart", first
    if "could not run" in text:
        return "error", first
    return "not_translated", first


def run_op(op, *, n_samples: int = 1, timeout: int = 60) -> Dict[str, Any]:
    """Translate and check one OpInfo; its record: name, category, reason, seconds."""
    import parity
    from parity import ParityMismatch, ParityUnsupported

    start = time.perf_counter()
    record: Dict[str, Any] = {"op": op.name, "variant": op.variant_test_name, "grads": bool(op.supports_autograd)}
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(timeout)
    try:
        record.update(_run(op, n_samples, parity, ParityMismatch, ParityUnsupported))
    except _Timeout:
        record.update(category="error", reason=f"over the {timeout} s limit")
    except Exception as exc:  # noqa: BLE001  (one op must not stop the sweep)
        record.update(category="unusable", reason=f"the sweep cannot wrap it: {type(exc).__name__}: {exc}"[:200])
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    record["seconds"] = round(time.perf_counter() - start, 3)
    return record


def _run(op, n_samples, parity, ParityMismatch, ParityUnsupported) -> Dict[str, Any]:
    if op.name in RANDOM:
        return {"category": "random", "reason": "draws random or uninitialised values: nothing to compare"}
    why = None  # why the first sample skipped cannot be used
    tried = 0
    try:
        chosen = list(samples(op, 20))
    except Exception as exc:  # noqa: BLE001  (a sample generator may need what this host lacks)
        return {"category": "unusable", "reason": f"its samples raise: {type(exc).__name__}: {exc}"[:200]}
    for index, sample in enumerate(chosen):
        why_not = _usable(sample)
        if why_not is not None:
            why = why or why_not
            continue
        result = _one(op, sample, parity, ParityMismatch, ParityUnsupported)
        if result["category"] == "unusable":  # PyTorch refuses this sample, or it has nothing to compare
            why = why or result["reason"]
            continue
        tried += 1
        result.setdefault("sample", index)
        if result["category"] != "passed" or tried >= n_samples:
            return result
    if tried:  # fewer usable samples than asked for, and each passed
        return {"category": "passed", "reason": ""}
    return {"category": "unusable", "reason": why or "no float32 sample"}


def _nothing_to_compare(output) -> bool:
    """Whether every tensor PyTorch's op returns is empty or all NaN/Inf (``check`` refuses such a sample)."""
    import torch

    leaves = output if isinstance(output, (list, tuple)) else [output]
    tensors = [t for t in leaves if isinstance(t, torch.Tensor)]
    if not tensors:
        return False
    for t in tensors:
        values = t.detach()
        if values.layout != torch.strided or (
            values.numel() and (not values.is_floating_point() or bool(torch.isfinite(values).any()))
        ):
            return False
    return True


def _one(op, sample, parity, ParityMismatch, ParityUnsupported) -> Dict[str, Any]:
    args = [sample.input, *sample.args]
    module, tensors = OpModule.build(op.op, args, dict(sample.kwargs))
    inputs = tuple(t.detach().numpy().copy() for t in tensors)
    try:
        output = module(*tensors)
    except Exception as exc:  # noqa: BLE001
        return {"category": "unusable", "reason": f"the wrapped op raises in PyTorch: {type(exc).__name__}"}
    if _nothing_to_compare(output):
        return {"category": "unusable", "reason": "its outputs are empty or all NaN/Inf"}
    return _translate_and_check(module, inputs, bool(op.supports_autograd), parity, ParityMismatch, ParityUnsupported)


def _translate_and_check(module, inputs, grads, parity, ParityMismatch, ParityUnsupported) -> Dict[str, Any]:
    from parity import ParityUsageError

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            cell = parity.translate(module, inputs)
        except ParityUnsupported as exc:
            category, reason = classify_refusal(str(exc))
            return {"category": category, "reason": reason[:200]}
        except Exception as exc:  # noqa: BLE001
            return {"category": "error", "reason": f"translate: {type(exc).__name__}: {str(exc).splitlines()[0][:160]}"}
        try:
            parity.check(cell, module, inputs, grads=grads)
        except ParityMismatch as exc:
            return {"category": "mismatch", "reason": str(exc).strip().splitlines()[0][:200]}
        except ParityUnsupported as exc:
            category, reason = classify_refusal(str(exc))
            return {"category": category if category != "not_translated" else "error", "reason": reason[:200]}
        except ParityUsageError as exc:
            text = str(exc).strip()
            if text.startswith(_TORCH_REFUSES):  # with gradients on every tensor input (running statistics)
                return {
                    "category": "unusable",
                    "reason": f"PyTorch refuses the sample: {text.splitlines()[1].strip()}"[:200],
                }
            return {"category": "error", "reason": f"check: ParityUsageError: {text.splitlines()[0][:160]}"}
        except Exception as exc:  # noqa: BLE001
            line = (str(exc).strip().splitlines() or [""])[0]
            return {"category": "error", "reason": f"check: {type(exc).__name__}: {line[:160]}"}
    return {"category": "passed", "reason": ""}


def run_module(info, *, timeout: int = 60) -> Dict[str, Any]:
    """Translate and check one ``common_modules.module_db`` kind on its first float32 CPU input."""
    import parity
    from parity import ParityMismatch, ParityUnsupported

    start = time.perf_counter()
    record: Dict[str, Any] = {"op": info.name, "variant": "(module)", "grads": True}
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(timeout)
    try:
        record.update(_run_module(info, parity, ParityMismatch, ParityUnsupported))
    except _Timeout:
        record.update(category="error", reason=f"over the {timeout} s limit")
    except Exception as exc:  # noqa: BLE001  (one module must not stop the sweep)
        record.update(category="unusable", reason=f"the sweep cannot build it: {type(exc).__name__}: {exc}"[:200])
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    record["seconds"] = round(time.perf_counter() - start, 3)
    return record


def _run_module(info, parity, ParityMismatch, ParityUnsupported) -> Dict[str, Any]:
    import torch

    found = info.module_inputs_func(info, device="cpu", dtype=torch.float32, requires_grad=False, training=False)
    for given in found:
        forward = given.forward_input
        if forward is None or forward.kwargs or not forward.args:
            continue
        if not all(isinstance(a, torch.Tensor) and a.dtype == torch.float32 and a.numel() for a in forward.args):
            continue
        module = info.module_cls(*given.constructor_input.args, **given.constructor_input.kwargs).eval()
        inputs = tuple(t.detach().numpy().copy() for t in forward.args)
        return _translate_and_check(module, inputs, True, parity, ParityMismatch, ParityUnsupported)
    return {"category": "unusable", "reason": "no float32 input of positional tensors only"}


def module_db(names: Optional[List[str]] = None, limit: Optional[int] = None) -> List[Any]:
    from torch.testing._internal.common_modules import module_db as db

    infos = [m for m in db if not names or m.name in names]
    return infos[:limit] if limit else infos


def op_db(names: Optional[List[str]] = None, limit: Optional[int] = None) -> List[Any]:
    from torch.testing._internal.common_methods_invocations import op_db as db

    ops = list(db)
    if names:
        known = {o.name for o in ops}
        unknown = [n for n in names if n not in known]
        if unknown:
            raise SystemExit(f"opinfo_sweep: --ops names what op_db does not have: {', '.join(unknown)}")
        ops = [o for o in ops if o.name in names]
    return ops[:limit] if limit else ops


def summary(records: List[Dict[str, Any]]) -> Dict[str, int]:
    counts = {c: 0 for c in CATEGORIES}
    for r in records:
        counts[r["category"]] += 1
    return counts


def _share(part: int, whole: int) -> str:
    return f"{100.0 * part / whole:.1f}%" if whole else "-"


def table(records: List[Dict[str, Any]], meta: Dict[str, Any]) -> str:
    ops = [r for r in records if r["variant"] != "(module)"]
    kinds = [r for r in records if r["variant"] == "(module)"]
    lines = _head(meta, len(records)) + ["## Operators (`op_db`)", ""] + _shares(ops)
    if kinds:
        lines += ["", "## Module kinds (`common_modules.module_db`, in eval mode)", ""] + _shares(kinds)
    lines += ["", "## Every entry", "", "| op | variant | grads | result | why not |", "|---|---|---|---|---|"]
    for r in sorted(records, key=lambda r: (r["op"], r["variant"])):
        reason = r["reason"].replace("|", "\\|").replace("\n", " ")
        lines.append(
            f"| `{r['op']}` | {r['variant'] or ''} | {'yes' if r['grads'] else 'no'} | {r['category']} | {reason} |"
        )
    return "\n".join(lines) + "\n"


def _shares(records: List[Dict[str, Any]]) -> List[str]:
    counts = summary(records)
    total = len(records)
    usable = total - counts["unusable"] - counts["random"]
    translated = counts["passed"] + counts["mismatch"] + counts["error"]
    computable = usable - counts["no_cpu_kernel"] - counts["no_counterpart"]
    lines = [
        "| | entries | share |",
        "|---|---|---|",
        f"| entries tried | {total} | |",
        f"| with a usable float32 sample, not random | {usable} | {_share(usable, total)} of all |",
        f"| translated | {translated} | {_share(translated, usable)} of usable |",
        f"| passed | {counts['passed']} | {_share(counts['passed'], usable)} of usable |",
        f"| MindSpore computes on the CPU (usable, less the two refusals below) | {computable} | |",
        f"| **passed, of those MindSpore computes on the CPU** | {counts['passed']} | "
        f"**{_share(counts['passed'], computable)}** |",
    ]
    for c in CATEGORIES:
        lines.append(f"| {LABELS[c]} (`{c}`) | {counts[c]} | {_share(counts[c], total)} of all |")
    return lines


def _head(meta: Dict[str, Any], total: int) -> List[str]:
    return [
        "# Translation coverage of PyTorch's operator database",
        "",
        "Generated by `make opinfo` (`python benchmarks/opinfo_sweep.py --modules all --table "
        "docs/reference/translation-coverage.md`); do not edit by hand.",
        "",
        "Each entry of PyTorch's OpInfo database (`torch.testing._internal.common_methods_invocations.op_db`, "
        "the operators PyTorch tests its own backends with) is wrapped, on its first usable float32 CPU "
        "sample, as a one-call `torch.nn.Module` taking the sample's tensors; `parity.translate` translates "
        "it with those inputs and `parity.check` compares the Cell with the module, with gradients where "
        "the operator has them.",
        "",
        "A sample is usable when its tensors are float32 and none is empty, PyTorch runs it (with gradients "
        "on every tensor input where the operator has them) and not every output is empty or all NaN/Inf: "
        "such a sample has nothing to compare, so the sweep takes the next one (of the first 20), and an "
        "entry with none is `unusable`, saying why. An entry whose OpInfo draws random numbers or returns "
        "uninitialised memory (`bernoulli`, `normal`, `rand_like`, `empty_like`, ...) is `random`: there "
        "is nothing to compare across two frameworks, so it is not run, and it counts neither among the "
        "usable entries nor in the share's denominator.",
        "",
        f"Measured with torch {meta['torch']} and MindSpore {meta['mindspore']} on the CPU, "
        f"{meta['seconds']:.0f} s for {total} entries.",
        "",
        "An entry not yet translated counts among those MindSpore computes on the CPU: whether MindSpore "
        "has a CPU kernel for it shows only once it is translated, so that share is a lower bound. "
        "Each module kind of `torch.testing._internal.common_modules.module_db` is built from its first "
        "float32 input whose forward takes positional tensors only, translated and checked with gradients.",
        "",
    ]


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", help="comma-separated op_db names (default: every entry)")
    parser.add_argument("--modules", help="comma-separated module_db names, or 'all' (default: none)")
    parser.add_argument("--limit", type=int, help="the first N entries only")
    parser.add_argument("--samples", type=int, default=1, help="float32 samples to check per op (default 1)")
    parser.add_argument("--timeout", type=int, default=60, help="seconds one op may take (default 60)")
    parser.add_argument("--json", help="write the records and counts here")
    parser.add_argument("--table", help="write the Markdown coverage table here")
    opts = parser.parse_args(argv)

    import mindspore
    import torch

    torch.manual_seed(0)
    ops = op_db(opts.ops.split(",") if opts.ops else None, opts.limit)
    start = time.perf_counter()
    records = []
    for i, op in enumerate(ops):
        record = run_op(op, n_samples=opts.samples, timeout=opts.timeout)
        records.append(record)
        print(
            f"[{i + 1}/{len(ops)}] {op.name} {op.variant_test_name}: {record['category']} {record['reason'][:100]}",
            flush=True,
        )
        if (i + 1) % 25 == 0:  # a sweep stopped early still leaves what it measured
            _write(opts, records, torch, mindspore, start)
    kinds = module_db(None if opts.modules == "all" else opts.modules.split(","), opts.limit) if opts.modules else []
    for i, info in enumerate(kinds):
        record = run_module(info, timeout=opts.timeout)
        records.append(record)
        print(f"[module {i + 1}/{len(kinds)}] {info.name}: {record['category']} {record['reason'][:100]}", flush=True)
    counts = _write(opts, records, torch, mindspore, start)
    print(json.dumps(counts))
    return 0


def _write(opts, records, torch, mindspore, start) -> Dict[str, int]:
    meta = {"torch": torch.__version__, "mindspore": mindspore.__version__, "seconds": time.perf_counter() - start}
    counts = summary(records)
    if opts.json:
        Path(opts.json).write_text(json.dumps({"meta": meta, "counts": counts, "records": records}, indent=1))
    if opts.table:
        Path(opts.table).write_text(table(records, meta))
    return counts


if __name__ == "__main__":
    sys.exit(main())
