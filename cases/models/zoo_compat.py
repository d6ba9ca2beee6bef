"""Importing the model-zoo packages next to MindSpore 2.10 and the CPU build of PyTorch 2.13.

torchvision 0.28.0 (the release built for torch 2.13.0) has no CPU wheel: the wheel on PyPI links
its C++ operators (``torchvision._C``: nms, roi_align, deform_conv2d) against CUDA torch, so with
the CPU torch they fail to load. torchvision means to carry on without them (every registration
of theirs is guarded by ``extension._has_ops()``) except two: ``_meta_registrations`` registers
fake kernels for ``torchvision::nms`` and ``torchvision::qnms`` unconditionally, and ``import
torchvision`` raises ``RuntimeError: operator torchvision::nms does not exist``. transformers
imports torchvision when it is installed, so its models fail to import too.

:func:`import_torchvision` retries the import once after declaring those two operators' schemas
(the signatures torchvision's C++ library declares), with no kernel: the registrations succeed,
the models (plain ``torch.nn`` code) work, and calling ``nms`` still raises as it would have.
Nothing is declared where the C++ library loads.

The packages' import-time warnings (deprecations in code this project does not own) are
silenced while importing, since the test suite turns warnings into errors.
"""

import contextlib
import importlib
import sys
import warnings

_SCHEMAS = (
    "nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
    "qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
)
_LIBRARY = []  # the torch.library.Library holding the schemas: they live as long as it does


@contextlib.contextmanager
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def import_torchvision():
    """``import torchvision``, declaring the two unguarded operators first where needed."""
    with _quiet():
        try:
            return importlib.import_module("torchvision")
        except RuntimeError as exc:
            if "torchvision::nms" not in str(exc):
                raise
        import torch

        for name in [n for n in sys.modules if n == "torchvision" or n.startswith("torchvision.")]:
            del sys.modules[name]  # the half-imported package
        library = torch.library.Library("torchvision", "FRAGMENT")
        for schema in _SCHEMAS:
            library.define(schema)
        _LIBRARY.append(library)
        return importlib.import_module("torchvision")


def import_quietly(module: str):
    """Import a model-zoo module (after torchvision, which transformers imports when present)."""
    import_torchvision()
    with _quiet():
        return importlib.import_module(module)
