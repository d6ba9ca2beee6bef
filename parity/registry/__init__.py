"""Known mismatches between MindSpore and PyTorch, as data with a lifecycle.

Each known difference (a default, a parameter name, a layout, a formula, a missing feature or
kernel) is one entry in ``parity/data/mismatches/<family>.toml``. Entries are validated on load
(:func:`load`), queried (:meth:`Registry.get`, :meth:`Registry.for_api`) and matched against real
models (:func:`diagnose`) and cases (:func:`lint`). ``docs/known-mismatches.md`` is generated from
the data and the stored measurements (``python -m parity.registry docs``).

This package is data and its diagnosis: it imports neither the runner nor the backends. Proving an
entry on the installed frameworks (its self-test: the naive pair must differ as stated and the fix
must agree; a naive pair that agrees is STALE) is :func:`parity.mismatch_checks.selftest`, which
sits above both (``python -m parity.mismatch_checks measure`` refreshes the stored numbers).

Schema (``schema = 1`` at the top of every file; optional ``title = "..."``)::

    [[mismatch]]
    id = "conv2d-pad-mode-default"       # lowercase-words-with-dashes, unique across files
    kind = "default"                     # default | name | layout | formula | unsupported | precision
    torch = "torch.nn.Conv2d"            # the PyTorch API (dotted path)
    mindspore = "mindspore.nn.Conv2d"    # the MindSpore API; family "mint" iff it is mindspore.mint.*
    family = "nn"                        # nn | mint | llm (a hand-written MindSpore model against transformers':
                                         # torch may then be "transformers.<...>", mindspore "mindspore.nn.Cell"
                                         # for any Cell, and the self-test names its pair with torch_api and
                                         # mindspore_api)
    summary = "..."                      # one line: what differs
    fix = "..."                          # one line: what to write (absent: no fix known)
    arguments = [{ torch = "padding", torch_default = 0, mindspore = "pad_mode", mindspore_default = "same",
                   note = "..." }]       # the arguments involved; a side without the argument omits it
    rule = { pad_mode = "pad_mode(torch.padding)", padding = "pad4(torch.padding)" }
                                         # MindSpore kwargs of the fix, as expressions over the PyTorch
                                         # kwargs (see parity.registry.rules: literals, arithmetic,
                                         # comparisons, x if c else y, torch.<arg>, input_shape, helpers)
    replacement = "mindspore.nn.Conv2d"  # the API the fix builds when it is not `mindspore`
                                         # (also "package.module:Name", e.g. parity.translation.activation:SELU)
    weights = { weight = "w" }           # PyTorch parameter leaf -> MindSpore leaf, for the fix
    layout = { weight = "permute(1, 0)" }  # PyTorch -> MindSpore weight layout, where it differs
    inspect = { torch = ["padding"], mindspore = ["pad_mode"], when = "ms.pad_mode == 'same' and ..." }
                                         # diagnosis: attributes shown as evidence (a list, or a table
                                         # name -> expression over ms.<attr> / torch.<attr>) and the
                                         # condition under which a built pair shows the mismatch; it may
                                         # read input_shape, the shape the layer saw (None when unknown:
                                         # then it must hold when some input would show the mismatch),
                                         # and labels, a loss's distinct integer targets (None: unknown)
                                         # fix = { has_bias = "torch.bias is not None" }: the MindSpore
                                         # arguments that fix the built pair, shown in the failure
    versions = { mindspore = ">=2.7", torch = ">=2.0" }   # PEP 440 specifiers
    devices = ["CPU", "GPU", "Ascend"]   # where the mismatch occurs
    modes = ["pynative"]                 # MindSpore modes where it occurs (default both)
    runs_on = ["Ascend"]                 # unsupported APIs: the documented platforms
    dtypes = ["bfloat16"]                # only where the MindSpore layer computes in these half dtypes
    amp = { levels = ["O1"], mindspore = "half", torch = "float32", after = false }
                                         # kind "precision" (required there, nowhere else): under these
                                         # auto_mixed_precision levels the layer (after = true: each
                                         # layer run right after it) runs in these precisions on each
                                         # side against torch.autocast ("half": the check's dtype; both
                                         # left out: the level fails on the Cell). Only
                                         # parity.check(amp=...) cites them, never ordinary diagnosis.
    reason = "..."                       # why, with the evidence
    reference = "https://www.mindspore.cn/docs/en/master/note/api_mapping/pytorch_diff/Conv2d.html"
    selftest_skip = "..."                # instead of [mismatch.selftest]: why it cannot be shown

    [mismatch.selftest]                  # a real pair that shows the difference and its fix
    torch_kwargs = { in_channels = 3, out_channels = 4, kernel_size = 3 }
    ms_kwargs = { in_channels = 3, out_channels = 4, kernel_size = 3, has_bias = true }   # the naive side
    inputs = [{ randn = [2, 3, 8, 8] }]  # also { uniform = [[shape], low, high] }, { randint = [...], dtype = "int32" }
    differs_in = "shape"                 # shape | values | grads | buffers | params | raises | init | zero_fraction
                                         # | precision (with amp = "O1": the pair, each in a one-layer
                                         # container, checked with parity.check(amp="O1"))
    raises = "..."                       # differs_in = "raises": text the error must contain
    train = false                        # grads = true, weights = "copy" | "as_is", ms_mode = "pynative"
    fixed = true                         # default: whether the entry has a fix; fixed_inputs, fixed_ms_mode
    optimizer = { shape = [4, 3], steps = 3 }   # an optimizer pair: same parameter, same gradients
    batches = [[{ randn = [4, 3] }, { uniform = [[4, 3], 0, 1] }], [...]]   # a loss pair: one training
                                         # step per batch of a Linear(features, features) under it
    torch_api = "package.module:Name"    # what the pair is built from, where the entry's APIs cannot be
    mindspore_api = "package.module:Name"  # built from keyword arguments (the fix: mindspore_api again,
                                         # with ms_kwargs and the rule's, unless a replacement is named)

    [[available]]                        # an API measured to run and agree (the family/device table)
    mindspore = "mindspore.mint.nn.GroupNorm"
    torch = "torch.nn.GroupNorm"
    kwargs = { num_groups = 3, num_channels = 3 }
    inputs = [{ randn = [2, 3, 4, 4] }]
    runs_on = ["CPU"]                    # measured
    documented = ["Ascend"]              # the docstring's "Supported Platforms"

TOML has no null: the string ``"None"`` stands for Python's None in defaults and kwargs; arrays
become tuples.

May import: the judge (dtypes), :mod:`parity.errors` and the standard library; never the engine,
the backends, the translation, the self-tests or a framework, not even inside a function (a
model's Cells are read by duck typing).
"""

from __future__ import annotations

from .diagnosis import Diagnosis, diagnose, likely_causes
from .ledger import Ledger
from .lint import LintIssue, lint
from .schema import Argument, Availability, Entry, RegistryError, SelfTestSpec
from .store import Registry, installed_versions, load

__all__ = [
    "load",
    "Registry",
    "Entry",
    "Argument",
    "SelfTestSpec",
    "Availability",
    "RegistryError",
    "diagnose",
    "Diagnosis",
    "likely_causes",
    "lint",
    "LintIssue",
    "Ledger",
    "installed_versions",
]
