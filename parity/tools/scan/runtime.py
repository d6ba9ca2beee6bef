"""``parity scan --module pkg.mod:factory --input-shape 1,3,32,32``: the PyTorch APIs one
forward/backward of a real module calls, which a static scan misses (calls through variables,
``getattr``, code generated at runtime) or cannot pin down (a layer passed around as
``norm_layer``; the arguments it was built with).

One forward and one backward (of the sum of the floating outputs) run on a seeded random float32
input under a :class:`torch.overrides.TorchFunctionMode`, which sees every ``torch.*`` and
``torch.nn.functional.*`` function and every Tensor method the code calls, and a global forward
pre-hook, which sees every ``torch.nn`` layer that runs. Only calls made by the user's code count:
a function called from inside a PyTorch layer (``F.conv2d`` inside ``nn.Conv2d``) is that layer's
business, and a layer's use records its attributes (``momentum``, ``padding_mode``) so that a
known mismatch's condition is judged on the real values. Attribute reads (``x.shape``) and
dunder methods are not counted; arithmetic operators reach the mode as their Tensor methods
(``x + y`` is recorded as ``torch.Tensor.add``, ``x += y`` as ``torch.Tensor.add_``). Imports torch.
"""

from __future__ import annotations

import importlib
import os
import sys
from types import FrameType
from typing import List, Optional, Tuple

from ...errors import ParityUsageError
from .source import RUNTIME_CALL, RUNTIME_LAYER, Use

__all__ = ["capture", "parse_shape", "parse_int_input"]

_PLAIN = (bool, int, float, str, type(None), tuple)


def parse_shape(text: str) -> Tuple[int, ...]:
    try:
        shape = tuple(int(part) for part in text.split(","))
    except ValueError:
        shape = ()
    if not shape or any(n <= 0 for n in shape):
        raise ParityUsageError(
            f"parity scan: --input-shape {text!r} is not a shape; write positive sizes "
            "separated by commas, e.g. 1,3,32,32"
        )
    return shape


def parse_int_input(text: str) -> Tuple[Tuple[int, ...], int, int]:
    """``--input-int 2,16:0:128``: an int64 input of shape (2, 16) with values in [0, 128) (token ids)."""
    parts = text.split(":")
    try:
        low, high = (int(parts[1]), int(parts[2])) if len(parts) == 3 else (0, 0)
    except ValueError:
        low, high = 0, 0
    if len(parts) != 3 or high <= low:
        raise ParityUsageError(
            f"parity scan: --input-int {text!r} is not SHAPE:LOW:HIGH; write e.g. 2,16:0:128 "
            "(shape 2x16, integers from 0 up to, not including, 128)"
        )
    try:
        return parse_shape(parts[0]), low, high
    except ParityUsageError:
        raise ParityUsageError(
            f"parity scan: --input-int {text!r}: {parts[0]!r} is not a shape; write positive "
            "sizes separated by commas, e.g. 2,16:0:128"
        ) from None


def _factory(path: str):
    module_name, _, attr = path.partition(":")
    if not module_name or not attr:
        raise ParityUsageError(f"parity scan: --module {path!r}: write package.module:factory")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # as `python -m` would, so that the project's own packages import
    try:
        target = importlib.import_module(module_name)
        for part in attr.split("."):
            target = getattr(target, part)
    except Exception as exc:  # whatever importing the user's module raises (torchvision's RuntimeError...)
        raise ParityUsageError(
            f"parity scan: --module {path}: cannot import it ({type(exc).__name__}: {exc})"
        ) from None
    if not callable(target):
        raise ParityUsageError(
            f"parity scan: --module {path} is not callable; give a function or class that builds the torch.nn.Module"
        )
    return target


def capture(
    path: str, input_shape: Tuple[int, ...], *, seed: int = 0, int_range: Optional[Tuple[int, int]] = None
) -> List[Use]:
    """Build ``factory()`` from ``path`` (``package.module:factory``), run one forward/backward on a
    random input of ``input_shape`` (float32 N(0, 1), or int64 in ``[low, high)`` given ``int_range``:
    token ids) and return the uses of PyTorch APIs the user's code made."""
    import torch

    factory = _factory(path)
    torch.manual_seed(seed)
    try:
        module = factory()
    except Exception as exc:
        raise ParityUsageError(f"parity scan: --module {path}: {path}() raised {type(exc).__name__}: {exc}") from None
    if not isinstance(module, torch.nn.Module):
        raise ParityUsageError(
            f"parity scan: --module {path}() returned {type(module).__name__}, not a torch.nn.Module"
        )
    recorder = _Recorder(torch, _location(factory))
    if int_range is None:
        inputs, described = torch.randn(*input_shape), f"a float32 input of shape {tuple(input_shape)}"
    else:
        inputs = torch.randint(int_range[0], int_range[1], tuple(input_shape), dtype=torch.int64)
        described = f"an int64 input of shape {tuple(input_shape)} in [{int_range[0]}, {int_range[1]})"
    handle = torch.nn.modules.module.register_module_forward_pre_hook(recorder.layer)
    try:
        with recorder:
            _forward_backward(module, inputs, path, described)
    finally:
        handle.remove()
    return recorder.uses


def _shown(filename: str) -> str:
    """Relative to the working folder where the file lies under it, as the static scan shows paths."""
    relative = os.path.relpath(filename) if os.path.isabs(filename) else filename
    return filename if relative.startswith("..") else relative


def _location(factory) -> Tuple[str, int]:
    import inspect

    try:
        return _shown(inspect.getsourcefile(factory) or "<factory>"), inspect.getsourcelines(factory)[1]
    except (OSError, TypeError):
        return "<factory>", 0


def _forward_backward(module, inputs, path: str, described: str) -> None:
    import torch

    try:
        output = module(inputs)
        leaves = [t for t in _tensors(output) if t.requires_grad and t.is_floating_point()]
        if leaves:
            torch.stack([t.sum() for t in leaves]).sum().backward()
    except Exception as exc:
        raise ParityUsageError(
            f"parity scan: --module {path}: forward/backward on {described} raised {type(exc).__name__}: {exc}"
        ) from None


def _tensors(value):
    import torch

    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _tensors(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _tensors(item)


def _make_mode(torch):
    from torch.overrides import TorchFunctionMode

    class _Mode(TorchFunctionMode):
        def __init__(self, recorder):
            super().__init__()
            self.recorder = recorder

        def __torch_function__(self, func, types, args=(), kwargs=None):
            self.recorder.function(func, kwargs or {})
            return func(*args, **(kwargs or {}))

    return _Mode


class _Recorder:
    def __init__(self, torch, factory_location: Tuple[str, int]):
        self.torch = torch
        self.factory_location = factory_location
        self.torch_dir = os.path.dirname(torch.__file__) + os.sep
        self.uses: List[Use] = []
        self._mode = _make_mode(torch)(self)

    def __enter__(self):
        self._mode.__enter__()
        return self

    def __exit__(self, *exc):
        return self._mode.__exit__(*exc)

    def _caller(self, layer=None) -> Optional[Tuple[str, int]]:
        """(file, line) of the innermost frame outside torch and parity; None when a PyTorch layer's
        own code (a method of a torch.nn.Module other than ``layer`` and the containers) stands
        between, or for parity's own calls. A layer the root module is (or contains directly, as
        containers do) is placed at the factory."""
        containers = (self.torch.nn.Sequential, self.torch.nn.ModuleList, self.torch.nn.ModuleDict)
        frame: Optional[FrameType] = sys._getframe(1)
        while frame is not None:
            code = frame.f_code
            if code.co_filename == __file__:
                if code.co_name == _forward_backward.__name__:
                    return self.factory_location if layer is not None else None
            elif not code.co_filename.startswith(self.torch_dir):
                return _shown(code.co_filename), frame.f_lineno
            else:
                owner = frame.f_locals.get("self")
                if owner is not layer and isinstance(owner, self.torch.nn.Module) and not isinstance(owner, containers):
                    return None
            frame = frame.f_back
        return None

    def function(self, func, kwargs) -> None:
        name = _api_name(self.torch, func)
        where = self._caller() if name else None
        if name and where is not None:
            keywords = tuple((k, v) for k, v in kwargs.items() if isinstance(v, _PLAIN))
            self.uses.append(Use(name, *where, RUNTIME_CALL, (), keywords))

    def layer(self, module, _inputs) -> None:
        klass = type(module)
        if getattr(self.torch.nn, klass.__name__, None) is not klass:
            return  # the user's own Module: its calls are recorded one by one
        where = self._caller(module)
        if where is None:
            return  # a layer inside a PyTorch layer (nn.TransformerEncoder's layers)
        attributes = tuple((k, v) for k, v in vars(module).items() if not k.startswith("_") and isinstance(v, _PLAIN))
        self.uses.append(Use(f"torch.nn.{klass.__name__}", *where, RUNTIME_LAYER, (), attributes))


def _api_name(torch, func) -> Optional[str]:
    """``torch.flatten``, ``torch.nn.functional.relu``, ``torch.Tensor.view``; None for operators and
    attribute reads (``__add__``, ``x.shape``)."""
    name = getattr(func, "__name__", "")
    if not name or name.startswith("__"):
        return None
    qualname = getattr(func, "__qualname__", "") or ""
    if qualname.split(".")[0] in ("TensorBase", "Tensor") and getattr(torch.Tensor, name, None) is not None:
        return f"torch.Tensor.{name}"
    for prefix, namespace in (("torch.nn.functional", torch.nn.functional), ("torch", torch)):
        if getattr(namespace, name, None) is func:
            return f"{prefix}.{name}"
    module = getattr(func, "__module__", None) or "torch"
    return f"{module}.{name}"
