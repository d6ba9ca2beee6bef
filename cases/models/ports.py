"""Real ports written by others and their originals: what each pair is, and both sides built.

:data:`PAIRS` lists every pair (``cases.models.ports_vision``: mindcv against torchvision and
timm; ``cases.models.ports_text``: mindone.transformers against transformers), each a
:class:`Port` that says what truly differs between the two. :func:`mindspore_side` and
:func:`torch_side` build a pair's sides by name, adapted so that the weights can pair: what the
catalogue's cases (``cases/ports.py``) and the tests call. Importing this module imports neither
framework.
"""

from dataclasses import dataclass, field
from typing import Callable, Dict, Optional, Tuple


@dataclass(frozen=True)
class Port:
    """A real port and its original, and what truly differs between them.

    ``differences`` maps the PyTorch path of each layer whose own computation differs (its
    counterpart computes something else when fed the same inputs) to what differs there;
    ``causes`` the registry's known mismatches that name those differences; ``name_map`` the
    rules the weights need beyond the automatic pairing (a function of nothing, built when
    called, since it may name ``parity.reshape``); ``adapt`` what a user must change before the
    weights can pair at all (``adapt(ms_cell, torch_module)``, in place; either may be None, and
    that side is left as it is)."""

    name: str
    mindspore: str  # "module:function", called with fixed=False or fixed=True
    torch: str
    inputs: object  # what parity.check takes as inputs: parity.randn(...), a dict of them
    differences: Callable[[object], Dict[str, str]]  # the PyTorch module -> {path: what differs}
    causes: Tuple[str, ...] = ()
    name_map: Optional[Callable[[], dict]] = None
    adapt: Optional[Callable[[object, object], None]] = None
    check: Dict[str, object] = field(default_factory=dict)  # extra parity.check arguments


def pairs() -> Dict[str, Port]:
    """Every pair, by name."""
    from . import ports_text, ports_vision

    return {port.name: port for port in ports_vision.PAIRS + ports_text.PAIRS}


def factory(dotted: str):
    """The function a ``"module:function"`` path names."""
    import importlib

    module, _, name = dotted.partition(":")
    return getattr(importlib.import_module(module), name)


def mindspore_side(pair: str, fixed: bool = False):
    """``pair``'s MindSpore port as shipped (or ``fixed``), adapted so that its weights pair."""
    port = pairs()[pair]
    cell = factory(port.mindspore)(fixed=fixed)
    if port.adapt is not None:
        port.adapt(cell, None)
    return cell


def torch_side(pair: str):
    """``pair``'s PyTorch original, norm statistics trained-like, adapted so that its weights pair."""
    port = pairs()[pair]
    module = factory(port.torch)()
    if port.adapt is not None:
        port.adapt(None, module)
    return module
