"""pytest-parity: prove that a MindSpore Cell and a PyTorch Module compute the same numbers."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Callable, Dict, Optional, Sequence, Union

from .catalogue import TRANSLATE, ParityCase, Training
from .engine.settings import CheckOptions
from .errors import (
    ParityError,
    ParityInternalError,
    ParityMismatch,
    ParityNoRepro,
    ParityUnsupported,
    ParityUsageError,
    ParityWarning,
)
from .judge.tolerance import Tolerance

if TYPE_CHECKING:
    import pathlib

    from .engine.amp import Amp
    from .engine.blocks.result import BlocksResult
    from .engine.data_parallel.result import DataParallelResult
    from .engine.generation.result import GenerationResult
    from .engine.result import Result
    from .engine.settings import Constant
    from .engine.shapes.result import ShapesResult
    from .engine.training.result import TrainingResult
    from .judge.tolerance import ToleranceLike
    from .tools.convert.checkpoint import ConversionReport
    from .tools.dumps.compare import DumpComparison
    from .tools.dumps.statistics import SummaryComparison
    from .weights.transfer import NameMap, WeightReport

    Path = Union[str, "os.PathLike[str]"]

__all__ = [
    "check",
    "record",
    "recorded",
    "constant",
    "transfer_weights",
    "Result",
    "WeightReport",
    "ParityCase",
    "Tolerance",
    "randn",
    "uniform",
    "randint",
    "ParityError",
    "ParityMismatch",
    "ParityWarning",
    "ParityUsageError",
    "ParityUnsupported",
    "ParityInternalError",
    "ParityNoRepro",
    "translate",
    "TRANSLATE",
    "check_training",
    "TrainingResult",
    "Training",
    "plot_training",
    "fuse",
    "transpose",
    "reshape",
    "convert_checkpoint",
    "ConversionReport",
    "compare_dumps",
    "DumpComparison",
    "check_data_parallel",
    "DataParallelResult",
    "amp",
    "Amp",
    "check_generation",
    "GenerationResult",
    "check_shapes",
    "ShapesResult",
    "check_blocks",
    "BlocksResult",
]
__version__ = "0.2.0"


def constant(value: float) -> Constant:
    """``weights=parity.constant(0.1)``: every floating weight and buffer on both sides set to ``value``."""
    from .engine.settings import Constant

    return Constant(float(value))


def check(
    ms_cell: Any,
    torch_module: Any,
    inputs: Any = None,
    *,
    weights: Union[str, Constant] = CheckOptions.weights,
    grads: bool = CheckOptions.grads,
    train: bool = CheckOptions.train,
    ms_mode: str = CheckOptions.ms_mode,
    tolerance: ToleranceLike = CheckOptions.tolerance,
    name_map: NameMap = CheckOptions.name_map,
    ignore: Sequence[str] = CheckOptions.ignore,
    seed: Optional[int] = CheckOptions.seed,
    reference: Optional[str] = CheckOptions.reference,
    check_dtype: bool = CheckOptions.check_dtype,
    localize: Union[str, bool] = CheckOptions.localize,
    amp: Union[None, str, Amp] = CheckOptions.amp,
) -> Result:
    """Run ``ms_cell`` and ``torch_module`` on the same seeded inputs with the same weights, and
    compare forward outputs, input gradients, parameter gradients and (in train mode) running
    statistics. Returns a :class:`Result`; raises :class:`ParityMismatch` when anything is out
    of tolerance and :class:`ParityUsageError` when the call itself is wrong.

    * ``weights``: ``"copy"`` (PyTorch -> MindSpore), ``"copy_to_torch"``, ``parity.constant(v)``,
      or ``"as_is"``.
    * ``inputs``: an array or spec (``parity.randn(...)``), a tuple of them, or a dict of keyword inputs.
    * ``torch_module`` may be the path of a reference :func:`record` wrote: PyTorch's side is then
      read from it (PyTorch is not imported), on the recorded inputs (``inputs=None``; inputs
      given must be those recorded), seed, ``grads`` and ``train``. ``parity.recorded(path,
      torch_module)`` refuses it where the module no longer is what was recorded.
    * ``tolerance``: ``Tolerance(rtol, atol)``, or ``{"*": ..., "features.3.*": ...}`` name-glob overrides.
    * ``ignore``: names or ``fnmatch`` patterns of parameters and buffers of either side that
      nothing should pair: left as built, and named in ``Result.weights``.
    * A tensor above half its tolerance is judged again against PyTorch's own rounding envelope
      (mirrored perturbed runs plus float64; see docs/explanation/judging.md).
      ``reference="float64"``: run the float64 pass up front and give the localiser per-layer
      float64 noise floors.
    * ``localize``: capture every sub-layer's inputs, outputs and gradients on both sides in the
      same passes and name the first divergent layer: ``"auto"`` reports it on failure, ``True``
      always keeps the layer table in ``Result.layers``, ``False`` captures nothing.
    * ``amp``: a mixed-precision pair, ``"O1"`` (``"O0"``, ``"O2"``, ``"O3"``, ``"auto"``) or
      ``parity.amp(level, dtype="float16", torch="autocast" | "half")``: a copy of ``ms_cell`` through
      ``mindspore.amp.auto_mixed_precision`` against ``torch_module`` under ``torch.autocast`` (or a
      ``.half()`` copy), judged against the float64 golden; ``Result.precisions`` says which
      precision each layer ran in on each side, and a failure names a layer where they differ.
    """
    from .engine.reference import Recorded

    options: Dict[str, Any] = dict(
        weights=weights,
        grads=grads,
        train=train,
        ms_mode=ms_mode,
        tolerance=tolerance,
        name_map=name_map,
        ignore=ignore,
        seed=seed,
        reference=reference,
        check_dtype=check_dtype,
        localize=localize,
        amp=amp,
    )
    if isinstance(torch_module, (str, os.PathLike, Recorded)):  # a recorded reference (see parity.record)
        from .engine.reference.replay import run_reference

        given = torch_module if isinstance(torch_module, Recorded) else Recorded(torch_module)
        return run_reference(ms_cell, given.path, inputs, torch_module=given.torch_module, **options)
    if inputs is None:
        raise ParityUsageError(
            "check(ms_cell, torch_module, inputs): inputs are required (a recorded reference holds its own)"
        )
    from .engine.check import run_check

    return run_check(ms_cell, torch_module, inputs, **options)


def record(
    torch_module: Any,
    inputs: Any,
    path: Path,
    *,
    grads: bool = CheckOptions.grads,
    train: bool = CheckOptions.train,
    seed: Optional[int] = CheckOptions.seed,
    tolerance: ToleranceLike = CheckOptions.tolerance,
    reference: Optional[str] = CheckOptions.reference,
    layers: Union[bool, str] = True,
    weights: Union[str, Constant] = CheckOptions.weights,
    force: bool = False,
) -> pathlib.Path:
    """Run PyTorch's side of a check once and write it to the folder ``path`` (``reference.json``
    and the arrays in ``part-N.safetensors`` files), so that ``parity.check(ms_cell, path)``
    checks a MindSpore Cell against it later without PyTorch. Recorded: the weights (by PyTorch's
    names), the seeded inputs, the outputs, the input and parameter gradients (``grads``), the
    running statistics (``train``), every run of the rounding envelope, the tolerance, the
    environment, and a key over the module's weights, its classes' source, the inputs and
    PyTorch's version. ``layers``: ``True`` records each layer call's inputs, outputs and gradients
    with their float64 noise floors (a failure's first divergence) and the envelope's runs of each
    layer fed (its own error; most of a reference's size); ``"calls"`` leaves those runs out (own
    errors are then judged by their tolerance alone); ``False`` records no layers. Returns the
    folder's path.

    ``inputs``, ``seed``, ``grads``, ``train``, ``tolerance``, ``reference`` and ``weights``
    (``"copy"``, ``"as_is"`` or ``parity.constant(v)``) are :func:`check`'s; a check against the
    reference takes the recorded ones (and refuses others it is given). ``force``: replace a
    read-only reference."""
    from .engine.reference.record import run_record

    return run_record(
        torch_module,
        inputs,
        path,
        grads=grads,
        train=train,
        seed=seed,
        tolerance=tolerance,
        reference=reference,
        layers=layers,
        weights=weights,
        force=force,
    )


def check_training(
    ms_cell: Any,
    torch_module: Any,
    batches: Any,
    *,
    loss: Any,
    optimizer: Any,
    steps: int = CheckOptions.steps,
    lr_scheduler: Any = CheckOptions.lr_scheduler,
    clip_grad_norm: Optional[float] = CheckOptions.clip_grad_norm,
    loss_scale: Any = CheckOptions.loss_scale,
    accumulate: int = CheckOptions.accumulate,
    weights: Union[str, Constant] = CheckOptions.weights,
    ms_mode: str = CheckOptions.ms_mode,
    tolerance: ToleranceLike = CheckOptions.tolerance,
    name_map: NameMap = CheckOptions.name_map,
    ignore: Sequence[str] = CheckOptions.ignore,
    seed: Optional[int] = CheckOptions.seed,
) -> TrainingResult:
    """Train ``ms_cell`` and ``torch_module`` from the same weights on the same batches for
    ``steps`` optimizer steps and compare, step by step: the loss, every parameter gradient, the
    optimizer state (moments, momentum buffers, step counts, learning rates), the parameters after
    the update and the running statistics. Returns a :class:`TrainingResult`; raises
    :class:`ParityMismatch` naming the first (step, stage, parameter) out of tolerance.

    * ``batches``: a list of ``(inputs, target)`` pairs (arrays or specs such as
      ``parity.randn(...)``, ``parity.randint(...)``), cycled for ``steps * accumulate`` micro-batches.
    * ``loss``: a PyTorch loss Module (translated to MindSpore), or ``(ms_loss, torch_loss)``.
    * ``optimizer``: ``lambda params: torch.optim.Adam(params, ...)`` (translated: SGD, Adam, AdamW,
      RMSprop, Adagrad with PyTorch's formulas, param groups included), or
      ``(ms_factory, torch_factory)`` for your own MindSpore optimizer.
    * ``lr_scheduler``: ``lambda opt: torch.optim.lr_scheduler.StepLR(opt, step_size=2)``, stepped after
      every step; for a translated optimizer it drives both sides' learning rates. With
      ``optimizer=(ms_factory, torch_factory)``, a pair ``(ms_factory or None, torch_factory)``.
    * ``clip_grad_norm``: PyTorch's ``clip_grad_norm_(max_norm)`` on both sides before each update.
    * ``loss_scale``: ``lambda: torch.amp.GradScaler("cpu")`` (translated to
      ``mindspore.amp.DynamicLossScaler``), or ``(ms_factory, torch_factory)`` for your own
      MindSpore loss scaler; per step, whether each side skipped the update on an overflow must
      agree (stage ``scale``), and gradients are compared unscaled.
    * ``accumulate``: micro-batches per step, each loss divided by ``accumulate``, gradients summed.
    * ``ignore``: as :func:`check`'s.
    """
    from .engine.training.loop import run_training

    return run_training(
        ms_cell,
        torch_module,
        batches,
        loss=loss,
        optimizer=optimizer,
        steps=steps,
        lr_scheduler=lr_scheduler,
        clip_grad_norm=clip_grad_norm,
        loss_scale=loss_scale,
        accumulate=accumulate,
        weights=weights,
        ms_mode=ms_mode,
        tolerance=tolerance,
        name_map=name_map,
        ignore=ignore,
        seed=seed,
    )


def check_data_parallel(
    ms_factory: Any,
    torch_factory: Any,
    batches: Any,
    *,
    loss: Any,
    optimizer: Any,
    steps: int = CheckOptions.data_parallel_steps,
    workers: int = CheckOptions.workers,
    shard: Any = CheckOptions.shard,
    tolerance: ToleranceLike = CheckOptions.tolerance,
    name_map: NameMap = CheckOptions.name_map,
    ignore: Sequence[str] = CheckOptions.ignore,
    seed: Optional[int] = CheckOptions.seed,
    timeout: float = CheckOptions.timeout,
) -> DataParallelResult:
    """Train the same model on each global batch in one process and across ``workers`` processes
    (each on its shard, gradients all-reduced as a mean), in MindSpore (under ``msrun``, backend
    ``mccl``) and in PyTorch (``torch.distributed`` over gloo, ``DistributedDataParallel``), from
    PyTorch's initial weights, and compare the four runs step by step: the loss, the applied
    gradients, the parameters after the update and the buffers, each by its tolerance and, near or
    beyond it, against PyTorch's rounding envelope (as :func:`check_training`). Returns a
    :class:`DataParallelResult`; raises :class:`ParityMismatch` naming the run that disagrees, or the
    worker that trained on the wrong rows, and :class:`ParityUnsupported` where a launcher is missing.

    * ``ms_factory``, ``torch_factory``: ``"package.module:Name"`` or a module-level callable (the
      workers import them); ``ms_factory=parity.TRANSLATE`` translates the PyTorch model.
    * ``batches``, ``loss``, ``optimizer``: as :func:`check_training` takes them (a PyTorch loss and
      optimizer factory, translated); each batch is a global batch, its size divisible by ``workers``.
    * ``shard``: ``fn(rank, world, rows) -> row indices`` (importable), or a pair for MindSpore and
      PyTorch; default rows ``rank, rank + world, ...``.
    * ``ignore``: as :func:`check`'s, in every run's weight map.
    * ``timeout``: seconds each framework's workers may take.
    """
    from .engine.data_parallel.run import run_data_parallel

    return run_data_parallel(
        ms_factory,
        torch_factory,
        batches,
        loss=loss,
        optimizer=optimizer,
        steps=steps,
        workers=workers,
        shard=shard,
        tolerance=tolerance,
        name_map=name_map,
        ignore=ignore,
        seed=seed,
        timeout=timeout,
    )


def check_generation(
    ms_model: Any,
    torch_model: Any,
    prompt: Any,
    *,
    max_new_tokens: int = CheckOptions.max_new_tokens,
    weights: Union[str, Constant] = CheckOptions.weights,
    name_map: NameMap = CheckOptions.name_map,
    ignore: Sequence[str] = CheckOptions.ignore,
    tolerance: ToleranceLike = CheckOptions.tolerance,
    seed: Optional[int] = CheckOptions.seed,
    use_cache: bool = CheckOptions.use_cache,
    ms_step: Optional[Callable[..., Any]] = CheckOptions.ms_step,
) -> GenerationResult:
    """Decode greedily on both sides from the same ``prompt`` (int64 token ids, a batch of rows:
    an array or ``parity.randint((batch, length), 0, vocab)``) for ``max_new_tokens`` steps, from the
    same weights, and compare the last position's logits at every step by tolerance and, near or
    beyond it, against PyTorch's rounding envelope. Returns a :class:`GenerationResult`
    (``passed``, ``ms_tokens``, ``torch_tokens``, ``first_difference``, ``near_ties``); raises
    :class:`ParityMismatch` naming the step, the row, both tokens, the logit gap and the first
    divergent layer at that step.

    * A token the sides choose differently where PyTorch's logits of the two tokens are within what
      the tolerance and its rounding envelope allow them is a near-tie: reported, not a failure.
      Both sides go on from PyTorch's tokens, so every step is compared on the same sequence.
    * Each model takes the ids and returns the logits (a tensor, a tuple whose first element they
      are, or an output with ``.logits``: a Hugging Face model as it is).
    * ``ms_step(ms_model, input_ids, cache) -> (logits, cache)``: how to call the MindSpore model
      where ``ms_model(input_ids)`` will not do (another argument, such as an attention mask; a
      cache). ``use_cache=True`` needs it: PyTorch's side then follows Hugging Face's
      ``past_key_values``, MindSpore's this convention (``cache`` None at the first step), and each
      step feeds the newest token only.
    * ``ignore``: as :func:`check`'s.
    """
    from .engine.generation.run import run_generation

    return run_generation(
        ms_model,
        torch_model,
        prompt,
        max_new_tokens=max_new_tokens,
        weights=weights,
        name_map=name_map,
        ignore=ignore,
        tolerance=tolerance,
        seed=seed,
        use_cache=use_cache,
        ms_step=ms_step,
    )


def check_shapes(ms_cell: Any, torch_module: Any, inputs: Sequence[Any], **check_options: Any) -> ShapesResult:
    """:func:`check` over several input shapes: ``inputs`` is a list, one entry per shape, each as
    :func:`check` takes inputs (``[parity.randn((1, 5, 8)), parity.randn((3, 17, 8))]``); the other
    keyword arguments are :func:`check`'s. Every shape is judged as :func:`check` judges it. In
    GRAPH mode (``ms_mode="graph"`` or ``"both"``) the Cell is compiled once for a dynamic signature
    (``Cell.set_inputs``, a dimension that varies among the entries being ``None``) and run on every
    shape. Returns a :class:`ShapesResult`; raises :class:`ParityMismatch` naming each shape for
    which MindSpore computes differently, fails, or compiles again."""
    from .engine.shapes.run import run_shapes

    return run_shapes(ms_cell, torch_module, inputs, **check_options)


def check_blocks(
    ms_block: Callable[[int], Any],
    torch_block: Callable[[int], Any],
    count: int,
    inputs: Any,
    *,
    torch_weights: Path,
    ms_weights: Optional[Path] = None,
    prefix: str = "model.layers.{i}.",
    ms_prefix: Optional[str] = None,
    shared: Sequence[Any] = (),
    grads: bool = CheckOptions.grads,
    ms_mode: str = CheckOptions.ms_mode,
    tolerance: ToleranceLike = CheckOptions.tolerance,
    name_map: NameMap = CheckOptions.name_map,
    ignore: Sequence[str] = CheckOptions.ignore,
    seed: Optional[int] = CheckOptions.seed,
) -> BlocksResult:
    """Check a model too large for memory block by block, from its real weights: for ``i`` in
    ``range(count)``, ``torch_block(i)`` and ``ms_block(i)`` build block ``i`` of each side (a
    decoder layer: its initial weights do not matter), PyTorch's is loaded with the keys under
    ``prefix.format(i=i)`` of ``torch_weights`` (names after the prefix; safetensors memory-mapped
    and read key by key, or a ``.bin``/``.pt``; bfloat16 read as float32), and the pair is checked
    as :func:`check` checks it, fed PyTorch's output of the block before (``inputs`` for block 0).
    Each block is freed before the next is built. Returns a :class:`BlocksResult` (``blocks``: each
    block's :class:`Result`; ``first_failing``; ``end_to_end``); raises :class:`ParityMismatch`
    naming the first failing block, and :class:`ParityUsageError` naming the block and the key a
    checkpoint lacks, or the blocks it does not hold.

    * A checkpoint sharded over several safetensors files is given as its index
      (``model.safetensors.index.json``: Hugging Face's ``weight_map``, each key -> its file) or
      the folder holding it; each key is read from its file.
    * ``ms_weights``: MindSpore's own checkpoint (``.safetensors`` or ``.ckpt``, names under
      ``ms_prefix``, by default ``prefix``); without it, PyTorch's weights are copied across through
      the weight map, as :func:`check` copies them (``name_map`` and ``ignore`` are its).
    * ``inputs``: block 0's one input (an array or ``parity.randn(...)``); ``shared``: the arrays
      every block takes after it, given once (an attention mask, the rotary ``cos`` and ``sin``).
      A block taking a tuple (``position_embeddings=(cos, sin)``) is adapted by a subclass whose
      ``forward``/``construct`` takes them one by one.
    * Each block's output (its first, where it returns several) feeds the next. MindSpore's blocks
      are run on their own outputs too: each block's ``chained`` comparison, and ``end_to_end`` the
      last, say how far its error grew over the blocks; they are reported, and fail nothing.
    * With ``grads``, the backward is also chained end to end: each block's input on each side is
      kept (one array per block per side), and the blocks are built again from the last to the
      first, each side differentiated on its own kept input with the cotangent its block after
      handed back (the last block's: the seeded one :func:`check` draws, the same on both sides).
      Each block's ``chained_grads`` and ``end_to_end_grad`` (the gradient reaching block 0's
      input; ``chained_input_grad``: both sides' arrays) are reported like ``chained``.
    * ``grads``, ``ms_mode``, ``tolerance`` and ``seed`` are :func:`check`'s, for every block.
    """
    from .engine.blocks.run import run_blocks

    return run_blocks(
        ms_block,
        torch_block,
        count,
        inputs,
        torch_weights=os.fspath(torch_weights) if isinstance(torch_weights, os.PathLike) else torch_weights,
        ms_weights=os.fspath(ms_weights) if isinstance(ms_weights, os.PathLike) else ms_weights,
        prefix=prefix,
        ms_prefix=ms_prefix,
        shared=shared,
        grads=grads,
        ms_mode=ms_mode,
        tolerance=tolerance,
        name_map=name_map,
        ignore=ignore,
        seed=seed,
    )


def convert_checkpoint(
    src: Path,
    model: Any,
    dst: Optional[Path] = None,
    *,
    name_map: NameMap = None,
    allow_missing: bool = False,
    allow_cast: bool = False,
    force: bool = False,
) -> ConversionReport:
    """Convert the checkpoint ``src`` for ``model`` and write it to ``dst``, through the weight map
    :func:`check` uses; reload it into ``model`` and verify every tensor bit for bit. ``model`` is a
    MindSpore Cell (``src`` a PyTorch ``.pth``/``.pt``/``.bin``/``.safetensors``, ``dst`` a ``.ckpt``
    or ``.safetensors``) or a PyTorch Module (the other way round); ``dst=None`` only loads ``model``.
    Returns a :class:`ConversionReport`; nothing is written when a tensor is missing, unexpected
    or of another shape, unless ``allow_missing``, nor when a cast to the model's dtype loses values,
    unless ``allow_cast``; a read-only ``dst`` is replaced only with ``force``. See
    :mod:`parity.tools.convert.checkpoint`."""
    from .tools.convert.checkpoint import convert_checkpoint as _convert

    return _convert(src, model, dst, name_map=name_map, allow_missing=allow_missing, allow_cast=allow_cast, force=force)


def compare_dumps(
    a: Path,
    b: Path,
    *,
    name_map: NameMap = None,
    tolerance: ToleranceLike = None,
    allow_unpaired: bool = False,
    layout_a: Any = None,
    layout_b: Any = None,
) -> Union[DumpComparison, SummaryComparison]:
    """Compare two sets of saved tensors (folders of ``.npy``/``.npz`` files, TroubleShooter and
    msprobe dumps, MindSpore ``.ckpt``, PyTorch ``.pth``/``.pt``/``.bin``, ``.safetensors``, or one
    such file each), paired by name as :func:`check` pairs weights and judged with its metrics and
    tolerances (by tolerance alone: there is no model to run). Returns a :class:`DumpComparison`
    with the pairs in execution order; see :mod:`parity.tools.dumps.compare`. Numpy files import no framework.
    msprobe's statistics and md5 dumps (``dump.json`` without saved tensors) are compared node by node
    by their statistics instead, into a ``SummaryComparison`` (:mod:`parity.tools.dumps.statistics`).
    A tensor (node) of either side that did not pair fails the comparison unless ``allow_unpaired``.
    ``layout_a``/``layout_b``: that side is a sharded dump (``rank{N}`` folders, or msprobe's
    ``step{S}/rank{N}``) reassembled by this layout file (see docs/how-to/compare-dumps.md, "Sharded runs")."""
    from .tools.dumps.compare import compare_dumps as _compare_dumps

    return _compare_dumps(
        a,
        b,
        name_map=name_map,
        tolerance=tolerance,
        allow_unpaired=allow_unpaired,
        layout_a=layout_a,
        layout_b=layout_b,
    )


def translate(
    torch_module: Any, inputs: Any = None, *, device: str = "CPU", seed: Optional[int] = None, emit: Any = None
) -> Any:
    """Build the MindSpore counterpart of ``torch_module`` with equivalent arguments and the same
    weights. Raises :class:`ParityUnsupported` naming what cannot be translated: every blocker in the
    model at once, grouped by what blocks, with the modules each blocks.

    ``inputs`` (as :func:`check` takes them: arrays, specs, a tuple, a dict of keyword inputs, drawn
    under ``seed`` as ``check`` draws them): each ``forward`` is traced on the values it receives
    from them, so that code branching on shapes, dtypes and values translates; each branch taken is
    a guard, and a call of the Cell that would take another is refused (a ``ParityUsageError``).

    ``emit`` (a folder; needs ``inputs``): the translation is also written there as a Python package
    of MindSpore Cells to read and edit, one class per traced Module, that runs in GRAPH mode as well
    as PYNATIVE: ``build()`` in it gives the model with the translated weights (docs/translate.md)."""
    from .engine.translating import run_translate

    return run_translate(torch_module, inputs, device=device, seed=seed, emit=emit)


def transfer_weights(src: Any, dst: Any, *, name_map: NameMap = None, ignore: Sequence[str] = ()) -> WeightReport:
    """Copy every parameter and buffer from ``src`` to ``dst`` (a MindSpore Cell and a PyTorch
    Module, either way round) and verify the copy. ``name_map`` maps PyTorch names to MindSpore
    names, or names one tensor made of several of the other side's (``parity.fuse``), transposed
    (``parity.transpose``) or reshaped (``parity.reshape``); ``ignore``: names or ``fnmatch``
    patterns of tensors of either side left as they are (as :func:`check`'s). Returns a
    :class:`WeightReport`."""
    from .engine.pairing import transfer

    return transfer(src, dst, name_map=name_map, ignore=ignore)


_LAZY = {
    "recorded": "engine.reference",
    "randn": "engine.inputs",
    "uniform": "engine.inputs",
    "randint": "engine.inputs",
    "Result": "engine.result",
    "WeightReport": "weights.transfer",
    "TrainingResult": "engine.training.result",
    "plot_training": "nightly.plot",
    "fuse": "weights.layouts",
    "transpose": "weights.layouts",
    "reshape": "weights.layouts",
    "ConversionReport": "tools.convert.checkpoint",
    "DumpComparison": "tools.dumps.compare",
    "DataParallelResult": "engine.data_parallel.result",
    "amp": "engine.amp",
    "Amp": "engine.amp",
    "GenerationResult": "engine.generation.result",
    "ShapesResult": "engine.shapes.result",
    "BlocksResult": "engine.blocks.result",
}


def __getattr__(name: str) -> Any:
    """Numpy-backed names load on first use, so that loading the pytest plugin stays cheap."""
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module 'parity' has no attribute {name!r}")
