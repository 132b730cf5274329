"""Trace lines (the JSONL FlashInfer-Bench and SOL-ExecBench write, one object per solution and workload
evaluated): read into typed `TraceLine`s, and written by our harness in the same shape.

This is the one place that decides what a line must hold and what its words mean (status word, UTC
time, latencies as whole nanoseconds), so the trace importer and the FlashInfer-Bench folder importer
read a line alike, and what the harness writes is what they read. Every refusal is a `FormatError`
naming the file, the line and the field. The status words are one table, `UPSTREAM_STATUS`; the
reader's `RUN_STATUSES` is its inverse.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kernelindex.formats.errors import FormatError
from kernelindex.formats.workload import WorkloadCase
from kernelindex.records.normalise import token
from kernelindex.records.strict_json import loads_strict
from kernelindex.records.units import whole_ns
from kernelindex.records.vocabulary import RunStatus

# The upper-case word a trace line says for each run status the upstream format has. Written by the
# harness (`upstream_status`), read by every importer (`run_status`, through the inverse below).
UPSTREAM_STATUS: dict[RunStatus, str] = {
    RunStatus.PASSED: "PASSED",
    RunStatus.INCORRECT_SHAPE: "INCORRECT_SHAPE",
    RunStatus.INCORRECT_DTYPE: "INCORRECT_DTYPE",
    RunStatus.INCORRECT_NUMERICAL: "INCORRECT_NUMERICAL",
    RunStatus.RUNTIME_ERROR: "RUNTIME_ERROR",
    RunStatus.COMPILE_ERROR: "COMPILE_ERROR",
    RunStatus.TIMEOUT: "TIMEOUT",
    RunStatus.SUSPECTED_REWARD_HACK: "REWARD_HACK",
    RunStatus.INVALID_REFERENCE: "INVALID_REFERENCE",
}
# Upstream has no resource_exceeded (a run over its memory limit is a RUNTIME_ERROR there), so the
# harness writes it as RUNTIME_ERROR; the word is still read, inbound only, for the traces that say it.
RESOURCE_EXCEEDED = "RESOURCE_EXCEEDED"
# status word -> RunStatus value (plain words: they go into records as they are)
RUN_STATUSES: dict[str, str] = {word: status.value for status, word in UPSTREAM_STATUS.items()} | {
    RESOURCE_EXCEEDED: RunStatus.RESOURCE_EXCEEDED.value
}


def run_status(upstream: Any) -> str | None:
    """The RunStatus of an upstream status word (None: a word no harness writes, or no word)."""
    return RUN_STATUSES.get(upstream) if isinstance(upstream, str) else None


def upstream_status(status: RunStatus) -> str:
    """The word a trace line says for ``status``; one the format lacks (resource_exceeded, and the
    statuses no evaluation ends with) is RUNTIME_ERROR."""
    return UPSTREAM_STATUS.get(status, UPSTREAM_STATUS[RunStatus.RUNTIME_ERROR])


@dataclass(frozen=True)
class TraceLine:
    """One trace line, checked: every field a reader uses is here with its type; ``workload`` is the
    line's workload object as written (its ``uuid`` a string)."""

    file: str
    line: int
    definition: str
    solution: str
    workload: dict[str, Any]
    status: str  # a RunStatus value
    hardware: str  # the product name as the trace gives it (stripped, at most 200 characters)
    libraries: dict[str, str]  # library token -> version
    observed_at: str  # ISO-8601 UTC, milliseconds, "Z"
    has_correctness: bool  # the line reports a correctness object
    max_absolute_error: float | None
    max_relative_error: float | None
    latency_ms: float | None  # as reported, and in whole nanoseconds
    latency_ns: int | None
    reference_latency_ms: float | None
    reference_latency_ns: int | None
    speedup_factor: float | None

    @property
    def workload_uuid(self) -> str:
        return str(self.workload["uuid"])

    def refuse(self, field: str | None, reason: str) -> FormatError:
        """The error for something of this line a reader cannot take (a name the problem lacks)."""
        return FormatError(self.file, self.line, field, reason)


class _Bad(Exception):
    def __init__(self, field: str | None, reason: str):
        super().__init__(reason)
        self.field, self.reason = field, reason


def _timestamp(value: Any) -> str:
    if not isinstance(value, str):
        raise _Bad("evaluation.timestamp", "must be an ISO-8601 string")
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise _Bad("evaluation.timestamp", f"not an ISO-8601 time: {value!r}") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)  # upstream writes naive times in UTC
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _object(value: Any, field: str) -> dict:
    """An optional object of a line: absent or null is empty; anything else but an object is refused."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _Bad(field, f"must be an object, got {str(value)[:40]!r}")
    return value


def _number(value: Any, field: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise _Bad(field, f"must be a non-negative number, got {value!r}")
    return float(value)


def _latency(performance: dict, name: str) -> tuple[float | None, int | None]:
    """A reported time in ms and in whole ns, refused past what a 64-bit measurement holds."""
    field = f"evaluation.performance.{name}"
    value = _number(performance.get(name), field)
    if value is None:
        return None, None
    ns = whole_ns(value, "ms")
    if ns is None:
        raise _Bad(field, f"{value!r} ms is past any real latency")
    return value, ns


def _environment(env: Any) -> tuple[str, dict[str, str]]:
    if not isinstance(env, dict) or not isinstance(env.get("hardware"), str) or not env["hardware"].strip():
        raise _Bad("evaluation.environment.hardware", "must name the hardware")
    libs = env.get("libs") or {}
    if not isinstance(libs, dict):
        raise _Bad("evaluation.environment.libs", "must be an object of name → version")
    return env["hardware"].strip()[:200], {token(k): str(v)[:100] for k, v in libs.items()}


def _fields(value: Any, file: str, line: int) -> TraceLine:
    if not isinstance(value, dict):
        raise _Bad(None, "each line must be a JSON object")
    for key in ("definition", "solution", "workload", "evaluation"):
        if key not in value:
            raise _Bad(key, "required field is missing")
    for key in ("definition", "solution"):
        if not isinstance(value[key], str):
            raise _Bad(key, f"must be a name (a string), got {str(value[key])[:40]!r}")
    workload, evaluation = value["workload"], value["evaluation"]
    if not isinstance(workload, dict) or not isinstance(workload.get("uuid"), str):
        raise _Bad("workload.uuid", "required string is missing")
    if not isinstance(evaluation, dict):
        raise _Bad("evaluation", "must be an object")
    status = run_status(evaluation.get("status"))
    if status is None:
        raise _Bad("evaluation.status", f"unknown status {evaluation.get('status')!r}; one of {sorted(RUN_STATUSES)}")
    hardware, libraries = _environment(evaluation.get("environment"))
    observed_at = _timestamp(evaluation.get("timestamp"))
    correctness = _object(evaluation.get("correctness"), "evaluation.correctness")
    performance = _object(evaluation.get("performance"), "evaluation.performance")
    latency_ms, latency_ns = _latency(performance, "latency_ms")
    reference_ms, reference_ns = _latency(performance, "reference_latency_ms")
    return TraceLine(
        file=file,
        line=line,
        definition=value["definition"],
        solution=value["solution"],
        workload=workload,
        status=status,
        hardware=hardware,
        libraries=libraries,
        observed_at=observed_at,
        has_correctness=bool(correctness),
        max_absolute_error=_number(correctness.get("max_absolute_error"), "evaluation.correctness.max_absolute_error"),
        max_relative_error=_number(correctness.get("max_relative_error"), "evaluation.correctness.max_relative_error"),
        latency_ms=latency_ms,
        latency_ns=latency_ns,
        reference_latency_ms=reference_ms,
        reference_latency_ns=reference_ns,
        speedup_factor=_number(performance.get("speedup_factor"), "evaluation.performance.speedup_factor"),
    )


def parse_trace_line(value: Any, file: str | Path, line: int) -> TraceLine:
    """One decoded line (the JSON value) of ``file``; FormatError naming the file, line and field."""
    try:
        return _fields(value, str(file), line)
    except _Bad as exc:
        raise FormatError(file, line, exc.field, exc.reason) from None


def trace_lines(data: bytes, file: str | Path) -> tuple[list[TraceLine], list[FormatError]]:
    """Every non-blank line of a trace file's bytes: those read, and one error for each line refused
    (the caller refuses the file when there is any, naming them all)."""
    lines, errors = [], []
    # split bytes, not text: str.splitlines would also cut at U+2028 and friends inside a JSON string
    for number, raw in enumerate(data.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            value = loads_strict(raw.decode("utf-8"))  # strict JSON: no NaN, no key twice, storable text
        except UnicodeDecodeError as exc:
            errors.append(FormatError(file, number, None, f"not UTF-8 text ({exc.reason} at byte {exc.start})"))
            continue
        except ValueError as exc:
            errors.append(FormatError(file, number, None, f"invalid JSON: {getattr(exc, 'msg', exc)}"))
            continue
        try:
            lines.append(parse_trace_line(value, file, number))
        except FormatError as exc:
            errors.append(exc)
    return lines, errors


# --- writing ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Correctness:
    """A line's ``correctness`` object: the worst of a case's checked outputs."""

    max_relative_error: float
    max_absolute_error: float
    has_nan: bool
    has_inf: bool


@dataclass(frozen=True)
class Performance:
    """A line's ``performance`` object (the solution's and the reference's median, in ms)."""

    latency_ms: float
    reference_latency_ms: float | None
    speedup_factor: float | None


def trace_environment(environment: dict) -> dict:
    """The line's ``environment`` {hardware, libs} of a run record's environment object."""
    libs = {"torch": environment["software"]["framework"]["version"], **environment["software"]["libraries"]}
    if "cudaToolkit" in environment["software"]:
        libs["cuda"] = environment["software"]["cudaToolkit"]
    return {"hardware": environment["hardware"]["product"], "libs": libs}


def _finite(value):
    """Strict JSON: NaN and infinities become null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def trace_line_object(
    *,
    definition: str,
    solution: str,
    case: WorkloadCase,
    status: RunStatus,
    environment: dict,
    timestamp: str,
    log: str,
    correctness: Correctness | None,
    performance: Performance | None,
) -> dict:
    """One trace line in the upstream shape, as a strict-JSON object (what `parse_trace_line` reads);
    ``environment`` is the run record's environment object."""
    workload = {
        "uuid": case.uuid,
        "axes": case.axes,
        "inputs": dict(case.raw.get("inputs") or {}),
        "tolerance": {
            k: getattr(case.tolerance, k)
            for k in ("max_atol", "max_rtol", "required_matched_ratio", "max_error_cap", "allow_negative_inf")
        },
    }
    return _finite(
        {
            "definition": definition,
            "solution": solution,
            "workload": workload,
            "evaluation": {
                "status": upstream_status(status),
                "environment": trace_environment(environment),
                "timestamp": timestamp,
                "log": log,
                "correctness": None if correctness is None else asdict(correctness),
                "performance": None if performance is None else asdict(performance),
            },
        }
    )
