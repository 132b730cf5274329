"""Reading definition.json, workload.jsonl and solution.json exactly as the upstream tools write them.

Every problem is reported as a `FormatError` naming the file, the line and the field, so a user
can fix a problem folder without guessing. The loaded objects keep the raw JSON too: records and
trace lines are written from what the user gave, not from a re-serialisation of our view of it.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from kernelindex.harness import axes as axis_math
from kernelindex.harness.dtypes import DTYPES
from kernelindex.records.fields import PRODUCT_MAX
from kernelindex.records.strict_json import loads_strict

# SOL-ExecBench solutions list ``spec.languages``; FlashInfer-Bench solutions name one ``spec.language``
# (python, triton, cpp, cuda, tilelang). Both vocabularies are read; each name is Python-side or compiled.
PYTHON_LANGUAGES = {"pytorch", "triton", "cute_dsl", "cutile", "cudnn_frontend", "python", "tilelang"}
COMPILED_LANGUAGES = {"cuda_cpp", "cutlass", "cudnn", "cublas", "cpp", "cuda"}
INPUT_TYPES = {"random", "scalar", "safetensors", "custom"}
TOLERANCE_DEFAULTS = {
    "max_atol": 1e-2,
    "max_rtol": 1e-2,
    "required_matched_ratio": 0.99,
    "max_error_cap": None,
    "allow_negative_inf": False,
}


class FormatError(ValueError):
    """A problem or solution file that does not follow the format; says file, line, field, why."""

    def __init__(self, file: str | Path, line: int | None, field: str | None, reason: str):
        self.file, self.line, self.field, self.reason = str(file), line, field, reason
        where = f"{file}:{line}" if line else str(file)
        what = f" field {field!r}" if field else ""
        super().__init__(f"{where}:{what} {reason}")


@dataclass(frozen=True)
class Axis:
    name: str
    type: str  # const | var | expr
    value: int | None = None
    expression: str | None = None


@dataclass(frozen=True)
class TensorSpec:
    name: str
    shape: tuple[str, ...] | None  # None: a plain Python scalar; (): a 0-d tensor
    dtype: str
    description: str | None = None

    @property
    def is_scalar(self) -> bool:
        return self.shape is None


@dataclass(frozen=True)
class Definition:
    name: str
    axes: dict[str, Axis]
    inputs: dict[str, TensorSpec]
    outputs: dict[str, TensorSpec]
    reference: str
    op_type: str | None = None
    description: str | None = None
    constraints: tuple[str, ...] = ()
    custom_inputs_entrypoint: str | None = None
    flops: str | None = None  # optional: expression over axes, for T_SOL on any hardware
    bytes: str | None = None  # optional: expression over axes, bytes that must move
    raw: dict = field(default_factory=dict, compare=False, repr=False)
    path: str = ""

    def resolve_axes(self, given: dict[str, Any], where: str = "workload") -> dict[str, int]:
        """Values of every axis for one case: const, the case's var values, then expr axes."""
        values: dict[str, int] = {}
        for axis in self.axes.values():
            if axis.type == "const":
                values[axis.name] = int(axis.value)
            elif axis.type == "var":
                if axis.name not in given:
                    raise ValueError(f"{where}: no value for var axis {axis.name!r}")
                value = given[axis.name]
                if isinstance(value, bool) or not isinstance(value, int):
                    raise ValueError(f"{where}: axis {axis.name!r} must be an integer, got {value!r}")
                values[axis.name] = value
        unknown = set(given) - set(self.axes)
        if unknown:
            raise ValueError(f"{where}: unknown axes {sorted(unknown)}")
        pending = [a for a in self.axes.values() if a.type == "expr"]
        while pending:
            ready = [a for a in pending if axis_math.names_in(a.expression) <= set(values)]
            if not ready:
                raise ValueError(
                    f"{where}: expr axes {[a.name for a in pending]} depend on each other or on unknown axes"
                )
            for axis in ready:
                result = axis_math.evaluate(axis.expression, values)
                values[axis.name] = axis_math.as_integer(result, f"axis {axis.name!r} = {axis.expression}")
                pending.remove(axis)
        for constraint in self.constraints:
            if not axis_math.evaluate(constraint, values):
                raise ValueError(f"{where}: constraint {constraint!r} does not hold for axes {values}")
        return values

    def shape(self, spec: TensorSpec, axis_values: dict[str, int]) -> tuple[int, ...] | None:
        if spec.shape is None:
            return None
        return tuple(int(d) if d.isdigit() else axis_values[d] for d in spec.shape)


@dataclass(frozen=True)
class InputSpec:
    type: str
    value: Any = None
    path: str | None = None
    tensor_key: str | None = None


@dataclass(frozen=True)
class Tolerance:
    max_atol: float = 1e-2
    max_rtol: float = 1e-2
    required_matched_ratio: float = 0.99
    max_error_cap: float | None = None
    allow_negative_inf: bool = False


@dataclass(frozen=True)
class WorkloadCase:
    uuid: str
    axes: dict[str, int]
    inputs: dict[str, InputSpec]
    tolerance: Tolerance
    line: int = 0
    t_sol_ms: float | None = None  # optional: speed-of-light latency for this case
    t_b_ms: float | None = None  # optional: scoring-baseline latency for this case
    sol_hardware: str | None = None  # optional: product the two figures above belong to
    raw: dict = field(default_factory=dict, compare=False, repr=False)


@dataclass(frozen=True)
class Problem:
    root: Path
    definition: Definition
    cases: list[WorkloadCase]

    def case(self, uuid: str) -> WorkloadCase:
        """The case with this uuid, or the one case whose uuid starts with it (never a guess)."""
        found = [case for case in self.cases if case.uuid == uuid] or [
            case for case in self.cases if uuid and case.uuid.startswith(uuid)
        ]
        if len(found) > 1:
            raise KeyError(
                f"case prefix {uuid!r} matches {len(found)} cases in {self.root / 'workload.jsonl'}; "
                "give more characters"
            )
        if not found:
            raise KeyError(f"no case {uuid!r} in {self.root / 'workload.jsonl'}")
        return found[0]


@dataclass(frozen=True)
class SourceFile:
    path: str
    content: str


@dataclass(frozen=True)
class Solution:
    name: str
    definition: str
    sources: tuple[SourceFile, ...]
    languages: tuple[str, ...]
    entry_file: str
    entry_function: str
    destination_passing_style: bool = True
    author: str | None = None
    description: str | None = None
    target_hardware: tuple[str, ...] = ()
    compile_options: dict = field(default_factory=dict)
    raw: dict = field(default_factory=dict, compare=False, repr=False)
    path: str = ""

    @property
    def entry_point(self) -> str:
        return f"{self.entry_file}::{self.entry_function}"

    @property
    def compiled(self) -> bool:
        return bool(set(self.languages) & COMPILED_LANGUAGES)


def _line_of(text: str, key: str) -> int | None:
    """Line of the first `"key":` in a JSON document (json gives no positions; this is enough to point)."""
    match = re.search(r'"' + re.escape(key) + r'"\s*:', text)
    return text.count("\n", 0, match.start()) + 1 if match else None


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise FormatError(path, None, None, "file not found") from None
    except UnicodeDecodeError as exc:
        raise FormatError(path, None, None, f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None


def _read_json(path: Path) -> tuple[dict, str]:
    text = _read_text(path)
    value = _parsed(text, path, None)
    if not isinstance(value, dict):
        raise FormatError(path, 1, None, "must hold a JSON object")
    return value, text


def _parsed(text: str, path: Path, line: int | None) -> Any:
    """``text`` read strictly (records.strict_json): a key given twice, NaN or a lone surrogate
    (which no digest, file or store can hold) is refused here, not taken as json.loads would."""
    try:
        return loads_strict(text)
    except json.JSONDecodeError as exc:
        raise FormatError(path, line or exc.lineno, None, f"invalid JSON: {exc.msg}") from None
    except ValueError as exc:
        raise FormatError(path, line, None, f"invalid JSON: {exc}") from None


def _tensor_specs(raw: Any, path: Path, text: str, section: str) -> dict[str, TensorSpec]:
    if not isinstance(raw, dict) or not raw:
        raise FormatError(path, _line_of(text, section), section, "must be a non-empty object of name → {shape, dtype}")
    specs = {}
    for name, entry in raw.items():
        where = f"{section}.{name}"
        line = _line_of(text, name)
        if not isinstance(entry, dict):
            raise FormatError(path, line, where, "must be an object with shape and dtype")
        if not isinstance(entry.get("dtype"), str) or entry["dtype"] not in DTYPES:
            raise FormatError(
                path, line, f"{where}.dtype", f"unknown dtype {entry.get('dtype')!r}; one of {sorted(DTYPES)}"
            )
        if "shape" not in entry:
            raise FormatError(path, line, f"{where}.shape", "missing (use null for a scalar, [] for a 0-d tensor)")
        shape = entry["shape"]
        if shape is not None:
            if not isinstance(shape, list) or not all(isinstance(d, str) for d in shape):
                raise FormatError(
                    path, line, f"{where}.shape", "must be a list of axis names or digit strings, or null"
                )
            shape = tuple(shape)
        specs[name] = TensorSpec(name, shape, entry["dtype"], entry.get("description"))
    return specs


def load_definition(path: str | Path) -> Definition:
    path = Path(path)
    raw, text = _read_json(path)
    for key in ("name", "axes", "inputs", "outputs", "reference"):
        if key not in raw:
            raise FormatError(path, None, key, "required field is missing")
    if not isinstance(raw["name"], str) or not raw["name"].strip():
        raise FormatError(path, _line_of(text, "name"), "name", "must be a non-empty string")
    for key in ("op_type", "description"):
        if raw.get(key) is not None and not isinstance(raw[key], str):
            raise FormatError(path, _line_of(text, key), key, "must be a string")
    axes: dict[str, Axis] = {}
    if not isinstance(raw["axes"], dict):
        raise FormatError(path, _line_of(text, "axes"), "axes", "must be an object of name → axis")
    for name, entry in raw["axes"].items():
        line, where = _line_of(text, name), f"axes.{name}"
        kind = entry.get("type") if isinstance(entry, dict) else None
        if kind == "const":
            value = entry.get("value")
            if isinstance(value, bool) or not isinstance(value, int):
                raise FormatError(path, line, f"{where}.value", "a const axis needs an integer value")
            axes[name] = Axis(name, "const", value=value)
        elif kind == "var":
            axes[name] = Axis(name, "var")
        elif kind == "expr":
            expression = entry.get("expression")
            if not isinstance(expression, str):
                raise FormatError(path, line, f"{where}.expression", "an expr axis needs an expression string")
            try:
                unknown = axis_math.names_in(expression) - set(raw["axes"])
            except axis_math.ExpressionError as exc:
                raise FormatError(path, line, f"{where}.expression", str(exc)) from None
            if unknown:
                raise FormatError(path, line, f"{where}.expression", f"refers to unknown axes {sorted(unknown)}")
            axes[name] = Axis(name, "expr", expression=expression)
        else:
            raise FormatError(path, line, f"{where}.type", f"must be const, var or expr, got {kind!r}")
    inputs = _tensor_specs(raw["inputs"], path, text, "inputs")
    outputs = _tensor_specs(raw["outputs"], path, text, "outputs")
    for spec in [*inputs.values(), *outputs.values()]:
        for dim in spec.shape or ():
            if not dim.isdigit() and dim not in axes:
                raise FormatError(path, _line_of(text, spec.name), f"{spec.name}.shape", f"unknown axis {dim!r}")
    if not isinstance(raw["reference"], str) or "def run" not in raw["reference"]:
        raise FormatError(path, _line_of(text, "reference"), "reference", "must be Python source defining run(...)")
    constraints = raw.get("constraints") or []
    if not isinstance(constraints, list) or not all(isinstance(c, str) for c in constraints):
        raise FormatError(path, _line_of(text, "constraints"), "constraints", "must be a list of expressions")
    entry = raw.get("custom_inputs_entrypoint")
    if entry is not None and f"def {entry}" not in raw["reference"]:
        raise FormatError(
            path,
            _line_of(text, "custom_inputs_entrypoint"),
            "custom_inputs_entrypoint",
            f"reference defines no function {entry!r}",
        )
    for key in ("flops", "bytes"):
        if raw.get(key) is not None:
            try:
                unknown = axis_math.names_in(str(raw[key])) - set(axes)
            except axis_math.ExpressionError as exc:
                raise FormatError(path, _line_of(text, key), key, str(exc)) from None
            if unknown:
                raise FormatError(path, _line_of(text, key), key, f"refers to unknown axes {sorted(unknown)}")
    return Definition(
        name=raw["name"],
        axes=axes,
        inputs=inputs,
        outputs=outputs,
        reference=raw["reference"],
        op_type=raw.get("op_type"),
        description=raw.get("description"),
        constraints=tuple(constraints),
        custom_inputs_entrypoint=entry,
        flops=raw.get("flops"),
        bytes=raw.get("bytes"),
        raw=raw,
        path=str(path),
    )


def _tolerance(raw: Any, path: Path, line: int) -> Tolerance:
    if raw is None:
        return Tolerance()
    if not isinstance(raw, dict):
        raise FormatError(path, line, "tolerance", "must be an object")
    unknown = set(raw) - set(TOLERANCE_DEFAULTS)
    if unknown:
        raise FormatError(path, line, f"tolerance.{sorted(unknown)[0]}", "unknown tolerance field")
    values = {**TOLERANCE_DEFAULTS, **{k: v for k, v in raw.items() if v is not None or k == "max_error_cap"}}
    for key in ("max_atol", "max_rtol", "required_matched_ratio"):
        if isinstance(values[key], bool) or not isinstance(values[key], (int, float)) or values[key] < 0:
            raise FormatError(path, line, f"tolerance.{key}", f"must be a non-negative number, got {values[key]!r}")
    if not 0 <= values["required_matched_ratio"] <= 1:
        raise FormatError(path, line, "tolerance.required_matched_ratio", "must lie in [0, 1]")
    if values["max_error_cap"] is not None and not isinstance(values["max_error_cap"], (int, float)):
        raise FormatError(path, line, "tolerance.max_error_cap", "must be a number or null")
    if not isinstance(values["allow_negative_inf"], bool):
        raise FormatError(path, line, "tolerance.allow_negative_inf", "must be true or false")
    return Tolerance(**values)


def _finite_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def parse_case(raw: Any, definition: Definition, path: Path, line: int) -> WorkloadCase:
    if not isinstance(raw, dict):
        raise FormatError(path, line, None, "each line must be a JSON object")
    uuid = raw.get("uuid")
    if not isinstance(uuid, str) or not uuid:
        raise FormatError(path, line, "uuid", "required string is missing")
    given_axes = raw.get("axes") or {}
    if not isinstance(given_axes, dict):
        raise FormatError(path, line, "axes", "must be an object of axis name → integer")
    try:
        definition.resolve_axes(given_axes)
    except (ValueError, axis_math.ExpressionError) as exc:
        raise FormatError(path, line, "axes", str(exc)) from None
    raw_inputs = raw.get("inputs") or {}
    if not isinstance(raw_inputs, dict):
        raise FormatError(path, line, "inputs", "must be an object of name → input")
    unknown = set(raw_inputs) - set(definition.inputs)
    if unknown:
        raise FormatError(path, line, f"inputs.{sorted(unknown)[0]}", "not an input of the definition")
    inputs = {}
    for name, spec in definition.inputs.items():
        entry = raw_inputs.get(name, {"type": "scalar"} if spec.is_scalar else {"type": "random"})
        where = f"inputs.{name}"
        kind = entry.get("type") if isinstance(entry, dict) else None
        if not isinstance(kind, str) or kind not in INPUT_TYPES:
            raise FormatError(path, line, f"{where}.type", f"must be one of {sorted(INPUT_TYPES)}, got {kind!r}")
        if kind == "scalar" and "value" not in entry:
            raise FormatError(path, line, f"{where}.value", "a scalar input needs a value")
        if kind == "scalar" and not _finite_number(entry["value"]):
            raise FormatError(path, line, f"{where}.value", f"must be a finite number, got {entry['value']!r:.40}")
        if kind == "safetensors":
            if not isinstance(entry.get("path"), str) or not isinstance(entry.get("tensor_key"), str):
                raise FormatError(path, line, where, "a safetensors input needs path and tensor_key")
        if kind == "custom" and not definition.custom_inputs_entrypoint:
            raise FormatError(path, line, where, "custom input, but the definition has no custom_inputs_entrypoint")
        if spec.is_scalar and kind not in ("scalar", "custom"):
            raise FormatError(path, line, f"{where}.type", "a scalar (shape null) input must be given as type scalar")
        inputs[name] = InputSpec(kind, entry.get("value"), entry.get("path"), entry.get("tensor_key"))
    numbers = {}
    for key in ("t_sol_ms", "t_b_ms"):
        value = raw.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0):
            raise FormatError(path, line, key, "must be a positive number of milliseconds")
        numbers[key] = value
    return WorkloadCase(
        uuid=uuid,
        axes=dict(given_axes),
        inputs=inputs,
        tolerance=_tolerance(raw.get("tolerance"), path, line),
        line=line,
        sol_hardware=raw.get("sol_hardware"),
        raw=raw,
        **numbers,
    )


def load_workload(path: str | Path, definition: Definition) -> list[WorkloadCase]:
    path = Path(path)
    lines = _read_text(path).splitlines()
    cases, seen = [], {}
    for number, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        case = parse_case(_parsed(text, path, number), definition, path, number)
        if case.uuid in seen:
            raise FormatError(path, number, "uuid", f"duplicate of line {seen[case.uuid]}")
        seen[case.uuid] = number
        cases.append(case)
    if not cases:
        raise FormatError(path, None, None, "holds no cases")
    return cases


def load_problem(root: str | Path) -> Problem:
    """A problem folder: definition.json and workload.jsonl."""
    root = Path(root)
    if not root.is_dir():
        raise FormatError(root, None, None, "is not a problem folder")
    definition = load_definition(root / "definition.json")
    return Problem(root=root, definition=definition, cases=load_workload(root / "workload.jsonl", definition))


def _safe_relative(path: Any) -> bool:
    """A source's path: relative, inside the solution's folder, and a name a filesystem can hold."""
    if not isinstance(path, str) or not path or "\\" in path or "\x00" in path or len(path) > 1024:
        return False
    pure = PurePosixPath(path)
    return (
        not pure.is_absolute()
        and ".." not in pure.parts
        and pure.parts[0] not in ("", ".")
        and all(len(part.encode("utf-8", "surrogatepass")) <= 255 for part in pure.parts)
    )


def _solution_languages(path: Path, text: str, spec: dict) -> tuple[list[str], str]:
    """The languages of a solution and the key that named them: SOL-ExecBench's ``languages`` (a list)
    or FlashInfer-Bench's ``language`` (one string); a solution giving both must say the same."""
    listed, single = spec.get("languages"), spec.get("language")
    if single is not None and not isinstance(single, str):
        raise FormatError(path, _line_of(text, "language"), "spec.language", "must be one language name (a string)")
    if listed is not None and (not isinstance(listed, list) or not all(isinstance(x, str) for x in listed)):
        raise FormatError(path, _line_of(text, "languages"), "spec.languages", "must be a list of language names")
    if listed and single and listed != [single]:
        raise FormatError(
            path, _line_of(text, "language"), "spec.language", f"says {single!r} but spec.languages says {listed!r}"
        )
    if listed:
        return listed, "languages"
    if single:
        return [single], "language"
    raise FormatError(
        path,
        _line_of(text, "languages") or _line_of(text, "language"),
        "spec.languages",
        "must name the solution's language (spec.languages, or spec.language)",
    )


def load_solution(path: str | Path) -> Solution:
    """solution.json; a source entry without content is read from the file beside it."""
    path = Path(path)
    raw, text = _read_json(path)
    for key in ("name", "definition", "spec"):
        if key not in raw:
            raise FormatError(path, None, key, "required field is missing")
    spec = raw["spec"]
    if not isinstance(spec, dict):
        raise FormatError(path, _line_of(text, "spec"), "spec", "must be an object")
    languages, key = _solution_languages(path, text, spec)
    known = PYTHON_LANGUAGES | COMPILED_LANGUAGES
    for language in languages:
        if language not in known:
            raise FormatError(
                path, _line_of(text, key), f"spec.{key}", f"unknown language {language!r}; one of {sorted(known)}"
            )
    if set(languages) & PYTHON_LANGUAGES and set(languages) & COMPILED_LANGUAGES:
        raise FormatError(
            path,
            _line_of(text, key),
            f"spec.{key}",
            "mixes Python-side and compiled languages; a solution uses one group",
        )
    entry = spec.get("entry_point")
    if not isinstance(entry, str) or entry.count("::") != 1:
        raise FormatError(path, _line_of(text, "entry_point"), "spec.entry_point", "must read 'file.py::function'")
    entry_file, entry_function = entry.split("::")
    sources = []
    raw_sources = raw.get("sources") or []
    if not isinstance(raw_sources, list):
        raise FormatError(path, _line_of(text, "sources"), "sources", "must be a list of {path, content}")
    for index, item in enumerate(raw_sources):
        where = f"sources[{index}]"
        rel = item.get("path") if isinstance(item, dict) else None
        if not _safe_relative(rel):
            raise FormatError(
                path, _line_of(text, "sources"), f"{where}.path", f"must be a relative path without '..', got {rel!r}"
            )
        content = item.get("content")
        if content is None:
            beside = path.parent / rel
            if not beside.is_file():
                raise FormatError(
                    path, _line_of(text, "sources"), f"{where}.content", f"no content and no file {beside}"
                )
            content = _read_text(beside)
        if not isinstance(content, str):
            raise FormatError(path, _line_of(text, "sources"), f"{where}.content", "must be a string")
        sources.append(SourceFile(rel, content))
    if not sources and (path.parent / entry_file).is_file():
        sources.append(SourceFile(entry_file, _read_text(path.parent / entry_file)))
    paths = [s.path for s in sources]
    if len(set(paths)) != len(paths):
        raise FormatError(path, _line_of(text, "sources"), "sources", "two sources share a path")
    if entry_file not in paths:
        raise FormatError(
            path, _line_of(text, "entry_point"), "spec.entry_point", f"{entry_file!r} is not among the sources"
        )
    dps = spec.get("destination_passing_style", True)
    if not isinstance(dps, bool):
        raise FormatError(
            path, _line_of(text, "destination_passing_style"), "spec.destination_passing_style", "must be true or false"
        )
    hardware = spec.get("target_hardware") or []
    hardware = hardware if isinstance(hardware, list) else [hardware]
    if not all(isinstance(h, str) and len(h) <= PRODUCT_MAX for h in hardware):  # the record's productsTested
        raise FormatError(
            path,
            _line_of(text, "target_hardware"),
            "spec.target_hardware",
            f"must be GPU names of at most {PRODUCT_MAX} characters",
        )
    compile_options = spec.get("compile_options") or {}
    if not isinstance(compile_options, dict):
        raise FormatError(path, _line_of(text, "compile_options"), "spec.compile_options", "must be an object")
    for key in ("name", "definition"):
        if not isinstance(raw[key], str) or not raw[key].strip():
            raise FormatError(path, _line_of(text, key), key, "must be a non-empty string")
    for key in ("author", "description"):
        if raw.get(key) is not None and not isinstance(raw[key], str):
            raise FormatError(path, _line_of(text, key), key, "must be a string")
    return Solution(
        name=raw["name"],
        definition=raw["definition"],
        sources=tuple(sources),
        languages=tuple(languages),
        entry_file=entry_file,
        entry_function=entry_function,
        destination_passing_style=dps,
        author=raw.get("author"),
        description=raw.get("description"),
        target_hardware=tuple(hardware),
        compile_options=compile_options,
        raw=raw,
        path=str(path),
    )
