"""Custom Modules translated from what their ``forward`` executes: a ``torch.fx`` symbolic trace of
the Module, every submodule kept as a leaf, run node by node on MindSpore tensors.

:func:`graph_cell` traces the Module (``torch.fx.Tracer`` with every submodule a leaf, so the graph
holds the Module's own code: its functional calls, Tensor methods and operators, and calls to its
children) and builds a :class:`GraphForward` Cell: the Module's children translated as usual, its
parameters and buffers under the same names (so weights pair by name), and a ``construct`` that
runs the graph's nodes in order:

* ``placeholder``: the call's arguments, bound to ``forward``'s signature;
* ``get_attr``: a parameter or buffer of the Cell (or a constant tensor the trace captured);
* ``call_module``: the translated child at that attribute path;
* ``call_function`` / ``call_method``: the MindSpore adapter from the call table (:mod:`parity.translation.calls`);
* ``output``: the result, with the structure ``forward`` returns.

Only code that runs is translated: a helper method nobody calls, or a branch not taken, is never
seen. What a trace bakes in is traced again when it changes: ``self.training`` (one program per
mode, built when the Cell runs in that mode) and ``forward``'s non-tensor arguments (``mask=None``,
``need_weights=False``: each combination met gets its own program). A call without a MindSpore
adapter is refused with its name and the file:line of the call in the Module's source.

Translated with example inputs, a Module is traced on the values each of its calls received
(:class:`.concrete.ConcreteTracer`), one program per mode and kind of call (which arguments are
tensors, the constants); the decisions that trace took are guards, checked as the program runs. A
call unlike every example call goes the symbolic way below.

A ``forward(..., **kwargs)`` is traced with what ``**kwargs`` receives baked in, as constant
arguments are (constants only: a tensor passed through ``**kwargs`` is refused when the Cell runs).
A Module that cannot be traced (Python control flow on tensor values, ``*args``) raises
:class:`TraceFailed`, which says where; :mod:`parity.translation.modules` then falls back to running
``forward`` itself on MindSpore tensors. Made for PYNATIVE mode: both Cells carry ``parity_pynative_only``
(why), and :func:`parity.check` and :func:`parity.check_training` refuse GRAPH mode up front for a
Cell that holds one.
"""

from __future__ import annotations

import contextlib
import inspect
import os
import re
import traceback
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, cast

import mindspore as ms
import torch
import torch.fx
from mindspore import nn

from ...errors import ParityUnsupported
from .. import calls
from ..layers.table import Context, torch_name
from .concrete import LAYOUT, ConcreteTracer, call_slots, is_constant, kept_state, root_function

__all__ = ["graph_cell", "GraphForward", "Program", "TraceFailed"]

_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
# parity/translation/: the tracer's own frames (and the call table's) are never the call
_HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


class TraceFailed(Exception):
    """``torch.fx`` could not trace the Module's forward; the message says why and where."""


class _Tracer(torch.fx.Tracer):
    """Every submodule is a leaf: the graph holds only the traced Module's own code."""

    def __init__(self, extra: Optional[Dict[str, Any]] = None):
        super().__init__()
        self.record_stack_traces = True
        self.proxy_buffer_attributes = True  # self.pe[:n] with n traced: the buffer must be a node too
        self.extra = extra

    def is_leaf_module(self, module, qualname) -> bool:
        return True

    def create_args_for_root(self, root_fn, is_module, concrete_args=None):
        if self.extra is not None:  # forward(..., **kwargs): trace it with what **kwargs receives bound
            root_fn = _bind_var_keyword(root_fn, self.extra)
        traced, args = super().create_args_for_root(root_fn, is_module, concrete_args)

        def recorded(*inputs):  # the graph keeps a dict's subclass (a ModelOutput) as a plain dict
            result = traced(*inputs)
            self.output_class = type(result)
            return result

        return recorded, args


def _bind_var_keyword(forward: Callable, extra: Dict[str, Any]) -> Callable:
    """``forward`` with its ``**kwargs`` bound to ``extra``: a function of its named parameters alone,
    for torch.fx cannot patch a decorated ``forward`` (``def wrapper(*args, **kwargs)``) that takes
    ``**kwargs``. The decorators still run: the function calls ``forward`` itself."""
    params = [p for p in inspect.signature(forward).parameters.values() if p.kind is not p.VAR_KEYWORD]
    names = [p.name for p in params]
    if any(not name.isidentifier() or name.startswith("_parity") for name in names):
        raise TraceFailed(f"forward's parameters {names} cannot be bound")
    shown = [name if p.default is p.empty else f"{name}=_parity_defaults[{name!r}]" for name, p in zip(names, params)]
    keyword_only = [i for i, p in enumerate(params) if p.kind is p.KEYWORD_ONLY]
    if keyword_only:
        shown.insert(keyword_only[0], "*")
    passed = [names[0]] + [f"{name}={name}" for name in names[1:]]  # self, then the rest by name
    source = f"def forward({', '.join(shown)}):\n    return _parity_forward({', '.join(passed)}, **_parity_extra)\n"
    namespace: Dict[str, Any] = {
        "_parity_forward": forward,
        "_parity_extra": dict(extra),
        "_parity_defaults": {p.name: p.default for p in params},
    }
    exec(source, namespace)  # noqa: S102  (identifiers checked above; no value is formatted into the code)
    return namespace["forward"]


# --- where a call is ------------------------------------------------------------------------

_FRAME = re.compile(r'File "([^"]+)", line (\d+), in (\S+)\n\s*(.*)')


def _user_frame(frames: Sequence[Tuple[str, Optional[int], str]]) -> str:
    """``file:line`` of the innermost frame outside PyTorch's own package and this one, with its code."""
    for filename, line, code in reversed(frames):
        if not os.path.abspath(filename).startswith((_TORCH_DIR, _HERE)):
            return f"{_shown(filename)}:{line}" + (f"  ({code.strip()})" if code else "")
    return "an unknown place"


def _shown(filename: str) -> str:
    try:
        relative = os.path.relpath(filename)
    except ValueError:
        return filename
    return filename if relative.startswith("..") else relative


def node_location(node: torch.fx.Node) -> str:
    """Where the call a node records was written, from the stack the trace recorded."""
    frames = [(m.group(1), int(m.group(2)), m.group(4)) for m in _FRAME.finditer(node.stack_trace or "")]
    return _user_frame(frames)


def _exception_location(exc: BaseException) -> str:
    return _user_frame([(f.filename, f.lineno, f.line or "") for f in traceback.extract_tb(exc.__traceback__)])


# --- tracing ----------------------------------------------------------------------------------


def _key(value):
    return tuple(_key(v) for v in value) if isinstance(value, (tuple, list)) else (type(value).__name__, value)


def _signature(module) -> inspect.Signature:
    signature = inspect.signature(type(module).forward)
    return signature.replace(parameters=list(signature.parameters.values())[1:])  # self


def _refuse_var_positional(signature: inspect.Signature, ctx: Optional[Context] = None) -> None:
    """A symbolic trace cannot bind ``*args`` (a trace on example inputs binds each item)."""
    if any(p.kind is p.VAR_POSITIONAL for p in signature.parameters.values()):
        why = "forward takes *args, which a trace without example inputs cannot bind"
        raise ctx.unsupported(why + " (translate(module, inputs=...) binds them)") if ctx else TraceFailed(why)


def _var_keyword(signature: inspect.Signature):
    """The name of ``forward``'s ``**kwargs``, or None."""
    return next((p.name for p in signature.parameters.values() if p.kind is p.VAR_KEYWORD), None)


def _trace(
    module,
    training: bool,
    concrete: Dict[str, Any],
    extra: Optional[Dict[str, Any]] = None,
    tracer: Optional[torch.fx.Tracer] = None,
) -> torch.fx.Graph:
    """``extra``: what ``forward``'s ``**kwargs`` receives (constants only), where it has one.
    ``tracer``: a :class:`ConcreteTracer` on example values, instead of a symbolic trace."""
    modes, before = [(m, m.training) for m in module.modules()], set(vars(module))
    module.train(training)
    tracer = tracer or _Tracer(extra)
    try:
        with kept_state(module) if isinstance(tracer, ConcreteTracer) else contextlib.nullcontext():
            graph = tracer.trace(module, concrete_args=dict(concrete) or None)
    except Exception as exc:  # anything the user's forward raises on proxies
        raise TraceFailed(
            f"torch.fx cannot trace forward: {type(exc).__name__}: {_first_line(exc)} (at {_exception_location(exc)})"
        ) from None
    finally:
        for sub, mode in modes:
            sub.training = mode
        # torch.fx keeps the tensors forward made as constants on the Module (_tensor_constant0):
        # they move to the graph, and the user's Module is left as it was
        made = {name: vars(module).pop(name) for name in set(vars(module)) - before}
    # parity's own attributes on the Graph, which Program reads
    graph.parity_constants = made  # type: ignore[attr-defined]
    graph.parity_output_class = getattr(tracer, "output_class", None)  # type: ignore[attr-defined]
    graph.parity_guards = list(getattr(tracer, "guards", ()))  # type: ignore[attr-defined]
    return graph


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else ""


# --- programs: a traced graph ready to run --------------------------------------------------


@dataclass
class _Step:
    node: torch.fx.Node
    run: Optional[Callable]  # the adapter or child Cell of a call, the reader of a get_attr; None otherwise
    inplace: bool = False
    where: str = ""


class Program:
    """One traced graph, its nodes resolved against the Cell once, run on MindSpore tensors."""

    def __init__(self, graph: torch.fx.Graph, cell: "GraphForward", module, ctx: Context):
        self.graph = graph
        self.guards: Dict[str, list] = {}
        for guard in getattr(graph, "parity_guards", ()):
            self.guards.setdefault(guard.node, []).append(guard)
        self.steps: List[_Step] = []
        problems = []
        for node in graph.nodes:
            try:
                self.steps.append(self._step(node, cell, module))
            except _Untranslatable as exc:
                problems.append(f"{exc} at {node_location(node)}")
        if problems:
            raise ctx.unsupported("forward calls what has no MindSpore translation:\n  " + "\n  ".join(problems))

    def _step(self, node, cell, module) -> _Step:
        if node.op in ("placeholder", "output"):
            return _Step(node, None)
        if node.op == "get_attr":
            if node.target in self.graph.parity_constants:  # type: ignore[attr-defined]  # set by _trace
                constant = _ms_constant(self.graph.parity_constants[node.target])  # type: ignore[attr-defined]
                return _Step(node, lambda: constant)
            return _Step(node, _attribute(node.target, cell, module))
        if node.op == "call_module":
            child = cell.cell_at(node.target)
            inplace = bool(getattr(module.get_submodule(node.target), "inplace", False))
            return _Step(node, child, inplace)
        name = calls.api_name(node.op, node.target)
        if node.op == "call_method" and _python_value(node.args[0]):  # a dict's .get, a ModelOutput's .to_tuple
            return _Step(node, _python_method(node.target), False, f"{name} at {node_location(node)}")
        if node.op == "call_method":
            adapter = calls.method_for(node.target)
            if adapter is None:
                raise _Untranslatable(name)
        else:
            found = calls.function_for(node.target)
            if found is None:
                raise _Untranslatable(name)
            adapter, validate = found
            why = validate(*_constants(node)) if validate else None
            if why:
                raise _Untranslatable(f"{name}: {why}")
        if name in ("Tensor.stride", "Tensor.as_strided", "torch.as_strided") and "parity_value" not in node.meta:
            raise _Untranslatable(f"{name}: its tensor's layout in PyTorch is known from example inputs only")
        if node.meta.get(LAYOUT):  # stride/as_strided of a tensor PyTorch holds as a strided view
            adapter = _with_layout(adapter, node.meta[LAYOUT])
        inplace = calls.is_inplace(node.op, node.target, node.kwargs)
        return _Step(node, adapter, inplace, f"{name} at {node_location(node)}")

    def run(self, cell, bound: List[Any]):
        env: Dict[str, Any] = {}
        value = lambda n: env[n.name]  # noqa: E731
        places = iter(bound)
        for step in self.steps:
            node = step.node
            if node.op == "placeholder":
                env[node.name] = next(places)
            elif node.op == "output":
                found = torch.fx.node.map_aggregate(torch.fx.node.map_arg(node.args[0], value), calls.as_tensor)
                return _structured(self.graph.parity_output_class, found)  # type: ignore[attr-defined]  # set by _trace
            elif node.op == "get_attr":
                env[node.name] = step.run()  # type: ignore[misc]  # None only for placeholders and the output
            else:
                args = torch.fx.node.map_arg(node.args, value)
                kwargs = torch.fx.node.map_arg(node.kwargs, value)
                env[node.name] = step.run(*args, **kwargs) if node.op == "call_module" else _call(step, args, kwargs)  # type: ignore[misc]  # a child Cell
                if step.inplace and node.args and isinstance(node.args[0], torch.fx.Node):
                    env[node.args[0].name] = env[node.name]  # later reads see the "modified" tensor
                    _write_back(cell, node.args[0], env[node.name])
            for guard in self.guards.get(node.name, ()):
                guard.check(env[node.name])
        raise ParityUnsupported("the traced graph has no output")


def _with_layout(adapter: Callable, layout) -> Callable:
    return lambda *args, **kwargs: adapter(*args, **kwargs, pytorch_layout=layout)


def _write_back(cell, source: torch.fx.Node, value) -> None:
    """An in-place call on a buffer (timm's ``self.num_batches_tracked.add_(1)``) updates the Cell's
    Parameter too, as PyTorch updates the buffer."""
    if source.op != "get_attr" or not isinstance(value, ms.Tensor):
        return
    owner_path, _, leaf = cast(str, source.target).rpartition(".")  # a get_attr's target: the attribute's path
    held = getattr(cell.cell_at(owner_path) if owner_path else cell, leaf, None)
    if isinstance(held, ms.Parameter) and not held.requires_grad and tuple(held.shape) == tuple(value.shape):
        ms.ops.assign(held, value.astype(held.dtype))


def _structured(output_class, result):
    """``result`` in the class of what ``forward`` returned, where that was a dict's subclass
    (Hugging Face's ``ModelOutput``: its caller reads ``outputs.last_hidden_state``), which the
    graph holds as a plain dict."""
    if (
        isinstance(output_class, type)
        and issubclass(output_class, dict)
        and output_class is not dict
        and isinstance(result, dict)
    ):
        try:
            return output_class(**result)
        except TypeError:
            return result
    return result


class _Untranslatable(Exception):
    pass


def _python_value(arg) -> bool:
    """Whether a traced node held a Python object (not a tensor) when traced on example inputs."""
    meta = getattr(arg, "meta", {})
    return "parity_value" in meta and not isinstance(meta["parity_value"], torch.Tensor)


def _python_method(name: str) -> Callable:
    return lambda receiver, *args, **kwargs: getattr(receiver, name)(*args, **kwargs)


def _constants(node) -> Tuple[tuple, dict]:
    return node.args, dict(node.kwargs)


def _call(step: _Step, args, kwargs):
    try:
        return step.run(*args, **kwargs)  # type: ignore[misc]  # a call's step has its adapter
    except AssertionError:
        raise
    except (TypeError, ValueError, RuntimeError, IndexError) as exc:
        raise ParityUnsupported(
            f"MindSpore could not run {step.where}: {type(exc).__name__}: {_first_line(exc)}"
        ) from None


def _attribute(target: str, cell, module) -> Callable[[], Any]:
    """Reads a parameter, buffer or captured tensor at run time (weights copied later are seen)."""
    owner_path, _, leaf = target.rpartition(".")
    owner = cell.cell_at(owner_path) if owner_path else cell
    if isinstance(getattr(owner, leaf, None), ms.Tensor):  # a Parameter is a Tensor too
        return lambda: getattr(owner, leaf)
    value = _torch_attribute(module, target)
    held = dict(module.named_parameters()) | dict(module.named_buffers())
    if isinstance(value, torch.Tensor) and target not in held:  # a plain tensor attribute: a constant
        constant = _ms_constant(value)
        return lambda: constant
    renamed = _renamed(owner, leaf, value)
    if renamed:  # a child layer's weight under MindSpore's name (embedding.weight: embedding_table)
        return lambda: getattr(owner, renamed)
    raise _Untranslatable(f"reading {target} (the translated {type(owner).__name__} has no attribute {leaf!r})")


_RENAMES = {
    "weight": ("gamma", "embedding_table"),
    "bias": ("beta",),
    "running_mean": ("moving_mean",),
    "running_var": ("moving_variance",),
}


def _renamed(owner, leaf: str, value) -> str:
    """The name of the translated layer's own Parameter that stands for PyTorch's ``leaf``: MindSpore's
    name for it where the layer holds one, else its one Parameter of that shape; "" where none."""
    if not isinstance(value, torch.Tensor):
        return ""
    own = {name: p for name, p in owner.parameters_and_names(expand=False)}
    for name in _RENAMES.get(leaf, ()):
        if name in own and tuple(own[name].shape) == tuple(value.shape):
            return name
    same = [name for name, p in own.items() if tuple(p.shape) == tuple(value.shape)]
    return same[0] if len(same) == 1 else ""


def _ms_constant(value: torch.Tensor):
    return ms.Tensor(value.detach().cpu().numpy().copy())


def _torch_attribute(module, target: str):
    value = module
    for part in target.split("."):
        value = getattr(value, part, None)
    return value


# --- the Cell ---------------------------------------------------------------------------------


class GraphForward(nn.Cell):
    """A custom PyTorch Module, translated from its traced ``forward``: the same children, parameters
    and buffers under the same names, and a ``construct`` that runs the traced graph on them.
    PYNATIVE mode only (``parity_pynative_only``, which ``check`` and ``check_training`` read before
    running in GRAPH mode): GRAPH mode compiles ``construct``'s source, and this one is an interpreter."""

    parity_pynative_only = (
        "runs the torch.fx program of its forward node by node in Python, "
        "which MindSpore's GRAPH compiler cannot compile"
    )

    def __init__(self, module: torch.nn.Module, ctx: Context):
        super().__init__()
        self.torch_class = torch_name(type(module))
        object.__setattr__(self, "_source", _Source(module, ctx))

    def cell_at(self, path: str) -> nn.Cell:
        found = self
        for part in path.split(".") if path else ():
            cells = found.name_cells()
            if part not in cells:
                raise _Untranslatable(f"calling {path} (no translated child {part!r})")
            found = cells[part]
        return found

    def construct(self, *args: Any, **kwargs: Any) -> Any:
        return self._source.run(self, args, kwargs)

    def traced_programs(self) -> List[Tuple[bool, tuple, Program]]:
        """``[(training, call, program)]``: the programs traced on the example inputs' calls of the
        Module that built without error, one per mode and kind of call (``call``: its key, as
        :func:`.concrete.call_slots` gives it), what :mod:`parity.translation.emit` writes as text.
        A mode the Cell has not run in yet is traced now (translation traces the Module's own mode)."""
        for key in list(self._source.examples):
            for training in (False, True):
                try:
                    self._source.valued_program(self, training, key)
                except (TraceFailed, ParityUnsupported):
                    pass  # kept as the program of that mode: raised where the Cell runs in it
        found = []
        for key, program in self._source.programs.items():
            if key[0] == "valued" and isinstance(program, Program):
                found.append((bool(key[1]), key[2], program))
        return found

    @property
    def forward_signature(self) -> inspect.Signature:
        """The signature of the Module's ``forward``, without ``self``."""
        return self._source.signature

    def example_calls(self) -> int:
        """How many kinds of call the example inputs made of the Module (one program per mode each)."""
        return len(self._source.examples)

    def extend_repr(self) -> str:
        return f"traced forward of {self.torch_class}"


class _Source:
    """The PyTorch Module and its programs: one per mode and combination of constant arguments, and,
    where the Module was called on example inputs, one per mode and kind of call seen (traced on
    the values it was called with, its decisions guarded)."""

    def __init__(self, module, ctx: Context):
        self.module, self.ctx = module, ctx
        self.signature = _signature(module)
        self.var_keyword = _var_keyword(self.signature)
        self.programs: Dict[tuple, Any] = {}
        self.examples: Dict[tuple, tuple] = {}  # call key -> (slots, constants) of an example call
        self.seen = 0  # how many of ctx.examples' calls of the module are in self.examples
        self._take_examples()

    def _take_examples(self) -> None:
        """The calls of the Module met so far: in the example run, and in the traces of its parents."""
        calls = (self.ctx.examples or {}).get(id(self.module), [])
        for args, kwargs in calls[self.seen :]:
            try:
                key, slots, constants = call_slots(self.signature, args, kwargs)
            except TypeError:
                continue
            self.examples.setdefault(key, (slots, constants))
        self.seen = len(calls)

    def defaults(self) -> Dict[str, Any]:
        return {
            name: p.default
            for name, p in self.signature.parameters.items()
            if p.default is not p.empty and is_constant(p.default)
        }

    def program(
        self, cell, training: bool, concrete: Dict[str, Any], extra: Optional[Dict[str, Any]] = None
    ) -> Program:
        """``extra``: the constants ``**kwargs`` receives (``{}`` where forward has one and none is given)."""
        _refuse_var_positional(self.signature)
        if extra is None and self.var_keyword:
            extra = {}
        key = (
            training,
            tuple((name, _key(value)) for name, value in concrete.items()),
            None if extra is None else tuple((name, _key(value)) for name, value in sorted(extra.items())),
        )
        return self._built(key, cell, lambda: _trace(self.module, training, concrete, extra))

    def valued_program(self, cell, training: bool, key: tuple) -> Program:
        """The program for calls like the example call of ``key``, traced on its values."""
        slots, constants = self.examples[key]

        def trace():
            forward, names = root_function(type(self.module).forward, self.signature, key, constants)
            tracer = ConcreteTracer(forward, dict(zip(names, [value for _, value in slots])), self.ctx.examples)
            return _trace(self.module, training, {}, tracer=tracer)

        return self._built(("valued", training, key), cell, trace)

    def _built(self, key, cell, trace: Callable[[], torch.fx.Graph]) -> Program:
        if key not in self.programs:
            try:
                self.programs[key] = Program(trace(), cell, self.module, self.ctx)
            except (TraceFailed, ParityUnsupported) as exc:
                self.programs[key] = exc
        found = self.programs[key]
        if isinstance(found, Exception):
            raise found
        return found

    def run(self, cell, args, kwargs):
        try:
            key, slots, _ = call_slots(self.signature, args, kwargs)
        except TypeError as exc:
            raise ParityUnsupported(f"{self.ctx.where}: forward{self.signature}: {exc}") from None
        if key not in self.examples:
            self._take_examples()
        if key in self.examples:
            program = self.valued_program(cell, bool(cell.training), key)
            return program.run(cell, [value for _, value in slots])
        _refuse_var_positional(self.signature, self.ctx)
        bound = self.signature.bind(*args, **kwargs)
        bound.apply_defaults()
        arguments = dict(bound.arguments)
        extra = arguments.pop(self.var_keyword) if self.var_keyword else None
        if extra and not is_constant(list(extra.values())):
            tensors = ", ".join(name for name, value in extra.items() if not is_constant(value))
            raise self.ctx.unsupported(
                f"forward's **{self.var_keyword} receives {tensors}, which are not constants: "
                "only constants (None, bools, numbers, strings) are traced through **kwargs "
                "(translate with example inputs to trace them: translate(module, inputs=...))"
            )
        concrete = {name: value for name, value in arguments.items() if is_constant(value)}
        try:
            program = self.program(cell, bool(cell.training), concrete, extra)
        except TraceFailed as exc:
            hint = (
                "the example inputs called it with other arguments: translate with inputs that call it this way"
                if self.examples
                else "translated with example inputs, forward is traced on their values: translate(module, inputs)"
            )
            raise self.ctx.unsupported(
                f"{exc} (called with {_shown_args({**concrete, **(extra or {})})}, "
                f"{'train' if cell.training else 'eval'} mode); {hint}"
            ) from None
        return program.run(cell, list(arguments.values()))


def _shown_args(concrete: Dict[str, Any]) -> str:
    return ", ".join(f"{name}={value!r}" for name, value in concrete.items()) or "tensors only"


def graph_cell(
    module: torch.nn.Module, ctx: Context, children: Dict[str, Any], tensors: Callable, *, defer: bool = False
) -> GraphForward:
    """The :class:`GraphForward` Cell for ``module``, its children already translated and
    ``tensors(cell)`` giving it the Module's own parameters and buffers. The programs for both modes
    and ``forward``'s default arguments are built now; where neither can be, raises (for the
    Module's current mode) :class:`TraceFailed` when ``forward`` cannot be traced, or
    :class:`parity.ParityUnsupported` naming each call (and its file:line) that has no translation.
    A mode that fails alone (stochastic depth in train mode) raises when the Cell runs in it.
    ``defer``: where the defaults cannot be traced (``input_ids=None`` taken for a tensor that
    will be given), the Cell is returned all the same and traced with the arguments it is called
    with, refusing then if that trace fails too.

    Translated with example inputs (``ctx.examples``), the programs built now are those of the calls
    the Module received, traced on their values in the Module's mode, and a failure raises where the
    other mode fails too; the other mode's are traced when the Cell first runs in it (each trace
    evaluates the Module's code in PyTorch, which is most of a translation's time). A Module the
    example run never called is traced only when it is called."""
    cell = GraphForward(module, ctx)
    for name, child in children.items():
        cell.insert_child_to_cell(name, child)
    tensors(cell)
    source = cell._source
    failed: List[Exception] = []
    if ctx.examples is not None:
        for key in source.examples:
            try:
                source.valued_program(cell, module.training, key)
            except (TraceFailed, ParityUnsupported) as exc:
                try:  # the other mode is traced now only to tell a mode that fails alone
                    source.valued_program(cell, not module.training, key)
                except (TraceFailed, ParityUnsupported):
                    raise exc from None
        return cell
    _refuse_var_positional(source.signature)
    for training in (module.training, not module.training):
        try:
            source.program(cell, training, source.defaults())
        except (TraceFailed, ParityUnsupported) as exc:
            failed.append(exc)
    if len(failed) == 2 and not (defer and all(isinstance(exc, TraceFailed) for exc in failed)):
        raise failed[0]  # a mode that fails alone says so when the Cell runs in it
    return cell
