"""Importing trace JSONL written by the upstream tools (FlashInfer-Bench, SOL-ExecBench).

Each line (read by `formats.trace`) becomes a BenchmarkRun with its protocol and environment, stored as *reported*
evidence under a source that says where it came from: a trace is a claim by another harness,
never a run of ours, so it can never count as verified. Given the problem folder (and the
solution) a trace refers to, runs link to the same OperationSpec, WorkloadCase and
ImplementationRevision records our own harness writes; without them, their workload and
implementation stay pending links keyed by the upstream names.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kernelindex import API_VERSION
from kernelindex.formats.errors import FormatError
from kernelindex.formats.records import TraceLinks
from kernelindex.formats.trace import TraceLine, trace_lines
from kernelindex.ingest.catalog import ImportReport
from kernelindex.ingest.problems import ImportFailed, ImportProblem
from kernelindex.ingest.whole_files import read_whole
from kernelindex.records.canonical import canonical_json, digest, sha256_digest
from kernelindex.records.errors import RecordError
from kernelindex.records.hardware import hardware_of
from kernelindex.records.names import UPSTREAM_NAME_LIMIT, slug

SOURCE_SLUG = "upstream-trace"
SOURCE_KIND = "trace_file"
SOURCE_NAME = "Trace files written by the FlashInfer-Bench / SOL-ExecBench tools"


def _record(kind: str, name: str, spec: dict, title: str | None = None) -> dict:
    from kernelindex.records.models import dump_record, parse_record

    metadata = {"name": slug(name, limit=UPSTREAM_NAME_LIMIT)}
    if title:
        metadata["title"] = title[:200]
    record = {"apiVersion": API_VERSION, "kind": kind, "metadata": metadata, "spec": spec}
    return dump_record(parse_record(record, where=kind))


def _environment(line: TraceLine) -> dict:
    software = {"libraries": line.libraries} if line.libraries else {}
    spec = {"hardware": hardware_of(line.hardware), "software": software}
    return _record("ExecutionEnvironment", f"trace-{line.hardware}", spec, line.hardware)


def trace_protocol() -> dict:
    """The one BenchmarkProtocol of every trace line: what another harness reported, by its own rules."""
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


class Linker:
    """Our records for the problem and solution a trace file refers to, when the caller gave them
    (`formats.records.TraceLinks`); without them, digests of the upstream names (pending links)."""

    def __init__(self, links: TraceLinks | None):
        self.links = links
        self.implementation = links.implementation if links is not None else None
        self.solution_name = links.solution_name if links is not None else None

    def workload_digest(self, line: TraceLine) -> str:
        if self.links is not None:
            if line.definition != self.links.definition_name:
                reason = f"trace is for {line.definition!r}, the problem folder is {self.links.definition_name!r}"
                raise line.refuse("definition", reason)
            case_digest = self.links.case_digests.get(line.workload_uuid)
            if case_digest is None:
                raise line.refuse("workload.uuid", f"no case {line.workload_uuid!r} in the problem's workload.jsonl")
            return case_digest
        return sha256_digest(
            canonical_json({"upstreamDefinition": line.definition, "upstreamWorkload": line.workload_uuid})
        )

    def implementation_digest(self, line: TraceLine) -> str:
        if self.implementation is not None and line.solution == self.solution_name:
            return digest(self.implementation)
        return sha256_digest(canonical_json({"upstreamDefinition": line.definition, "upstreamSolution": line.solution}))


def _measurements(line: TraceLine) -> list[dict]:
    out = []
    if line.reference_latency_ns is not None:
        out.append(
            {"metric": "reference_latency", "statistic": "median", "unit": "ns", "value": line.reference_latency_ns}
        )
    if line.speedup_factor is not None:
        out.append({"metric": "speedup", "statistic": "ratio", "unit": "ratio", "value": line.speedup_factor})
    return out


def trace_run(line: TraceLine, linker: Linker, protocol: dict, source: str) -> tuple[dict, dict]:
    """The BenchmarkRun of one trace line and its ExecutionEnvironment; FormatError (a line naming
    what the problem lacks) or RecordError (a value no record holds)."""
    environment = _environment(line)
    spec: dict[str, Any] = {
        "implementationDigest": linker.implementation_digest(line),
        "workloadDigest": linker.workload_digest(line),
        "protocolDigest": digest(protocol),
        "environmentDigest": digest(environment),
        "status": line.status,
        "observedAt": line.observed_at,
    }
    if line.has_correctness:
        errors = {"maximumAbsoluteError": line.max_absolute_error, "maximumRelativeError": line.max_relative_error}
        spec["correctness"] = {"comparator": "upstream_trace", **{k: v for k, v in errors.items() if v is not None}}
    if line.latency_ns is not None:
        spec["timing"] = {"primaryStatistic": "median", "latencyNs": {"median": line.latency_ns}}
    if measurements := _measurements(line):
        spec["measurements"] = measurements
    reported = {
        "latency_ms": line.latency_ms,
        "reference_latency_ms": line.reference_latency_ms,
        "speedup_factor": line.speedup_factor,
    }
    spec["sourceNative"] = {
        "source": source,
        "benchmark": line.definition[:200],
        "externalId": f"{line.solution}/{line.workload_uuid}"[:500],
    }
    if metrics := {k: v for k, v in reported.items() if v is not None}:
        spec["sourceNative"]["metrics"] = metrics
    uuid = line.workload_uuid
    run = _record(
        "BenchmarkRun",
        f"trace-{line.solution}-{uuid[:8]}-{line.observed_at}",
        spec,
        f"{line.solution} · {line.definition} · {uuid[:8]} (from {Path(line.file).name})",
    )
    return run, environment


def import_traces(
    store, path: str | Path, *, links: TraceLinks | None = None, source: str = SOURCE_SLUG
) -> ImportReport:
    """Store every line of a trace file as a reported run; one refused line refuses the file."""
    from kernelindex.store.rows import RowError
    from kernelindex.store.writer import Writer

    path = Path(path)
    linker = Linker(links)
    protocol = trace_protocol()
    report, bundles = ImportReport(str(path)), []
    lines, errors = trace_lines(read_whole(path), path)
    report.lines = len(lines) + len(errors)
    problems = [ImportProblem(e.file, e.line, e.field, e.reason) for e in errors]
    for line in lines:
        try:
            run, environment = trace_run(line, linker, protocol, source)
            bundles.append((line.line, {"run": run, "protocol": protocol, "environment": environment}))
        except FormatError as exc:
            problems.append(ImportProblem(exc.file, exc.line, exc.field, exc.reason))
        except RecordError as exc:
            problems.append(ImportProblem(str(path), line.line, None, str(exc)))
    if problems:
        raise ImportFailed(sorted(problems, key=lambda p: p.line or 0))
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
