"""Complex numbers in the call table, as DeepSeek-V2 rotates its queries and keys:
``torch.view_as_complex`` of pairs, ``torch.polar``, a product, ``torch.view_as_real`` back.

MindSpore on CPU computes complex tensors forward, but has no gradient for their product (``Mul``:
"gradient not support for complex type currently", mindspore 2.10). The translation holds a
complex tensor as :class:`ComplexPair`, its real and imaginary parts as two real tensors, and
writes the product out, ``(a + bi)(c + di) = (ac - bd) + (ad + bc)i``: the gradients are those of
real arithmetic, which are PyTorch's for a real-valued loss. A pair answers what the rotary code
asks of it (a product with a pair, a tensor or a number, ``unsqueeze``, ``.to`` the same device,
``.shape``, ``.device``); anything else raises ``TypeError`` naming what a complex tensor was
asked, and the translation reports the call that asked it. A MindSpore complex tensor met in a
product is taken by its parts; what a translated Module returns is a complex tensor again
(:func:`as_tensor`). These rows come after :mod:`.spectral`'s ``torch.polar``/``torch.complex``
in the table, and win.
"""

from __future__ import annotations

from typing import Any, Dict, Tuple, Union

from mindspore import Tensor, ops
from mindspore.common import dtype as mstype

from .arguments import DEVICE, Adapter, Entry, is_device, is_tensor
from .spectral import broadcast_both

__all__ = ["ComplexPair", "FUNCTIONS", "METHODS", "as_tensor"]


class ComplexPair:
    """A complex tensor as its real and imaginary parts, two real MindSpore tensors of one shape."""

    def __init__(self, real: Tensor, imag: Tensor):
        self.real, self.imag = real, imag

    @property
    def shape(self) -> Tuple[int, ...]:
        return tuple(self.real.shape)

    @property
    def ndim(self) -> int:
        return int(self.real.ndim)

    @property
    def device(self):
        return DEVICE

    def __mul__(self, other: Union["ComplexPair", Tensor, float]) -> "ComplexPair":
        if _is_complex(other):  # a MindSpore complex tensor (an FFT's, a translated child's output)
            other = ComplexPair(ops.real(other), ops.imag(other))
        if isinstance(other, ComplexPair):
            return ComplexPair(
                self.real * other.real - self.imag * other.imag, self.real * other.imag + self.imag * other.real
            )
        if is_tensor(other) or isinstance(other, (int, float)) and not isinstance(other, bool):
            return ComplexPair(self.real * other, self.imag * other)
        raise TypeError(f"a complex tensor times {type(other).__name__} is not translated")

    __rmul__ = __mul__

    def unsqueeze(self, dim: int) -> "ComplexPair":
        return ComplexPair(self.real.unsqueeze(dim), self.imag.unsqueeze(dim))

    def to(self, *args: Any, **kwargs: Any) -> "ComplexPair":
        if all(is_device(a) or isinstance(a, str) for a in (*args, *kwargs.values())):
            return self
        raise TypeError("a complex tensor's .to() other than to its own device is not translated")

    def __getattr__(self, name: str):
        if name.startswith("_"):  # Python's and the frameworks' probes (__array__...): plain absence
            raise AttributeError(name)
        raise TypeError(f"Tensor.{name} of a complex tensor is not translated")


def view_as_complex(input: Tensor) -> ComplexPair:
    if input.ndim == 0 or input.shape[-1] != 2:
        raise TypeError(f"view_as_complex takes a last dimension of 2, got shape {tuple(input.shape)}")
    return ComplexPair(input[..., 0], input[..., 1])


def _is_complex(value: Any) -> bool:
    return is_tensor(value) and value.dtype in (mstype.complex64, mstype.complex128)


def as_tensor(value: Any) -> Any:
    """A pair as the MindSpore complex tensor it stands for (what a translated Module returns:
    ``ops.Complex`` has a CPU gradient, only the product of complex tensors has none); else ``value``."""
    return ops.Complex()(value.real, value.imag) if isinstance(value, ComplexPair) else value


def view_as_real(input: ComplexPair) -> Tensor:
    if _is_complex(input):
        return ops.stack([ops.real(input), ops.imag(input)], -1)
    if not isinstance(input, ComplexPair):
        raise TypeError("view_as_real of a real tensor (PyTorch takes complex tensors only)")
    return ops.stack([input.real, input.imag], -1)


def polar(abs: Tensor, angle: Tensor) -> ComplexPair:
    abs, angle = broadcast_both(abs, angle)
    return ComplexPair(abs * ops.cos(angle), abs * ops.sin(angle))


def complex(real: Tensor, imag: Tensor) -> ComplexPair:
    return ComplexPair(*broadcast_both(real, imag))


FUNCTIONS: Dict[str, Entry] = {
    "torch.view_as_complex": view_as_complex,
    "torch.view_as_real": view_as_real,
    "torch.polar": polar,
    "torch.complex": complex,
}
METHODS: Dict[str, Adapter] = {}
