"""What ``parity scan`` costs on a 100-file codebase (the target: a few seconds, neither framework
imported).

Run from the repository root::

    python benchmarks/bench_scan.py                      # a generated 100-file codebase
    python benchmarks/bench_scan.py --files 300 --repeats 5
    python benchmarks/bench_scan.py --path .venv/lib/python3.11/site-packages/torchvision/models
    python benchmarks/bench_scan.py --json scan.json

The generated codebase (seeded, so the same on every run) is a model package: each file imports
torch under one of the alias forms the scan follows, defines a few ``nn.Module`` classes built of
``torch.nn`` layers (some with arguments a known mismatch is bound to), calls functional APIs and
Tensor methods in ``forward``, and has helper functions with plain Python around them, about 170
lines a file.

It reports, best and median over ``--repeats``:

* the command as a user runs it, ``python -m parity.cli scan PATH --json``, in a fresh process (the
  interpreter start, the registry load and the report included), with the frameworks it imported
  (read from ``sys.modules`` at the end of the run);
* ``parity.tools.scan.scanner.scan(PATH)`` in this process: the first call (the registry and the translation
  tables read from disk) and later ones (both cached).

Wall and CPU time are both given (the process's and its children's user+system time; the steadier
figure on a small shared machine).

A measurement, not a test: nothing here asserts on a time.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

_HEADERS = [
    "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n",
    "import torch as t\nfrom torch import nn\nfrom torch.nn import functional as F\n",
    "import torch\nfrom torch import nn\nfrom torch.nn import Conv2d as C, BatchNorm2d\nimport torch.nn.functional as F\n",
]
_LAYERS = [
    "nn.Conv2d({c}, {c2}, 3, padding=1)",
    "nn.BatchNorm2d({c2})",
    "nn.ReLU(inplace=True)",
    "nn.Conv2d({c}, {c2}, 1, bias=False)",
    "nn.MaxPool2d(2)",
    "nn.Dropout(p=0.1)",
    "nn.GELU()",
    "nn.LayerNorm({c2})",
    "nn.Linear({c}, {c2})",
    "nn.Embedding(100, {c2}, padding_idx=0)",
    "nn.AdaptiveAvgPool2d(1)",
    "nn.SiLU()",
    "nn.Conv2d({c}, {c2}, 3, padding_mode='reflect', padding=1)",
    "nn.GroupNorm(4, {c2})",
    "nn.Upsample(scale_factor=2, mode='nearest')",
    "nn.Softmax(dim=-1)",
]
_FORWARD = [
    "x = F.relu(x)",
    "x = x.view(x.size(0), -1)",
    "x = x.permute(0, 2, 3, 1).contiguous()",
    "x = {T}.cat([x, x], dim=1)",
    "x = F.interpolate(x, scale_factor=2.0)",
    "x = x.unsqueeze(1)",
    "x = {T}.flatten(x, 1)",
    "x = F.dropout(x, p=0.1, training=self.training)",
    "x = x.masked_fill(x < 0, 0.0)",
    "x = {T}.sigmoid(x) * x",
    "x = F.softmax(x, dim=-1)",
    "x = x.clamp(min=-1.0, max=1.0)",
    "x = {T}.einsum('bc,cd->bd', x, self.weight)",
    "x = x.transpose(1, 2)",
    "x = F.layer_norm(x, x.shape[-1:])",
]


def _file(rng: random.Random, index: int) -> str:
    header = rng.choice(_HEADERS)
    torch_name = "t" if "import torch as t" in header else "torch"
    lines = [
        f'"""Generated module {index}: layers, forward passes and helpers."""',
        "",
        header,
        "import math",
        "import numpy as np",
        "",
    ]
    for k in range(3):
        c, c2 = rng.choice([8, 16, 32]), rng.choice([16, 32, 64])
        layers = [rng.choice(_LAYERS).format(c=c, c2=c2) for _ in range(6)]
        lines += [
            f"class Block{index}_{k}(nn.Module):",
            f'    """Block {k} of module {index}."""',
            "",
            "    def __init__(self, scale: float = 1.0):",
            "        super().__init__()",
            "        self.scale = scale",
            f"        self.weight = nn.Parameter({torch_name}.zeros({c2}, {c2}))",
        ]
        lines += [f"        self.layer{j} = {layer}" for j, layer in enumerate(layers)]
        lines += [
            "",
            "    def forward(self, x: torch.Tensor) -> torch.Tensor:"
            if torch_name == "torch"
            else "    def forward(self, x):",
        ]
        for step in range(8):
            lines.append("        " + rng.choice(_FORWARD).format(T=torch_name))
            if step % 3 == 0:
                lines.append(f"        x = self.layer{rng.randrange(6)}(x) * self.scale")
        lines += ["        return x", ""]
    for k in range(6):
        lines += [
            f"def helper_{index}_{k}(values, factor=2):",
            f'    """Plain Python around tensors ({k})."""',
            "    total = 0",
            "    for i, value in enumerate(values):",
            "        if i % factor == 0:",
            "            total += math.sqrt(abs(value))",
            "        else:",
            "            total -= value / (i + 1)",
            "    names = ','.join(str(v) for v in values).split(',')",
            "    table = {name: len(name) for name in names}",
            "    return total, sorted(table.items())",
            "",
        ]
    lines += [
        f"def build_{index}():",
        f"    return nn.Sequential(Block{index}_0(), Block{index}_1(), Block{index}_2())",
        "",
        f"def optimizer_{index}(model):",
        f"    return {torch_name}.optim.AdamW(model.parameters(), lr=1e-3)",
        "",
    ]
    return "\n".join(lines)


def generate(folder: Path, files: int, seed: int = 0) -> int:
    """Write ``files`` modules under ``folder/models`` (in sub-packages of 10); the lines written."""
    rng = random.Random(seed)
    written = 0
    for index in range(files):
        package = folder / "models" / f"group{index // 10}"
        package.mkdir(parents=True, exist_ok=True)
        source = _file(rng, index)
        (package / f"module{index}.py").write_text(source, encoding="utf-8")
        written += source.count("\n") + 1
    return written


_CHILD = (
    "import sys, time\nstart = time.perf_counter()\nfrom parity.cli import main\nimport contextlib, io\n"
    "with contextlib.redirect_stdout(io.StringIO()):\n    code = main(['scan', sys.argv[1], '--json'])\n"
    "print(time.perf_counter() - start, code, sorted(m for m in sys.modules "
    "if m.split('.')[0] in ('torch', 'mindspore', 'numpy')))\n"
)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _command(path: Path) -> Dict[str, object]:
    cpu, start = _children_cpu(), time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, str(path)], capture_output=True, text=True, cwd=ROOT, check=True
    )
    wall, cpu = time.perf_counter() - start, _children_cpu() - cpu
    inner, code, modules = out.stdout.split(" ", 2)
    return {
        "wall_s": wall,
        "cpu_s": cpu,
        "in_process_s": float(inner),
        "exit": int(code),
        "frameworks": modules.strip(),
    }


def measure(path: Path, repeats: int) -> Dict[str, object]:
    from parity.tools.scan.scanner import scan

    runs = [_command(path) for _ in range(repeats)]
    start = time.perf_counter()
    report = scan(path)
    first = time.perf_counter() - start
    later, later_cpu = [], []
    for _ in range(repeats):
        start, cpu = time.perf_counter(), time.process_time()
        scan(path)
        later.append(time.perf_counter() - start)
        later_cpu.append(time.process_time() - cpu)
    walls, cpus = [r["wall_s"] for r in runs], [r["cpu_s"] for r in runs]
    return {
        "path": str(path),
        "files": report.files,
        "uses": report.uses,
        "apis": len(report.apis),
        "convertible_percent": report.convertible_percent,
        "skipped": len(report.skipped),
        "command_wall_s": {"best": min(walls), "median": statistics.median(walls)},
        "command_cpu_s": {"best": min(cpus), "median": statistics.median(cpus)},
        "command_exit": sorted({r["exit"] for r in runs}),
        "frameworks_imported": runs[0]["frameworks"],
        "scan_first_call_s": first,
        "scan_later_call_s": {"best": min(later), "median": statistics.median(later)},
        "scan_later_call_cpu_s": {"best": min(later_cpu), "median": statistics.median(later_cpu)},
    }


def main(argv: List[str] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--path", default=None, help="scan this codebase instead of a generated one")
    parser.add_argument("--files", type=int, default=100, help="files to generate (default 100)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", metavar="OUT", default=None)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        if args.path:
            path, lines = Path(args.path), None
        else:
            path, lines = Path(tmp), generate(Path(tmp), args.files)
        result = measure(path, args.repeats)
    result["lines"] = lines if lines is not None else "n/a"
    print(
        f"codebase: {result['path'] if args.path else f'{args.files} generated files'}, "
        f"{result['lines']} lines; {result['files']} files scanned, {result['uses']} uses of {result['apis']} APIs, "
        f"{result['convertible_percent']}% convertible, {result['skipped']} skipped"
    )
    command = result["command_wall_s"]
    cpu = result["command_cpu_s"]
    print(
        f"python -m parity.cli scan PATH --json (fresh process): wall best {command['best']:.2f} s, median "
        f"{command['median']:.2f} s; CPU best {cpu['best']:.2f} s, median {cpu['median']:.2f} s over {args.repeats}; "
        f"frameworks imported: {result['frameworks_imported']}"
    )
    later, later_cpu = result["scan_later_call_s"], result["scan_later_call_cpu_s"]
    print(
        f"parity.tools.scan.scanner.scan(PATH) in process: first call {result['scan_first_call_s']:.2f} s wall; later calls wall "
        f"best {later['best']:.2f} s, median {later['median']:.2f} s; CPU best {later_cpu['best']:.2f} s"
    )
    print(
        f"(load average now {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs: wall times grow with it, CPU times less)"
    )
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
