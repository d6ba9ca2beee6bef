"""Regenerate the msprobe dumps beside this file (the fixtures of tests/tools/test_msprobe_summaries.py).

A small PyTorch model and its MindSpore counterpart, with the same weights and the same input, run
one forward pass and one backward pass (of ``output.sum()``) under msprobe's ``PrecisionDebugger``
at level L0 (one node per module or cell), in its two statistics modes: ``statistics`` (max, min,
mean and norm of every tensor) and ``md5`` (the same statistics plus a CRC32 checksum of every
tensor's bytes, which msprobe records under the key ``md5``). ``ms_statistics_fault`` is the
MindSpore model with one fault injected: ``blocks.0.norm`` built with epsilon 1e-2 instead of
PyTorch's 1e-5.

Run it with the project's environment (torch, mindspore and mindstudio-probe installed)::

    python tests/data/msprobe/make_dumps.py

Each framework runs in its own process. msprobe writes ``DIR/step0/proc<pid>/{dump,construct,
stack}.json``; the script keeps ``dump.json`` and ``construct.json`` and renames ``proc<pid>`` to
``proc0`` so that the fixtures' paths do not change from one run to the next.

msprobe computes MindSpore's norms with ``mindspore.mint.norm``, whose kernel MindSpore's CPU build
lacks; the script removes that attribute before importing msprobe, which then falls back (as it
does on MindSpore versions without ``mint.norm``) to ``mindspore.ops.norm``, the same L2 norm.
"""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
DUMPS = {  # folder: (framework, summary mode, LayerNorm epsilon of blocks.0.norm)
    "torch_statistics": ("torch", "statistics", 1e-5),
    "torch_md5": ("torch", "md5", 1e-5),
    "ms_statistics": ("mindspore", "statistics", 1e-5),
    "ms_md5": ("mindspore", "md5", 1e-5),
    "ms_statistics_fault": ("mindspore", "statistics", 1e-2),
}


def _values():
    rng = np.random.default_rng(0)
    f32 = np.float32
    return {
        "x": rng.standard_normal((2, 4)).astype(f32),
        "fc1.weight": (rng.standard_normal((8, 4)) / 2).astype(f32),
        "fc1.bias": rng.standard_normal(8).astype(f32) / 4,
        "blocks.0.fc.weight": (rng.standard_normal((8, 8)) / 3).astype(f32),
        "blocks.0.fc.bias": rng.standard_normal(8).astype(f32) / 4,
        "blocks.0.norm.weight": (1 + rng.standard_normal(8) / 4).astype(f32),
        "blocks.0.norm.bias": rng.standard_normal(8).astype(f32) / 4,
        "head.weight": (rng.standard_normal((2, 8)) / 3).astype(f32),
        "head.bias": rng.standard_normal(2).astype(f32) / 4,
    }


def _config(folder: Path, mode: str) -> Path:
    config = folder.parent / f"{folder.name}.config.json"
    config.write_text(
        json.dumps(
            {
                "task": "statistics",
                "dump_path": str(folder),
                "rank": [],
                "step": [],
                "level": "L0",
                "statistics": {"scope": [], "list": [], "data_mode": ["all"], "summary_mode": mode},
            }
        )
    )
    return config


def run_torch(folder: Path, mode: str, epsilon: float) -> None:
    import torch
    from msprobe.pytorch import PrecisionDebugger

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc, self.norm = torch.nn.Linear(8, 8), torch.nn.LayerNorm(8, eps=epsilon)

        def forward(self, x):
            return self.norm(torch.relu(self.fc(x)))

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1, self.blocks, self.head = (
                torch.nn.Linear(4, 8),
                torch.nn.Sequential(Block()),
                torch.nn.Linear(8, 2),
            )

        def forward(self, x):
            return self.head(self.blocks(self.fc1(x)))

    net, values = Net(), _values()
    net.load_state_dict({k: torch.from_numpy(v) for k, v in values.items() if k != "x"})
    debugger = PrecisionDebugger(config_path=str(_config(folder, mode)))
    debugger.start(net)
    x = torch.from_numpy(values["x"]).requires_grad_(True)
    net(x).sum().backward()
    debugger.stop()
    debugger.step()


def run_mindspore(folder: Path, mode: str, epsilon: float) -> None:
    import mindspore as ms
    from mindspore import mint, nn, ops

    ms.set_context(mode=ms.PYNATIVE_MODE, device_target="CPU")
    del mint.norm  # no CPU kernel (see the module's docstring)
    from msprobe.mindspore import PrecisionDebugger

    class Block(nn.Cell):
        def __init__(self):
            super().__init__()
            self.fc, self.norm = nn.Dense(8, 8), nn.LayerNorm((8,), epsilon=epsilon)

        def construct(self, x):
            return self.norm(ops.relu(self.fc(x)))

    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.fc1, self.blocks, self.head = nn.Dense(4, 8), nn.SequentialCell(Block()), nn.Dense(8, 2)

        def construct(self, x):
            return self.head(self.blocks(self.fc1(x)))

    net, values = Net(), _values()
    renames = {"norm.weight": "norm.gamma", "norm.bias": "norm.beta"}
    params = {}
    for key, value in values.items():
        if key != "x":
            for old, new in renames.items():
                key = key.replace(old, new)
            params[key] = ms.Parameter(ms.Tensor(value), name=key)
    missing, _ = ms.load_param_into_net(net, params, strict_load=True)
    assert not missing, missing
    debugger = PrecisionDebugger(config_path=str(_config(folder, mode)))
    debugger.start(net)
    grad = ms.grad(lambda x: net(x).sum(), grad_position=0, weights=net.trainable_params())
    grad(ms.Tensor(values["x"]))
    debugger.stop()
    debugger.step()


def _keep(folder: Path) -> None:
    """step0/proc<pid>/ -> step0/proc0/, with dump.json and construct.json only."""
    (process,) = (folder / "step0").iterdir()
    target = folder / "step0" / "proc0"
    process.rename(target)
    for path in target.iterdir():
        if path.name not in ("dump.json", "construct.json"):
            path.unlink()


def main() -> None:
    if len(sys.argv) == 4:  # one dump, in this process
        framework, folder, mode = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
        epsilon = DUMPS[folder.name][2]
        (run_torch if framework == "torch" else run_mindspore)(folder, mode, epsilon)
        return
    for name, (framework, mode, _) in DUMPS.items():
        folder = HERE / name
        shutil.rmtree(folder, ignore_errors=True)
        subprocess.run([sys.executable, __file__, framework, str(folder), mode], check=True)
        (HERE / f"{name}.config.json").unlink()
        _keep(folder)


if __name__ == "__main__":
    main()
