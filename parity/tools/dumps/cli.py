"""``parity compare-dumps A B [--json] [--name-map FILE] [--tolerance FILE]``: the command line of
:func:`parity.tools.dumps.compare.compare_dumps`. Building the parser imports nothing heavy (numpy included), so
that other commands stay fast; the comparison is imported when the command runs.

Exit status: 0 when every paired tensor agrees, 1 when some differ, 2 on a usage error (a missing
folder, an unreadable file, nothing paired, a bad name map or tolerance file)."""

from __future__ import annotations

import json
from pathlib import Path

from ... import files
from ...errors import ParityUsageError
from ...judge.tolerance import ToleranceSpec

__all__ = ["add_parser", "main", "load_tolerance"]


def add_parser(commands) -> None:
    command = commands.add_parser(
        "compare-dumps",
        help="compare two folders (or files) of saved tensors, or two msprobe statistics dumps",
        description="Pair the tensors saved under A and B by name as parity's checks pair weights (known "
        "renames, a name map, fused tensors, then order by kind and shape) and compare each pair with the "
        "checks' metrics and tolerances. Folders of .npy/.npz files (TroubleShooter's and msprobe's dumps too), "
        "MindSpore .ckpt, PyTorch .pth/.pt/.bin and .safetensors files, or one such file on each side. msprobe's "
        "statistics and md5 dumps (dump.json) are compared node by node by their statistics, which can prove a "
        "difference but never equality; checksums prove bit identity. "
        "Exit status: 0 all paired tensors agree, 1 some differ, 2 a usage error.",
    )
    command.add_argument("a", metavar="A", help="a folder or file of saved tensors")
    command.add_argument("b", metavar="B", help="the folder or file to compare it with")
    command.add_argument("--json", action="store_true", help="print the comparison as JSON")
    command.add_argument(
        "--name-map",
        metavar="FILE",
        default=None,
        help="pairs the automatic rules miss: .csv (A name, B name; TroubleShooter's "
        "ts_api_mapping.csv as is), .json (such pairs, or a table) or .toml (name = name)",
    )
    command.add_argument(
        "--allow-unpaired",
        action="store_true",
        help="pass although some tensors (nodes, for statistics dumps) of either side did not pair; "
        "without it, what did not pair fails the comparison",
    )
    for side in ("a", "b"):
        command.add_argument(
            f"--layout-{side}",
            metavar="FILE",
            default=None,
            help=f"{side.upper()} is a sharded dump (rank0, rank1, ... folders, or msprobe's step/rank): a .toml "
            "or .json layout saying how its ranks divide into groups and how each tensor is sharded, to "
            "reassemble whole tensors",
        )
    command.add_argument(
        "--tolerance",
        metavar="FILE",
        default=None,
        help="a .toml or .json file: rtol and atol, or name globs each with rtol and atol "
        "('*' for the rest); tensors it does not name keep their dtype's default",
    )


def load_tolerance(path) -> ToleranceSpec:
    """A tolerance file: ``rtol`` and ``atol``, or tables of name globs, each with both. Its path
    is the source every tensor's tolerance names."""
    path = Path(path)
    source = f"--tolerance {path}"
    data = files.read_table(path, source, "--tolerance", limit=1024 * 1024)
    if not isinstance(data, dict) or not data:
        raise ParityUsageError(f"{source}: expected rtol and atol, or tables of name globs each with rtol and atol")
    return ToleranceSpec.parse(data, source=source)


def main(args) -> int:
    from .compare import compare_dumps, load_pairs

    tolerance = load_tolerance(args.tolerance) if args.tolerance else None
    name_map = load_pairs(args.name_map) if args.name_map else None
    result = compare_dumps(
        args.a,
        args.b,
        name_map=name_map,
        tolerance=tolerance,
        allow_unpaired=args.allow_unpaired,
        layout_a=args.layout_a,
        layout_b=args.layout_b,
    )
    print(json.dumps(result.as_json(), indent=2, allow_nan=False) if args.json else str(result), flush=True)
    return result.exit_code
