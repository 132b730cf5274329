"""Importing trace JSONL written by the upstream tools (FlashInfer-Bench, SOL-ExecBench).

Each line becomes a BenchmarkRun with its protocol and environment, stored as *reported*
evidence under a source that says where it came from: a trace is a claim by another harness,
never a run of ours, so it can never count as verified. Given the problem folder (and the
solution) a trace refers to, runs link to the same OperationSpec, WorkloadCase and
ImplementationRevision records our own harness writes; without them, their workload and
implementation stay pending links keyed by the upstream names.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kernelindex import API_VERSION
from kernelindex.ingest.catalog import ImportReport
from kernelindex.ingest.problems import ImportFailed, ImportProblem
from kernelindex.ingest.whole_files import read_whole
from kernelindex.records.canonical import canonical_json, digest, sha256_digest
from kernelindex.records.hardware import hardware_of
from kernelindex.records.names import UPSTREAM_NAME_LIMIT, slug
from kernelindex.records.normalise import RUN_STATUSES, run_status, token
from kernelindex.records.strict_json import loads_strict
from kernelindex.records.units import whole_ns

SOURCE_SLUG = "upstream-trace"
SOURCE_KIND = "trace_file"
SOURCE_NAME = "Trace files written by the FlashInfer-Bench / SOL-ExecBench tools"


class _LineProblem(Exception):
    def __init__(self, field: str | None, reason: str):
        super().__init__(reason)
        self.field, self.reason = field, reason


def _timestamp(value: Any) -> str:
    if not isinstance(value, str):
        raise _LineProblem("evaluation.timestamp", "must be an ISO-8601 string")
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise _LineProblem("evaluation.timestamp", f"not an ISO-8601 time: {value!r}") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)  # upstream writes naive times in UTC
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _record(kind: str, name: str, spec: dict, title: str | None = None) -> dict:
    from kernelindex.records.models import dump_record, parse_record

    metadata = {"name": slug(name, limit=UPSTREAM_NAME_LIMIT)}
    if title:
        metadata["title"] = title[:200]
    record = {"apiVersion": API_VERSION, "kind": kind, "metadata": metadata, "spec": spec}
    return dump_record(parse_record(record, where=kind))


def _environment(env: Any) -> dict:
    if not isinstance(env, dict) or not isinstance(env.get("hardware"), str) or not env["hardware"].strip():
        raise _LineProblem("evaluation.environment.hardware", "must name the hardware")
    product = env["hardware"].strip()[:200]
    hardware = hardware_of(product)
    libs = env.get("libs") or {}
    if not isinstance(libs, dict):
        raise _LineProblem("evaluation.environment.libs", "must be an object of name → version")
    software = {"libraries": {token(k): str(v)[:100] for k, v in libs.items()}} if libs else {}
    return _record("ExecutionEnvironment", f"trace-{product}", {"hardware": hardware, "software": software}, product)


def _protocol() -> dict:
    spec = {
        "harness": {"name": "upstream trace (FlashInfer-Bench / SOL-ExecBench format)"},
        "measurement": {"timer": "harness_reported", "primaryStatistic": "median"},
        "correctness": {"reference": "definition reference, as reported by the trace", "comparator": "upstream_trace"},
        "comparability": {
            "family": "upstream_trace",
            "notes": "Latencies as the trace reports them; no raw samples, timer or clock policy known.",
        },
    }
    return _record("BenchmarkProtocol", "upstream-trace-v1", spec, "Upstream trace, harness-reported")


def _ns(milliseconds: float, name: str) -> int:
    """Whole nanoseconds of a reported time, refused past what a 64-bit measurement holds."""
    value = whole_ns(milliseconds, "ms")
    if value is None:
        raise _LineProblem(f"evaluation.performance.{name}", f"{milliseconds!r} ms is past any real latency")
    return value


def _object(value: Any, field: str) -> dict:
    """An optional object of a trace line: absent or null is empty; anything else but an object is refused."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _LineProblem(field, f"must be an object, got {str(value)[:40]!r}")
    return value


def _number(value: Any, field: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise _LineProblem(field, f"must be a non-negative number, got {value!r}")
    return float(value)


class _Linker:
    """Our records for the problem and solution a trace file refers to, when the caller gave them.

    `links` is a `formats.records.TraceLinks`: it has `records` (the problem's records), `definition_name`,
    `case_digests` (uuid -> WorkloadCase digest), `implementation` (a record or None) and
    `solution_name`.
    """

    def __init__(self, links: Any | None):
        self.links = links
        self.implementation = links.implementation if links is not None else None
        self.solution_name = links.solution_name if links is not None else None

    def workload_digest(self, definition: str, workload: dict) -> str:
        if self.links is not None:
            if definition != self.links.definition_name:
                raise _LineProblem(
                    "definition", f"trace is for {definition!r}, the problem folder is {self.links.definition_name!r}"
                )
            case_digest = self.links.case_digests.get(workload["uuid"])
            if case_digest is None:
                raise _LineProblem("workload.uuid", f"no case {workload['uuid']!r} in the problem's workload.jsonl")
            return case_digest
        return sha256_digest(canonical_json({"upstreamDefinition": definition, "upstreamWorkload": workload["uuid"]}))

    def implementation_digest(self, definition: str, solution: str) -> str:
        if self.implementation is not None and solution == self.solution_name:
            return digest(self.implementation)
        return sha256_digest(canonical_json({"upstreamDefinition": definition, "upstreamSolution": solution}))


def _run(line: dict, linker: _Linker, protocol: dict, source: str, file_name: str) -> tuple[dict, dict]:
    for key in ("definition", "solution", "workload", "evaluation"):
        if key not in line:
            raise _LineProblem(key, "required field is missing")
    for key in ("definition", "solution"):
        if not isinstance(line[key], str):
            raise _LineProblem(key, f"must be a name (a string), got {str(line[key])[:40]!r}")
    workload, evaluation = line["workload"], line["evaluation"]
    if not isinstance(workload, dict) or not isinstance(workload.get("uuid"), str):
        raise _LineProblem("workload.uuid", "required string is missing")
    if not isinstance(evaluation, dict):
        raise _LineProblem("evaluation", "must be an object")
    status = run_status(evaluation.get("status"))
    if status is None:
        raise _LineProblem(
            "evaluation.status", f"unknown status {evaluation.get('status')!r}; one of {sorted(RUN_STATUSES)}"
        )
    environment = _environment(evaluation.get("environment"))
    spec: dict[str, Any] = {
        "implementationDigest": linker.implementation_digest(line["definition"], line["solution"]),
        "workloadDigest": linker.workload_digest(line["definition"], workload),
        "protocolDigest": digest(protocol),
        "environmentDigest": digest(environment),
        "status": status,
        "observedAt": _timestamp(evaluation.get("timestamp")),
    }
    correctness = _object(evaluation.get("correctness"), "evaluation.correctness")
    if correctness:
        abs_err = _number(correctness.get("max_absolute_error"), "evaluation.correctness.max_absolute_error")
        rel_err = _number(correctness.get("max_relative_error"), "evaluation.correctness.max_relative_error")
        errors = {"maximumAbsoluteError": abs_err, "maximumRelativeError": rel_err}
        spec["correctness"] = {"comparator": "upstream_trace", **{k: v for k, v in errors.items() if v is not None}}
    performance = _object(evaluation.get("performance"), "evaluation.performance")
    metrics = {}
    latency = _number(performance.get("latency_ms"), "evaluation.performance.latency_ms")
    if latency is not None:
        spec["timing"] = {"primaryStatistic": "median", "latencyNs": {"median": _ns(latency, "latency_ms")}}
        metrics["latency_ms"] = latency
    measurements = []
    reference = _number(performance.get("reference_latency_ms"), "evaluation.performance.reference_latency_ms")
    if reference is not None:
        measurements.append(
            {
                "metric": "reference_latency",
                "statistic": "median",
                "unit": "ns",
                "value": _ns(reference, "reference_latency_ms"),
            }
        )
        metrics["reference_latency_ms"] = reference
    speedup = _number(performance.get("speedup_factor"), "evaluation.performance.speedup_factor")
    if speedup is not None:
        measurements.append({"metric": "speedup", "statistic": "ratio", "unit": "ratio", "value": speedup})
        metrics["speedup_factor"] = speedup
    if measurements:
        spec["measurements"] = measurements
    spec["sourceNative"] = {
        "source": source,
        "benchmark": line["definition"][:200],
        "externalId": f"{line['solution']}/{workload['uuid']}"[:500],
    }
    if metrics:
        spec["sourceNative"]["metrics"] = metrics
    run = _record(
        "BenchmarkRun",
        f"trace-{line['solution']}-{workload['uuid'][:8]}-{spec['observedAt']}",
        spec,
        f"{line['solution']} · {line['definition']} · {workload['uuid'][:8]} (from {file_name})",
    )
    return run, environment


def import_traces(store, path: str | Path, *, links: Any | None = None, source: str = SOURCE_SLUG) -> ImportReport:
    """Store every line of a trace file as a reported run; one refused line refuses the file."""
    from kernelindex.records.errors import RecordError
    from kernelindex.store.rows import RowError
    from kernelindex.store.writer import Writer

    path = Path(path)
    linker = _Linker(links)
    protocol = _protocol()
    report, problems, bundles = ImportReport(str(path)), [], []
    # split bytes, not text: str.splitlines would also cut at U+2028 and friends inside a JSON string
    for number, raw in enumerate(read_whole(path).splitlines(), start=1):
        if not raw.strip():
            continue
        report.lines += 1
        try:
            line = loads_strict(raw.decode("utf-8"))  # strict JSON: no NaN, no key twice, storable text
        except UnicodeDecodeError as exc:
            problems.append(
                ImportProblem(str(path), number, None, f"not UTF-8 text ({exc.reason} at byte {exc.start})")
            )
            continue
        except ValueError as exc:
            problems.append(ImportProblem(str(path), number, None, f"invalid JSON: {getattr(exc, 'msg', exc)}"))
            continue
        try:
            if not isinstance(line, dict):
                raise _LineProblem(None, "each line must be a JSON object")
            run, environment = _run(line, linker, protocol, source, path.name)
            bundles.append((number, {"run": run, "protocol": protocol, "environment": environment}))
        except _LineProblem as exc:
            problems.append(ImportProblem(str(path), number, exc.field, exc.reason))
        except RecordError as exc:
            problems.append(ImportProblem(str(path), number, None, str(exc)))
    if problems:
        raise ImportFailed(problems)
    with store.begin() as conn:
        writer = Writer(conn)
        writer.ensure_source(source, SOURCE_KIND, SOURCE_NAME)
        if linker.links is not None:
            for record in linker.links.records:
                writer.add_record(record)
        if linker.implementation is not None:
            writer.add_record(linker.implementation)
        for number, bundle in bundles:
            try:
                writer.add_run_bundle(bundle, line=number)
            except RowError as exc:
                problems.append(ImportProblem(str(path), number, exc.field, exc.reason))
        if problems or writer.problems:
            problems += [ImportProblem(str(path), p.line, p.field, p.reason) for p in writer.problems]
            raise ImportFailed(problems)
        report.absorb(writer)
    return report
