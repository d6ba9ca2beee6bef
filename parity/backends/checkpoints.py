"""Checkpoint files of both frameworks, as numpy arrays by stored name (``parity convert`` and
``parity compare-dumps``): MindSpore's ``.ckpt`` and ``.safetensors`` through ``mindspore``, PyTorch
state dicts through ``torch.load(weights_only=True)`` or safetensors. Each function imports the
framework it needs when called, so that reading one framework's file never imports the other."""

from __future__ import annotations

import os
from typing import Dict, List, Tuple

import numpy as np

from ..errors import ParityUsageError

__all__ = [
    "load_checkpoint_file",
    "parameter_names",
    "save_checkpoint_file",
    "load_checkpoint_into",
    "load_state_file",
    "save_state_file",
    "state_keys",
    "load_state_into",
    "checkpoint_keys",
    "read_block",
    "read_shards",
]


# -- MindSpore ---------------------------------------------------------------------------------


def _format(path: str) -> str:
    return "safetensors" if path.endswith(".safetensors") else "ckpt"


def load_checkpoint_file(path: str) -> dict[str, np.ndarray]:
    """A MindSpore checkpoint (``.ckpt``, or ``.safetensors``) as numpy arrays by stored name."""
    import mindspore as ms

    if os.path.getsize(path) == 0:  # MindSpore's own message blames an option (filter_prefix)
        raise ParityUsageError(f"{path}: an empty file, not a MindSpore checkpoint")
    try:
        params = ms.load_checkpoint(path, format=_format(path))
    except Exception as exc:  # MindSpore raises ValueError, RuntimeError or OSError for a bad file
        text = str(exc).strip()
        raise ParityUsageError(
            f"{path}: mindspore.load_checkpoint cannot read it: {type(exc).__name__}: "
            f"{text.splitlines()[0] if text else ''}"
        ) from None
    return {name: param.asnumpy().copy() for name, param in params.items()}


def parameter_names(model) -> Dict[str, str]:
    """Attribute path -> ``Parameter.name``: the name a checkpoint stores and ``load_param_into_net``
    matches, which differs from the path under a Cell built with ``auto_prefix=False``."""
    return {path: param.name for path, param in model.parameters_and_names()}


def save_checkpoint_file(arrays: Dict[str, np.ndarray], path: str) -> None:
    """Write ``arrays`` (by ``Parameter.name``) with ``mindspore.save_checkpoint``, in the format
    the suffix names. ``path`` must end with it: MindSpore appends a missing suffix."""
    import mindspore as ms

    entries = [{"name": name, "data": ms.Tensor(array)} for name, array in arrays.items()]
    ms.save_checkpoint(entries, path, format=_format(path))


def load_checkpoint_into(model, path: str) -> tuple[list[str], list[str]]:
    """``load_param_into_net(model, load_checkpoint(path))``: the Parameters not loaded and the
    checkpoint's names nothing took, both by ``Parameter.name``."""
    import mindspore as ms

    not_loaded, unused = ms.load_param_into_net(model, ms.load_checkpoint(path, format=_format(path)))
    return list(not_loaded), list(unused)


# -- PyTorch -----------------------------------------------------------------------------------


_NESTED = ("state_dict", "model_state_dict", "model")  # where training scripts nest the weights


def load_state_file(
    path: str, *, tensor_ok: bool = False
) -> tuple[dict[str, np.ndarray], list[tuple[str, ...]], list[str]]:
    """A state dict file as numpy arrays by key: ``.safetensors`` through safetensors, anything else
    through ``torch.load(weights_only=True)`` (no code in the file runs). Also the groups of keys
    that hold one tensor (tied weights), and notes on what was done to read it (a state dict nested
    under ``state_dict``/``model`` taken out, bfloat16 widened to float32, which is exact).
    ``tensor_ok``: a file holding one tensor (as dump tools save them) reads as ``{"": array}``."""
    import torch

    notes: list[str] = []
    try:
        if path.endswith(".safetensors"):
            from safetensors.torch import load_file

            state = load_file(path)
        else:
            state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # unpickling, safetensors and I/O errors of many types
        how = "safetensors" if path.endswith(".safetensors") else "torch.load(weights_only=True)"
        raise ParityUsageError(f"{path}: {how} cannot read it as a PyTorch state dict: {_first_line(exc)}") from None
    state = {"": state} if tensor_ok and isinstance(state, torch.Tensor) else _state_dict_in(state, path, notes)
    arrays: Dict[str, np.ndarray] = {}
    tied: Dict[str, List[str]] = {}
    seen: Dict[Tuple[object, ...], str] = {}  # (storage, offset, shape, stride) -> the first name
    widened: List[str] = []
    for name, tensor in state.items():
        key = (tensor.untyped_storage().data_ptr(), tensor.storage_offset(), tuple(tensor.shape), tensor.stride())
        if tensor.numel() and key in seen:
            tied.setdefault(seen[key], [seen[key]]).append(name)
        seen.setdefault(key, name)
        if tensor.dtype == torch.bfloat16:
            tensor = tensor.float()
            widened.append(name)
        arrays[name] = tensor.detach().cpu().numpy().copy()
    if widened:
        shown = ", ".join(widened[:3]) + (f" and {len(widened) - 3} more" if len(widened) > 3 else "")
        notes.append(f"{len(widened)} bfloat16 tensors read as float32 (exact): {shown}")
    return arrays, [tuple(names) for names in tied.values()], notes


def _first_line(exc: Exception) -> str:
    text = str(exc).replace("\x1b[1m", "").replace("\x1b[0m", "").strip()
    return f"{type(exc).__name__}: {text.splitlines()[0] if text else ''}"


def _state_dict_in(obj, path: str, notes: list[str]) -> dict:
    """The {name: tensor} dict in what ``torch.load`` returned, or a usage error saying what it is."""
    import torch

    def tensors_only(value) -> bool:
        return (
            isinstance(value, dict)
            and bool(value)
            and all(isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in value.items())
        )

    if tensors_only(obj):
        return obj
    if isinstance(obj, dict):
        for key in _NESTED:
            if tensors_only(obj.get(key)):
                notes.append(f"the state dict was read from the entry {key!r}")
                return obj[key]
        others = sorted(str(k) for k, v in obj.items() if not isinstance(v, torch.Tensor))
        raise ParityUsageError(
            f"{path}: not a state dict: the entries {others[:5]} hold no tensor "
            f"(a state dict maps names to tensors, or nests one under {list(_NESTED)})"
        )
    raise ParityUsageError(
        f"{path}: not a state dict but a {type(obj).__qualname__}; save module.state_dict(), not the module"
    )


def save_state_file(arrays: dict[str, np.ndarray], path: str) -> None:
    """Write ``arrays`` as a state dict: ``.safetensors`` through safetensors, else ``torch.save``."""
    import torch

    tensors = {name: torch.from_numpy(a if a.flags.c_contiguous else a.copy()) for name, a in arrays.items()}
    if path.endswith(".safetensors"):
        from safetensors.torch import save_file

        save_file(tensors, path)
    else:
        torch.save(tensors, path)


def state_keys(model) -> list[str]:
    """The keys of ``model.state_dict()``, in order (tied weights under each of their names)."""
    return list(model.state_dict().keys())


def load_state_into(model, path: str) -> tuple[list[str], list[str]]:
    """Load a state dict file into ``model`` (``strict=False``): its missing and unexpected keys."""
    import torch

    arrays, _, _ = load_state_file(path)
    result = model.load_state_dict({n: torch.from_numpy(a) for n, a in arrays.items()}, strict=False)
    return list(result.missing_keys), list(result.unexpected_keys)


# -- One block of a large checkpoint -----------------------------------------------------------


def checkpoint_keys(path: str) -> List[str]:
    """Every key a checkpoint holds, read without its tensors where the format allows:
    safetensors' header, or ``torch.load(mmap=True)`` for a PyTorch ``.bin``/``.pt``. A MindSpore
    ``.ckpt`` has no index to read apart: its keys are known block by block (an empty list here)."""
    if path.endswith(".safetensors"):
        from safetensors import safe_open

        try:
            with safe_open(path, framework="pt") as opened:
                return list(opened.keys())
        except Exception as exc:  # safetensors raises its own error types for a bad header
            raise ParityUsageError(f"{path}: safetensors cannot read it: {_first_line(exc)}") from None
    if path.endswith(".ckpt"):
        return []
    return list(_mapped_state(path))


def read_block(path: str, prefix: str) -> Dict[str, np.ndarray]:
    """The tensors under ``prefix`` in the checkpoint ``path``, by their names after it, as numpy
    arrays (bfloat16 widened to float32, which is exact): safetensors memory-mapped and read key by
    key, a PyTorch ``.bin``/``.pt`` through ``torch.load(mmap=True)``, a MindSpore ``.ckpt`` through
    ``load_checkpoint`` keeping only those names. Nothing else of the file is read into memory."""
    if path.endswith(".ckpt"):
        import mindspore as ms

        params = ms.load_checkpoint(path, choice_func=lambda name: name.startswith(prefix))
        return {name[len(prefix) :]: _float32(param.asnumpy()) for name, param in params.items()}
    if path.endswith(".safetensors"):
        from safetensors import safe_open

        with safe_open(path, framework="pt") as opened:
            return {k[len(prefix) :]: _torch_array(opened.get_tensor(k)) for k in opened.keys() if k.startswith(prefix)}
    state = _mapped_state(path)
    return {k[len(prefix) :]: _torch_array(t) for k, t in state.items() if k.startswith(prefix)}


def read_shards(shards: Dict[str, List[str]], prefix: str, index: str) -> Dict[str, np.ndarray]:
    """The tensors of a checkpoint sharded over several safetensors files: ``shards`` maps each
    file to the keys (all under ``prefix``) to read from it, as the index ``index`` says where each
    key is. Each file is memory-mapped and read key by key, as :func:`read_block` reads one file;
    the arrays come back by their names after ``prefix``. A file that does not hold a key its index
    maps to it, or that safetensors cannot read, is a usage error naming the file and the key."""
    from safetensors import safe_open

    found: Dict[str, np.ndarray] = {}
    for shard, keys in shards.items():
        try:
            with safe_open(shard, framework="pt") as opened:
                held = set(opened.keys())
                for key in keys:
                    if key not in held:
                        raise ParityUsageError(
                            f"{index} maps {key!r} to {shard}, which does not hold it ({len(held)} other tensors there)"
                        )
                    found[key[len(prefix) :]] = _torch_array(opened.get_tensor(key))
        except ParityUsageError:
            raise
        except Exception as exc:  # safetensors raises its own error types for a bad header
            raise ParityUsageError(
                f"{shard} (a shard of {index}): safetensors cannot read it: {_first_line(exc)}"
            ) from None
    return found


def _mapped_state(path: str) -> dict:
    import torch

    try:
        state = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
    except Exception as exc:  # unpickling and I/O errors of many types
        raise ParityUsageError(f"{path}: torch.load(weights_only=True) cannot read it: {_first_line(exc)}") from None
    return _state_dict_in(state, path, [])


def _torch_array(tensor) -> np.ndarray:
    import torch

    if tensor.dtype == torch.bfloat16:
        tensor = tensor.float()
    return tensor.detach().cpu().numpy().copy()


def _float32(array: np.ndarray) -> np.ndarray:
    return array.astype(np.float32) if array.dtype.name == "bfloat16" else array.copy()
