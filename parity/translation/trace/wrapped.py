"""Functions a library keeps out of ``torch.fx`` traces with ``torch.fx.wrap`` (torchvision's Swin:
``_patch_merging_pad``, ``_get_relative_position_bias``, ``shifted_window_attention``), translated
by tracing into them when they are called.

A symbolic trace of the Module records a call to such a function as one ``call_function`` node,
because its body branches on the input's shape (``if window_size[0] >= pad_H``), which a symbolic
trace cannot. :class:`WrappedCall`, the adapter the call table gives such a node, traces the
function itself when the Cell runs, with ``torch.fx``'s ``MetaTracer``: its tensor arguments as
meta tensors of the shapes and dtypes the call receives (so ``x.shape`` reads as numbers and the
branches resolve), its other arguments as constants. The graph is run node by node with the same
table of adapters, and kept per combination of shapes, dtypes and constants met. Item assignment
(``attn_mask[h0:h1, w0:w1] = count``), which ``torch.fx`` proxies refuse, is recorded as
``operator.setitem`` and runs as MindSpore's in-place item assignment.

What the function calls is known only when it runs: an untranslated call inside it is refused
then (a ``TypeError`` naming it and its file:line, which the Cell reports as ``ParityUnsupported``).
"""

from __future__ import annotations

import inspect
import operator
import os
import re
import warnings
from typing import Any, Callable, Dict, List, Optional, Tuple, cast

import mindspore as ms
import torch
import torch.fx
from torch.fx.experimental.meta_tracer import MetaProxy, MetaTracer

from .. import calls

__all__ = ["is_wrapped", "WrappedCall"]

_TORCH_DTYPES = {
    ms.float32: torch.float32,
    ms.float64: torch.float64,
    ms.float16: torch.float16,
    ms.bfloat16: torch.bfloat16,
    ms.int64: torch.int64,
    ms.int32: torch.int32,
    ms.int8: torch.int8,
    ms.uint8: torch.uint8,
    ms.bool_: torch.bool,
}


def is_wrapped(target: object) -> bool:
    """Whether ``target`` is a Python function registered with ``torch.fx.wrap``."""
    registered = getattr(torch.fx._symbolic_trace, "_wrapped_fns_to_patch", {})
    keys = registered.keys() if isinstance(registered, dict) else [(id(g), name) for g, name in registered]
    namespace, name = getattr(target, "__globals__", None), getattr(target, "__name__", None)
    return namespace is not None and (id(namespace), name) in keys and namespace.get(name) is target


class _Proxy(MetaProxy):
    """A meta proxy that records item assignment as ``operator.setitem``, and reads ``size(0)`` as
    the first size (``MetaProxy`` reads it as the whole shape)."""

    def size(self, dim=None):  # MetaProxy.size(0) reads as size(): the whole shape
        if hasattr(self, "_tensor_meta") and self._tensor_meta is not None:
            return self._tensor_meta.size() if dim is None else self._tensor_meta.size(dim)
        return super().size(dim)

    def __setitem__(self, key, value) -> None:
        self.tracer.create_proxy("call_function", operator.setitem, (self, key, value), {})


class _Tracer(MetaTracer):
    def __init__(self):
        super().__init__()
        self.record_stack_traces = True

    def proxy(self, node: torch.fx.Node) -> MetaProxy:
        return _Proxy(node, self)


def _frozen(value):
    if isinstance(value, (list, tuple)):
        return (type(value).__name__,) + tuple(_frozen(v) for v in value)
    if isinstance(value, dict):
        return ("dict",) + tuple((k, _frozen(v)) for k, v in sorted(value.items()))
    return (type(value).__name__, value if isinstance(value, (type(None), bool, int, float, str)) else repr(value))


def _holds_tensor(value) -> bool:
    if isinstance(value, (list, tuple)):
        return any(_holds_tensor(v) for v in value)
    if isinstance(value, dict):
        return any(_holds_tensor(v) for v in value.values())
    return isinstance(value, ms.Tensor)


_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
_FRAME = re.compile(r'File "([^"]+)", line (\d+), in \S+\n\s*(.*)')


def _location(node: torch.fx.Node) -> str:
    """``file:line (code)`` of the innermost recorded frame of a node's call."""
    frames = [f for f in _FRAME.findall(node.stack_trace or "") if not f[0].startswith(_TORCH_DIR)]
    if not frames:
        return "an unknown place"
    filename, line, code = frames[-1]
    return f"{filename}:{line}  ({code.strip()})"


class WrappedCall:
    """The adapter of a ``torch.fx.wrap``ped function: traced into per shapes, dtypes and constants."""

    def __init__(self, function: Callable):
        self.function = function
        self.name = f"{function.__module__}.{function.__qualname__}"
        self.signature = inspect.signature(function)
        self.programs: Dict[tuple, "_Program"] = {}

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        bound = self.signature.bind(*args, **kwargs)
        bound.apply_defaults()
        arguments = dict(bound.arguments)
        tensors = {name: v for name, v in arguments.items() if isinstance(v, ms.Tensor)}
        constants = {name: v for name, v in arguments.items() if name not in tensors}
        nested = [name for name, v in constants.items() if _holds_tensor(v)]
        if nested:
            raise TypeError(f"{self.name}: the tensors inside argument(s) {', '.join(nested)} cannot be traced into")
        key = (tuple((name, tuple(t.shape), str(t.dtype)) for name, t in tensors.items()), _frozen(constants))
        if key not in self.programs:
            self.programs[key] = self._trace(tensors, constants)
        return self.programs[key].run(arguments)

    def _trace(self, tensors: Dict[str, Any], constants: Dict[str, Any]) -> "_Program":
        for name, tensor in tensors.items():
            if tensor.dtype not in _TORCH_DTYPES:
                raise TypeError(f"{self.name}: argument {name} of dtype {tensor.dtype} cannot be traced into")
        metas = {
            name: torch.empty(tuple(t.shape), dtype=_TORCH_DTYPES[t.dtype], device="meta")
            for name, t in tensors.items()
        }
        tracer = _Tracer()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # MetaTracer warns where it computes no meta tensor
                graph = tracer.trace(self._bound(list(tensors), constants), meta_args=metas)
        except Exception as exc:  # whatever the function raises on proxies
            first = (str(exc).strip().splitlines() or [""])[0]
            raise TypeError(f"{self.name} could not be traced into: {type(exc).__name__}: {first}") from None
        return _Program(self.name, graph, tracer.root)

    def _bound(self, names: List[str], constants: Dict[str, Any]) -> Callable:
        """The function of its tensor arguments alone, the constants bound (``concrete_args`` would
        turn each element of a list argument into a placeholder and an assertion)."""
        kinds = {p.kind for p in self.signature.parameters.values()}
        if kinds & {inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD}:
            raise TypeError(
                f"{self.name}: a function with positional-only or variadic parameters cannot be traced into"
            )
        source = (
            f"def forward({', '.join(names)}):\n"  # named so: torch.fx records stacks from a forward down
            f"    return _parity_function({', '.join(f'{n}={n}' for n in names)}, **_parity_constants)\n"
        )
        namespace: Dict[str, Any] = {"_parity_function": self.function, "_parity_constants": dict(constants)}
        exec(source, namespace)  # noqa: S102  (names are the function's own parameters: identifiers)
        return namespace["forward"]


class _Program:
    """One trace of a wrapped function, its nodes resolved to adapters."""

    def __init__(self, name: str, graph: torch.fx.Graph, root: torch.nn.Module):
        self.name, self.graph = name, graph
        self.steps: List[Tuple[torch.fx.Node, Optional[Callable], bool]] = []
        missing = []
        for node in graph.nodes:
            try:
                self.steps.append(
                    (
                        node,
                        self._adapter(node, root),
                        False
                        if node.op in ("placeholder", "output", "get_attr")
                        else calls.is_inplace(node.op, node.target, node.kwargs),
                    )
                )
            except LookupError as exc:
                missing.append(f"{exc} at {_location(node)}")
        if missing:
            raise TypeError(f"{name} calls what has no MindSpore translation: {'; '.join(missing)}")

    @staticmethod
    def _adapter(node: torch.fx.Node, root: torch.nn.Module) -> Optional[Callable]:
        if node.op in ("placeholder", "output"):
            return None
        if node.op == "get_attr":  # a tensor the function made from constants: captured on the tracer's root
            value = getattr(root, cast(str, node.target))  # the attribute's name
            constant = ms.Tensor(value.detach().cpu().numpy().copy())
            return lambda: constant
        if node.op == "call_method":
            adapter = calls.method_for(cast(str, node.target))  # the method's name
        elif node.op == "call_function":
            found = calls.function_for(cast(Callable[..., Any], node.target))
            adapter = found[0] if found else None
            why = found[1](node.args, dict(node.kwargs)) if found and found[1] else None
            if why:
                raise LookupError(f"{calls.api_name(node.op, node.target)}: {why}")
        else:
            adapter = None
        if adapter is None:
            raise LookupError(calls.api_name(node.op, node.target))
        return adapter

    def run(self, arguments: Dict[str, Any]):
        env: Dict[str, Any] = {}
        value = lambda n: env[n.name]  # noqa: E731
        for node, adapter, inplace in self.steps:
            if node.op == "placeholder":
                env[node.name] = arguments[cast(str, node.target).lstrip("*")]  # the parameter's name
            elif node.op == "output":
                return torch.fx.node.map_arg(node.args[0], value)
            elif node.op == "get_attr":
                env[node.name] = adapter()  # type: ignore[misc]  # None only for placeholders and the output
            else:
                args = torch.fx.node.map_arg(node.args, value)
                kwargs = torch.fx.node.map_arg(node.kwargs, value)
                try:
                    env[node.name] = adapter(*args, **kwargs)  # type: ignore[misc]  # a call's adapter
                except (TypeError, ValueError, RuntimeError, IndexError) as exc:
                    first = (str(exc).strip().splitlines() or [""])[0]
                    raise TypeError(
                        f"inside {self.name}, {calls.api_name(node.op, node.target)} at "
                        f"{_location(node)}: {type(exc).__name__}: {first}"
                    ) from None
                if inplace and node.args and isinstance(node.args[0], torch.fx.Node):
                    env[node.args[0].name] = env[node.name]
        raise TypeError(f"the trace of {self.name} has no output")


def wrapped_adapter(target: Callable[..., Any]) -> Optional[Tuple[Callable, None]]:
    """``(adapter, None)`` for a ``torch.fx.wrap``ped function, as the call table's ``function_for`` gives."""
    if not is_wrapped(target):
        return None
    if id(target) not in _CALLS:  # one adapter per function: its traces serve every call site
        _CALLS[id(target)] = WrappedCall(target)
    return _CALLS[id(target)], None


_CALLS: Dict[int, WrappedCall] = {}


calls.FALLBACKS.append(wrapped_adapter)
