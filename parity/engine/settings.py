"""How a check runs, as the command line or the caller decide it: :class:`Settings`, the
defaults of every option of the check family (:class:`CheckOptions`), the
``weights=parity.constant(...)`` value (:class:`Constant`), and the choices a check's arguments
take. The plugin imports this module when it loads: it imports no framework."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Tuple, Union

from ..errors import ParityUsageError
from ..judge.tolerance import ToleranceSpec

__all__ = ["Settings", "CheckOptions", "Constant", "check_choice", "DEFAULT_SEED", "MODES", "DEVICES"]

DEFAULT_SEED = 1234
MODES = ("pynative", "graph", "both")
DEVICES = ("CPU", "GPU", "Ascend")
WEIGHTS = ("copy", "copy_to_torch", "as_is")
REFERENCES = (None, "float64")
LOCALIZE = ("auto", True, False)


@dataclass(frozen=True)
class Constant:
    """``weights=parity.constant(0.1)``: every floating weight and buffer on both sides set to value."""

    value: float

    def __str__(self):
        return f"constant({self.value:g})"


@dataclass(frozen=True)
class CheckOptions:
    """Every option of the check family (:func:`parity.check`, :func:`parity.check_training`,
    :func:`parity.check_data_parallel`, :func:`parity.check_generation`, :func:`parity.check_shapes`)
    with its default, written here once: the public functions, the engine's entry points and the
    catalogue's :class:`parity.ParityCase` and :class:`parity.Training` take their defaults from
    these fields (``CheckOptions.grads`` is the default itself), and ``tests/test_options.py``
    fails where a signature gives another. What each option means: the public functions' docstrings."""

    # every check
    weights: Any = "copy"
    tolerance: Any = None
    name_map: Any = None
    ignore: Any = ()  # names or patterns of tensors (either side) left as built, unpaired
    seed: Optional[int] = None
    ms_mode: str = "pynative"  # a session's --parity-mode overrides it
    # check and check_shapes
    grads: bool = True
    train: bool = False
    reference: Optional[str] = None
    check_dtype: bool = True
    localize: Union[str, bool] = "auto"
    amp: Any = None
    # check_training
    steps: int = 3
    lr_scheduler: Any = None
    clip_grad_norm: Optional[float] = None
    loss_scale: Any = None
    accumulate: int = 1
    # check_data_parallel (its ``steps``: data_parallel_steps)
    data_parallel_steps: int = 2
    workers: int = 2
    shard: Any = None
    timeout: float = 300.0
    # check_generation
    max_new_tokens: int = 8
    use_cache: bool = False
    ms_step: Any = None


@dataclass(frozen=True)
class Settings:
    """How a run behaves (decided by the command line or the caller), and where it comes from."""

    seed: Optional[int] = None
    mode: Optional[str] = None
    device: str = "CPU"
    tolerances: Tuple[ToleranceSpec, ...] = ()  # most specific first, after the call's own
    case: str = ""
    location: str = ""
    reproduce: str = ""  # command prefix; the seed is appended
    verbose: int = 0  # pytest -v count: 2 and more show every layer
    repro_dir: Optional[str] = None  # where a failure writes its standalone repro (--parity-repro)

    @property
    def resolved_seed(self) -> int:
        return self.seed if self.seed is not None else DEFAULT_SEED


def check_choice(label: str, value, choices, where: str):
    if value not in choices:
        shown = ", ".join(repr(c) for c in choices)
        raise ParityUsageError(f"{where}: unknown {label} {value!r}; expected one of {shown}")
