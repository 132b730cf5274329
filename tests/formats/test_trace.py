"""Trace lines read into typed objects by `formats.trace`: what a line means, and every refusal naming
the file, the line and the field."""

from __future__ import annotations

import json
import random

import pytest

from hostile_kit import SEED
from kernelindex.formats.errors import FormatError
from kernelindex.formats.trace import (
    RESOURCE_EXCEEDED,
    RUN_STATUSES,
    UPSTREAM_STATUS,
    Correctness,
    Performance,
    parse_trace_line,
    run_status,
    trace_line_object,
    trace_lines,
    upstream_status,
)
from kernelindex.formats.workload import Tolerance, WorkloadCase
from kernelindex.records.strict_json import loads_strict
from kernelindex.records.vocabulary import RunStatus

LINE = {
    "definition": "vector_add_f32",
    "solution": "vector_add_torch",
    "workload": {"uuid": "3a1f0e2c-0000-4000-8000-000000000001", "axes": {"n": 1000}},
    "evaluation": {
        "status": "REWARD_HACK",
        "environment": {"hardware": "  NVIDIA B200 ", "libs": {"Torch": "2.9.0", "cuda": 13}},
        "timestamp": "2026-07-01T12:00:00+02:00",
        "correctness": {"max_relative_error": 1e-6, "max_absolute_error": 2e-7},
        "performance": {"latency_ms": 0.0123, "reference_latency_ms": 0.05, "speedup_factor": 4.065},
    },
}


def _bytes(*lines) -> bytes:
    return b"".join(
        (line if isinstance(line, bytes) else json.dumps(line, ensure_ascii=False).encode()) + b"\n" for line in lines
    )


def test_a_line_reads_into_its_typed_fields():
    line = parse_trace_line(LINE, "t.jsonl", 7)
    assert (line.file, line.line, line.definition, line.solution) == (
        "t.jsonl",
        7,
        "vector_add_f32",
        "vector_add_torch",
    )
    assert line.status == "suspected_reward_hack"
    assert line.workload_uuid == LINE["workload"]["uuid"] and line.workload == LINE["workload"]
    assert (line.hardware, line.libraries) == ("NVIDIA B200", {"torch": "2.9.0", "cuda": "13"})
    assert line.observed_at == "2026-07-01T10:00:00.000Z"  # UTC
    assert line.has_correctness and (line.max_absolute_error, line.max_relative_error) == (2e-7, 1e-6)
    assert (line.latency_ns, line.reference_latency_ns, line.speedup_factor) == (12300, 50000, 4.065)


def test_a_naive_time_is_utc_and_absent_parts_are_none():
    rng = random.Random(SEED)
    hour = rng.randrange(24)
    doc = json.loads(json.dumps(LINE))
    doc["evaluation"].update(timestamp=f"2026-07-01T{hour:02d}:00:00", correctness=None)
    del doc["evaluation"]["performance"]
    line = parse_trace_line(doc, "t.jsonl", 1)
    assert line.observed_at == f"2026-07-01T{hour:02d}:00:00.000Z"
    assert not line.has_correctness and line.latency_ns is None and line.speedup_factor is None


@pytest.mark.parametrize(
    "change, field, words",
    [
        (lambda d: d.pop("solution"), "solution", "required field is missing"),
        (lambda d: d.update(definition=3), "definition", "must be a name"),
        (lambda d: d["workload"].pop("uuid"), "workload.uuid", "required string"),
        (lambda d: d.update(evaluation=[]), "evaluation", "must be an object"),
        (lambda d: d["evaluation"].update(status="GREAT"), "evaluation.status", "unknown status 'GREAT'"),
        (lambda d: d["evaluation"]["environment"].update(hardware=" "), "evaluation.environment.hardware", "name"),
        (lambda d: d["evaluation"]["environment"].update(libs=[1]), "evaluation.environment.libs", "name → version"),
        (lambda d: d["evaluation"].update(timestamp="yesterday"), "evaluation.timestamp", "not an ISO-8601 time"),
        (lambda d: d["evaluation"].update(correctness=[1]), "evaluation.correctness", "must be an object"),
        (
            lambda d: d["evaluation"]["correctness"].update(max_absolute_error=-1),
            "evaluation.correctness.max_absolute_error",
            "non-negative number",
        ),
        (
            lambda d: d["evaluation"]["performance"].update(latency_ms=True),
            "evaluation.performance.latency_ms",
            "non-negative number",
        ),
        (
            lambda d: d["evaluation"]["performance"].update(reference_latency_ms=1e308),
            "evaluation.performance.reference_latency_ms",
            "past any real latency",
        ),
    ],
)
def test_a_bad_line_is_refused_naming_file_line_and_field(change, field, words):
    doc = json.loads(json.dumps(LINE))
    change(doc)
    number = random.Random(SEED).randint(1, 10_000)
    with pytest.raises(FormatError) as caught:
        parse_trace_line(doc, "dir/t.jsonl", number)
    assert (caught.value.file, caught.value.line, caught.value.field) == ("dir/t.jsonl", number, field)
    assert words in caught.value.reason and str(caught.value).startswith(f"dir/t.jsonl:{number}:")


def test_a_file_gives_every_line_read_and_one_error_per_line_refused():
    second = {**LINE, "solution": "a\u2028b"}  # a raw line separator inside a string is no line end
    data = b"\n" + _bytes(LINE, b"{not json", second, b"\xff\xfe", [1])
    lines, errors = trace_lines(data, "t.jsonl")
    assert [(line.line, line.solution) for line in lines] == [(2, "vector_add_torch"), (4, "a\u2028b")]
    assert [(e.line, e.field) for e in errors] == [(3, None), (5, None), (6, None)]
    assert "invalid JSON" in errors[0].reason and "not UTF-8" in errors[1].reason
    assert "must be a JSON object" in errors[2].reason


def test_strict_json_refusals_name_the_line():
    lines, errors = trace_lines(_bytes(LINE) + json.dumps(LINE).replace("0.0123", "1e400").encode(), "t.jsonl")
    assert len(lines) == 1 and [e.line for e in errors] == [2] and "out of range" in errors[0].reason


# statuses the upstream format has no word for: written as RUNTIME_ERROR
UNWRITTEN = {
    RunStatus.RESOURCE_EXCEEDED,
    RunStatus.POLICY_VIOLATION,
    RunStatus.INCOMPLETE_EVIDENCE,
    RunStatus.REVOKED,
}


@pytest.mark.parametrize("status", list(RunStatus), ids=lambda status: status.value)
def test_every_status_written_reads_back_as_itself_or_is_a_runtime_error(status):
    word = upstream_status(status)
    if status in UNWRITTEN:
        assert word == "RUNTIME_ERROR" and run_status(word) == RunStatus.RUNTIME_ERROR
    else:
        assert run_status(word) == status and type(run_status(word)) is str  # plain words go into records


def test_every_status_word_read_is_written_back_the_same_but_resource_exceeded():
    assert set(UPSTREAM_STATUS) == set(RunStatus) - UNWRITTEN
    assert len(set(UPSTREAM_STATUS.values())) == len(UPSTREAM_STATUS)  # one word per status: an inverse exists
    for word, status in RUN_STATUSES.items():
        expected = "RUNTIME_ERROR" if word == RESOURCE_EXCEEDED else word  # inbound only
        assert upstream_status(RunStatus(status)) == expected, word
    assert run_status(RESOURCE_EXCEEDED) == "resource_exceeded"
    assert run_status("SOMETHING") is None and run_status(None) is None and run_status("passed") is None


def _case(rng: random.Random) -> WorkloadCase:
    inputs = {"x": {"type": "random", "seed": rng.randrange(1 << 30)}}
    return WorkloadCase(
        uuid=f"3a1f0e2c-0000-4000-8000-{rng.randrange(1 << 48):012x}",
        axes={"n": rng.randint(1, 1 << 20)},
        inputs={},
        tolerance=Tolerance(max_atol=rng.random(), max_error_cap=None),
        raw={"inputs": inputs},
    )


def _environment(rng: random.Random) -> dict:
    return {
        "hardware": {"product": rng.choice(["NVIDIA B200", "NVIDIA H100 80GB HBM3"])},
        "software": {"framework": {"version": "2.9.0"}, "libraries": {"triton": "3.5.0"}, "cudaToolkit": "13.0"},
    }


def test_a_line_written_is_strict_json_the_reader_takes_back():
    rng = random.Random(SEED)
    case, environment = _case(rng), _environment(rng)
    latency, reference = rng.uniform(0.001, 5), rng.uniform(0.001, 5)
    written = trace_line_object(
        definition="vector_add_f32",
        solution="vector_add_torch",
        case=case,
        status=RunStatus.SUSPECTED_REWARD_HACK,
        environment=environment,
        timestamp="2026-07-01T10:00:00.123Z",
        log="a log",
        correctness=Correctness(max_relative_error=float("inf"), max_absolute_error=1e-7, has_nan=False, has_inf=True),
        performance=Performance(latency_ms=latency, reference_latency_ms=reference, speedup_factor=reference / latency),
    )
    text = json.dumps(written, allow_nan=False)  # an infinite error is null: strict JSON
    evaluation = loads_strict(text)["evaluation"]
    assert list(evaluation) == ["status", "environment", "timestamp", "log", "correctness", "performance"]
    assert evaluation["correctness"] == {
        "max_relative_error": None,
        "max_absolute_error": 1e-7,
        "has_nan": False,
        "has_inf": True,
    }
    assert evaluation["environment"] == {
        "hardware": environment["hardware"]["product"],
        "libs": {"torch": "2.9.0", "triton": "3.5.0", "cuda": "13.0"},
    }
    line = parse_trace_line(loads_strict(text), "t.jsonl", 1)
    assert (line.status, line.workload_uuid, line.hardware) == (
        "suspected_reward_hack",
        case.uuid,
        environment["hardware"]["product"],
    )
    assert line.workload["inputs"] == case.raw["inputs"] and line.workload["axes"] == case.axes
    assert line.workload["tolerance"]["max_atol"] == case.tolerance.max_atol
    assert (line.latency_ms, line.reference_latency_ms, line.observed_at) == (
        latency,
        reference,
        "2026-07-01T10:00:00.123Z",
    )
    assert line.max_relative_error is None and line.max_absolute_error == 1e-7


def test_a_line_without_checks_or_figures_writes_nulls_and_a_resource_limit_as_a_runtime_error():
    rng = random.Random(SEED)
    written = trace_line_object(
        definition="d",
        solution="s",
        case=_case(rng),
        status=RunStatus.RESOURCE_EXCEEDED,
        environment=_environment(rng),
        timestamp="2026-07-01T10:00:00.000Z",
        log="",
        correctness=None,
        performance=None,
    )
    assert written["evaluation"]["status"] == "RUNTIME_ERROR"
    assert written["evaluation"]["correctness"] is None and written["evaluation"]["performance"] is None
    line = parse_trace_line(written, "t.jsonl", 1)
    assert line.status == "runtime_error" and not line.has_correctness and line.latency_ns is None
