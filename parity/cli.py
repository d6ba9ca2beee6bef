"""``parity``: list or run the catalogue without pytest, through the same engine as the plugin.

    parity list [PATH ...]
    parity run [PATH ...] [-k TEXT] [--parity-seed N] [--parity-mode MODE] [--parity-device DEV] [--plot DIR]
    parity scan PATH [--json] [--device CPU|GPU|Ascend] [--module PKG.MOD:FACTORY --input-shape N,C,H,W | --input-int SHAPE:LOW:HIGH]
    parity translate PKG.MOD:FACTORY --emit DIR (--input-shape N,C,H,W | --input-int SHAPE:LOW:HIGH | --inputs PKG.MOD:NAME)
                     [--seed N] [--device CPU|GPU|Ascend]
    parity convert SRC DST (--cell PKG.MOD:FACTORY | --module PKG.MOD:FACTORY) [--name-map FILE] [--allow-missing]
                   [--allow-cast] [--force]
    parity report RUN.jsonl [RUN2.jsonl ...] [--baseline DIR] [--html OUT.html] [--markdown OUT.md] [--save-baseline DIR]
    parity compare-dumps A B [--json] [--name-map FILE] [--tolerance FILE]
    parity doctor
    parity --version

``--plot DIR`` writes each training item's loss curves and per-step margins to ``DIR/<item>.html``
(:func:`parity.plot_training`), whether it passed or failed.

PATH defaults to ``cases``. Exit status: 0 all passed (expected failures included), 1 a case
failed, 2 a usage error. ``parity scan`` (:mod:`parity.tools.scan.scanner`) exits 0 once it has reported (files
that do not parse are listed as skipped), 2 on a usage error. ``parity convert``
(:mod:`parity.tools.convert.checkpoint`) exits 0 once the file is written and verified, 2 when nothing was written.
``parity translate`` exits 0 once the package is written, 2 when nothing was (a usage error, or what cannot be
translated or written, named). ``parity report`` (:mod:`parity.nightly.cli`) exits 0 once written, 1 when a check failed or drifted.
``parity compare-dumps`` (:mod:`parity.tools.dumps.cli`) exits 0 when every paired tensor agrees, 1 when
some differ, 2 on a usage error. ``parity doctor`` (:mod:`parity.tools.doctor.cli`) exits 0 when checks can
run in this environment, 1 when they cannot.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, List, Optional

from . import __version__
from . import options as opts
from .catalogue import build, iter_case_files, load_cases
from .engine.settings import Settings
from .errors import ParityMismatch, ParityUnsupported, ParityUsageError
from .nightly import cli as report_cli
from .tools.doctor import cli as doctor_cli
from .tools.dumps import cli as dumps_cli

if TYPE_CHECKING:
    from .tools.scan.source import Use


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="parity", description="MindSpore <-> PyTorch parity catalogue")
    parser.add_argument("--version", action="version", version=f"parity {__version__} (pytest-parity)")
    commands = parser.add_subparsers(dest="command", required=True)
    for name, text in (("list", "list the catalogue's items"), ("run", "run the catalogue's items")):
        command = commands.add_parser(name, help=text)
        command.add_argument("paths", nargs="*", default=["cases"], help="case files or folders (default: cases)")
        command.add_argument("-k", dest="keyword", default="", help="only items whose id contains this text")
        if name == "run":
            for option in opts.OPTIONS:
                command.add_argument(
                    option.flag,
                    dest=option.dest,
                    choices=option.choices,
                    default=option.default,
                    metavar=option.metavar,
                    help=option.help,
                )
            command.add_argument(
                "--plot", metavar="DIR", default=None, help="write each training item's loss curves to DIR/<item>.html"
            )
    _scan_parser(commands)
    report_cli.add_parser(commands)
    _convert_parser(commands)
    _translate_parser(commands)
    dumps_cli.add_parser(commands)
    doctor_cli.add_parser(commands)
    return parser


def _convert_parser(commands) -> None:
    convert = commands.add_parser(
        "convert",
        help="convert a checkpoint between PyTorch and MindSpore",
        description="Convert a PyTorch state dict (.pth/.pt/.bin/.safetensors) into a MindSpore checkpoint "
        "(.ckpt/.safetensors) for the Cell --cell builds, or a MindSpore checkpoint into a PyTorch state dict for "
        "the Module --module builds, through the weight map parity's checks use; reload it and verify every tensor.",
    )
    convert.add_argument("src", metavar="SRC", help="the checkpoint to convert (the suffix picks the format)")
    convert.add_argument("dst", metavar="DST", help="the file to write (the suffix picks the format)")
    model = convert.add_mutually_exclusive_group(required=True)
    model.add_argument("--cell", metavar="PKG.MOD:FACTORY", help="the MindSpore Cell to convert for (PyTorch in)")
    model.add_argument("--module", metavar="PKG.MOD:FACTORY", help="the PyTorch Module to convert for (MindSpore in)")
    convert.add_argument(
        "--name-map",
        metavar="FILE",
        default=None,
        help="a .toml or .json file of PyTorch name = MindSpore name entries",
    )
    convert.add_argument(
        "--allow-missing",
        action="store_true",
        help="write what pairs even when tensors are missing, unexpected or of another shape",
    )
    convert.add_argument(
        "--allow-cast",
        action="store_true",
        help="write tensors whose cast to the model's dtype loses values (overflow to Inf, "
        "integers into floats); the report lists what was lost",
    )
    convert.add_argument("--force", action="store_true", help="replace DST even when it is read-only")


def _translate_parser(commands) -> None:
    command = commands.add_parser(
        "translate",
        help="write a PyTorch Module's translation as a package of MindSpore Cells",
        description="Translate the Module FACTORY() returns, traced on example inputs, and write it into DIR as a "
        "Python package of MindSpore Cells (one class per traced Module, build() with the translated weights) "
        "that runs in GRAPH and PYNATIVE modes: parity.translate(module, inputs, emit=DIR).",
    )
    command.add_argument("module", metavar="PKG.MOD:FACTORY", help="what builds the PyTorch Module")
    command.add_argument("--emit", metavar="DIR", required=True, help="the package's folder (its parent must exist)")
    given = command.add_mutually_exclusive_group(required=True)
    given.add_argument("--input-shape", metavar="N,C,H,W", help="a random float32 input of this shape")
    given.add_argument("--input-int", metavar="SHAPE:LOW:HIGH", help="a random int64 input, e.g. 2,16:0:128")
    given.add_argument(
        "--inputs", metavar="PKG.MOD:NAME", help="the inputs as parity.check takes them (or a function returning them)"
    )
    command.add_argument("--seed", type=int, default=None, help="the seed the inputs are drawn under")
    command.add_argument("--device", choices=("CPU", "GPU", "Ascend"), default="CPU", help="default: CPU")


def _translate(args) -> int:
    import parity
    from parity.engine.factories import resolve

    from .tools.scan.runtime import parse_int_input, parse_shape

    if args.input_shape is not None:
        inputs = parity.randn(parse_shape(args.input_shape))
    elif args.input_int is not None:
        shape, low, high = parse_int_input(args.input_int)
        inputs = parity.randint(shape, low, high)
    else:
        found = resolve(args.inputs, "parity translate --inputs")
        inputs = found() if callable(found) else found
    module = resolve(args.module, "parity translate")()
    try:
        parity.translate(module, inputs, device=args.device, seed=args.seed, emit=args.emit)
    except ParityUnsupported as exc:
        print(f"parity translate: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {args.emit}: import it and call build() for the model")
    return 0


def _scan_parser(commands) -> None:
    scan = commands.add_parser(
        "scan",
        help="list the PyTorch APIs a codebase uses, with their MindSpore status",
        description="Find every torch API the Python files under PATH use (from their "
        "syntax, importing nothing) and give each a status from parity's translation "
        "tables and known-mismatch registry.",
    )
    scan.add_argument("path", metavar="PATH", help="a Python file or a folder")
    scan.add_argument("--json", action="store_true", help="print the report as JSON (shape: parity.tools.scan.report)")
    scan.add_argument(
        "--device",
        choices=("CPU", "GPU", "Ascend"),
        default="CPU",
        help="the MindSpore device the statuses are for (default: CPU)",
    )
    scan.add_argument(
        "--module",
        metavar="PKG.MOD:FACTORY",
        default=None,
        help="also run one forward/backward of the module FACTORY() returns and record the "
        "torch functions and Tensor methods it calls (imports torch)",
    )
    scan.add_argument(
        "--input-shape", metavar="N,C,H,W", default=None, help="the shape of the random float32 input for --module"
    )
    scan.add_argument(
        "--input-int",
        metavar="SHAPE:LOW:HIGH",
        default=None,
        help="instead of --input-shape: a random int64 input for --module (token ids), e.g. 2,16:0:128 "
        "for shape 2x16 with values in [0, 128)",
    )


def _scan(args) -> int:
    import json

    from .tools.scan.report import as_json, text
    from .tools.scan.scanner import scan

    runtime: Iterable[Use] = ()
    if args.module is not None or args.input_shape is not None or args.input_int is not None:
        from .tools.scan.runtime import capture, parse_int_input, parse_shape

        if args.input_shape is not None and args.input_int is not None:
            raise ParityUsageError("parity scan: give --input-shape or --input-int, not both")
        if args.module is None or args.input_shape is None and args.input_int is None:
            raise ParityUsageError("parity scan: --module and --input-shape (or --input-int) go together")
        if args.input_int is not None:
            shape, low, high = parse_int_input(args.input_int)
            runtime = capture(args.module, shape, int_range=(low, high))
        else:
            runtime = capture(args.module, parse_shape(args.input_shape))
    report = scan(args.path, device=args.device, runtime=runtime, runtime_module=args.module)
    print(json.dumps(as_json(report), indent=2) if args.json else text(report))
    return 0


def _variants(paths: List[str], keyword: str):
    for root in paths:
        if not Path(root).exists():
            raise ParityUsageError(f"no such case file or folder: {root}")
        for path in iter_case_files(Path(root)):
            for case in load_cases(path):
                for variant in case.variants():
                    if keyword in variant.id:
                        yield path, variant


def _run_one(path, variant, args) -> str:
    case = variant.case
    nodeid = f"{path}::{variant.id}"
    settings = Settings(
        seed=opts.parse_seed(args.parity_seed, opts.SEED.flag),
        mode=args.parity_mode,
        device=args.parity_device,
        case=nodeid,
        location=f"{path}:{case.line}",
        reproduce=f"pytest {nodeid} {opts.PARITY}",
        repro_dir=opts.parse_repro_dir(args.parity_repro, opts.REPRO.flag, Path.cwd()),
    )
    try:
        ms_cell, torch_module = build(case, device=args.parity_device, seed=settings.resolved_seed)
        result = variant.run(ms_cell, torch_module, settings)
    except (ParityMismatch, ParityUnsupported) as exc:
        _plot(args.plot, variant, getattr(exc, "result", None))
        if case.xfail:
            return f"xfail {nodeid}: {case.xfail}"
        raise
    if case.xfail:
        raise ParityMismatch(f"{nodeid} passed although marked xfail ({case.xfail}): remove the xfail")
    _plot(args.plot, variant, result)
    from .engine.diagnosis import messages  # numpy: not for the commands that need no framework

    return messages.summary_line(nodeid, result)


def _plot_folder(folder: Optional[str]) -> None:
    if folder is None:
        return
    if Path(folder).exists() and not Path(folder).is_dir():
        raise ParityUsageError(f"--plot {folder}: not a folder; give a folder for the HTML files")
    Path(folder).mkdir(parents=True, exist_ok=True)


def _plot(folder: Optional[str], variant, result) -> None:
    """Write a training item's picture, when ``--plot`` asked for one and the item trained."""
    if folder is None:
        return
    from .engine.training.result import TrainingResult
    from .nightly.plot import plot_training

    if not isinstance(result, TrainingResult):
        return

    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", variant.id).strip("_") + ".html"
    print(f"plot {plot_training(result, Path(folder) / name)}", flush=True)


def main(argv: Optional[List[str]] = None) -> int:
    args = _parser().parse_args(argv)
    failed = 0
    try:
        if args.command == "scan":
            return _scan(args)
        if args.command == "report":
            return report_cli.main(args)
        if args.command == "compare-dumps":
            return dumps_cli.main(args)
        if args.command == "doctor":
            return doctor_cli.main(args, __version__)
        if args.command == "translate":
            return _translate(args)
        if args.command == "convert":
            from .tools.convert.checkpoint import run_command

            return run_command(args)
        if args.command == "run":
            _plot_folder(args.plot)
        for path, variant in _variants(args.paths, args.keyword):
            if args.command == "list":
                print(f"{path}::{variant.id}")
                continue
            try:
                print(_run_one(path, variant, args), flush=True)
            except ParityMismatch as exc:
                failed += 1
                print(f"FAIL {path}::{variant.id}\n{exc}\n", flush=True)
    except ParityUsageError as exc:
        print(f"parity: error: {exc}", file=sys.stderr)
        return 2
    return 1 if failed else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
