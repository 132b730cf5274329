"""Record models on our own fixtures: what they accept, keep exactly, and refuse (and why)."""

from __future__ import annotations

import pytest
from records_testkit import DELETE, all_fixtures, changed, fixture

from kernelindex import API_VERSION
from kernelindex.records.canonical import canonical_json, digest
from kernelindex.records.kernel_kinds import BenchmarkRun, OperationSpec
from kernelindex.records.models import (
    KINDS,
    RecordError,
    dump_record,
    parse_record,
    record_canonical_json,
    record_digest,
    register_kind,
)

FIXTURES = all_fixtures()


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_fixture_round_trips_to_identical_bytes(name: str) -> None:
    data = FIXTURES[name]
    record = parse_record(data, where=f"{name}.json")
    assert type(record) is KINDS[data["kind"]]
    assert canonical_json(dump_record(record)) == canonical_json(data)
    assert record_canonical_json(record) == canonical_json(data)
    assert record_digest(record) == digest(data)


def test_run_fixture_points_at_the_other_fixtures_by_digest() -> None:
    run = parse_record(fixture("toy-scale-run-1"))
    assert isinstance(run, BenchmarkRun)
    referred = {
        run.spec.implementationDigest: "toy-scale-triton",
        run.spec.workloadDigest: "toy-scale-rows-512",
        run.spec.protocolDigest: "toy-cuda-events-median",
        run.spec.environmentDigest: "toy-h200",
    }
    for wanted, name in referred.items():
        assert record_digest(parse_record(fixture(name))) == wanted


def test_metadata_never_changes_the_digest() -> None:
    data = fixture("toy-scale-rows")
    retitled = changed(data, "metadata.title", "Another title")
    assert record_digest(parse_record(retitled)) == record_digest(parse_record(data))
    assert record_canonical_json(parse_record(retitled)) != record_canonical_json(parse_record(data))


def test_numbers_keep_their_json_type() -> None:
    run = parse_record(fixture("toy-scale-run-1"))
    dumped = dump_record(run)
    assert type(dumped["spec"]["measurements"][0]["value"]) is int  # written 8120, not 8120.0
    assert type(dumped["spec"]["sourceNative"]["metrics"]["score"]) is float


def test_integral_float_is_an_integer_as_json_schema_says() -> None:
    data = changed(fixture("toy-scale-run-1"), "spec.timing.samples", 30.0)
    run = parse_record(data)
    assert run.spec.timing.samples == 30 and type(run.spec.timing.samples) is int
    assert record_digest(run) == digest(data)  # 30.0 and 30 are the same canonical JSON


@pytest.mark.parametrize(
    ("text", "nanoseconds"),
    [
        ("8.12 us", 8120),
        ("8.12us", 8120),
        ("8.12 \u00b5s", 8120),
        ("0.00812 ms", 8120),
        ("8120 ns", 8120),
        ("0.000008120 s", 8120),
        ("3 s", 3_000_000_000),
    ],
)
def test_duration_text_is_stored_and_dumped_as_integer_ns(text: str, nanoseconds: int) -> None:
    run = parse_record(changed(fixture("toy-scale-run-1"), "spec.timing.latencyNs.median", text))
    assert run.spec.timing.latencyNs.median == nanoseconds
    assert dump_record(run)["spec"]["timing"]["latencyNs"]["median"] == nanoseconds


def test_duration_text_in_protocol_and_confidence_interval() -> None:
    protocol = parse_record(changed(fixture("toy-cuda-events-median"), "spec.measurement.warmupDuration", "2 ms"))
    assert dump_record(protocol)["spec"]["measurement"]["warmupDuration"] == 2_000_000
    run = parse_record(changed(fixture("toy-scale-run-1"), "spec.timing.latencyNs.confidence95", ["8.095 us", 8151]))
    assert run.spec.timing.latencyNs.confidence95 == [8095, 8151]


def test_timestamp_keeps_the_exact_string() -> None:
    for stamp in ("2026-08-01T12:00Z", "2026-08-01T12:00:00Z", "2028-02-29T23:59:59.123456789Z"):
        run = parse_record(changed(fixture("toy-scale-run-1"), "spec.observedAt", stamp))
        assert dump_record(run)["spec"]["observedAt"] == stamp


def test_support_lists_keep_their_order() -> None:
    data = changed(fixture("toy-scale-triton"), "spec.support.dtypes", ["fp16", "bf16", "fp16"])
    assert dump_record(parse_record(data))["spec"]["support"]["dtypes"] == ["fp16", "bf16", "fp16"]


# (fixture, field path, new value, expected error path, words expected in the reason)
REFUSALS = [
    ("toy-kernels", "spec.popularity", 9001, "spec.popularity", "unknown field"),
    ("toy-scale-run-1", "spec.timing.latencyNs.p50", 1, "spec.timing.latencyNs.p50", "unknown field"),
    ("toy-scale-run-1", "metadata.owner", "x", "metadata.owner", "unknown field"),
    ("toy-scale-run-1", "spec.evidence.logs.url", "x", "spec.evidence.logs.url", "unknown field"),
    ("toy-scale-run-1", "spec.status", "ok", "spec.status", "'passed'"),
    ("toy-scale-rows", "spec.axes.rows.type", "float", "spec.axes.rows.type", "'integer'"),
    ("toy-scale-rows", "spec.semantics.mutation", "sometimes", "spec.semantics.mutation", "'in_place'"),
    ("toy-scale-run-1", "spec.timing.latencyNs.median", -1, "spec.timing.latencyNs.median", "negative duration"),
    (
        "toy-scale-run-1",
        "spec.timing.latencyNs.median",
        "0.0000005 ms",
        "spec.timing.latencyNs.median",
        "ambiguous duration",
    ),
    ("toy-scale-run-1", "spec.timing.latencyNs.mad", 24.5, "spec.timing.latencyNs.mad", "ambiguous duration"),
    (
        "toy-scale-run-1",
        "spec.timing.latencyNs.confidence95",
        [1, "0.5 ns"],
        "spec.timing.latencyNs.confidence95[1]",
        "ambiguous duration",
    ),
    (
        "toy-cuda-events-median",
        "spec.measurement.warmupDuration",
        "1.0000000001 s",
        "spec.measurement.warmupDuration",
        "ambiguous duration",
    ),
    ("toy-scale-run-1", "spec.timing.latencyNs.median", "8120", "spec.timing.latencyNs.median", "not a duration"),
    ("toy-scale-run-1", "spec.timing.latencyNs.median", "-5 ns", "spec.timing.latencyNs.median", "not a duration"),
    ("toy-scale-run-1", "spec.timing.latencyNs.median", "10000000 s", "spec.timing.latencyNs.median", "beyond 2**53-1"),
    ("toy-scale-run-1", "spec.measurements[0].value", 2**53, "spec.measurements[0].value", "RFC 8785"),
    (
        "toy-scale-run-1",
        "spec.timing.latencyNs.confidence95",
        [1, 2, 3],
        "spec.timing.latencyNs.confidence95",
        "at most 2",
    ),
    ("toy-scale-run-1", "spec.observedAt", "2026-08-01T12:00:00", "spec.observedAt", "naive timestamp"),
    ("toy-scale-run-1", "spec.observedAt", "2026-08-01T14:00:00+02:00", "spec.observedAt", "offset +02:00"),
    ("toy-scale-run-1", "spec.observedAt", "2026-08-01T12:00:00+00:00", "spec.observedAt", "trailing Z"),
    ("toy-scale-run-1", "spec.observedAt", "2026-02-30T12:00:00Z", "spec.observedAt", "not a UTC ISO-8601"),
    ("toy-scale-run-1", "spec.observedAt", 1754049600, "spec.observedAt", "timestamp string"),
    ("toy-scale-run-1", "spec.workloadDigest", "md5:abc123", "spec.workloadDigest", "bad digest"),
    ("toy-scale-run-1", "spec.workloadDigest", "sha256:" + "AB" * 32, "spec.workloadDigest", "bad digest"),
    ("toy-scale-triton", "spec.projectRevision.commit", "0123abc", "spec.projectRevision.commit", "pattern"),
    ("toy-scale-run-1", "spec.timing.samples", "30", "spec.timing.samples", "expected an integer"),
    ("toy-scale-run-1", "spec.timing.samples", True, "spec.timing.samples", "expected an integer"),
    ("toy-scale-run-1", "spec.timing.samples", 0, "spec.timing.samples", "must be > 0"),
    ("toy-scale-run-1", "spec.measurements[0].value", "8120", "spec.measurements[0].value", "expected a number"),
    ("toy-scale-run-1", "spec.measurements[0].value", float("nan"), "spec.measurements[0].value", "finite"),
    ("toy-scale-run-1", "spec.correctness.matchedRatio", 1.5, "spec.correctness.matchedRatio", "must be <= 1"),
    ("toy-h200", "spec.settings.clocksLocked", "true", "spec.settings.clocksLocked", "boolean"),
    ("toy-scale-run-1", "spec.correctness", None, "spec.correctness", "null is not allowed"),
    ("toy-scale-run-1", "spec.status", DELETE, "spec.status", "required field is missing"),
    ("toy-scale-run-1", "metadata", DELETE, "metadata", "required field is missing"),
    ("toy-scale-rows", "spec.inputs", [], "spec.inputs", "at least 1"),
    ("toy-scale-rows", "spec.inputs[0].tensor.shape[1]", "Cols", "spec.inputs[0].tensor.shape[1]", "axis name"),
    ("toy-scale-rows", "spec.inputs[0].tensor.shape[1]", -1, "spec.inputs[0].tensor.shape[1]", "axis name"),
    ("toy-scale-rows-512", "spec.axes", {"Rows": 1}, "spec.axes.Rows (key)", "pattern"),
    ("toy-scale-rows-512", "spec.tensors.x.shape", [512, 2**53], "spec.tensors.x.shape[1]", "must be <="),
    ("toy-scale-rows-512", "spec.correctness.nanPolicy", "allow", "spec.correctness.nanPolicy", "'reject'"),
    ("toy-scale-run-1", "metadata.name", "Toy Run", "metadata.name", "pattern"),
    ("toy-scale-run-1", "metadata.title", "x" * 201, "metadata.title", "at most 200"),
    ("toy-serving-run", "spec.measurements", [], "spec.measurements", "at least 1"),
    ("toy-serving-run", "spec.sourceNative.metrics.note", "x" * 501, "spec.sourceNative.metrics.note", "at most 500"),
]


@pytest.mark.parametrize(("name", "path", "value", "error_path", "words"), REFUSALS)
def test_refused_with_field_path_and_reason(name: str, path: str, value: object, error_path: str, words: str) -> None:
    data = changed(fixture(name), path, value)
    with pytest.raises(RecordError) as caught:
        parse_record(data, where="fixture.jsonl line 3")
    error = caught.value
    assert error.where == "fixture.jsonl line 3"
    assert str(error).startswith("fixture.jsonl line 3: ")
    assert any(p == error_path or p.startswith(error_path + ".") for p, _ in error.problems), error.problems
    assert words in str(error), str(error)


def test_every_problem_is_reported_not_just_the_first() -> None:
    data = changed(changed(fixture("toy-scale-run-1"), "spec.status", "ok"), "spec.extra", 1)
    with pytest.raises(RecordError) as caught:
        parse_record(data)
    assert {path for path, _ in caught.value.problems} == {"spec.status", "spec.extra"}


@pytest.mark.parametrize(
    ("data", "words"),
    [
        ({"apiVersion": API_VERSION, "kind": "Benchmark", "metadata": {}, "spec": {}}, "unknown kind 'Benchmark'"),
        ({"apiVersion": "kernelindex.dev/v1", "kind": "BenchmarkRun", "metadata": {}, "spec": {}}, "unsupported"),
        ({"metadata": {}, "spec": {}}, "unknown kind None"),
        (["not", "a", "record"], "expected a record object"),
    ],
)
def test_envelope_problems_are_named(data: object, words: str) -> None:
    with pytest.raises(RecordError, match=words) as caught:
        parse_record(data, where="x.yaml")
    assert str(caught.value).startswith("x.yaml: ")


def test_spec_of_serving_kind_must_be_an_object() -> None:
    data = changed(fixture("toy-serving-run"), "spec", ["not an object"])
    with pytest.raises(RecordError) as caught:
        parse_record(data)
    assert caught.value.path == "spec"


def test_records_are_frozen() -> None:
    run = parse_record(fixture("toy-scale-run-1"))
    with pytest.raises(ValueError):
        run.spec.status = "revoked"  # type: ignore[misc]


def test_register_kind_refuses_to_replace_a_kind() -> None:
    class Impostor(OperationSpec):
        KIND = "OperationSpec"

    with pytest.raises(ValueError, match="already registered"):
        register_kind(Impostor)
    assert KINDS["OperationSpec"] is OperationSpec


def test_validators_are_built_on_first_use_or_all_at_once_when_asked():
    """Kinds build their validators on first use (a process pays only for kinds it meets), or all at
    once before an import forks its workers (they inherit them instead of each building its own)."""
    import subprocess
    import sys

    code = (
        "from kernelindex.records.kernel_kinds import KERNEL_KINDS as K\n"
        "from kernelindex.records.models import build_validators\n"
        "before = [m.__pydantic_complete__ for m in K]\n"
        "build_validators()\n"
        "print(any(before), all(m.__pydantic_complete__ for m in K))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True"]
