"""Self-test pairs for padding: a MindSpore layer called more than once on one input shape, as a
network that pads in two places, or any training loop, calls it.

MindSpore's CPU padding kernel keeps per-shape state: a negative width (a crop) is right on the
first call for an input shape and dtype and wrong on each later one (known mismatch
``zeropad2d-negative-width-cpu-later-calls``). A check resets that state before it runs
MindSpore (``parity.backends.mindspore.prepare``), so a layer called once per check would hide
it: :class:`ZeroPad2dCalledTwice` calls its ``nn.ZeroPad2d`` twice and returns the second call's
output.
"""

from __future__ import annotations

from mindspore import nn

__all__ = ["ZeroPad2dCalledTwice"]


class ZeroPad2dCalledTwice(nn.Cell):
    """``mindspore.nn.ZeroPad2d(padding)``, called twice on the same input: the second output."""

    def __init__(self, padding):
        super().__init__()
        self.pad = nn.ZeroPad2d(padding)

    def construct(self, x):
        self.pad(x)  # the first call of this shape: computed right
        return self.pad(x)
