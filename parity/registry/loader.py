"""Read the mismatch data files, validate every entry and report problems with file and line.

``tomllib`` gives no line numbers, so each ``[[mismatch]]`` table is matched, in order, with its
header in the text, and a problem is reported at the line of the entry's ``id = "..."`` (or of the
offending key when it can be found between this header and the next).
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python < 3.11 only
    import tomli as tomllib

from . import rules
from .schema import (
    AMP_LEVELS,
    AMP_PRECISIONS,
    DEVICES,
    DIFFERS,
    DTYPES,
    FAMILIES,
    ID_PATTERN,
    INSPECT_ROOTS,
    KINDS,
    MODES,
    RULE_NAMES,
    RULE_ROOTS,
    SCHEMA,
    AmpPattern,
    Argument,
    Availability,
    Entry,
    RegistryError,
    SelfTestSpec,
    check_names,
    from_toml,
    inspect_table,
    parse_versions,
)

__all__ = ["DATA_DIR", "default_paths", "read_files"]

DATA_DIR = Path(__file__).resolve().parent.parent / "data" / "mismatches"
_HEADER = {
    "mismatch": re.compile(r"^\s*\[\[\s*mismatch\s*\]\]"),
    "available": re.compile(r"^\s*\[\[\s*available\s*\]\]"),
}
_TOP_KEYS = {"schema", "title", "mismatch", "available"}
_ENTRY_KEYS = {
    "id",
    "kind",
    "torch",
    "mindspore",
    "family",
    "summary",
    "fix",
    "arguments",
    "rule",
    "replacement",
    "weights",
    "layout",
    "inspect",
    "replay",
    "versions",
    "devices",
    "modes",
    "runs_on",
    "dtypes",
    "reason",
    "reference",
    "selftest",
    "selftest_skip",
    "amp",
}
_REQUIRED = ("id", "kind", "torch", "mindspore", "family", "summary", "reason", "reference", "devices")
_SELFTEST_KEYS = {
    "torch_kwargs",
    "ms_kwargs",
    "inputs",
    "fixed_inputs",
    "differs_in",
    "raises",
    "train",
    "grads",
    "weights",
    "fixed",
    "ms_mode",
    "fixed_ms_mode",
    "optimizer",
    "batches",
    "dtype",
    "amp",
    "torch_api",
    "mindspore_api",
}
_ARGUMENT_KEYS = {"torch", "mindspore", "torch_default", "mindspore_default", "note"}
_INPUT_KINDS = {"randn", "uniform", "randint"}
_LAYOUT = re.compile(r"^permute\(\s*\d+(\s*,\s*\d+)*\s*\)$")


def default_paths() -> List[Path]:
    return sorted(DATA_DIR.glob("*.toml"))


@dataclass
class _Text:
    """A file's lines, to find where each table and key is written."""

    path: str
    lines: List[str]

    def headers(self, table: str) -> List[int]:
        return [i + 1 for i, line in enumerate(self.lines) if _HEADER[table].match(line)]

    def span(self, table: str, index: int) -> Tuple[int, int]:
        starts = sorted(self.headers("mismatch") + self.headers("available"))
        own = self.headers(table)
        start = own[index] if index < len(own) else 1
        later = [s for s in starts if s > start]
        return start, (later[0] - 1 if later else len(self.lines))

    def key_line(self, span: Tuple[int, int], key: str) -> Optional[int]:
        pattern = re.compile(rf"^\s*(\[\s*(mismatch\.)?{re.escape(key)}\b|{re.escape(key)}\s*[=.])")
        for number in range(span[0], span[1] + 1):
            if pattern.match(self.lines[number - 1]):
                return number
        return None


def read_files(paths: Sequence[Union[str, Path]]) -> Tuple[List[Entry], List[Availability], Dict[str, str]]:
    """Every entry and availability record of ``paths``, and each file's title."""
    entries: List[Entry] = []
    available: List[Availability] = []
    titles: Dict[str, str] = {}
    errors: List[str] = []
    for given in paths:
        path = Path(given)
        shown = _shown(path)
        try:
            raw_text = path.read_text(encoding="utf-8")
        except OSError as exc:
            errors.append(f"{shown}: cannot read: {exc.strerror or exc}")
            continue
        try:
            data: Dict[str, Any] = tomllib.loads(raw_text)
        except tomllib.TOMLDecodeError as exc:
            errors.append(_decode_error(shown, exc))
            continue
        text = _Text(shown, raw_text.splitlines())
        titles[shown] = str(data.get("title", path.stem))
        file_entries, file_available = _read_file(data, text, errors)
        entries += file_entries
        available += file_available
    _check_unique(entries, errors)
    if errors:
        raise RegistryError(
            f"{len(errors)} problem{'s' if len(errors) > 1 else ''} in the mismatch registry:\n  " + "\n  ".join(errors)
        )
    return entries, available, titles


_ROOT = Path(__file__).resolve().parents[2]  # the folder holding the parity package


def _shown(path: Path) -> str:
    """The path as a person finds it: relative to the project (or installation), else as given."""
    for base in (_ROOT, Path.cwd()):
        try:
            return path.resolve().relative_to(base).as_posix()
        except ValueError:
            continue
    return str(path)


def _decode_error(shown: str, exc: ValueError) -> str:
    match = re.search(r"\(at line (\d+), column (\d+)\)", str(exc))
    message = re.sub(r"\s*\(at line \d+, column \d+\)", "", str(exc))
    return f"{shown}:{match.group(1)}: invalid TOML: {message}" if match else f"{shown}: invalid TOML: {message}"


def _read_file(data: Dict[str, Any], text: _Text, errors: List[str]) -> Tuple[List[Entry], List[Availability]]:
    unknown = set(data) - _TOP_KEYS
    if unknown:
        errors.append(f"{text.path}:1: unknown top-level keys {sorted(unknown)}; expected {sorted(_TOP_KEYS)}")
    if data.get("schema") != SCHEMA:
        errors.append(f"{text.path}:1: needs `schema = {SCHEMA}` (got {data.get('schema')!r})")
    entries: List[Entry] = []
    for index, raw in enumerate(data.get("mismatch", [])):
        entry = _entry(raw, text, index, errors)
        if entry is not None:
            entries.append(entry)
    available = [
        a
        for a in (_availability(raw, text, i, errors) for i, raw in enumerate(data.get("available", [])))
        if a is not None
    ]
    return entries, available


def _check_unique(entries: List[Entry], errors: List[str]) -> None:
    seen: Dict[str, Entry] = {}
    for entry in entries:
        if entry.id in seen:
            errors.append(
                f"{entry.location}: entry {entry.id!r}: duplicate id {entry.id!r} (first at {seen[entry.id].location})"
            )
        else:
            seen[entry.id] = entry


class _Where:
    """Formats ``file:line: entry 'id':`` for an entry's problems, at the key's own line if found."""

    def __init__(self, text: _Text, index: int, raw: Dict[str, Any], table: str = "mismatch") -> None:
        self.text, self.span = text, text.span(table, index)
        id_line = text.key_line(self.span, "id")
        self.line = id_line or self.span[0]
        self.label = f"entry {raw['id']!r}" if isinstance(raw.get("id"), str) else f"{table} #{index + 1}"

    def __call__(self, key: Optional[str] = None) -> str:
        line = (self.text.key_line(self.span, key) if key else None) or self.line
        return f"{self.text.path}:{line}: {self.label}"


def _entry(raw: Dict[str, Any], text: _Text, index: int, errors: List[str]) -> Optional[Entry]:
    where = _Where(text, index, raw)
    before = len(errors)
    for key in _REQUIRED:
        if key not in raw:
            errors.append(f"{where()}: missing required key {key!r}")
    for key in sorted(set(raw) - _ENTRY_KEYS):
        errors.append(f"{where(key)}: unknown key {key!r}; known keys: {', '.join(sorted(_ENTRY_KEYS))}")
    if len(errors) > before and any(k not in raw for k in _REQUIRED):
        return None
    _check_scalars(raw, where, errors)
    arguments = _arguments(raw.get("arguments", []), where, errors)
    rule = _rule(raw.get("rule", {}), where, errors)
    inspect = raw.get("inspect", {})
    if not isinstance(inspect, dict) or set(inspect) - {"torch", "mindspore", "when", "fix"}:
        errors.append(f"{where('inspect')}: inspect must be a table with keys torch, mindspore, when, fix")
        inspect = {}
    when = inspect.get("when", "")
    if when:
        try:
            rules.check_expression(when, INSPECT_ROOTS, RULE_NAMES)
        except rules.RuleError as exc:
            errors.append(f"{where('inspect')}: inspect.when: {exc}")
    selftest = _selftest(raw, where, errors)
    replay = _replay(raw.get("replay", {}), where, errors)
    entry = Entry(
        id=raw["id"],
        kind=raw["kind"],
        torch=raw["torch"],
        mindspore=raw["mindspore"],
        family=raw["family"],
        summary=raw["summary"],
        reason=raw["reason"],
        reference=raw["reference"],
        devices=check_names(raw["devices"], DEVICES, "devices", where("devices"), errors),
        fix=raw.get("fix", ""),
        arguments=arguments,
        rule=rule,
        replacement=raw.get("replacement", ""),
        weights=_string_table(raw.get("weights", {}), "weights", where, errors),
        layout=_layout(raw.get("layout", {}), where, errors),
        inspect_torch=inspect_table(inspect.get("torch", []), where("inspect"), errors, "torch"),
        inspect_mindspore=inspect_table(inspect.get("mindspore", []), where("inspect"), errors, "ms"),
        inspect_fix=inspect_table(inspect.get("fix", {}), where("inspect"), errors, "fix"),
        replay_set=replay.get("set", {}),
        replay_pad=replay.get("pad", ""),
        replay_value=replay.get("value", ""),
        when=when,
        versions=parse_versions(raw.get("versions", {}), where("versions"), errors),
        modes=check_names(raw.get("modes", list(MODES)), MODES, "modes", where("modes"), errors),
        runs_on=tuple(raw.get("runs_on", ())),
        dtypes=check_names(raw["dtypes"], DTYPES, "dtypes", where("dtypes"), errors) if "dtypes" in raw else (),
        amp=_amp(raw, where, errors),
        selftest=selftest,
        selftest_skip=raw.get("selftest_skip", ""),
        file=text.path,
        line=where.line,
    )
    if raw.get("runs_on"):
        check_names(raw["runs_on"], DEVICES, "runs_on", where("runs_on"), errors)
    return entry if len(errors) == before else None


def _check_scalars(raw: Dict[str, Any], where: _Where, errors: List[str]) -> None:
    for key in (
        "id",
        "kind",
        "torch",
        "mindspore",
        "family",
        "summary",
        "reason",
        "reference",
        "fix",
        "replacement",
        "selftest_skip",
    ):
        if key in raw and not isinstance(raw[key], str):
            errors.append(f"{where(key)}: {key} must be a string, got {raw[key]!r}")
            raw[key] = str(raw[key])
    if not ID_PATTERN.match(raw["id"]):
        errors.append(f"{where('id')}: id {raw['id']!r} must be lowercase words joined by '-'")
    if raw["kind"] not in KINDS:
        errors.append(f"{where('kind')}: unknown kind {raw['kind']!r}; expected one of {', '.join(KINDS)}")
    if raw["family"] not in FAMILIES:
        errors.append(f"{where('family')}: unknown family {raw['family']!r}; expected one of {', '.join(FAMILIES)}")
    elif (raw["family"] == "mint") != (".mint." in raw["mindspore"]):
        errors.append(
            f"{where('family')}: family {raw['family']!r} does not match {raw['mindspore']!r} "
            "(family 'mint' is for mindspore.mint.* APIs)"
        )
    if not raw["torch"].startswith(("torch.", "transformers.") if raw["family"] == "llm" else "torch."):
        errors.append(
            f"{where('torch')}: torch must be a dotted path starting 'torch.' (family 'llm': or "
            f"'transformers.'), got {raw['torch']!r}"
        )
    if not raw["mindspore"].startswith("mindspore."):
        errors.append(
            f"{where('mindspore')}: mindspore must be a dotted path starting 'mindspore.', got {raw['mindspore']!r}"
        )
    if not raw["reference"].startswith("https://"):
        errors.append(f"{where('reference')}: reference must be an https:// URL, got {raw['reference']!r}")
    if raw["kind"] in ("default", "name") and not raw.get("arguments"):
        errors.append(f"{where()}: kind {raw['kind']!r} needs `arguments` naming the argument and both defaults")
    if "selftest" not in raw and not raw.get("selftest_skip"):
        errors.append(f'{where()}: give a [mismatch.selftest] or say why not in selftest_skip = "..."')


def _amp(raw: Dict[str, Any], where: _Where, errors: List[str]) -> Optional[AmpPattern]:
    """``amp = { levels = ["O1"], mindspore = "half", torch = "float32", after = false }``: required
    by kind ``precision``, and only there."""
    value = raw.get("amp")
    if raw["kind"] != "precision":
        if value is not None:
            errors.append(f"{where('amp')}: amp is for kind 'precision' only")
        return None
    if not isinstance(value, dict) or set(value) - {"levels", "mindspore", "torch", "after"}:
        errors.append(
            f"{where('amp') if value is not None else where()}: kind 'precision' needs amp = "
            '{ levels = ["O1"], mindspore = "half" | "float32", torch = ..., after = false }'
        )
        return None
    levels = check_names(value.get("levels"), AMP_LEVELS, "amp.levels", where("amp"), errors)
    for side in ("mindspore", "torch"):
        if value.get(side, "") not in AMP_PRECISIONS + ("",):
            errors.append(f"{where('amp')}: amp.{side} must be one of {list(AMP_PRECISIONS)}, got {value[side]!r}")
    if bool(value.get("mindspore")) != bool(value.get("torch")):
        errors.append(f"{where('amp')}: amp gives the precision of both sides or of neither")
    if not isinstance(value.get("after", False), bool):
        errors.append(f"{where('amp')}: amp.after must be true or false")
    return AmpPattern(levels, value.get("mindspore", ""), value.get("torch", ""), bool(value.get("after", False)))


def _arguments(value: object, where: _Where, errors: List[str]) -> Tuple[Argument, ...]:
    if not isinstance(value, list):
        errors.append(f"{where('arguments')}: arguments must be a list of tables")
        return ()
    found: List[Argument] = []
    for item in value:
        if not isinstance(item, dict) or set(item) - _ARGUMENT_KEYS or not (item.get("torch") or item.get("mindspore")):
            errors.append(
                f"{where('arguments')}: each argument is a table with torch and/or mindspore (names) "
                f"and torch_default, mindspore_default, note; got {item!r}"
            )
            continue
        kwargs = {k: from_toml(v) if k.endswith("_default") else v for k, v in item.items()}
        found.append(Argument(**kwargs))
    return tuple(found)


def _rule(value: object, where: _Where, errors: List[str]) -> Dict[str, str]:
    table = _string_table(value, "rule", where, errors)
    for key, source in table.items():
        try:
            rules.check_expression(source, RULE_ROOTS, RULE_NAMES)
        except rules.RuleError as exc:
            errors.append(f"{where('rule')}: rule {key}: {exc}")
    return table


def _replay(value: object, where: _Where, errors: List[str]) -> Dict[str, Any]:
    """``replay = { set = { attribute = "<expression>" }, pad = "<expression>", value = "<expression>" }``:
    expressions over ``ms.``/``torch.`` and ``input_shape``, checked here."""
    if isinstance(value, dict) and not value:
        return {}  # no replay
    if not isinstance(value, dict) or set(value) - {"set", "pad", "value"}:
        errors.append(f"{where('replay')}: replay must be a table with keys set, pad, value")
        return {}
    found: Dict[str, Any] = {"set": _string_table(value.get("set", {}), "replay.set", where, errors)}
    for key in ("pad", "value"):
        if key in value:
            if not isinstance(value[key], str):
                errors.append(f"{where('replay')}: replay.{key} must be a string expression, got {value[key]!r}")
                continue
            found[key] = value[key]
    if "value" in found and "pad" not in found:
        errors.append(f"{where('replay')}: replay.value is the padding's value: it needs replay.pad")
    if not found["set"] and "pad" not in found:
        errors.append(f"{where('replay')}: replay must set an attribute or pad the input")
    sources = [(f"set.{k}", v) for k, v in found["set"].items()] + [
        (k, found[k]) for k in ("pad", "value") if k in found
    ]
    for label, source in sources:
        try:
            rules.check_expression(source, INSPECT_ROOTS, RULE_NAMES)
        except rules.RuleError as exc:
            errors.append(f"{where('replay')}: replay.{label}: {exc}")
    return found


def _string_table(value: object, label: str, where: _Where, errors: List[str]) -> Dict[str, str]:
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        errors.append(f"{where(label)}: {label} must be a table of strings, got {value!r}")
        return {}
    return dict(value)


def _layout(value: object, where: _Where, errors: List[str]) -> Dict[str, str]:
    table = _string_table(value, "layout", where, errors)
    for leaf, transform in table.items():
        if not _LAYOUT.match(transform):
            errors.append(f"{where('layout')}: layout {leaf} = {transform!r}: expected 'permute(i, j, ...)'")
    return table


def _selftest(raw: Dict[str, Any], where: _Where, errors: List[str]) -> Optional[SelfTestSpec]:
    spec = raw.get("selftest")
    if spec is None:
        return None
    at = where("selftest")
    if not isinstance(spec, dict):
        errors.append(f"{at}: selftest must be a table")
        return None
    for key in sorted(set(spec) - _SELFTEST_KEYS):
        errors.append(f"{at}: unknown selftest key {key!r}; known: {', '.join(sorted(_SELFTEST_KEYS))}")
    if spec.get("differs_in") not in DIFFERS:
        errors.append(f"{at}: selftest.differs_in must be one of {', '.join(DIFFERS)}, got {spec.get('differs_in')!r}")
        return None
    for key in ("ms_mode", "fixed_ms_mode"):
        if spec.get(key, "pynative") not in MODES:
            errors.append(f"{at}: selftest.{key} must be one of {', '.join(MODES)}")
    if spec.get("dtype", DTYPES[0]) not in DTYPES:
        errors.append(f"{at}: selftest.dtype must be one of {', '.join(DTYPES)}")
    if spec.get("amp", AMP_LEVELS[0]) not in AMP_LEVELS:
        errors.append(f"{at}: selftest.amp must be one of {', '.join(AMP_LEVELS)}")
    for key in ("torch_api", "mindspore_api"):
        if key in spec and not (isinstance(spec[key], str) and re.match(r"^[\w.]+:[\w.]+$", spec[key])):
            errors.append(f"{at}: selftest.{key} must be 'package.module:Name', got {spec[key]!r}")
    if spec["differs_in"] == "precision" and "amp" not in spec:
        errors.append(f'{at}: differs_in = "precision" needs selftest.amp = "<level>"')
    if "batches" in spec:
        _check_batches(spec["batches"], f"{at}: selftest.batches", errors)
    elif spec.get("optimizer") is None:
        for label in ("inputs", "fixed_inputs"):
            if label in spec:
                _check_inputs(spec[label], f"{at}: selftest.{label}", errors)
        if "inputs" not in spec:
            errors.append(f"{at}: selftest needs inputs = [{{ randn = [2, 3] }}, ...]")
    fixed = spec.get("fixed", bool(raw.get("fix")))
    if fixed and not (
        raw.get("rule")
        or raw.get("weights")
        or raw.get("replacement")
        or spec.get("fixed_inputs")
        or spec.get("fixed_ms_mode")
        or spec["differs_in"] == "init"
    ):
        errors.append(f"{at}: a fixed pair needs a rule, weights, fixed_inputs or fixed_ms_mode (or fixed = false)")
    return SelfTestSpec(
        torch_kwargs=from_toml(spec.get("torch_kwargs", {})),
        ms_kwargs=from_toml(spec.get("ms_kwargs", {})),
        differs_in=spec["differs_in"],
        inputs=tuple(spec.get("inputs", ())),
        fixed_inputs=tuple(spec["fixed_inputs"]) if "fixed_inputs" in spec else None,
        raises=spec.get("raises", ""),
        train=bool(spec.get("train", False)),
        grads=bool(spec.get("grads", True)),
        weights=spec.get("weights", "copy"),
        fixed=bool(fixed),
        ms_mode=spec.get("ms_mode", "pynative"),
        fixed_ms_mode=spec.get("fixed_ms_mode"),
        optimizer=spec.get("optimizer"),
        dtype=spec.get("dtype", ""),
        amp=spec.get("amp", ""),
        torch_api=str(spec.get("torch_api", "")),
        mindspore_api=str(spec.get("mindspore_api", "")),
        batches=tuple(tuple(b) for b in spec["batches"]) if isinstance(spec.get("batches"), list) else None,
    )


def _check_batches(value: object, at: str, errors: List[str]) -> None:
    if not isinstance(value, list) or not value or not all(isinstance(b, list) and len(b) == 2 for b in value):
        errors.append(f"{at} must be a non-empty list of [input, target] pairs of input specs")
        return
    for index, batch in enumerate(value):
        _check_inputs(batch, f"{at}[{index}]", errors)


def _check_inputs(value: object, at: str, errors: List[str]) -> None:
    if not isinstance(value, list) or not value:
        errors.append(f"{at} must be a non-empty list of input specs")
        return
    for item in value:
        kinds = set(item) & _INPUT_KINDS if isinstance(item, dict) else set()
        if len(kinds) != 1 or set(item) - _INPUT_KINDS - {"dtype"}:
            errors.append(
                f"{at}: each input is {{ randn = [shape] }}, {{ uniform = [[shape], low, high] }} or "
                f"{{ randint = [[shape], low, high] }}, optionally with dtype; got {item!r}"
            )


def _availability(raw: Dict[str, Any], text: _Text, index: int, errors: List[str]) -> Optional[Availability]:
    where = _Where(text, index, raw, "available")
    needed = ("mindspore", "torch", "runs_on", "documented", "inputs")
    missing = [k for k in needed if k not in raw]
    if missing:
        errors.append(f"{where()}: [[available]] needs {', '.join(missing)}")
        return None
    _check_inputs(raw["inputs"], f"{where('inputs')}: inputs", errors)
    family = "mint" if ".mint." in raw["mindspore"] else "nn"
    return Availability(
        mindspore=raw["mindspore"],
        torch=raw["torch"],
        family=family,
        runs_on=check_names(raw["runs_on"], DEVICES, "runs_on", where("runs_on"), errors),
        documented=check_names(raw["documented"], DEVICES, "documented", where("documented"), errors),
        kwargs=from_toml(raw.get("kwargs", {})),
        inputs=tuple(raw["inputs"]),
        note=raw.get("note", ""),
        file=text.path,
        line=where.line,
    )
