"""workload.jsonl of SOL-ExecBench and FlashInfer-Bench: one case a line (axes, inputs, tolerance)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from uuid import UUID, uuid5

from kernelindex.formats import axes as axis_math
from kernelindex.formats.definition import Definition
from kernelindex.formats.errors import FormatError
from kernelindex.formats.json_files import parse_json, read_text
from kernelindex.records.canonical import canonical_json

WORKLOAD_NAMESPACE = UUID("6b1d0c2e-7f4a-5e0b-9c61-3d2f8a4e9b70")  # ours: uuids of workloads that name none
INPUT_TYPES = {"random", "scalar", "safetensors", "custom"}
TOLERANCE_DEFAULTS = {
    "max_atol": 1e-2,
    "max_rtol": 1e-2,
    "required_matched_ratio": 0.99,
    "max_error_cap": None,
    "allow_negative_inf": False,
}


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
    warnings: tuple[str, ...] = ()  # what upstream's loader lets through and we pass over, said once


def _ignored(kind: str, names: set[str], where: str) -> list[str]:
    """The warning for keys upstream's pydantic models ignore (their default): taken, not used."""
    return [
        f"{where}: {kind} {name!r} is not part of the format; ignored as upstream ignores it" for name in sorted(names)
    ]


def _tolerance(raw: Any, path: Path, line: int) -> tuple[Tolerance, list[str]]:
    """The case's tolerance and a warning per unknown key (a misspelt ``required_match_ratio``
    leaves the default in force, as it does upstream). An explicit null is refused, as SOL-ExecBench's
    ToleranceSpec refuses it; we also refuse what it would take but no output could pass or what only
    its lax parsing reads (a negative bound or cap, a ratio above 1, a bool or a string for a number)."""
    if not isinstance(raw, dict):
        raise FormatError(path, line, "tolerance", "must be an object")
    warnings = _ignored("tolerance field", set(raw) - set(TOLERANCE_DEFAULTS), f"{path}:{line}")
    values = {**TOLERANCE_DEFAULTS, **{k: v for k, v in raw.items() if k in TOLERANCE_DEFAULTS}}
    for key in ("max_atol", "max_rtol", "required_matched_ratio", "max_error_cap"):
        if key == "max_error_cap" and values[key] is None:
            continue
        values[key] = _non_negative(values[key], path, line, f"tolerance.{key}")
    if values["required_matched_ratio"] > 1:
        raise FormatError(path, line, "tolerance.required_matched_ratio", "must lie in [0, 1]")
    if not isinstance(values["allow_negative_inf"], bool):
        raise FormatError(path, line, "tolerance.allow_negative_inf", "must be true or false")
    return Tolerance(**values), warnings


def _non_negative(value: Any, path: Path, line: int, where: str) -> int | float:
    """A tolerance number as given, but never an integer past 2**53: no float holds it exactly (the
    canonical JSON of a record refuses it too), and past float's range ToleranceSpec refuses it."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 2**53:
        raise FormatError(path, line, where, f"must be a number a float holds exactly, got {value.bit_length()} bits")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise FormatError(path, line, where, f"must be a non-negative number, got {value!r}")
    return value


def _content_uuid(raw: dict, path: Path, line: int) -> str:
    try:
        return str(uuid5(WORKLOAD_NAMESPACE, canonical_json(raw).decode()))
    except (TypeError, ValueError) as exc:  # a value no canonical JSON holds (an integer past 2**53)
        raise FormatError(path, line, "uuid", f"none given, and none can be derived from the line: {exc}") from None


def _scalar_value(value: Any) -> bool:
    """What upstream's ScalarInput takes: an int, a float or a bool (finite: a record holds no NaN)."""
    return isinstance(value, bool) or (isinstance(value, (int, float)) and math.isfinite(value))


def parse_case(raw: Any, definition: Definition, path: Path, line: int) -> WorkloadCase:
    """One workload line: SOL-ExecBench's (the workload itself) or FlashInfer-Bench's dataset line
    (``{definition, solution, workload, evaluation}``); a workload without a uuid gets one derived
    from its content (uuid5), so the same workload is the same case wherever it is read."""
    if isinstance(raw, dict) and isinstance(raw.get("workload"), dict) and "axes" not in raw:
        raw = raw["workload"]
    if not isinstance(raw, dict):
        raise FormatError(path, line, None, "each line must be a JSON object")
    uuid = raw["uuid"] if "uuid" in raw else _content_uuid(raw, path, line)
    if not isinstance(uuid, str) or not uuid:
        raise FormatError(path, line, "uuid", "required string is missing")
    given_axes = raw.get("axes") or {}
    if not isinstance(given_axes, dict):
        raise FormatError(path, line, "axes", "must be an object of axis name → integer")
    try:
        definition.resolve_axes(given_axes)
    except (ValueError, axis_math.ExpressionError) as exc:
        raise FormatError(path, line, "axes", str(exc)) from None
    where_line = f"{path}:{line}"
    warnings = [  # no shape uses it; a custom inputs function still gets it, as upstream's does
        f"{where_line}: axis {name!r} is not declared by the definition; only a custom inputs function sees it"
        for name in sorted(set(given_axes) - set(definition.axes))
    ]
    raw_inputs = raw.get("inputs") or {}
    if not isinstance(raw_inputs, dict):
        raise FormatError(path, line, "inputs", "must be an object of name → input")
    warnings += _ignored("input", set(raw_inputs) - set(definition.inputs), where_line)
    inputs = {}
    for name, spec in definition.inputs.items():
        entry = raw_inputs.get(name, {"type": "scalar"} if spec.is_scalar else {"type": "random"})
        where = f"inputs.{name}"
        kind = entry.get("type") if isinstance(entry, dict) else None
        if not isinstance(kind, str) or kind not in INPUT_TYPES:
            raise FormatError(path, line, f"{where}.type", f"must be one of {sorted(INPUT_TYPES)}, got {kind!r}")
        if kind == "scalar" and "value" not in entry:
            raise FormatError(path, line, f"{where}.value", "a scalar input needs a value")
        if kind == "scalar" and not _scalar_value(entry["value"]):
            raise FormatError(
                path, line, f"{where}.value", f"must be a finite number or a bool, got {entry['value']!r:.40}"
            )
        if kind == "safetensors":
            if not isinstance(entry.get("path"), str) or not isinstance(entry.get("tensor_key"), str):
                raise FormatError(path, line, where, "a safetensors input needs path and tensor_key")
        if kind == "custom" and not definition.custom_inputs_entrypoint:
            raise FormatError(path, line, where, "custom input, but the definition has no custom_inputs_entrypoint")
        if spec.is_scalar and kind not in ("scalar", "custom"):
            raise FormatError(path, line, f"{where}.type", "a scalar (shape null) input must be given as type scalar")
        # a custom input's value (often null) is ignored upstream: the definition's generator makes it
        value = entry.get("value") if kind == "scalar" else None
        inputs[name] = InputSpec(kind, value, entry.get("path"), entry.get("tensor_key"))
    numbers = {}
    for key in ("t_sol_ms", "t_b_ms"):
        value = raw.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0):
            raise FormatError(path, line, key, "must be a positive number of milliseconds")
        numbers[key] = value
    tolerance, ignored = _tolerance(raw.get("tolerance", {}), path, line)
    return WorkloadCase(
        uuid=uuid,
        axes={k: v for k, v in given_axes.items() if k in definition.axes},
        inputs=inputs,
        tolerance=tolerance,
        line=line,
        sol_hardware=raw.get("sol_hardware"),
        raw=raw,
        warnings=tuple(warnings + ignored),
        **numbers,
    )


def load_workload(path: str | Path, definition: Definition) -> list[WorkloadCase]:
    path = Path(path)
    lines = read_text(path).splitlines()
    cases: list[WorkloadCase] = []
    seen: dict[str, int] = {}
    for number, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        case = parse_case(parse_json(text, path, number), definition, path, number)
        if case.uuid in seen:
            raise FormatError(path, number, "uuid", f"duplicate of line {seen[case.uuid]}")
        seen[case.uuid] = number
        cases.append(case)
    if not cases:
        raise FormatError(path, None, None, "holds no cases")
    return cases
