"""parity.check_blocks: a LLaMA-shaped model checked decoder layer by decoder layer from a
checkpoint (the catalogue's MindSpore layer against transformers'), each block fed PyTorch's output
of the block before, each built, loaded and freed before the next."""

from __future__ import annotations

import gc
import importlib.util
import weakref

import mindspore  # noqa: F401  (both frameworks before parity, as everywhere in tests/)
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
        gc.collect()  # what the check let go of is gone before counting
        return self._born("torch", llama.torch_llama_block(llama.llama_config(), i))

    def ms_block(self, i):
        gc.collect()
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
        grads=False,
        **{"shared": _shared(), **kwargs},
    )


def test_a_clean_pair_passes_block_by_block_one_block_alive_at_a_time(weights):
    built = Built()
    result = _check(weights, built)
    assert result.passed and len(result) == BLOCKS and result.first_failing is None
    assert [b.index for b in result.blocks] == list(range(BLOCKS))
    assert all(isinstance(b.result, parity.Result) and b.result.comparisons for b in result.blocks)
    assert built.built.count("ms") == built.built.count("torch") == BLOCKS
    assert built.most == {"ms": 1, "torch": 1}, built.most  # each block freed before the next is built
    gc.collect()
    assert built.alive == {"ms": 0, "torch": 0}  # and nothing of them kept by the result
    end = result.end_to_end
    # the chain's own drift (reported, failing nothing) moves with the host's rounding: its verdict is not held
    assert end.total == SEQ * llama.CONFIG["hidden_size"]
    assert "end to end" in str(result) and f"over {BLOCKS} blocks" in str(result)


def test_the_weights_read_are_the_checkpoints(weights):
    """A block's output is PyTorch's layer with the checkpoint's weights: the chain of blocks
    equals transformers' layers loaded from the same file and run one after the other."""
    result = _check(weights, Built())
    state = _state(BLOCKS)
    x = torch.from_numpy(parity.randn((1, SEQ, llama.CONFIG["hidden_size"])).generate(_stream()))
    mask, cos, sin = (torch.from_numpy(a) for a in _shared())
    with torch.no_grad():
        for i in range(BLOCKS):
            layer = llama.torch_llama_block(llama.llama_config(), i)
            prefix = f"model.layers.{i}."
            layer.load_state_dict({k[len(prefix) :]: v for k, v in state.items() if k.startswith(prefix)})
            x = layer(x, mask, cos, sin)
    end = result.end_to_end
    assert end.max_abs <= 1e-4 * float(x.abs().max())  # MindSpore's chain ends near PyTorch's
    assert float(x.abs().max()) > 0


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
    assert built.most == {"ms": 1, "torch": 1}


def test_bfloat16_weights_are_read_as_float32(tmp_path):
    path = tmp_path / "model.safetensors"
    save_file(_state(2, torch.bfloat16), str(path))
    built = Built()
    result = _check(path, built, count=2)
    assert result.passed and built.most == {"ms": 1, "torch": 1}
    assert {c.torch_dtype for b in result.blocks for c in b.result.comparisons} == {"float32"}


def test_mindspore_reads_its_own_checkpoint(tmp_path):
    torch_path, ms_path = tmp_path / "model.safetensors", tmp_path / "model.ckpt"
    state = _state(2)
    save_file(state, str(torch_path))
    changed = {k: v.numpy().copy() for k, v in state.items()}
    changed["model.layers.1.self_attn.o_proj.weight"][0, 0] += 0.5  # a changed weight, MindSpore's file only
    save_checkpoint_file(changed, str(ms_path))
    with pytest.raises(ParityMismatch, match="^block 1 of 2 differs") as raised:
        _check(torch_path, Built(), count=2, ms_weights=ms_path)
    result = raised.value.result
    assert result.failing_blocks == [1]
    assert all(b.result.weights.direction == "as is" for b in result.blocks)  # nothing copied across


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
