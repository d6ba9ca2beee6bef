"""What both framework adapters offer: :mod:`.mindspore` and :mod:`.torch` each satisfy
:class:`Framework`, so the engine can treat them alike (``for backend in (msb, tb): ...``).

A function one side has and the other has not (MindSpore's execution modes, PyTorch's float64
copy) is not part of the protocol; a function both have takes the same arguments on both sides,
a side's extra ones keyword-only with defaults. mypy checks both modules against the protocol
(the assignments under ``TYPE_CHECKING`` below).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, ContextManager, Dict, List, Optional, Protocol, Tuple

import numpy as np

from . import Grads, Slot

__all__ = ["Framework", "PassLike", "TrainStepLike"]


class PassLike(Protocol):
    """One forward pass of a model on numpy inputs (``Pass(model, inputs, grads=...)``), and its
    vector-Jacobian product."""

    def outputs(self) -> Any: ...

    def backward(self, cotangents: Dict[str, np.ndarray], params: List[str]) -> Grads: ...


class TrainStepLike(Protocol):
    """A model, its loss and its optimizer, stepped on micro-batches."""

    def step(self, micro_batches: Any) -> Any: ...

    def lrs(self) -> Dict[str, float]: ...

    def state(self, *, copy: bool = True) -> Dict[str, Dict[str, Any]]: ...


class Framework(Protocol):
    """The functions both adapters define, module-level, with the same arguments."""

    @property
    def Pass(self) -> Callable[..., PassLike]:  # noqa: N802  (the adapters' class)
        """The pass class; the constructors differ: MindSpore's takes a mode, PyTorch's a device."""

    @property
    def TrainStep(self) -> Callable[..., TrainStepLike]:  # noqa: N802  (the adapters' class)
        """The training-step class."""

    def prepare(self, *, seed: int, device: str) -> None:
        """Seed the framework's random generators and select ``device``."""

    def to_numpy(self, tensor: Any) -> np.ndarray:
        """A framework tensor as numpy on the host, bit for bit (bfloat16 through ``ml_dtypes``)."""

    def compute_dtype(self, model: Any) -> Any:
        """The floating dtype most of ``model``'s parameters hold."""

    def slots(self, model: Any) -> List[Slot]:
        """Every parameter and buffer, by attribute path."""

    def read(self, model: Any, name: str, *, copy: bool = True) -> np.ndarray:
        """A parameter's or buffer's values; ``copy=False``: a view, valid until the next write."""

    def write(self, model: Any, name: str, array: np.ndarray, in_place: bool = False) -> None:
        """Set a parameter or buffer; ``in_place``: into its own memory (PyTorch always writes so)."""

    def set_train(self, model: Any, train: bool) -> None:
        """The whole tree in train (or eval) mode."""

    def train_flags(self, model: Any) -> Callable[[], None]:
        """Every sub-layer's own train flag, and a function putting them back."""

    def layer_kinds(self, model: Any) -> Dict[str, tuple]:
        """Per sub-layer path, what kind of layer it is (for pairing layers across frameworks)."""

    def capture(self, model: Any, recording: Any, *, backward: bool) -> ContextManager[Any]:
        """Inside, every sub-layer's calls (and gradients, with ``backward``) go to ``recording``."""

    def perturbed(self, model: Any, *, seed: int, ulps: float) -> ContextManager[Any]:
        """Inside, leaf layers' outputs and gradients move by up to ``ulps`` units in the last place."""

    def state_of(self, model: Any) -> Dict[str, Any]:
        """Every parameter and buffer, copied (in the side's own form), for :meth:`restore_state`."""

    def restore_state(self, model: Any, state: Dict[str, Any]) -> None:
        """Put back what :meth:`state_of` saved, into the tensors' own memory."""

    def decode(self, model: Any, ids: np.ndarray, *, cache: Optional[Any] = None) -> Tuple[np.ndarray, Any]:
        """One forward of a causal language model: the last position's logits as numpy, and the cache."""


if TYPE_CHECKING:  # both adapters satisfy the protocol: mypy checks these assignments
    from . import mindspore as _mindspore
    from . import torch as _torch

    _MINDSPORE: Framework = _mindspore
    _TORCH: Framework = _torch
