"""What :func:`parity.check_blocks` costs on a 7B LLaMA-shaped checkpoint: wall time, CPU time per
block and peak memory, over ``--blocks`` decoder layers and over a quarter of them, so that "time
grows linearly with the number of blocks, peak memory stays flat" reads off ratios measured in one
run. Each block's CPU time is the process's (every thread's, ``time.process_time``) over the
block's work, as ``BlockCheck.forward_time``/``backward_time`` hold it: on a machine shared with
other work it stays put where wall time swings.

Run from the repository root::

    python benchmarks/bench_blocks.py                                   # 32 layers of 7B, then 8
    python benchmarks/bench_blocks.py --layers 2 --blocks 2 --hidden 512 --mlp 1376 --heads 8

The checkpoint (``--dir``, default ``/tmp/parity-7b``, outside the repository) is written once,
if absent: ``--layers`` LLaMA decoder layers (hidden 4096, MLP 11008, 32 heads: LLaMA-7B's; no
embedding or head, which a block check does not read) as one bfloat16 safetensors file of random
weights, written tensor by tensor so that the writer holds one tensor at a time (7B's 32 layers:
about 13 GB). Then each count of blocks is checked in a fresh process: the catalogue's MindSpore
decoder layer (``cases.models.llama.LlamaBlock``) against transformers' ``LlamaDecoderLayer``,
forward only (``grads=False``; ``--grads``: with gradients, and the backward chained through the
blocks), batch 1, sequence ``--seq`` (128), PyTorch's weights read from the file and copied across.
Reported per count: wall time, CPU time per block (mean, least and most over the blocks), peak RSS
of the process (``VmHWM``), and the ratios between the two counts. A measurement, not a test:
nothing asserts.
"""

from __future__ import annotations

import argparse
import json
import struct
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

MARK = "BENCH-BLOCKS-RESULT "


def _peak_rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _shapes(layers: int, hidden: int, mlp: int):
    """Hugging Face's names and shapes of every decoder layer's tensors (as many key/value heads as heads)."""
    per_layer = {
        "input_layernorm.weight": (hidden,),
        "post_attention_layernorm.weight": (hidden,),
        "self_attn.q_proj.weight": (hidden, hidden),
        "self_attn.k_proj.weight": (hidden, hidden),
        "self_attn.v_proj.weight": (hidden, hidden),
        "self_attn.o_proj.weight": (hidden, hidden),
        "mlp.gate_proj.weight": (mlp, hidden),
        "mlp.up_proj.weight": (mlp, hidden),
        "mlp.down_proj.weight": (hidden, mlp),
    }
    return [(f"model.layers.{i}.{name}", shape) for i in range(layers) for name, shape in per_layer.items()]


def _bfloat16_bytes(values: np.ndarray) -> bytes:
    """float32 to bfloat16 by rounding to nearest even, as bytes (little endian)."""
    bits = values.astype(np.float32).view(np.uint32)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    return rounded.astype("<u2").tobytes()


def write_checkpoint(path: Path, layers: int, hidden: int, mlp: int) -> None:
    """A safetensors file written by hand: the header first, then each tensor's bytes as drawn."""
    shapes = _shapes(layers, hidden, mlp)
    header, offset = {}, 0
    for name, shape in shapes:
        size = int(np.prod(shape)) * 2
        header[name] = {"dtype": "BF16", "shape": list(shape), "data_offsets": [offset, offset + size]}
        offset += size
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    rng = np.random.default_rng(0)
    partial = path.with_suffix(".partial")
    with open(partial, "wb") as out:
        out.write(struct.pack("<Q", len(text)) + text)
        for _, shape in shapes:
            if len(shape) == 1:  # RMSNorm weights: near one
                values = 1.0 + 0.1 * rng.standard_normal(shape, dtype=np.float32)
            else:
                values = rng.standard_normal(shape, dtype=np.float32) * np.float32(0.02)
            out.write(_bfloat16_bytes(values))
            del values
    partial.rename(path)


def run_one(args) -> dict:
    import mindspore
    import torch  # noqa: F401  (both frameworks before parity)

    import parity
    from cases.models import llama

    mindspore.set_context(mode=mindspore.PYNATIVE_MODE, device_target="CPU")
    config = import_config(args)
    shared = llama.block_inputs(config, args.seq)
    start = time.perf_counter()
    result = parity.check_blocks(
        lambda i: llama.LlamaBlock(config),
        lambda i: llama.torch_llama_block(config, i),
        args.count,
        parity.randn((1, args.seq, args.hidden)),
        torch_weights=Path(args.dir) / "model.safetensors",
        shared=shared,
        grads=args.grads,
    )
    wall = time.perf_counter() - start
    end = result.end_to_end
    cpu = result.cpu_seconds
    return {
        "blocks": args.count,
        "grads": args.grads,
        "wall_s": wall,
        "per_block_s": wall / args.count,
        "cpu_s": sum(cpu),
        "per_block_cpu_s": cpu,
        # tensors each block's check sent to the rounding envelope (each costs PyTorch reruns)
        "per_block_enveloped": [sum(c.envelope is not None for c in b.result.comparisons) for b in result.blocks],
        "peak_rss_mb": _peak_rss_mb(),
        "passed": result.passed,
        "worst_margin": result.worst_margin,
        "end_to_end_max_abs": end.max_abs,
        "end_to_end_margin": end.margin,
    }


def import_config(args):
    from cases.models.zoo_compat import import_quietly

    return import_quietly("transformers").LlamaConfig(
        hidden_size=args.hidden,
        intermediate_size=args.mlp,
        num_attention_heads=args.heads,
        num_key_value_heads=args.heads,
        num_hidden_layers=args.layers,
        rms_norm_eps=1e-5,
        rope_theta=10000.0,
        attn_implementation="eager",
    )


def _child(args, count: int) -> dict:
    command = (
        [sys.executable, __file__, "--one", str(count)]
        + [f"--{k}={getattr(args, k)}" for k in ("dir", "layers", "hidden", "mlp", "heads", "seq")]
        + (["--grads"] if args.grads else [])
    )
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    for line in done.stdout.splitlines():
        if line.startswith(MARK):
            return json.loads(line[len(MARK) :])
    raise SystemExit(f"the run over {count} blocks failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", default="/tmp/parity-7b", help="where the checkpoint is (written if absent)")
    parser.add_argument("--layers", type=int, default=32, help="decoder layers the checkpoint holds")
    parser.add_argument("--blocks", type=int, default=None, help="blocks checked (default: every layer)")
    parser.add_argument("--fewer", type=int, default=None, help="the smaller count (default: a quarter)")
    parser.add_argument("--hidden", type=int, default=4096)
    parser.add_argument("--mlp", type=int, default=11008)
    parser.add_argument("--heads", type=int, default=32)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--grads", action="store_true", help="with gradients and the chained backward")
    parser.add_argument("--one", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--json", default=None, help="also write the figures to this file")
    args = parser.parse_args()
    if args.one is not None:
        args.count = args.one
        print(MARK + json.dumps(run_one(args)), flush=True)
        return
    path = Path(args.dir) / "model.safetensors"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        start = time.perf_counter()
        write_checkpoint(path, args.layers, args.hidden, args.mlp)
        print(f"wrote {path} ({path.stat().st_size / 2**30:.2f} GiB) in {time.perf_counter() - start:.0f} s")
    blocks = args.blocks or args.layers
    fewer = args.fewer or max(1, blocks // 4)
    runs = [_child(args, count) for count in (fewer, blocks)]
    for run in runs:
        cpu = run["per_block_cpu_s"]
        print(
            f"{run['blocks']:>3} blocks: {run['wall_s']:8.1f} s wall, {run['per_block_s']:6.2f} s per block; "
            f"CPU {run['cpu_s']:8.1f} s, per block {run['cpu_s'] / len(cpu):6.2f} s (least {min(cpu):.2f}, "
            f"most {max(cpu):.2f}); peak RSS {run['peak_rss_mb']:8.0f} MB; passed {run['passed']}, worst margin "
            f"{run['worst_margin']:.3g}x; end to end max |diff| {run['end_to_end_max_abs']:.3g} "
            f"({run['end_to_end_margin']:.3g}x allowed)"
        )
    small, large = runs
    print(
        f"ratios ({large['blocks']} / {small['blocks']} blocks = {large['blocks'] / small['blocks']:.2f}): "
        f"CPU {large['cpu_s'] / small['cpu_s']:.2f}, wall {large['wall_s'] / small['wall_s']:.2f}, "
        f"peak RSS {large['peak_rss_mb'] / small['peak_rss_mb']:.2f}"
    )
    if args.json:
        Path(args.json).write_text(json.dumps(runs, indent=2))


if __name__ == "__main__":
    main()
