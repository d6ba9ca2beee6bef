"""The pytest nodes behind the plugin: catalogue files and items, and the fixture's checker."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shlex
import sys

import pytest

from .. import options as opts
from ..engine import inputs as input_specs
from ..engine.diagnosis import messages
from ..engine.factories import TRANSLATE
from ..engine.settings import Constant, Settings
from ..errors import ParityError, ParityMismatch, ParityUnsupported, ParityUsageError
from ..judge.tolerance import ToleranceSpec
from ..nightly import records

_MARKER_KEYS = {"tolerance", "train", "ms_mode", "reference", "weights", "grads", "name_map", "ignore", "check_dtype"}
_TRAINING_MARKER_KEYS = {"tolerance", "ms_mode", "weights", "name_map", "ignore"}  # what check_training takes
_DATA_PARALLEL_MARKER_KEYS = {"tolerance", "name_map", "ignore"}  # what check_data_parallel takes
_GENERATION_MARKER_KEYS = {"tolerance", "weights", "name_map", "ignore"}  # what check_generation takes
_BLOCKS_MARKER_KEYS = {"tolerance", "ms_mode", "grads", "name_map", "ignore"}  # what check_blocks takes


def settings_for(config, nodeid: str, location: str, tolerances=()) -> Settings:
    """The session's settings (seed, mode, device) as the engine's checks take them."""
    seed = opts.parse_seed(config.getoption(opts.SEED.dest), opts.SEED.flag)
    mode = config.getoption(opts.MODE.dest)
    device = config.getoption(opts.DEVICE.dest)
    command = ["pytest", nodeid, opts.PARITY]
    if mode:
        command.append(f"{opts.MODE.flag}={mode}")
    if device != "CPU":
        command.append(f"{opts.DEVICE.flag}={device}")
    repro_dir = opts.parse_repro_dir(config.getoption(opts.REPRO.dest), opts.REPRO.flag, config.invocation_params.dir)
    return Settings(
        seed=seed,
        mode=mode,
        device=device,
        tolerances=tuple(tolerances),
        case=nodeid,
        location=location,
        reproduce=shlex.join(command),
        verbose=config.get_verbosity(),
        repro_dir=repro_dir,
    )


def _torch_at_hand(*, translated: bool) -> bool:
    """Whether a check against a reference builds PyTorch's side too (to refuse a stale reference):
    where PyTorch is imported already, or the MindSpore side is translated from it and it imports."""
    if sys.modules.get("torch") is not None:
        return True
    if not translated:
        return False
    try:  # a translated case needs it to build its MindSpore side: installed, and not blocked
        return importlib.util.find_spec("torch") is not None
    except (ImportError, ValueError):  # ValueError: sys.modules["torch"] is None
        return False


def _short_failure(excinfo):
    """Parity's own errors print as their message: no traceback from deep inside."""
    if isinstance(excinfo.value, ParityError):
        name = type(excinfo.value).__name__
        return f"{name}: {excinfo.value}"
    return None


@contextlib.contextmanager
def acknowledged(node, entry_ids):
    """Record, for the run summary, whether each acknowledged known mismatch showed (the check
    failed or met an unsupported feature) or stayed quiet (a stale acknowledgement)."""
    try:
        yield
    except (ParityMismatch, ParityUnsupported):
        node._parity_acks = [(entry_id, True) for entry_id in entry_ids]
        raise
    node._parity_acks = [(entry_id, False) for entry_id in entry_ids]


class CaseFile(pytest.File):
    """A catalogue module: one item per ParityCase variant; nothing is imported without --parity."""

    def collect(self):
        if not self.config.getoption(opts.PARITY):
            yield SkippedCases.from_parent(self, name="[needs --parity]")
            return
        from ..catalogue import load_cases

        try:
            cases = load_cases(self.path)
        except ParityUsageError as exc:
            raise self.CollectError(str(exc)) from None
        device = self.config.getoption(opts.DEVICE.dest)
        problems = [
            f"{self.path.name}:{case.line}: case {case.name!r}: {issue}"
            for case in cases
            for issue in case.lint(device=device)
        ]
        if problems:
            raise self.CollectError("\n".join(problems))
        for case in cases:
            for variant in case.variants():
                item = CaseItem.from_parent(self, name=variant.id, variant=variant)
                if case.xfail and self.config.getoption(opts.RECORD.dest) is not None:
                    # Recording is no check: an expected failure may record (a pass) or fail to (xfail).
                    item.add_marker(pytest.mark.xfail(reason=case.xfail, strict=False))
                elif case.xfail:
                    item.add_marker(
                        pytest.mark.xfail(reason=case.xfail, raises=(ParityMismatch, ParityUnsupported), strict=True)
                    )
                yield item


class SkippedCases(pytest.Item):
    def runtest(self):
        raise pytest.skip.Exception(SKIP_CASES, _use_item_location=True)

    def reportinfo(self):
        return self.path, 0, f"{self.path.name} (catalogue)"


SKIP_CASES = "parity catalogue: run with `pytest --parity` to build and compare these pairs"


class CaseItem(pytest.Item):
    def __init__(self, *, variant, **kwargs):
        super().__init__(**kwargs)
        self.variant = variant

    def runtest(self):
        from ..catalogue import build

        case = self.variant.case
        location = f"{self.path.relative_to(self.config.rootpath) if self.path.is_relative_to(self.config.rootpath) else self.path}:{case.line}"
        settings = settings_for(self.config, self.nodeid, location)
        record, reference = opts.parse_reference_dirs(
            self.config.getoption(opts.RECORD.dest),
            self.config.getoption(opts.REFERENCE.dest),
            self.config.invocation_params.dir,
        )
        if record is not None:
            self._record(record / self.reference_folder(), settings)
            return
        with (
            acknowledged(self, case.acknowledge),
            records.recording(self, settings, call="case", case=case.name) as recorded,
        ):
            try:
                if reference is not None:
                    result = self._against(reference, settings)
                else:
                    ms_cell, torch_module = build(case, device=settings.device, seed=settings.resolved_seed)
                    result = self.variant.run(ms_cell, torch_module, settings)
            except ParityMismatch as exc:
                self._parity_summary = messages.summary_line(self.nodeid, exc.result, expected=bool(case.xfail))
                raise
            recorded.result = result
        self._parity_summary = messages.summary_line(self.nodeid, result)

    def _record(self, path, settings) -> None:
        """``--parity-record``: PyTorch's side of this case, written to ``path``."""
        from ..catalogue import build_torch

        why = self.variant.unrecordable()
        if why is not None:
            pytest.skip(f"not recorded: {why}")
        path.parent.mkdir(parents=True, exist_ok=True)
        torch_module = build_torch(self.variant.case, device=settings.device, seed=settings.resolved_seed)
        self.variant.record(torch_module, settings, path)
        self._parity_summary = f"rec   {self.nodeid}: recorded into {path}"

    def _against(self, root, settings):
        """``--parity-reference``: this case's MindSpore side against its PyTorch side recorded under ``root``."""
        from ..catalogue import build, build_mindspore

        why = self.variant.unrecordable()
        if why is not None:
            pytest.skip(f"no recorded reference: {why}")
        case, seed = self.variant.case, settings.resolved_seed
        torch_module = None  # built where PyTorch is at hand, so that a stale reference is refused
        if _torch_at_hand(translated=case.mindspore == TRANSLATE):
            ms_cell, torch_module = build(case, device=settings.device, seed=seed)
        else:  # MindSpore's side alone
            ms_cell = build_mindspore(case, device=settings.device, seed=seed)
        path = root / self.reference_folder()
        if not path.is_dir():
            raise ParityUsageError(
                f"no recorded reference for {self.nodeid}: {path} does not exist. Record it first: "
                f"pytest --parity {opts.RECORD.flag}={root} {self.nodeid.split('::')[0]}"
            )
        return self.variant.run_recorded(ms_cell, path, settings, torch_module)

    def reference_folder(self) -> str:
        """This item's folder under ``--parity-record``/``--parity-reference``: the case file's path
        from the root without ``.py`` (``cases/models/conv``), then the item's name, in safe characters."""
        root = self.config.rootpath
        where = (
            self.path.relative_to(root).with_suffix("").as_posix() if self.path.is_relative_to(root) else self.path.stem
        )
        text = f"{where}/{self.name}"
        return "".join(c if c.isalnum() or c in "._-/" else "_" for c in text)

    def repr_failure(self, excinfo):
        return _short_failure(excinfo) or super().repr_failure(excinfo)

    def reportinfo(self):
        return self.path, self.variant.case.line - 1, self.name


class FixtureChecker:
    """What the ``parity`` fixture returns: ``check`` bound to the session and the marker, and
    the input specs, so that a test needs no second import of the package."""

    from ..catalogue import TRANSLATE
    from ..judge.tolerance import Tolerance

    randn, uniform, randint = (
        staticmethod(input_specs.randn),
        staticmethod(input_specs.uniform),
        staticmethod(input_specs.randint),
    )

    @staticmethod
    def constant(value: float):
        return Constant(float(value))

    def __init__(self, request):
        self._request = request
        marker = request.node.get_closest_marker("parity")
        self._defaults = dict(marker.kwargs) if marker else {}
        unknown = set(self._defaults) - _MARKER_KEYS
        if unknown:
            raise ParityUsageError(
                f"@pytest.mark.parity got unknown arguments {sorted(unknown)}; known: {sorted(_MARKER_KEYS)}"
            )
        self.results = []

    def check(self, ms_cell, torch_module, inputs=None, *, acknowledge=(), **kwargs):
        """:func:`parity.check` with this session's seed, mode and device. ``acknowledge`` names
        known mismatches the pair exhibits: the run summary reports those that did not show.
        ``torch_module`` may be a recorded reference (a path, or ``parity.recorded(path, module)``)."""
        __tracebackhide__ = True
        with acknowledged(self._request.node, tuple(acknowledge)):
            return self._check(ms_cell, torch_module, inputs, **kwargs)

    def _check(self, ms_cell, torch_module, inputs, **kwargs):
        __tracebackhide__ = True
        from ..engine.reference import Recorded

        if isinstance(torch_module, (str, os.PathLike, Recorded)):  # a recorded reference (see parity.record)
            from ..engine.reference.replay import run_reference

            given = torch_module if isinstance(torch_module, Recorded) else Recorded(torch_module)
            defaults = dict(self._defaults, torch_module=given.torch_module)
            return self._run(run_reference, "check", defaults, ms_cell, given.path, inputs, **kwargs)
        if inputs is None:
            raise ParityUsageError(
                "parity.check(ms_cell, torch_module, inputs): inputs are required (a recorded reference holds its own)"
            )
        from ..engine.check import run_check

        return self._run(run_check, "check", dict(self._defaults), ms_cell, torch_module, inputs, **kwargs)

    def _run(self, engine, call, defaults, ms_cell, torch_module, data, **kwargs):
        """Run ``engine`` (the check, the training check or the data-parallel check; ``call`` names
        it in the record) with the marker's ``defaults`` and this session's settings; the result
        (or the failure's) goes to the run summary."""
        __tracebackhide__ = True
        chain = (ToleranceSpec.parse(defaults.pop("tolerance", None), source="@pytest.mark.parity(tolerance=...)"),)
        node = self._request.node
        location = f"{node.location[0]}:{node.location[1] + 1}"
        settings = settings_for(node.config, node.nodeid, location, chain)
        with records.recording(node, settings, call=call, case=node.nodeid) as recorded:
            try:
                result = engine(ms_cell, torch_module, data, settings=settings, **{**defaults, **kwargs})
            except ParityMismatch as exc:
                node._parity_summary = messages.summary_line(node.nodeid, exc.result)
                raise
            recorded.result = result
        self.results.append(result)
        node._parity_summary = messages.summary_line(node.nodeid, result)
        return result

    def check_training(self, ms_cell, torch_module, batches, *, acknowledge=(), **kwargs):
        """:func:`parity.check_training` with this session's seed, mode and device, and the
        marker's ``tolerance``, ``ms_mode``, ``weights`` and ``name_map``."""
        __tracebackhide__ = True
        with acknowledged(self._request.node, tuple(acknowledge)):
            return self._check_training(ms_cell, torch_module, batches, **kwargs)

    def _check_training(self, ms_cell, torch_module, batches, **kwargs):
        __tracebackhide__ = True
        from ..engine.training.loop import run_training

        defaults = {k: v for k, v in self._defaults.items() if k in _TRAINING_MARKER_KEYS}
        return self._run(run_training, "check_training", defaults, ms_cell, torch_module, batches, **kwargs)

    def check_data_parallel(self, ms_factory, torch_factory, batches, *, acknowledge=(), **kwargs):
        """:func:`parity.check_data_parallel` with this session's seed and device, and the marker's
        ``tolerance``, ``name_map`` and ``ignore``. It trains in PyNative mode: a session in graph mode alone
        gets :class:`ParityUnsupported`."""
        __tracebackhide__ = True
        with acknowledged(self._request.node, tuple(acknowledge)):
            return self._check_data_parallel(ms_factory, torch_factory, batches, **kwargs)

    def _check_data_parallel(self, ms_factory, torch_factory, batches, **kwargs):
        __tracebackhide__ = True
        from ..engine.data_parallel.run import run_data_parallel

        defaults = {k: v for k, v in self._defaults.items() if k in _DATA_PARALLEL_MARKER_KEYS}
        return self._run(
            run_data_parallel, "check_data_parallel", defaults, ms_factory, torch_factory, batches, **kwargs
        )

    def check_generation(self, ms_model, torch_model, prompt, **kwargs):
        """:func:`parity.check_generation` with this session's seed, mode and device, and the
        marker's ``tolerance``, ``weights`` and ``name_map``."""
        __tracebackhide__ = True
        from ..engine.generation.run import run_generation

        defaults = {k: v for k, v in self._defaults.items() if k in _GENERATION_MARKER_KEYS}
        return self._run(run_generation, "check_generation", defaults, ms_model, torch_model, prompt, **kwargs)

    def check_shapes(self, ms_cell, torch_module, inputs, *, acknowledge=(), **kwargs):
        """:func:`parity.check_shapes` with this session's seed, mode and device, and the marker's
        arguments (as :meth:`check` takes them)."""
        __tracebackhide__ = True
        from ..engine.shapes.run import run_shapes

        with acknowledged(self._request.node, tuple(acknowledge)):
            return self._run(run_shapes, "check_shapes", dict(self._defaults), ms_cell, torch_module, inputs, **kwargs)

    def check_blocks(self, ms_block, torch_block, count, inputs, *, acknowledge=(), **kwargs):
        """:func:`parity.check_blocks` with this session's seed, mode and device, and the marker's
        ``tolerance``, ``ms_mode``, ``grads``, ``name_map`` and ``ignore`` (for every block)."""
        __tracebackhide__ = True
        from ..engine.blocks.run import run_blocks

        def blocks(ms_factory, torch_factory, data, **options):
            __tracebackhide__ = True
            return run_blocks(ms_factory, torch_factory, count, data, **options)

        defaults = {k: v for k, v in self._defaults.items() if k in _BLOCKS_MARKER_KEYS}
        with acknowledged(self._request.node, tuple(acknowledge)):
            return self._run(blocks, "check_blocks", defaults, ms_block, torch_block, inputs, **kwargs)

    def translate(self, torch_module, inputs=None, **kwargs):
        """:func:`parity.translate` for this session's device (``--parity-device``) and seed
        (``--parity-seed``): the inputs drawn as this fixture's ``check`` draws them."""
        from ..engine.translating import run_translate

        node = self._request.node
        settings = settings_for(node.config, node.nodeid, "")
        device = kwargs.pop("device", None) or settings.device
        return run_translate(torch_module, inputs, device=device, default_seed=settings.seed, **kwargs)
