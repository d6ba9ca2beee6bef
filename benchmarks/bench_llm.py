"""What parity.check costs on a LLaMA of about 130M parameters, against a hand-written comparison.

Run from the repository root::

    python benchmarks/bench_llm.py                 # hidden 768, 12 layers, vocab 32,000; batch 1, sequence 128
    python benchmarks/bench_llm.py --layers 2      # a quicker, smaller one
    python benchmarks/bench_llm.py --json out.json --repeats 2

The pair is the catalogue's hand-written MindSpore LLaMA (``cases.models.llama``) against
transformers' ``LlamaForCausalLM`` (eager attention, eval), random weights, int64 ids and a mask of
ones. Each variant runs in a fresh process, interleaved (a, b, a, b, ...), and reports its wall
time and its peak resident memory, also above what the two built models already hold:

(a) a hand-written comparison of the same passes: the weights copied by name, PyTorch's forward and
    ``torch.autograd.grad`` of the logits with a random cotangent over every parameter,
    ``mindspore.vjp`` of the Cell with the same cotangent, ``.asnumpy()``, and ``np.allclose`` /
    max abs diff on the logits and every parameter gradient;
(b) ``parity.check(ms_cell, torch_module, (ids, mask))`` with gradients, PYNATIVE;
(c) the same with a tolerance so loose (``Tolerance(0.1, 0.1)``) that no tensor comes near it: the
    check without the rounding envelope's five PyTorch reruns, which (b) needs on a model this deep;
(t) with ``--translate``, once after the others: ``parity.translate(torch_module, (ids, mask))`` of
    transformers' model itself, timed, then a forward ``check`` of the translated Cell against it.

The targets (<= 1.3 time where no tensor needs the envelope: c/a; <= 1.5 peak memory) are printed
beside the ratios; nothing asserts on them.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

SEED = 1234
RTOL, ATOL = 1.3e-6, 1e-5


def _config(args):
    from cases.models.zoo_compat import import_quietly

    transformers = import_quietly("transformers")
    return transformers.LlamaConfig(
        vocab_size=args.vocab,
        hidden_size=args.hidden,
        intermediate_size=args.ffn,
        num_hidden_layers=args.layers,
        num_attention_heads=args.heads,
        num_key_value_heads=args.kv_heads,
        max_position_embeddings=args.sequence,
        rms_norm_eps=1e-6,
        rope_theta=10000.0,
        use_cache=False,
        attn_implementation="eager",
        tie_word_embeddings=False,
    )


def _rss_mib() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _build(args):
    import numpy as np
    import torch

    from cases.models import llama
    from cases.models.zoo_compat import import_quietly

    config = _config(args)
    torch.manual_seed(SEED)
    torch_model = import_quietly("transformers").LlamaForCausalLM(config).eval()
    ms_model = llama.LlamaForCausalLM(config)
    rng = np.random.default_rng(SEED)
    ids = rng.integers(0, args.vocab, (args.batch, args.sequence)).astype(np.int64)
    mask = np.ones_like(ids)
    return ms_model, torch_model, ids, mask


def hand_written(ms_model, torch_model, ids, mask) -> dict:
    import mindspore as ms
    import numpy as np
    import torch

    ms_params = dict(ms_model.parameters_and_names())
    for name, tensor in torch_model.state_dict().items():
        ms_params[name].set_data(ms.Tensor(tensor.detach().numpy()))
    ms_model.set_train(False)
    names = [name for name, _ in torch_model.named_parameters()]
    params = [param for _, param in torch_model.named_parameters()]
    logits = torch_model(torch.from_numpy(ids), torch.from_numpy(mask)).logits
    cotangent = np.random.default_rng(SEED + 1).standard_normal(tuple(logits.shape)).astype(np.float32)
    torch_grads = torch.autograd.grad(logits, params, torch.from_numpy(cotangent))
    trainable = [ms_params[name] for name in names]
    out, vjp = ms.vjp(lambda i, m: ms_model(i, m)["logits"], ms.Tensor(ids), ms.Tensor(mask), weights=trainable)
    _, ms_grads = vjp(ms.Tensor(cotangent))
    pairs = [(out.asnumpy(), logits.detach().numpy())] + [
        (g.asnumpy(), t.numpy()) for g, t in zip(ms_grads, torch_grads)
    ]
    close = [np.allclose(a, b, rtol=RTOL, atol=ATOL) for a, b in pairs]
    return {
        "compared": len(pairs),
        "passed": all(close),
        "max_abs_diff": max(float(np.max(np.abs(a - b))) for a, b in pairs),
    }


def through_parity(ms_model, torch_model, ids, mask, tolerance=None) -> dict:
    import parity

    try:
        result = parity.check(ms_model, torch_model, (ids, mask), seed=SEED, tolerance=tolerance)
    except parity.ParityMismatch as exc:
        result = exc.result
    return {
        "compared": len(result),
        "passed": result.passed,
        "worst_margin": result.worst_margin,
        "noise_judged": len(result.noise_judged),
    }


def translated(torch_model, ids, mask) -> dict:
    import parity

    start, cpu = time.perf_counter(), time.process_time()
    cell = parity.translate(torch_model, (ids, mask), seed=SEED)
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    try:
        result = parity.check(cell, torch_model, (ids, mask), seed=SEED, grads=False)
    except parity.ParityMismatch as exc:
        result = exc.result
    return {
        "translate_s": seconds,
        "translate_cpu_s": cpu,  # all threads: steadier than wall time on a shared machine
        "compared": len(result),
        "passed": result.passed,
        "worst_margin": result.worst_margin,
    }


def run_variant(variant: str, args) -> dict:
    """One variant in this process: build, measure, run, measure."""
    import mindspore  # noqa: F401  (both frameworks loaded before the baseline)
    import torch  # noqa: F401

    ms_model, torch_model, ids, mask = _build(args)
    built = _rss_mib()
    wall = time.perf_counter()
    if variant == "a":
        summary = hand_written(ms_model, torch_model, ids, mask)
    elif variant == "t":
        summary = translated(torch_model, ids, mask)
    else:
        import parity

        loose = parity.Tolerance(0.1, 0.1) if variant == "c" else None
        summary = through_parity(ms_model, torch_model, ids, mask, tolerance=loose)
    return {
        "variant": variant,
        "wall_s": time.perf_counter() - wall,
        "built_mib": built,
        "peak_mib": _peak_mib(),
        "added_mib": _peak_mib() - built,
        **summary,
    }


def _child(variant: str, args) -> dict:
    argv = [sys.executable, __file__, "--child", variant] + [
        f"--{k.replace('_', '-')}={getattr(args, k)}"
        for k in ("hidden", "layers", "heads", "kv_heads", "ffn", "vocab", "batch", "sequence")
    ]
    out = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT)
    lines = [line for line in out.stdout.splitlines() if line.startswith("{")]
    if out.returncode != 0 or not lines:
        raise SystemExit(f"variant {variant} failed:\n{out.stderr[-3000:]}")
    return json.loads(lines[-1])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name, default in (
        ("hidden", 768),
        ("layers", 12),
        ("heads", 12),
        ("kv_heads", 4),
        ("ffn", 2048),
        ("vocab", 32000),
        ("batch", 1),
        ("sequence", 128),
        ("repeats", 2),
    ):
        parser.add_argument(f"--{name.replace('_', '-')}", dest=name, type=int, default=default)
    parser.add_argument("--child", choices=("a", "b", "c", "t"))
    parser.add_argument("--translate", action="store_true", help="also time translating transformers' model (t)")
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(run_variant(args.child, args)))
        return 0
    runs = {"a": [], "b": [], "c": []}
    for _ in range(args.repeats):
        for variant in "abc":
            runs[variant].append(_child(variant, args))
            print(json.dumps(runs[variant][-1]), flush=True)
    median = {
        v: {k: statistics.median(r[k] for r in runs[v]) for k in ("wall_s", "peak_mib", "added_mib")} for v in "abc"
    }
    params = sum(
        p
        for p in [
            args.vocab * args.hidden * 2
            + args.layers
            * (
                2 * args.hidden * args.hidden
                + 2 * args.hidden * (args.hidden // args.heads) * args.kv_heads
                + 3 * args.hidden * args.ffn
                + 2 * args.hidden
            )
            + args.hidden
        ]
    )
    report = {
        "parameters": params,
        "config": vars(args),
        "runs": runs,
        "median": median,
        "time_ratio": median["b"]["wall_s"] / median["a"]["wall_s"],
        "peak_ratio": median["b"]["peak_mib"] / median["a"]["peak_mib"],
        "added_ratio": median["b"]["added_mib"] / median["a"]["added_mib"],
        "time_ratio_no_envelope": median["c"]["wall_s"] / median["a"]["wall_s"],
        "peak_ratio_no_envelope": median["c"]["peak_mib"] / median["a"]["peak_mib"],
    }
    print(f"LLaMA {params / 1e6:.0f}M parameters, batch {args.batch}, sequence {args.sequence}, gradients on")
    print(
        f"  (a) hand-written: {median['a']['wall_s']:.1f} s, peak {median['a']['peak_mib']:.0f} MiB "
        f"(+{median['a']['added_mib']:.0f} over the built models)"
    )
    print(
        f"  (b) parity.check: {median['b']['wall_s']:.1f} s, peak {median['b']['peak_mib']:.0f} MiB "
        f"(+{median['b']['added_mib']:.0f}); noise-judged tensors: {runs['b'][-1]['noise_judged']}"
    )
    print(
        f"  (c) parity.check, nothing near its tolerance: {median['c']['wall_s']:.1f} s, peak "
        f"{median['c']['peak_mib']:.0f} MiB (+{median['c']['added_mib']:.0f})"
    )
    print(
        f"  time b/a {report['time_ratio']:.2f}, c/a {report['time_ratio_no_envelope']:.2f} (target <= 1.3 where "
        f"nothing needs the envelope); peak b/a {report['peak_ratio']:.2f}, c/a "
        f"{report['peak_ratio_no_envelope']:.2f} (target <= 1.5); added over the built models b/a "
        f"{report['added_ratio']:.2f}"
    )
    if args.translate:
        report["translate"] = _child("t", args)
        t = report["translate"]
        print(
            f"  (t) parity.translate of transformers' model: {t['translate_s']:.1f} s; its forward check "
            f"{'passes' if t['passed'] else 'FAILS'} (worst {t['worst_margin']:.2f}x of what is allowed)"
        )
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
