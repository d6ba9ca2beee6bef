"""How exactly a failing check's diagnosis names what truly differs, on real ports written by others.

Each pair (``cases/models/ports_vision.py``, ``cases/models/ports_text.py``) is a MindSpore port
(mindcv, mindone.transformers) and its PyTorch original (torchvision, timm, transformers), small,
with random weights and trained-like norm statistics, and the list of what truly differs between
them, read from both sources. For each pair this runs ``parity.check`` as a user would (the name
map only where the automatic pairing cannot pair the weights), catches the ``ParityMismatch`` and
records what its diagnosis names against that truth:

* the verdict and the message's ``Divergence:`` line;
* each layer with an own error (``Result.layers.own_errors``: path, direction, margin, causes) and
  whether it is a true difference (``exact``), a container of one (``contains``), inside one
  (``inside``) or none (``false``);
* the likely causes of the message (``ParityMismatch.likely_causes``) and whether each names a
  known mismatch among the pair's true ones;
* the name-map rules the pair needs, and whether the weights pair without them (the error if not);
* the wall time of the check.

Each pair also has a ``fixed`` variant (the MindSpore side patched to PyTorch's semantics), which
should pass. Run from the repository root::

    python benchmarks/diagnosis_ports.py                       # every pair, shipped and fixed
    python benchmarks/diagnosis_ports.py --pairs resnet18,llama --variants shipped --json ports.json

Each pair and variant runs in a process of its own, one after the other, under ``--timeout``
seconds (a model zoo's imports and one model at a time: memory stays that of one pair). A
measurement, not a test: nothing here asserts.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

MARK = "DIAGNOSIS-PORTS-RESULT "
VARIANTS = ("shipped", "fixed")


def _ports():
    from cases.models.ports import pairs

    return pairs()


def _factory(dotted):
    from cases.models.ports import factory

    return factory(dotted)


def _match(layer, truth):
    """How an own error at ``layer`` (a PyTorch path; "" for the model's own code) relates to the
    true differences ``truth`` (PyTorch paths)."""
    if layer in truth:
        return "exact"
    if any(path.startswith(layer + ".") or not layer for path in truth):
        return "contains"
    if any(layer.startswith(path + ".") for path in truth):
        return "inside"
    return "false"


def _cause_ids(text):
    return re.findall(r"known mismatch '([^']+)'", text)


def _pairing(ms_cell, module):
    """Whether the weights pair with no name map: "ok", or the error's first lines."""
    import parity

    try:
        parity.transfer_weights(module, ms_cell)
    except parity.ParityError as exc:
        return " ".join(str(exc).splitlines()[:3])
    return "ok"


def run_one(name: str, variant: str) -> dict:
    """Build the pair, check it, and say what the diagnosis named."""
    import mindspore
    import torch  # noqa: F401  (both frameworks before parity)

    import parity

    mindspore.set_context(mode=mindspore.PYNATIVE_MODE, device_target="CPU")
    port = _ports()[name]
    row = {"pair": name, "variant": variant}
    start = time.perf_counter()
    module = _factory(port.torch)()
    ms_cell = _factory(port.mindspore)(fixed=variant == "fixed")
    row["build_s"] = round(time.perf_counter() - start, 1)
    truth = port.differences(module) if variant == "shipped" else {}
    row["true_differences"] = truth
    row["true_causes"] = list(port.causes) if variant == "shipped" else []
    row["weights_pair_automatically"] = _pairing(ms_cell, module)
    if port.adapt is not None:
        port.adapt(ms_cell, module)
        row["adapted"] = " ".join(port.adapt.__doc__.split(".")[0].split())
    name_map = port.name_map() if port.name_map else None
    row["name_map_rules"] = len(name_map or {})
    start = time.perf_counter()
    try:
        result = parity.check(ms_cell, module, port.inputs, name_map=name_map, **port.check)
        row["verdict"] = "pass"
        row["worst_margin"] = result.worst_margin
    except parity.ParityMismatch as exc:
        row.update(_diagnosis(exc, truth, port.causes if variant == "shipped" else ()))
    except parity.ParityError as exc:
        row["verdict"] = "error"
        row["error"] = f"{type(exc).__name__}: " + " ".join(str(exc).splitlines()[:4])
    row["check_s"] = round(time.perf_counter() - start, 1)
    return row


def _diagnosis(exc, truth, true_causes) -> dict:
    message = str(exc)
    divergence = next((line for line in message.splitlines() if line.startswith("Divergence:")), "")
    layers = exc.result.layers if exc.result is not None else None
    own = []
    for error in getattr(layers, "own_errors", None) or []:
        own.append(
            {
                "layer": error.layer,
                "label": error.label,
                "direction": error.direction,
                "margin": round(error.margin, 3),
                "causes": list(error.causes),
                "match": _match(error.layer, truth),
            }
        )
    causes = []
    for cause in getattr(exc, "likely_causes", []):
        ids = _cause_ids(cause)
        causes.append({"text": cause, "ids": ids, "true": bool(set(ids) & set(true_causes))})
    found = {e["layer"] for e in own if e["match"] == "exact"}
    return {
        "verdict": "mismatch",
        "divergence": divergence,
        "own_errors": own,
        "own_measured": bool(getattr(layers, "own_measured", False)),
        "likely_causes": causes,
        "summary": {
            "own_errors": len(own),
            "own_true": sum(e["match"] == "exact" for e in own),
            "own_near": sum(e["match"] in ("contains", "inside") for e in own),
            "true_found": len(found),
            "true_total": len(truth),
            "causes": len(causes),
            "causes_true": sum(c["true"] for c in causes),
        },
    }


def _spawn(name: str, variant: str, timeout: float) -> dict:
    command = [sys.executable, str(Path(__file__).resolve()), "--one", name, "--variant", variant]
    start = time.perf_counter()
    try:
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=timeout, env=dict(os.environ))
    except subprocess.TimeoutExpired:
        return {"pair": name, "variant": variant, "verdict": "timeout", "error": f"over {timeout:.0f} s"}
    for line in done.stdout.splitlines():
        if line.startswith(MARK):
            return json.loads(line[len(MARK) :])
    tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
    return {
        "pair": name,
        "variant": variant,
        "verdict": "error",
        "error": f"exit {done.returncode} after {time.perf_counter() - start:.0f} s: " + " | ".join(tail),
    }


def _line(row) -> str:
    head = f"{row['pair']:<20} {row['variant']:<8} {row['verdict']:<9}"
    if row["verdict"] == "mismatch":
        s = row["summary"]
        return (
            f"{head} own errors {s['own_errors']} ({s['own_true']} true, {s['own_near']} near; "
            f"{s['true_found']}/{s['true_total']} true differences named), causes {s['causes']} "
            f"({s['causes_true']} true), name map {row['name_map_rules']}, {row['check_s']} s\n"
            f"{'':<20} {row['divergence']}"
        )
    if row["verdict"] == "pass":
        return f"{head} worst margin {row['worst_margin']:.3g}, name map {row['name_map_rules']}, {row['check_s']} s"
    return f"{head} {row.get('error', '')}"


def markdown(rows) -> str:
    """The results table of the README: one line per shipped pair, the fixed pair's verdict beside."""
    fixed = {r["pair"]: r["verdict"] for r in rows if r["variant"] == "fixed"}
    lines = [
        "| pair | true differences | own errors named (true) | causes named (true) | name-map rules | "
        "weights pair automatically | fixed pair |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        if row["variant"] != "shipped":
            continue
        truth = row.get("true_differences", {})
        kinds = sorted(set(truth.values()))
        differences = f"{len(truth)}: " + "; ".join(kinds) if truth else "none found"
        if row["verdict"] == "mismatch":
            s = row["summary"]
            own = f"{s['own_errors']} ({s['own_true']}; {s['true_found']}/{s['true_total']} found)"
            causes = f"{s['causes']} ({s['causes_true']})"
        else:
            own = causes = row["verdict"]
        automatic = "yes" if row.get("weights_pair_automatically") == "ok" else "no"
        if row.get("adapted"):
            automatic += " (adapted)"
        lines.append(
            f"| {row['pair']} | {differences} | {own} | {causes} | {row.get('name_map_rules', '-')} | "
            f"{automatic} | {fixed.get(row['pair'], '-')} |"
        )
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", help="comma-separated pair names (default: all)")
    parser.add_argument("--variants", default=",".join(VARIANTS), help="shipped, fixed or both (default)")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per pair and variant")
    parser.add_argument("--json", type=Path, help="write every row here")
    parser.add_argument("--markdown", type=Path, help="print the README's table from a --json file, and stop")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # run one pair in this process
    parser.add_argument("--variant", default="shipped", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.markdown:
        print(markdown(json.loads(args.markdown.read_text())))
        return 0
    if args.one:
        print(MARK + json.dumps(run_one(args.one, args.variant)), flush=True)
        return 0
    names = list(_ports())
    if args.pairs:
        wanted = args.pairs.split(",")
        unknown = sorted(set(wanted) - set(names))
        if unknown:
            parser.error(f"unknown pairs {unknown}; the pairs are {names}")
        names = wanted
    variants = [v for v in args.variants.split(",") if v]
    rows = []
    for name in names:
        for variant in variants:
            rows.append(_spawn(name, variant, args.timeout))
            print(_line(rows[-1]), flush=True)
            if args.json:
                args.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
