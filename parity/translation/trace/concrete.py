"""Tracing on example inputs: a ``torch.fx`` trace whose values are also computed, so that Python
control flow in ``forward`` resolves, and each decision it takes is kept as a guard.

:func:`record_calls` runs the Module once on the example inputs and keeps what every submodule was
called with. :class:`ConcreteTracer` then traces a Module with those values: every node of the graph
is also evaluated in PyTorch (a child's call runs the child), so a proxy knows its value. Where
``forward`` needs a Python value, the proxy gives it and the tracer records a :class:`Guard`:

* ``if x.shape[1] > 1:``, ``if mask.all():``, ``assert``: the truth value (``__bool__``);
* ``range(n)``, ``x.view(n, -1)`` with ``n`` an ``int``, ``tuple(shape)`` unpacking: the integer
  (``__index__``/``__int__``) or the length (``__len__``, iteration);
* ``x.dtype`` and ``x.ndim``: the value, as ``torch.finfo(x.dtype)`` needs it (``x.device`` is read
  without a guard: MindSpore places tensors by its context, and ``Tensor.to`` ignores devices).

A guard names the node whose value it fixed, the value and the line of the decision; the program
computes that node on MindSpore tensors and refuses a call where it differs (:class:`GuardFailed`),
as the branch taken would be wrong for it. A proxy also answers ``isinstance`` as its value would
(``isinstance(out, tuple)``, a ``ModelOutput``; a tensor's proxy stays a proxy, for PyTorch's
C++ would take it for a tensor); asked by the model's code, ``isinstance(x, torch.Tensor)``,
``torch.is_tensor(x)`` and ``type(x)`` of a traced tensor answer as in the eager run, each a guard;
and ``forward``'s ``*args`` and
``**kwargs`` bind each value they receive to a placeholder of its own (:func:`call_slots`).

A ``@torch.jit.script`` function held by the module of a traced class is traced as the Python it
was compiled from (:func:`_scripts_as_python`), and a ``stride``/``as_strided`` node keeps the
layout PyTorch held its tensor in (:data:`LAYOUT`), which a MindSpore tensor, contiguous, cannot tell.
"""

from __future__ import annotations

import builtins
import functools
import inspect
import keyword
import operator
import os
import sys
import traceback
import warnings
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple, TypeVar, Union

import torch
import torch.fx
from torch.fx.proxy import Attribute, Proxy

from ...errors import ParityUsageError

__all__ = ["ConcreteTracer", "Guard", "GuardFailed", "record_calls", "call_slots", "is_constant", "LAYOUT"]

_VALUE = "parity_value"
LAYOUT = "parity_layout"  # a node's meta: its tensor's layout in PyTorch, for stride and as_strided (see _layout)
_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
_HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep  # parity/translation/
_SCALARS = (type(None), bool, int, float, str)
_HOST_READS = ("device", "is_cuda", "is_mps", "is_meta", "is_sparse", "is_quantized", "layout")
_GUARDED_READS = ("dtype", "ndim")
# a lazy layer's: nothing to keep (torch.nn.parameter has it, its .pyi does not)
_UNINITIALIZED = torch.nn.parameter.UninitializedTensorMixin  # type: ignore[attr-defined]
_Decided = TypeVar("_Decided")


class GuardFailed(ParityUsageError):
    """A translated Cell called with inputs for which a decision its trace took goes the other way."""


def is_constant(value: object) -> bool:
    """A value a trace bakes in: None, a bool, a number, a string, or a tuple/list of them."""
    if isinstance(value, (tuple, list)):
        return all(is_constant(v) for v in value)
    return isinstance(value, _SCALARS)


@dataclass(frozen=True)
class Guard:
    """A decision the trace took: ``node``'s value, read as ``kind``, was ``expected`` at ``where``."""

    node: str
    kind: str  # "bool", "int", "float", "len", "isinstance", "type", or an attribute read: "dtype", "ndim"
    expected: Any
    where: str

    def actual(self, value: Any) -> Any:
        if self.kind == "bool":
            return bool(value)
        if self.kind == "int":
            return operator.index(value) if not hasattr(value, "asnumpy") else int(value)
        if self.kind == "float":
            return float(value)
        if self.kind == "len":
            return len(value)
        if self.kind in ("isinstance", "type"):  # the answer stands while the node is a tensor: it always is one
            return self.expected if _tensor_like(value) else "not a tensor"
        return value

    def check(self, value: Any) -> None:
        found = self.actual(value)
        if found != self.expected:
            raise GuardFailed(
                f"the translated Cell was traced on example inputs where {self.describe()}; this call gives "
                f"{found!r}, for which PyTorch's forward takes another path. Translate again with inputs of "
                f"this kind: parity.translate(module, inputs=...)"
            )

    def describe(self) -> str:
        read = {
            "bool": "the truth value",
            "int": "the integer",
            "float": "the number",
            "len": "the length",
            "isinstance": "isinstance (asked of the tensor)",
            "type": "type()",
        }
        what = read.get(self.kind, f".{self.kind}")
        return f"{what} of {self.node} was {self.expected!r} (at {self.where})"


def _tensor_like(value: Any) -> bool:
    """A tensor of either framework, or an array: what a traced tensor's node computes."""
    return hasattr(value, "shape") and hasattr(value, "dtype") and not isinstance(value, (int, float, bool))


def _in_user_code(depth: int) -> bool:
    """Whether the frame ``depth`` calls up is the traced model's code (not PyTorch's, not this
    package's): where a decision belongs to ``forward``."""
    path = os.path.abspath(sys._getframe(depth + 1).f_code.co_filename)
    return not path.startswith(_TORCH_DIR) and not path.startswith(_HERE)


def _layout(tensor: Any) -> Optional[Tuple[Tuple[int, ...], Tuple[int, ...], int]]:
    """``(shape, strides, storage offset)`` of a tensor PyTorch holds otherwise than contiguous from
    the start of its storage (a transposed view, a slice): what ``stride`` and ``as_strided`` answer
    by, which a translated (contiguous) tensor cannot tell. None for a contiguous one."""
    if not _isinstance(tensor, torch.Tensor) or (tensor.is_contiguous() and tensor.storage_offset() == 0):
        return None
    return tuple(tensor.shape), tuple(tensor.stride()), int(tensor.storage_offset())


def _decision_place() -> str:
    """``file:line  (code)`` of the innermost frame outside PyTorch and this package."""
    for frame in reversed(traceback.extract_stack()):
        path = os.path.abspath(frame.filename)
        if not path.startswith(_TORCH_DIR) and not path.startswith(_HERE):
            try:
                shown = os.path.relpath(frame.filename)
            except ValueError:
                shown = frame.filename
            shown = frame.filename if shown.startswith("..") else shown
            return f"{shown}:{frame.lineno}" + (f"  ({frame.line.strip()})" if frame.line else "")
    return "an unknown place"


# --- proxies that know their value -------------------------------------------------------------


class _Valued:
    """What a proxy with a value does where plain ``torch.fx`` gives up."""

    @property
    def value(self):
        return self.node.meta[_VALUE]

    @property  # type: ignore[misc]  # read-only: a proxy's class is the class of its value
    def __class__(self):  # isinstance(proxy, tuple / ModelOutput) answers as the value
        value = self.value
        # A tensor's proxy stays a proxy: PyTorch's C++ takes whatever isinstance calls a Tensor for
        # one (and crashes); transformers counts fx proxies as tensors already (is_torch_fx_proxy).
        return type(self) if isinstance(value, torch.Tensor) else type(value)

    def __getattr__(self, name: str):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        value = self.value
        if isinstance(value, torch.Tensor) and name in _HOST_READS:
            return getattr(value, name)
        if isinstance(value, torch.Tensor) and name in _GUARDED_READS:
            read = self.tracer.create_proxy("call_function", getattr, (self, name), {})
            return self.tracer.decide(read, name, getattr(value, name))
        return ValuedAttribute(self, name)  # type: ignore[arg-type]  # the mixin of Proxy classes only

    def __bool__(self) -> bool:
        return self.tracer.decide(self, "bool", bool(self.value))

    def __index__(self) -> int:
        return self.tracer.decide(self, "int", operator.index(self.value))

    def __int__(self) -> int:
        return self.tracer.decide(self, "int", int(self.value))

    def __float__(self) -> float:
        return self.tracer.decide(self, "float", float(self.value))

    def __len__(self) -> int:
        return self.tracer.decide(self, "len", len(self.value))

    def __iter__(self) -> Iterator[Any]:
        value = self.value
        if isinstance(value, dict):
            return iter(list(value))
        return iter([self[i] for i in range(len(self))])  # type: ignore[index]  # Proxy's, set at import

    def keys(self):
        return list(self.value.keys())

    def __setitem__(self, key, value) -> None:  # x[mask] = y: a node; the graph reads x after it as its result
        self.tracer.create_proxy("call_function", operator.setitem, (self, key, value), {})


class ValuedProxy(_Valued, Proxy):
    def __repr__(self) -> str:
        return f"ValuedProxy({self.node.name})"


class ValuedAttribute(_Valued, Attribute):
    @property
    def value(self) -> Any:
        return getattr(self.root.value, self.attr)


# --- the tracer --------------------------------------------------------------------------------


def _plain(value):
    """The value of a proxy, recursively through tuples, lists, dicts and slices."""
    if isinstance(type(value), type) and issubclass(type(value), Proxy):
        return value.value
    if type(value) in (tuple, list):
        return type(value)(_plain(v) for v in value)
    if type(value) is dict:
        return {k: _plain(v) for k, v in value.items()}
    if type(value) is slice:
        return slice(_plain(value.start), _plain(value.stop), _plain(value.step))
    return value


class ConcreteTracer(torch.fx.Tracer):
    """Traces ``root_fn`` (a function of the placeholders ``values`` names) with every submodule a
    leaf, evaluating each node in PyTorch as it is recorded; ``guards`` holds the decisions taken."""

    def __init__(
        self,
        root_fn: Callable,
        values: Dict[str, Any],
        calls: Optional[Dict[int, List[Tuple[tuple, dict]]]] = None,
    ):
        """``calls``: where each child's call in the trace is added (``id(child) -> [(args, kwargs)]``):
        the program calls its children as the trace did, which is not always as the module's own run
        did (transformers builds a mask under a trace where it would pass None)."""
        super().__init__()
        self.calls = calls
        self.record_stack_traces = True
        self.proxy_buffer_attributes = True
        self.root_fn, self.values = root_fn, values
        self.guards: List[Guard] = []
        self.output_class: Optional[type] = None
        self._evaluating = 0
        self._own: Optional[set] = None  # ids of the root's modules: a module not among them was made in forward

    def is_leaf_module(self, module: torch.nn.Module, qualname: str) -> bool:
        return True

    def trace(
        self, root: Union[torch.nn.Module, Callable[..., Any]], concrete_args: Optional[Dict[str, Any]] = None
    ) -> torch.fx.Graph:
        model = _model_modules(root)
        with _stand_ins(), _answering_type(model), _scripts_as_python(model), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the Module's own warnings were the example run's to give
            return super().trace(root, concrete_args)

    def create_args_for_root(
        self,
        root_fn: Callable[..., Any],
        is_module: bool,
        concrete_args: Union[Dict[str, Any], Tuple[Any, ...], None] = None,
    ) -> Tuple[Any, List[Any]]:
        traced, args = super().create_args_for_root(self.root_fn, is_module, concrete_args)

        def recorded(*inputs):  # the graph keeps a dict's subclass (a ModelOutput) as a plain dict
            result = traced(*inputs)
            self.output_class = type(result)
            return result

        return recorded, args

    def proxy(self, node: torch.fx.Node) -> ValuedProxy:
        return ValuedProxy(node, self)

    def create_arg(self, a: Any) -> torch.fx.node.Argument:
        if issubclass(type(a), Proxy):
            return a.node
        return super().create_arg(a)

    def getattr(self, attr: str, attr_val: Any, parameter_proxy_cache: Dict[str, Proxy]) -> Any:
        if self._evaluating:  # a child computing its value reads its own weights
            return attr_val
        return super().getattr(attr, attr_val, parameter_proxy_cache)

    def call_module(
        self, m: torch.nn.Module, forward: Callable[..., Any], args: Tuple[Any, ...], kwargs: Dict[str, Any]
    ) -> Any:
        if self._evaluating:  # a child's own children, run for the value
            return forward(*args, **kwargs)
        if self._own is None:
            self._own = {id(sub) for sub in self.root.modules()}
        if id(m) not in self._own:  # made in forward: nn.Softmax(dim=-1)(x)
            if any(True for _ in m.parameters()) or any(True for _ in m.buffers()):
                raise ParityUsageError(
                    f"forward builds a {type(m).__qualname__} with weights at {_decision_place()}: made anew on "
                    "every call, its weights are no part of the model, and nothing could copy them; build it "
                    "in __init__"
                )
            return forward(*args, **kwargs)  # no weights: its forward is traced as the caller's own code
        return super().call_module(m, forward, args, kwargs)

    def create_proxy(
        self,
        kind: str,
        target: torch.fx.node.Target,
        args: Tuple[Any, ...],
        kwargs: Dict[str, Any],
        name: Optional[str] = None,
        type_expr: Optional[Any] = None,
        proxy_factory_fn: Optional[Callable[[torch.fx.Node], Proxy]] = None,
    ) -> Any:  # the proxy; a child's tuple or list output: one of proxies, as unpacking reads it
        proxy = super().create_proxy(kind, target, args, kwargs, name, type_expr, proxy_factory_fn)
        if kind == "output":
            return proxy
        value = proxy.node.meta[_VALUE] = self._evaluate(kind, target, args, kwargs)
        if (kind, target) in (
            ("call_method", "stride"),
            ("call_method", "as_strided"),
            ("call_function", torch.as_strided),
        ):
            proxy.node.meta[LAYOUT] = _layout(_plain(args[0]))
        if kind == "call_module" and type(value) in (tuple, list):  # type(out) is tuple holds, as unpacking does
            return type(value)(proxy[i] for i in range(len(value)))  # type: ignore[index]  # Proxy's, set at import
        return proxy

    def decide(self, proxy: Proxy, kind: str, value: _Decided) -> _Decided:
        self.guards.append(Guard(proxy.node.name, kind, value, _decision_place()))
        return value

    @contextmanager
    def _running(self):
        self._evaluating += 1
        try:
            with torch.no_grad():
                yield
        finally:
            self._evaluating -= 1

    def _evaluate(self, kind, target, args, kwargs):
        if kind == "placeholder":
            return self.values[target]
        args, kwargs = _plain(args), _plain(kwargs)
        with self._running():
            if kind == "get_attr":
                found = self.root
                for part in target.split("."):
                    found = getattr(found, part)
                return found
            if kind == "call_module":
                child = self.root.get_submodule(target)
                if self.calls is not None:
                    self.calls.setdefault(id(child), []).append((_copied(args), _copied(kwargs)))
                return child(*args, **kwargs)
            if kind == "call_method":
                return getattr(args[0], target)(*args[1:], **kwargs)
            return target(*args, **kwargs)


# --- what a trace cannot enter, and its stand-ins ---------------------------------------------


def _broadcast_bhqkv(mask_function: Callable, bh_indices: bool = True) -> Callable:
    """transformers' ``masking_utils._vmap_for_bhqkv`` by broadcasting: its mask functions compare and
    index by the batch, head, query and key positions elementwise, so calling them once on the
    positions laid along four axes gives what the nested ``torch.vmap`` gives, which a trace cannot
    enter."""

    def mask(batch_idx, head_idx, q_idx, kv_idx):
        if not bh_indices:
            return mask_function(None, None, q_idx[:, None], kv_idx[None, :]).expand(q_idx.shape[0], kv_idx.shape[0])
        found = mask_function(
            batch_idx[:, None, None, None],
            head_idx[None, :, None, None],
            q_idx[None, None, :, None],
            kv_idx[None, None, None, :],
        )
        return found.expand(batch_idx.shape[0], head_idx.shape[0], q_idx.shape[0], kv_idx.shape[0])

    return mask


_STAND_INS = {("transformers.masking_utils", "_vmap_for_bhqkv"): _broadcast_bhqkv}
# PyTorch's factories that take sizes as varargs: their C++ parser takes a proxy for a size for the
# whole size (and raises) before PyTorch's dispatch to the proxy could record the call; and
# torch.tensor, whose data (DeBERTa's torch.tensor(q.size(-1))) is read as a sequence, never dispatched
_FACTORIES = ("ones", "zeros", "empty", "full", "rand", "randn", "randint", "tensor")


def _recording(factory: Callable) -> Callable:
    """``factory`` that records itself as a node when a size (or another argument) is traced."""

    @functools.wraps(factory)
    def call(*args, **kwargs):
        found = _first_proxy((args, kwargs))
        if found is None:
            return factory(*args, **kwargs)
        return found.tracer.create_proxy("call_function", factory, args, kwargs)

    return call


def _first_proxy(value):
    if issubclass(type(value), Proxy):
        return value
    items = value.values() if type(value) is dict else value if type(value) in (tuple, list) else ()
    for item in items:
        found = _first_proxy(item)
        if found is not None:
            return found
    return None


def _refusing_vmap(vmap: Callable) -> Callable:
    def refusing(func, *args, **kwargs):
        mapped = vmap(func, *args, **kwargs)

        def call(*inputs, **named):
            if any(issubclass(type(v), Proxy) for v in list(inputs) + list(named.values())):
                raise RuntimeError("torch.vmap cannot be traced (it needs real tensors)")
            return mapped(*inputs, **named)

        return call

    return refusing


@contextmanager
def _stand_ins():
    """During a trace: the stand-ins of :data:`_STAND_INS` where their module is loaded, and
    ``torch.vmap`` refusing traced values (it would crash the interpreter), and ``isinstance`` and
    ``torch.is_tensor`` answering the model's code about a traced tensor as the eager run would."""
    patched: List[Tuple[Any, str, Any]] = [(torch, "vmap", _refusing_vmap(torch.vmap))]
    patched += [(builtins, "isinstance", _answering_isinstance)]
    patched += [(torch, "is_tensor", _answering_is_tensor)]
    patched += [(torch, name, _recording(getattr(torch, name))) for name in _FACTORIES]
    for (module, name), stand_in in _STAND_INS.items():
        if module in sys.modules and hasattr(sys.modules[module], name):
            patched.append((sys.modules[module], name, stand_in))
    saved = [(owner, name, getattr(owner, name)) for owner, name, _ in patched]
    try:
        for owner, name, value in patched:
            setattr(owner, name, value)
        yield
    finally:
        for owner, name, value in saved:
            setattr(owner, name, value)


@contextmanager
def _scripts_as_python(model: List[Any]) -> Iterator[None]:
    """During a trace: each ``@torch.jit.script`` function held by one of ``model``'s modules
    (:func:`_model_modules`; DeBERTa's ``scaled_size_sqrt``, ``build_rpos``) replaced by the Python
    function it was compiled from, so that its body is traced as ``forward``'s own code:
    TorchScript's compiled function takes no traced value (its arguments are checked in C++)."""
    saved = []
    for namespace in model:
        for name, value in list(vars(namespace).items()):
            python = getattr(value, "_torchdynamo_inline", None)  # the function a ScriptFunction compiled
            if _isinstance(value, torch.jit.ScriptFunction) and callable(python):
                saved.append((namespace, name, value))
                setattr(namespace, name, python)
    try:
        yield
    finally:
        for namespace, name, value in saved:
            setattr(namespace, name, value)


_isinstance = isinstance  # the builtin, for this module's own questions and everyone else's
_PROXIES = (ValuedProxy, ValuedAttribute)


def _answering_isinstance(obj: Any, classes: Any) -> bool:
    """``isinstance`` during a trace: asked by the model's code of a traced tensor, it answers as
    PyTorch's eager run did (``isinstance(mask, torch.Tensor)`` is True) and the answer is a guard
    at its line; a proxy stays a proxy to PyTorch's and this package's code, as before."""
    if type(obj) not in _PROXIES or not _in_user_code(1):
        return _isinstance(obj, classes)
    value = obj.value
    if not _isinstance(value, torch.Tensor):
        return _isinstance(obj, classes)  # a proxy of a tuple, a ModelOutput...: its __class__ answers
    return obj.tracer.decide(obj, "isinstance", _isinstance(value, classes))


_type = type  # the builtin


class _TypeQuestion(type):
    """The metaclass of :class:`_AnsweringType`: calling it is calling ``type``; asked whether
    something is an instance or subclass of it, it answers for ``type``."""

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        if len(args) == 1 and not kwargs and _type(args[0]) in _PROXIES and _in_user_code(1):
            obj = args[0]
            if _isinstance(obj.value, torch.Tensor):
                return obj.tracer.decide(obj, "type", _type(obj.value))
            return _type(obj.value)  # a tuple, a ModelOutput: their structure is the trace's, as isinstance's
        return _type(*args, **kwargs)

    def __instancecheck__(cls, obj: Any) -> bool:
        return _isinstance(obj, _type)

    def __subclasscheck__(cls, sub: Any) -> bool:
        return issubclass(sub, _type)


class _AnsweringType(metaclass=_TypeQuestion):
    """``type`` during a trace, in the modules that define the model's classes: ``type(x)`` of a
    traced tensor is the class PyTorch's eager run saw (``type(mask) is torch.Tensor`` holds), a
    guard at its line; of a traced tuple or ``ModelOutput``, its class (DistilBERT's ``type(out) is
    not tuple``); any other call is ``type``'s. Without it, ``type(x)`` of a proxy is the proxy's
    class, and the branch PyTorch did not take would be traced without a word. (``builtins.type``
    itself stays: a module imported during the trace may define a metaclass on it.)"""


_NOT_MODEL = ("torch", "builtins")


def _model_modules(root: Any) -> List[Any]:
    """The Python modules defining the classes of ``root``'s Modules and their bases outside
    PyTorch: where the model's own code is."""
    names: set[str] = set()
    if _isinstance(root, torch.nn.Module):
        for sub in root.modules():
            names.update(c.__module__ for c in _type(sub).__mro__ if c.__module__.partition(".")[0] not in _NOT_MODEL)
    return [sys.modules[n] for n in sorted(names) if n in sys.modules]


@contextmanager
def _answering_type(model: List[Any]) -> Iterator[None]:
    """:class:`_AnsweringType` as ``type`` in ``model``'s modules (:func:`_model_modules`), where
    the module has no ``type`` of its own."""
    shadowed = [vars(m) for m in model if m.__name__ != __name__ and "type" not in vars(m)]
    for space in shadowed:
        space["type"] = _AnsweringType
    try:
        yield
    finally:
        for space in shadowed:
            if space.get("type") is _AnsweringType:
                del space["type"]


def _answering_is_tensor(obj: Any) -> bool:
    """``torch.is_tensor`` during a trace: as :func:`_answering_isinstance` answers for
    ``torch.Tensor`` (its own ``isinstance`` runs in PyTorch's code)."""
    if type(obj) in _PROXIES and _in_user_code(1) and _isinstance(obj.value, torch.Tensor):
        return obj.tracer.decide(obj, "isinstance", True)
    return _isinstance(obj, torch.Tensor)


# --- the calls: what each submodule was given ------------------------------------------------


def _copied(value):
    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    if type(value) in (tuple, list):
        return type(value)(_copied(v) for v in value)
    if type(value) is dict:
        return {k: _copied(v) for k, v in value.items()}
    return value


def record_calls(module: torch.nn.Module, args: tuple, kwargs: dict) -> Dict[int, List[Tuple[tuple, dict]]]:
    """Runs ``module(*args, **kwargs)`` once (no gradients, PyTorch's random state and the Module's
    parameters and buffers left as they were) and returns, per submodule (by ``id``), the arguments
    of each of its calls. Raises what ``forward`` raises: the example inputs do not fit the Module."""
    calls: Dict[int, List[Tuple[tuple, dict]]] = {}

    def keep(sub, sub_args, sub_kwargs):
        calls.setdefault(id(sub), []).append((_copied(sub_args), _copied(sub_kwargs)))

    handles = [sub.register_forward_pre_hook(keep, with_kwargs=True) for sub in module.modules()]
    try:
        with kept_state(module), torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the Module warns when it runs for real, not when translated
            module(*args, **kwargs)
    finally:
        for handle in handles:
            handle.remove()
    return calls


@contextmanager
def kept_state(module: torch.nn.Module) -> Iterator[None]:
    """PyTorch's random state and the Module's parameters and buffers, restored afterwards (a child
    run for its value in train mode updates BatchNorm's statistics and draws dropout masks)."""
    saved = {
        name: tensor.detach().clone()
        for name, tensor in module.state_dict(keep_vars=True).items()
        if isinstance(tensor, torch.Tensor) and not isinstance(tensor, _UNINITIALIZED)
    }
    with torch.random.fork_rng(devices=[]):
        try:
            yield
        finally:
            with torch.no_grad():
                for name, tensor in module.state_dict(keep_vars=True).items():
                    if name in saved and not torch.equal(tensor, saved[name]):  # else autograd's versions stay
                        tensor.copy_(saved[name])


# --- a call, as placeholders and constants ----------------------------------------------------


def call_slots(
    signature: inspect.Signature, args: tuple, kwargs: dict
) -> Tuple[tuple, List[Tuple[str, Any]], Dict[str, Any]]:
    """``(key, slots, constants)`` of a call of ``forward`` (``signature`` without ``self``): ``slots`` is
    ``[(name, value)]``, a placeholder per value that is not a constant (a ``*args`` item or a
    ``**kwargs`` entry gets one of its own); ``key`` is the call's shape with its constants, one
    program per key. Raises TypeError where the call does not bind."""
    bound = signature.bind(*args, **kwargs)
    bound.apply_defaults()
    key: List[tuple] = []
    slots: List[Tuple[str, Any]] = []
    constants: Dict[str, Any] = {}
    for name, value in bound.arguments.items():
        kind = signature.parameters[name].kind
        if kind is inspect.Parameter.VAR_POSITIONAL:
            entries = [(f"{name}_{i}", v) for i, v in enumerate(value)]
        elif kind is inspect.Parameter.VAR_KEYWORD:
            entries = sorted(value.items())
        else:
            entries = [(name, value)]
        for slot, item in entries:
            if is_constant(item):
                key.append((name, slot, "=", _key(item)))
                constants[slot] = item
            else:
                key.append((name, slot))
                slots.append((slot, item))
    return tuple(key), slots, constants


def _key(value):
    return tuple(_key(v) for v in value) if isinstance(value, (tuple, list)) else (type(value).__name__, value)


def root_function(
    forward: Callable, signature: inspect.Signature, key: tuple, constants: Dict[str, Any]
) -> Tuple[Callable[..., Any], List[str]]:
    """A function of ``self`` and the key's placeholders that calls ``forward`` with the call the key
    describes (its ``constants`` baked in), for the tracer to trace, and the placeholders' names."""
    slots = [entry[1] for entry in key if len(entry) == 2]
    names = [
        slot if slot.isidentifier() and not keyword.iskeyword(slot) and slot != "self" else f"arg{i}"
        for i, slot in enumerate(slots)
    ]
    if len(set(names)) != len(names):
        names = [f"arg{i}" for i in range(len(names))]
    params = signature.parameters

    def call(self, values):
        given = dict(zip(slots, values)) | constants
        positional, named = [], {}
        for name, param in params.items():
            if param.kind is param.VAR_POSITIONAL:
                count = sum(1 for entry in key if entry[0] == name)
                positional += [given[f"{name}_{i}"] for i in range(count)]
            elif param.kind is param.VAR_KEYWORD:
                named.update({entry[1]: given[entry[1]] for entry in key if entry[0] == name})
            elif param.kind is param.POSITIONAL_ONLY or (
                param.kind is param.POSITIONAL_OR_KEYWORD and any(p.kind is p.VAR_POSITIONAL for p in params.values())
            ):
                positional.append(given[name])
            else:
                named[name] = given[name]
        return forward(self, *positional, **named)

    listed = "".join(name + ", " for name in names)
    source = f"def forward(self, {listed}):\n    return _parity_call(self, ({listed}))\n"
    namespace = {"_parity_call": call}
    exec(source, namespace)  # noqa: S102  (names checked to be identifiers; no value is formatted in)
    return namespace["forward"], names
