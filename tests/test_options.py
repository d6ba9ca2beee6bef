"""The check family's defaults are written once, in :class:`parity.engine.settings.CheckOptions`:
every public function, every engine entry point and the catalogue's ``ParityCase`` and
``Training`` give each option the dataclass's default. (The engine's entry points import the
frameworks, so this module is not in the framework-free tier.)"""

from __future__ import annotations

import dataclasses
import inspect

import pytest

import parity
from parity.catalogue import ParityCase, Training
from parity.engine.check import _run_check
from parity.engine.data_parallel.run import run_data_parallel
from parity.engine.generation.run import run_generation
from parity.engine.settings import CheckOptions
from parity.engine.training.loop import run_training

DEFAULTS = {f.name: f.default for f in dataclasses.fields(CheckOptions)}
# check_data_parallel's ``steps`` is its own field: it trains fewer steps than check_training
DATA_PARALLEL = {"steps": "data_parallel_steps"}

FUNCTIONS = [
    (parity.check, {}),
    (parity.check_training, {}),
    (parity.check_data_parallel, DATA_PARALLEL),
    (parity.check_generation, {}),
    (parity.record, {}),
    (_run_check, {}),
    (run_training, {}),
    (run_data_parallel, DATA_PARALLEL),
    (run_generation, {}),
]


def _options(function, renamed):
    """(parameter, field) for each parameter of ``function`` that is an option of the family."""
    for name, parameter in inspect.signature(function).parameters.items():
        field = renamed.get(name, name)
        if field in DEFAULTS and parameter.default is not inspect.Parameter.empty:
            yield name, field, parameter.default


@pytest.mark.parametrize("function, renamed", FUNCTIONS, ids=lambda f: getattr(f, "__qualname__", ""))
def test_every_default_is_the_dataclass_default(function, renamed):
    found = list(_options(function, renamed))
    assert found, f"{function.__qualname__} takes none of CheckOptions' options"
    wrong = [
        f"{name}={default!r} (CheckOptions.{field} is {DEFAULTS[field]!r})"
        for name, field, default in found
        # the engine's check takes ms_mode=None from the catalogue: "the session decides"
        if default != DEFAULTS[field] and not (function is _run_check and name == "ms_mode" and default is None)
    ]
    assert not wrong, f"{function.__module__}.{function.__qualname__}: " + ", ".join(wrong)


def test_the_public_functions_take_every_option_they_document():
    """Each public function's options (its keyword-only arguments) are fields of the dataclass, so
    no default lives elsewhere (the required ``loss``/``optimizer`` have none)."""
    for function, renamed in FUNCTIONS[:4]:  # record's layers and force are its own
        for name, parameter in inspect.signature(function).parameters.items():
            if parameter.kind is not inspect.Parameter.KEYWORD_ONLY or parameter.default is inspect.Parameter.empty:
                continue  # check's inputs=None: where the reference holds them
            assert renamed.get(name, name) in DEFAULTS, f"{function.__qualname__}({name}=...) is not in CheckOptions"


@pytest.mark.parametrize("declared", [ParityCase, Training], ids=lambda c: c.__name__)
def test_the_catalogue_takes_the_same_defaults(declared):
    shared = [f for f in dataclasses.fields(declared) if f.name in DEFAULTS and f.name != "ms_mode"]
    assert shared
    wrong = [f"{f.name}={f.default!r}" for f in shared if f.default != DEFAULTS[f.name]]
    assert not wrong, f"{declared.__name__}: " + ", ".join(wrong)


def test_a_changed_default_is_caught():
    """The comparison above can fail: a signature with another default is named."""

    def check(ms_cell, torch_module, inputs, *, grads=False, seed=CheckOptions.seed):
        pass

    found = {name: default for name, _, default in _options(check, {})}
    assert found == {"grads": False, "seed": None}
    assert found["grads"] != DEFAULTS["grads"]
