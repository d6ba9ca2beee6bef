"""The discrete Fourier transforms in the call table: ``torch.fft.fft``/``ifft``/``rfft``/``irfft``/
``hfft``/``ihfft`` and their 2-d and n-d forms, each MindSpore's operator of the same name, which
takes PyTorch's arguments (``n``/``s``, ``dim``, ``norm``). A real input is taken as it is; the
complex outputs are compared as complex numbers. ``Tensor.cfloat``/``cdouble`` make complex
tensors of real ones (``torch.complex``/``torch.polar``: :mod:`.complex`).
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Tuple

import mindspore as ms
import numpy as np
from mindspore import Tensor, ops

from .arguments import Adapter, Entry

__all__ = ["FUNCTIONS", "METHODS", "broadcast_both"]


def _transform(name: str) -> Callable[..., Any]:
    op = getattr(ops, name)

    def transform(input, *args, **kwargs):
        if kwargs.get("out") is not None:
            raise TypeError(f"torch.fft.{name}(out=...) is not translated")
        kwargs.pop("out", None)
        return op(input, *args, **kwargs)

    def transform_dims(input, s=None, dim=None, norm=None, *, out=None):
        """The 2-d and n-d forms, their ``dim`` a tuple: an int one names one dimension, and with
        ``s`` and no ``dim`` the last ``len(s)`` (MindSpore 2.10 crashes on that call as given)."""
        if out is not None:
            raise TypeError(f"torch.fft.{name}(out=...) is not translated")
        if isinstance(dim, int):
            dim = (dim,)
        if s is not None and dim is None:
            dim = tuple(range(input.ndim - len(s), input.ndim))
        if dim is not None:
            dim = tuple(d % input.ndim for d in dim)
        if name.endswith("2"):
            return op(input, s, (-2, -1) if dim is None else dim, norm)
        return op(input, s, dim, norm)

    if name[-1] in "2n":
        transform_dims.__name__ = name
        return transform_dims

    transform.__name__ = name
    return transform


def broadcast_both(a: Tensor, b: Tensor) -> Tuple[Tensor, Tensor]:
    """Both broadcast to one shape (MindSpore's ``Complex`` and ``Polar`` take only equal shapes)."""
    shape = tuple(np.broadcast_shapes(tuple(a.shape), tuple(b.shape)))
    return ops.broadcast_to(a, shape), ops.broadcast_to(b, shape)


def _to_complex(dtype: Any) -> Callable[..., Tensor]:
    def cast(input: Tensor, memory_format: object = None) -> Tensor:
        return input.astype(dtype)

    return cast


# Written out, not generated: ``parity scan`` parses these tables' keys without importing them.
FUNCTIONS: Dict[str, Entry] = {
    "torch.fft.fft": _transform("fft"),
    "torch.fft.ifft": _transform("ifft"),
    "torch.fft.rfft": _transform("rfft"),
    "torch.fft.irfft": _transform("irfft"),
    "torch.fft.hfft": _transform("hfft"),
    "torch.fft.ihfft": _transform("ihfft"),
    "torch.fft.fft2": _transform("fft2"),
    "torch.fft.ifft2": _transform("ifft2"),
    "torch.fft.rfft2": _transform("rfft2"),
    "torch.fft.irfft2": _transform("irfft2"),
    "torch.fft.hfft2": _transform("hfft2"),
    "torch.fft.ihfft2": _transform("ihfft2"),
    "torch.fft.fftn": _transform("fftn"),
    "torch.fft.ifftn": _transform("ifftn"),
    "torch.fft.rfftn": _transform("rfftn"),
    "torch.fft.irfftn": _transform("irfftn"),
    "torch.fft.hfftn": _transform("hfftn"),
    "torch.fft.ihfftn": _transform("ihfftn"),
}
METHODS: Dict[str, Adapter] = {"cfloat": _to_complex(ms.complex64), "cdouble": _to_complex(ms.complex128)}
