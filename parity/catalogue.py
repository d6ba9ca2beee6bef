"""The catalogue's declarations: a ``ParityCase`` names how to build both sides, the inputs and the
expectations; the plugin and the CLI turn each into one item per variant (eval/train).

``import parity`` imports this module: it imports the engine's framework-free
:mod:`parity.engine.factories` at its top, and everything that runs a check or builds a side
(the engine, the backends, the registry) inside the function that needs it."""

from __future__ import annotations

import importlib
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

from .engine.factories import TRANSLATE, Factory, resolve
from .engine.settings import CheckOptions
from .errors import ParityUnsupported, ParityUsageError

__all__ = ["ParityCase", "Training", "Variant", "TRANSLATE", "load_cases", "build", "build_mindspore", "build_torch"]


@dataclass(frozen=True)
class Training:
    """What a training case trains: :func:`parity.check_training`'s arguments after the pair.
    ``batches`` are ``(inputs, target)`` pairs (specs or arrays); ``loss`` a PyTorch loss Module
    (translated) or ``(ms_loss, torch_loss)``; ``optimizer`` a factory of a PyTorch optimizer
    (translated) or ``(ms_factory, torch_factory)``; ``lr_scheduler`` a factory of a PyTorch
    scheduler (or a pair), as :func:`parity.check_training` takes them.

    Each of ``loss``, ``optimizer`` and ``lr_scheduler`` (or either half of a pair) may instead be
    a dotted path ``"package.module:Name"``, imported when the case runs, so that a catalogue
    module need not import a framework to be listed: a loss path is called with no arguments for
    the loss (or the pair), an optimizer or scheduler path names the factory itself."""

    batches: Any
    loss: Any
    optimizer: Any
    steps: int = CheckOptions.steps
    clip_grad_norm: Optional[float] = CheckOptions.clip_grad_norm
    accumulate: int = CheckOptions.accumulate
    lr_scheduler: Any = CheckOptions.lr_scheduler

    def __post_init__(self):
        for label in ("loss", "optimizer", "lr_scheduler"):
            value = getattr(self, label)
            for part in value if isinstance(value, (tuple, list)) else (value,):
                if isinstance(part, str) and ":" not in part:
                    raise ParityUsageError(f"Training {label}: a dotted path is 'package.module:Name', got {part!r}")

    def kwargs(self, where: str = "training") -> Dict[str, Any]:
        """:func:`parity.check_training`'s arguments, dotted paths imported (``where`` names the
        case in a usage error)."""
        return {
            "batches": self.batches,
            "loss": _lazy(self.loss, f"{where} loss", call=True),
            "optimizer": _lazy(self.optimizer, f"{where} optimizer"),
            "steps": self.steps,
            "clip_grad_norm": self.clip_grad_norm,
            "accumulate": self.accumulate,
            "lr_scheduler": _lazy(self.lr_scheduler, f"{where} lr_scheduler"),
        }


@dataclass(frozen=True)
class Variant:
    case: "ParityCase"
    train: bool

    @property
    def id(self) -> str:
        if self.case.training is not None:
            return f"{self.case.name}[training]"
        return f"{self.case.name}[{'train' if self.train else 'eval'}]"

    def run(self, ms_cell, torch_module, settings):
        """This variant's check of the built pair: :func:`parity.check`, :func:`parity.check_shapes`
        for a case of several shapes, or :func:`parity.check_training` for a training case."""
        __tracebackhide__ = True
        case = self.case
        if case.training is not None:
            from .engine.training.loop import run_training

            return run_training(
                ms_cell,
                torch_module,
                settings=settings,
                weights=case.weights,
                ms_mode=case.ms_mode,
                tolerance=case.tolerance,
                name_map=case.name_map,
                ignore=case.ignore,
                acknowledge=case.acknowledge,
                **case.training.kwargs(f"case {case.name!r}"),
            )
        if case.shapes is not None:
            from .engine.shapes.run import run_shapes

            return run_shapes(
                ms_cell, torch_module, case.shapes, train=self.train, settings=settings, **case.check_kwargs()
            )
        from .engine.check import run_check

        return run_check(ms_cell, torch_module, case.inputs, train=self.train, settings=settings, **case.check_kwargs())

    def unrecordable(self) -> Optional[str]:
        """Why this variant's PyTorch side cannot be recorded (None: it can): a recorded reference
        holds one :func:`parity.check`."""
        if self.case.training is not None:
            return "a training case (parity.check_training) runs PyTorch at every step: it is checked live only"
        if self.case.shapes is not None:
            return "a case of several shapes (parity.check_shapes) is checked live only"
        if self.case.weights == "copy_to_torch":
            return "weights='copy_to_torch' sets PyTorch's weights from MindSpore's: it is checked live only"
        return None

    def record(self, torch_module, settings, path):
        """Record PyTorch's side of this variant's check into the folder ``path`` (see :func:`parity.record`)."""
        from .engine.reference.record import run_record

        case = self.case
        return run_record(
            torch_module,
            case.inputs,
            path,
            grads=case.grads,
            train=self.train,
            tolerance=case.tolerance,
            reference=case.reference,
            weights=case.weights,
            force=True,
            settings=settings,
        )

    def run_recorded(self, ms_cell, path, settings, torch_module=None):
        """This variant's check of ``ms_cell`` against the reference recorded at ``path`` (refused
        where ``torch_module``, when given, is no longer what was recorded)."""
        __tracebackhide__ = True
        from .engine.reference.replay import run_reference

        kwargs = self.case.check_kwargs()
        return run_reference(
            ms_cell, path, None, train=self.train, settings=settings, torch_module=torch_module, **kwargs
        )


@dataclass(frozen=True)
class ParityCase:
    """One pair in the catalogue.

    ``mindspore`` and ``torch`` are factories: callables, or dotted paths ``"package.module:Name"``
    called with ``ms_kwargs`` / ``torch_kwargs``. ``mindspore=TRANSLATE`` builds the MindSpore side
    with :func:`parity.translate` from the PyTorch side. ``train`` is a bool or a tuple of bools (one
    item each); ``training=Training(batches, loss, optimizer, steps=3)`` makes it a training case
    (one item, ``[training]``: :func:`parity.check_training`; no ``inputs``). ``xfail`` is a reason: the case is expected to mismatch (strictly). ``acknowledge``
    names known-mismatch entries (``parity.registry``): the case lint accepts a MindSpore default
    they cover, and the run summary reports an acknowledged entry that did not show as stale.
    """

    name: str
    mindspore: Factory
    torch: Factory
    inputs: Any = None
    ms_kwargs: Mapping[str, Any] = field(default_factory=dict)
    torch_kwargs: Mapping[str, Any] = field(default_factory=dict)
    weights: Any = CheckOptions.weights
    grads: bool = CheckOptions.grads
    train: Union[bool, Tuple[bool, ...]] = CheckOptions.train
    tolerance: Any = CheckOptions.tolerance
    name_map: Any = CheckOptions.name_map
    reference: Optional[str] = CheckOptions.reference
    ms_mode: Optional[str] = None  # None: the session's --parity-mode, else CheckOptions.ms_mode
    xfail: Optional[str] = None
    acknowledge: Tuple[str, ...] = ()  # known-mismatch ids this case knowingly exhibits or relies on
    training: Optional[Training] = None
    shapes: Optional[Sequence[Any]] = None  # several inputs, one per shape: parity.check_shapes
    ignore: Sequence[str] = CheckOptions.ignore  # tensors left as built, unpaired (parity.check's)
    line: int = field(default=0, compare=False)

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name.isidentifier():
            raise ParityUsageError(f"ParityCase name must be an identifier, got {self.name!r}")
        for label in ("mindspore", "torch"):
            factory = getattr(self, label)
            if label == "mindspore" and factory == TRANSLATE:
                continue
            if not (callable(factory) or (isinstance(factory, str) and ":" in factory)):
                raise ParityUsageError(
                    f"ParityCase {self.name!r}: {label} must be a callable or 'package.module:Name', got {factory!r}"
                )
        object.__setattr__(self, "acknowledge", tuple(self.acknowledge))
        if self.training is not None and not isinstance(self.training, Training):
            raise ParityUsageError(
                f"ParityCase {self.name!r}: training must be parity.Training(batches, loss, "
                f"optimizer, ...), got {type(self.training).__qualname__}"
            )
        if self.training is not None and (self.inputs is not None or self.train is not False):
            raise ParityUsageError(
                f"ParityCase {self.name!r}: a training case takes its batches from "
                "Training(batches=...); drop inputs= and train="
            )
        if self.shapes is not None and (self.inputs is not None or self.training is not None):
            raise ParityUsageError(
                f"ParityCase {self.name!r}: shapes= is a list of inputs, one per shape; drop inputs= (and training=)"
            )
        if self.shapes is not None and (not isinstance(self.shapes, (list, tuple)) or not self.shapes):
            raise ParityUsageError(
                f"ParityCase {self.name!r}: shapes= must be a non-empty list of inputs, one per "
                f"shape, got {self.shapes!r}"
            )
        if self.training is None and self.inputs is None and self.shapes is None:
            raise ParityUsageError(
                f"ParityCase {self.name!r}: give inputs= (or shapes=[...], or training=Training(...))"
            )
        if not self.line:
            object.__setattr__(self, "line", _written_at(sys._getframe(2)))

    def lint(self, *, device: str = "CPU") -> List[str]:
        """What the registry says is wrong with how this case builds its MindSpore side."""
        from .registry import lint

        api = self.mindspore if isinstance(self.mindspore, (str, type)) and self.mindspore != TRANSLATE else ""
        kwargs = self.ms_kwargs if api else {}
        torch_kwargs = self.torch_kwargs if api else None
        return [
            str(issue)
            for issue in lint(api, dict(kwargs), tuple(self.acknowledge), torch_kwargs=torch_kwargs, device=device)
        ]

    def variants(self) -> List[Variant]:
        if self.training is not None:
            return [Variant(self, True)]
        trains = self.train if isinstance(self.train, tuple) else (self.train,)
        return [Variant(self, bool(t)) for t in trains]

    def check_kwargs(self) -> Dict[str, Any]:
        """The keyword arguments this case gives :func:`parity.check`."""
        return {
            "weights": self.weights,
            "grads": self.grads,
            "tolerance": self.tolerance,
            "name_map": self.name_map,
            "ignore": self.ignore,
            "reference": self.reference,
            "ms_mode": self.ms_mode,
        }


def _lazy(value: Any, where: str, *, call: bool = False) -> Any:
    """``value`` with a dotted path (alone or as half of a pair) imported, and called when ``call``."""
    if isinstance(value, (tuple, list)) and any(isinstance(v, str) for v in value):
        return tuple(_lazy(v, where, call=call) for v in value)
    if not isinstance(value, str):
        return value
    target = resolve(value, where)
    if not call:
        return target
    try:
        return target()
    except Exception as exc:  # the user's factory failed: say which, without a deep traceback
        raise ParityUsageError(f"{where}: building {value!r} failed: {type(exc).__name__}: {exc}") from None


def build(case: ParityCase, *, device: str = "CPU", seed: int = 1234) -> Tuple[Any, Any]:
    """Construct the MindSpore and the PyTorch side of ``case``, both frameworks seeded first so
    that initial weights (and a reproduce command) are the same on every run."""
    from .backends import mindspore as msb
    from .backends import torch as tb

    msb.prepare(seed=seed, device=device)
    tb.prepare(seed=seed, device=device)
    made: List[Any] = []
    for label, factory, kwargs in (
        ("torch", case.torch, case.torch_kwargs),
        ("mindspore", case.mindspore, case.ms_kwargs),
    ):
        if factory == TRANSLATE:  # traced on the case's inputs, drawn as its check draws them
            from .engine.translating import run_translate

            inputs = case.inputs
            if inputs is None and case.training is not None:  # a training case: its first batch's inputs
                inputs = case.training.batches[0][0]
            made.append(run_translate(made[0], inputs, device=device, seed=seed))
            continue
        where = f"case {case.name!r} {label}"
        try:
            made.append(resolve(factory, where)(**dict(kwargs)))
        except ParityUsageError:
            raise
        except Exception as exc:  # the user's factory failed: say which, without a deep traceback
            raise ParityUsageError(f"{where}: building failed: {type(exc).__name__}: {exc}") from None
    return made[1], made[0]


def build_mindspore(case: ParityCase, *, device: str = "CPU", seed: int = 1234) -> Any:
    """Construct the MindSpore side of ``case`` alone (for a check against a recorded reference:
    PyTorch is not imported), MindSpore seeded first as :func:`build` seeds it."""
    from .backends import mindspore as msb

    if case.mindspore == TRANSLATE:
        raise ParityUnsupported(
            f"case {case.name!r}: its MindSpore side is translated from the PyTorch module (mindspore=TRANSLATE), "
            "which needs PyTorch: check it live"
        )
    msb.prepare(seed=seed, device=device)
    where = f"case {case.name!r} mindspore"
    try:
        return resolve(case.mindspore, where)(**dict(case.ms_kwargs))
    except ParityUsageError:
        raise
    except Exception as exc:  # the user's factory failed: say which, without a deep traceback
        raise ParityUsageError(f"{where}: building failed: {type(exc).__name__}: {exc}") from None


def build_torch(case: ParityCase, *, device: str = "CPU", seed: int = 1234) -> Any:
    """Construct the PyTorch side of ``case`` alone (what ``--parity-record`` records), seeded as
    :func:`build` seeds it."""
    from .backends import torch as tb

    tb.prepare(seed=seed, device=device)
    where = f"case {case.name!r} torch"
    try:
        return resolve(case.torch, where)(**dict(case.torch_kwargs))
    except ParityUsageError:
        raise
    except Exception as exc:  # the user's factory failed: say which, without a deep traceback
        raise ParityUsageError(f"{where}: building failed: {type(exc).__name__}: {exc}") from None


def _import_path(path: Path):
    """Import ``path`` under its package name (walking up ``__init__.py`` files), so that case
    modules and the model modules they import are each imported once."""
    path = Path(path).resolve()
    parts = [path.stem]
    base = path.parent
    while (base / "__init__.py").exists():
        parts.insert(0, base.name)
        base = base.parent
    if str(base) not in sys.path:
        sys.path.insert(0, str(base))
    name = ".".join(parts)
    module = importlib.import_module(name)
    if Path(getattr(module, "__file__", "") or "").resolve() != path:
        raise ParityUsageError(
            f"cannot load the cases in {path}: the module name {name!r} is already taken by "
            f"{getattr(module, '__file__', None) or 'a module without a file'}; rename one of them "
            "or put the folder in a package (an __init__.py)"
        )
    return module


def load_cases(path: Path) -> List[ParityCase]:
    """Every ParityCase defined at module level in ``path`` (alone or in lists), in line order."""
    module = _import_path(Path(path))
    found: Dict[int, ParityCase] = {}
    for value in vars(module).values():
        items = value if isinstance(value, (list, tuple)) else (value,)
        for item in items:
            if isinstance(item, ParityCase):
                found[id(item)] = item
    cases = sorted(found.values(), key=lambda c: c.line)
    names = [c.name for c in cases]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ParityUsageError(f"{path}: case names must be unique, repeated: {duplicates}")
    return cases


def _written_at(frame) -> int:
    """The line of the module's own code that made a case: where a case file builds its cases through
    helpers of its own, the module-level line that called them, not the helper's ``ParityCase(``."""
    outer = frame
    while (
        outer.f_code.co_name != "<module>"
        and outer.f_back is not None
        and outer.f_back.f_code.co_filename == frame.f_code.co_filename
    ):
        outer = outer.f_back
    return outer.f_lineno if outer.f_code.co_name == "<module>" else frame.f_lineno


def looks_like_case_file(path: Path) -> bool:
    """Cheap test, without importing: does the module define catalogue cases?"""
    try:
        return "ParityCase(" in Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False


def iter_case_files(root: Path) -> Iterator[Path]:
    """Case modules under ``root`` (a file or a folder), in path order."""
    root = Path(root)
    paths = [root] if root.is_file() else sorted(root.rglob("*.py"))
    for path in paths:
        if path.name != "conftest.py" and looks_like_case_file(path):
            yield path
