"""parity.check_blocks: a LLaMA-shaped model checked decoder layer by decoder layer from a
checkpoint (the catalogue's MindSpore layer against transformers'), each block fed PyTorch's output
of the block before, each built, loaded and freed before the next."""

from __future__ import annotations

import gc
import importlib.util
import json
import weakref
from pathlib import Path

import mindspore  # noqa: F401  (both frameworks before parity, as everywhere in tests/)
import numpy as np
import pytest
import torch

import parity
from parity import ParityMismatch, ParityUsageError
from parity.backends.checkpoints import save_checkpoint_file

if importlib.util.find_spec("transformers") is None:
    pytest.skip("transformers is not installed (make, or pip install -e .[zoo])", allow_module_level=True)

from safetensors.torch import save_file  # noqa: E402

from cases.models import llama  # noqa: E402

BLOCKS = 3
SEQ = 6


class Built:
    """Block factories counting how many blocks of each side are alive at once."""

    def __init__(self, ms_eps=None):
        self.alive = {"ms": 0, "torch": 0}
        self.most = {"ms": 0, "torch": 0}
        self.built = []
        self.ms_eps = ms_eps or {}

    def _born(self, side, block):
        self.alive[side] += 1
        self.most[side] = max(self.most[side], self.alive[side])
        self.built.append(side)
        weakref.finalize(block, self._died, side)
        return block

    def _died(self, side):
        self.alive[side] -= 1

    def torch_block(self, i):
        gc.collect()  # what the check let go of is gone before counting (PyTorch's block is built first)
        return self._born("torch", llama.torch_llama_block(llama.llama_config(), i))

    def ms_block(self, i):
        config = llama.llama_config()
        config.rms_norm_eps = self.ms_eps.get(i, config.rms_norm_eps)
        return self._born("ms", llama.LlamaBlock(config))


def _state(count, dtype=torch.float32):
    """A ``count``-layer checkpoint's tensors, Hugging Face's names, random but seeded."""
    torch.manual_seed(0)
    state = {}
    for i in range(count):
        layer = llama.torch_llama_block(llama.llama_config(), i)
        for name, tensor in layer.state_dict().items():
            value = torch.randn_like(tensor) * (0.2 if tensor.ndim > 1 else 0.1) + (tensor.ndim == 1)
            state[f"model.layers.{i}.{name}"] = value.to(dtype).contiguous()
    return state


@pytest.fixture(scope="module")
def weights(tmp_path_factory):
    path = tmp_path_factory.mktemp("blocks") / "model.safetensors"
    save_file(_state(BLOCKS), str(path))
    return path


def _shared():
    return llama.block_inputs(llama.llama_config(), SEQ)


def _check(weights_path, built, count=BLOCKS, **kwargs):
    return parity.check_blocks(
        built.ms_block,
        built.torch_block,
        count,
        parity.randn((1, SEQ, llama.CONFIG["hidden_size"])),
        torch_weights=weights_path,
        **{"shared": _shared(), "grads": False, **kwargs},
    )


@pytest.fixture(scope="module")
def clean(weights):
    """One clean check with gradients, shared: its result and the factories that counted its blocks."""
    built = Built()
    result = _check(weights, built, grads=True)
    return result, built


def test_a_clean_pair_passes_block_by_block_one_block_alive_at_a_time(clean):
    result, built = clean
    assert result.passed and len(result) == BLOCKS and result.first_failing is None
    assert [b.index for b in result.blocks] == list(range(BLOCKS))
    assert all(isinstance(b.result, parity.Result) and b.result.comparisons for b in result.blocks)
    # each block built twice per side: the forward walk, then the backward walk from the last block
    assert built.built.count("ms") == built.built.count("torch") == 2 * BLOCKS
    assert built.most == {"ms": 1, "torch": 1}, built.most  # each block freed before the next is built
    gc.collect()
    assert built.alive == {"ms": 0, "torch": 0}  # and nothing of them kept by the result
    end = result.end_to_end
    # the chain's own drift (reported, failing nothing) moves with the host's rounding: its verdict is not held
    assert end.total == SEQ * llama.CONFIG["hidden_size"]
    assert "end to end" in str(result) and f"over {BLOCKS} blocks" in str(result)
    assert "backward end to end (chained from the last block)" in str(result)
    assert all("chained backward:" in b.line() for b in result.blocks)
    # each walk's time on each block, the process's CPU time (every thread's) beside the wall time
    assert all(b.forward_time.cpu > 0 and b.backward_time.cpu > 0 for b in result.blocks)
    assert all(b.forward_time.wall > 0 and b.backward_time.wall > 0 for b in result.blocks)
    assert len(result.cpu_seconds) == BLOCKS and all(s > 0 for s in result.cpu_seconds)


def _whole_model(state, x):
    """transformers' layers loaded from ``state`` and run one after the other, as one graph."""
    mask, cos, sin = (torch.from_numpy(a) for a in _shared())
    for i in range(BLOCKS):
        layer = llama.torch_llama_block(llama.llama_config(), i)
        prefix = f"model.layers.{i}."
        layer.load_state_dict({k[len(prefix) :]: v for k, v in state.items() if k.startswith(prefix)})
        x = layer(x, mask, cos, sin)
    return x


def test_the_weights_read_are_the_checkpoints_and_the_backward_is_the_whole_models(clean):
    """A block's output is PyTorch's layer with the checkpoint's weights: the chain of blocks
    equals transformers' layers loaded from the same file and run one after the other; and the
    backward chained block by block from the last block's seeded cotangent is that whole model's
    gradient with respect to its input."""
    result, _ = clean
    x = torch.from_numpy(parity.randn((1, SEQ, llama.CONFIG["hidden_size"])).generate(_stream()))
    x.requires_grad_(True)
    out = _whole_model(_state(BLOCKS), x)
    top = float(out.detach().abs().max())
    assert result.end_to_end.max_abs <= 1e-4 * top and top > 0  # MindSpore's chain ends near PyTorch's
    cotangent = torch.from_numpy(_seeded_cotangent(out.shape))
    (whole,) = torch.autograd.grad(out, x, cotangent)
    ms_grad, torch_grad = result.chained_input_grad
    scale = float(whole.abs().max())
    assert scale > 0 and torch_grad.shape == ms_grad.shape == tuple(x.shape)
    assert float(np.abs(torch_grad - whole.numpy()).max()) <= 1e-5 * scale  # the chain is the whole model's
    assert float(np.abs(ms_grad - whole.numpy()).max()) <= 1e-4 * scale  # MindSpore's chain ends near it
    grad = result.end_to_end_grad
    assert grad.kind == "input grad" and grad.total == x.numel() and grad.max_abs > 0
    params = len(llama.torch_llama_block(llama.llama_config(), 0).state_dict())
    assert [len(b.chained_grads) for b in result.blocks] == [1 + params] * BLOCKS
    assert {c.kind for b in result.blocks for c in b.chained_grads[1:]} == {"param grad"}


def _seeded_cotangent(shape):
    """The cotangent parity.check draws for a module's one output."""
    from parity.engine.inputs import normal_floats, seeded_stream
    from parity.engine.settings import DEFAULT_SEED

    count = int(np.prod(shape))
    return normal_floats(seeded_stream(DEFAULT_SEED, "cotangent:output"), count).reshape(shape).astype(np.float32)


def _stream():
    from parity.engine.inputs import seeded_stream
    from parity.engine.settings import DEFAULT_SEED

    return seeded_stream(DEFAULT_SEED, "input[0]")


def test_a_fault_in_one_block_fails_naming_it(weights):
    built = Built(ms_eps={1: 0.5})  # block 1's RMSNorm eps differs on MindSpore's side
    with pytest.raises(ParityMismatch) as raised:
        _check(weights, built)
    result = raised.value.result
    assert result.failing_blocks == [1] and result.first_failing == 1
    assert result[0].passed and result[2].passed  # each block fed PyTorch's input judges itself
    assert not result[1].passed and result[1].message
    assert str(raised.value).startswith(f"block 1 of {BLOCKS} differs")
    assert "block 1's check:" in str(raised.value)
    assert not result.end_to_end.passed  # the fault carried through MindSpore's own chain
    assert result.end_to_end_grad is None and not result[1].chained_grads  # no backward without grads
    assert built.most == {"ms": 1, "torch": 1}


@pytest.mark.slow
def test_a_fault_in_one_block_shows_in_its_gradients_and_the_chained_backward(weights):
    built = Built(ms_eps={1: 0.5})
    with pytest.raises(ParityMismatch, match=f"^block 1 of {BLOCKS} differs") as raised:
        _check(weights, built, grads=True)
    result = raised.value.result
    assert result.failing_blocks == [1] and result[0].passed and result[2].passed
    assert "param grad" in {c.kind for c in result[1].result.comparisons if not c.passed}  # its own gradients
    assert not result.end_to_end_grad.passed  # carried back through MindSpore's chained backward to block 0
    assert not all(c.passed for c in result[1].chained_grads)
    assert "chained backward:" in str(raised.value)
    assert built.most == {"ms": 1, "torch": 1}


def test_bfloat16_weights_are_read_as_float32(tmp_path):
    path = tmp_path / "model.safetensors"
    save_file(_state(1, torch.bfloat16), str(path))
    result = _check(path, Built(), count=1)
    assert result.passed
    assert {c.torch_dtype for b in result.blocks for c in b.result.comparisons} == {"float32"}


def test_mindspore_reads_its_own_checkpoint(tmp_path):
    torch_path, ms_path = tmp_path / "model.safetensors", tmp_path / "model.ckpt"
    state = _state(1)
    save_file(state, str(torch_path))
    changed = {k: v.numpy().copy() for k, v in state.items()}
    changed["model.layers.0.self_attn.o_proj.weight"][0, 0] += 0.5  # a changed weight, MindSpore's file only
    save_checkpoint_file(changed, str(ms_path))
    with pytest.raises(ParityMismatch, match="^block 0 of 1 differs") as raised:
        _check(torch_path, Built(), count=1, ms_weights=ms_path, grads=True)
    result = raised.value.result
    assert result.failing_blocks == [0]
    assert all(b.result.weights.direction == "as is" for b in result.blocks)  # nothing copied across
    # the backward walk reads MindSpore's checkpoint too: the changed weight's gradient differs
    chained = {c.name: c for c in result[0].chained_grads}
    assert not chained["self_attn.o_proj.weight"].passed


def test_a_missing_key_names_the_block_and_the_key(tmp_path):
    state = _state(2)
    del state["model.layers.1.mlp.up_proj.weight"]
    path = tmp_path / "model.safetensors"
    save_file(state, str(path))
    with pytest.raises(ParityUsageError, match=r"block 1: .*'model\.layers\.1\.mlp\.up_proj\.weight'"):
        _check(path, Built(), count=2)


def test_a_tensor_the_block_has_no_place_for_is_noted(tmp_path):
    state = _state(1)
    state["model.layers.0.self_attn.rotary_emb.inv_freq"] = torch.ones(4)  # as older versions saved it
    path = tmp_path / "model.safetensors"
    save_file(state, str(path))
    result = _check(path, Built(), count=1)
    assert result.passed
    assert result.notes == [
        "block 0: torch_weights holds 1 tensors under 'model.layers.0.' that the block has no place for, "
        "left unused: 'model.layers.0.self_attn.rotary_emb.inv_freq'"
    ]
    assert "note: block 0:" in str(result)


def test_an_error_inside_a_block_check_names_the_block(weights):
    with pytest.raises(ParityUsageError, match=r"^check_blocks\(\): block 0: .*no\.such"):
        _check(weights, Built(), count=1, tolerance={"no.such.*": (1e-3, 1e-3)})


def test_more_blocks_than_the_checkpoint_holds_is_refused_before_any_runs(weights):
    built = Built()
    with pytest.raises(ParityUsageError, match=r"count=5 blocks, but .* holds no key under 'model\.layers\.3\.'"):
        _check(weights, built, count=5)
    assert built.built == []


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(count=0), "count must be a positive number"),
        (dict(prefix="model.layers."), "must be a string holding '{i}'"),
        (dict(prefix="model.layers.{i}"), "ends with the index: end it with the separator"),
        (dict(shared={"mask": None}), "shared must be a tuple"),
        (dict(torch_weights="/nonexistent/model.safetensors"), "is not a file"),
    ],
)
def test_a_wrong_call_says_what_is_wrong(weights, kwargs, match):
    kwargs = {"torch_weights": weights, "count": BLOCKS, **kwargs}
    path, count = kwargs.pop("torch_weights"), kwargs.pop("count")
    with pytest.raises(ParityUsageError, match=match):
        _check(path, Built(), count=count, **kwargs)


def _sharded(folder, state, files=3):
    """``state`` split over ``files`` safetensors files (block 0's tensors over two of them) with
    Hugging Face's index beside them."""
    folder.mkdir(exist_ok=True)
    keys = list(state)
    names = [f"model-{n + 1:05d}-of-{files:05d}.safetensors" for n in range(files)]
    weight_map = {}
    for n, name in enumerate(names):
        part = keys[n * len(keys) // files : (n + 1) * len(keys) // files]
        save_file({k: state[k] for k in part}, str(folder / name))
        weight_map.update({k: name for k in part})
    index = {"metadata": {"total_size": sum(t.numel() * 4 for t in state.values())}, "weight_map": weight_map}
    (folder / "model.safetensors.index.json").write_text(json.dumps(index))
    return folder


def test_a_checkpoint_sharded_over_several_files_is_read_through_its_index(tmp_path, weights):
    from parity.engine.blocks.checkpoint import open_checkpoint

    folder = _sharded(tmp_path / "sharded", _state(2))  # the first two blocks of the one file's
    whole = open_checkpoint(weights, "torch_weights", "test")
    for given in (folder, folder / "model.safetensors.index.json"):
        built = Built()
        result = _check(given, built, count=2)
        assert result.passed and built.most == {"ms": 1, "torch": 1}
        # each block's tensors as the one file holds them, bit for bit (block 0's over two files)
        sharded = open_checkpoint(given, "torch_weights", "test")
        for i in range(2):
            mine, theirs = sharded.read(f"model.layers.{i}."), whole.read(f"model.layers.{i}.")
            assert mine.keys() == theirs.keys() and all(np.array_equal(mine[k], theirs[k]) for k in mine)


def test_a_sharded_checkpoint_names_the_missing_file_and_the_missing_key(tmp_path):
    folder = _sharded(tmp_path / "sharded", _state(2))
    (folder / "model-00002-of-00003.safetensors").unlink()
    with pytest.raises(ParityUsageError, match=r"maps keys to 1 files that are not there: .*model-00002-of-00003"):
        _check(folder, Built(), count=2)
    folder = _sharded(tmp_path / "other", _state(2))
    index = json.loads((folder / "model.safetensors.index.json").read_text())
    index["weight_map"]["model.layers.1.mlp.up_proj.weight"] = "model-00001-of-00003.safetensors"
    (folder / "model.safetensors.index.json").write_text(json.dumps(index))
    with pytest.raises(ParityUsageError, match=r"maps 'model\.layers\.1\.mlp\.up_proj\.weight' to .*00001-of-00003"):
        _check(folder, Built(), count=2)
    with pytest.raises(ParityUsageError, match=r"is a folder, read as a sharded checkpoint's, but it holds no"):
        _check(tmp_path, Built(), count=1)


def test_the_fixture_offers_check_blocks_bound_to_the_session_and_records_it(pytester):
    save_file(_state(2), str(pytester.path / "model.safetensors"))
    root = str(Path(__file__).resolve().parents[1])
    pytester.makepyfile(
        test_fixture=f"""
        import sys

        sys.path.insert(0, {root!r})  # the catalogue's LLaMA layers
        from cases.models import llama

        def test_blocks(parity):
            config = llama.llama_config()
            result = parity.check_blocks(
                lambda i: llama.LlamaBlock(config),
                lambda i: llama.torch_llama_block(config, i),
                2,
                parity.randn((1, {SEQ}, config.hidden_size)),
                torch_weights="model.safetensors",
                shared=llama.block_inputs(config, {SEQ}),
            )
            assert result.passed and len(result) == 2
            assert {{b.result.seed for b in result.blocks}} == {{7}}  # the session's seed
        """
    )
    result = pytester.runpytest("--parity", "--parity-seed=7", "--parity-report=blocks.jsonl", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*parity summary*", "ok    test_fixture.py::test_blocks: worst margin *x allowed*"])
    from parity.nightly.records import read_records

    _, checks = read_records(pytester.path / "blocks.jsonl")
    (record,) = checks
    assert record["call"] == "check_blocks" and record["verdict"] == "pass" and record["seed"] == 7
    blocks = record["blocks"]
    assert blocks["count"] == 2 and blocks["failing"] == [] and blocks["prefix"] == "model.layers.{i}."
    assert [b["index"] for b in blocks["per_block"]] == [0, 1] and all(b["passed"] for b in blocks["per_block"])
    assert blocks["end_to_end"]["kind"] == "output" and blocks["end_to_end_grad"]["kind"] == "input grad"
    assert {t["block"] for t in record["tensors"]} == {0, 1}
    assert "model.layers.1.mlp.up_proj.weight" in {t["name"] for t in record["tensors"]}  # checkpoint keys
    assert all(b["cpu_s"] > 0 and b["wall_s"] > 0 for b in blocks["per_block"])
    chained = blocks["per_block"][1]["chained_grads"]
    assert chained[0]["kind"] == "input grad" and {t["kind"] for t in chained[1:]} == {"param grad"}
