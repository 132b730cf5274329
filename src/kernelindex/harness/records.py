"""KernelIndex records for problems and for evaluations, and storing them.

A problem folder becomes an OperationSpec, one WorkloadCase per workload line and a
WorkloadSuite; an evaluation adds an ImplementationRevision (identified by the digest of its
sources), a BenchmarkProtocol naming this harness, an ExecutionEnvironment read from the machine,
and a BenchmarkRun per case plus one for the suite, with raw samples and logs as artifacts.
Every record is validated with `kernelindex.records.models.parse_record` before it is returned.
"""

from __future__ import annotations

import hashlib
import platform
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernelindex import API_VERSION
from kernelindex.harness.dtypes import DTYPES
from kernelindex.harness.formats import Definition, FormatError, Problem, Solution, WorkloadCase, load_problem
from kernelindex.records.canonical import canonical_json, digest, sha256_digest

SOURCE_SLUG = "kernelindex-harness"
SOURCE_KIND = "controlled"
SOURCE_NAME = "KernelIndex controlled harness"
COMPARATOR = "elementwise_close"
STATUS = {
    "PASSED": "passed",
    "INCORRECT_SHAPE": "incorrect_shape",
    "INCORRECT_DTYPE": "incorrect_dtype",
    "INCORRECT_NUMERICAL": "incorrect_numerical",
    "RUNTIME_ERROR": "runtime_error",
    "COMPILE_ERROR": "compile_error",
    "TIMEOUT": "timeout",
    "REWARD_HACK": "suspected_reward_hack",
    "INVALID_REFERENCE": "invalid_reference",
}
_ARCHITECTURES = {"b200": "sm_100", "gb200": "sm_100", "b100": "sm_100", "h200": "sm_90", "h100": "sm_90",
                  "h20": "sm_90", "a100": "sm_80", "l40s": "sm_89", "l4": "sm_89", "rtx4090": "sm_89"}


def slug(text: str, limit: int = 120) -> str:
    value = re.sub(r"[^a-z0-9._-]+", "-", text.lower()).strip("-._")
    return (value or "unnamed")[:limit]


def _token(text: str) -> str:
    """A value for the `^[a-z][a-z0-9_]*$` fields."""
    value = re.sub(r"[^a-z0-9_]+", "_", text.lower()).strip("_")
    return value if value[:1].isalpha() else f"x_{value}"


def _validated(record: dict, where: str) -> dict:
    from kernelindex.records.models import dump_record, parse_record

    return dump_record(parse_record(record, where=where))


def _envelope(kind: str, name: str, spec: dict, title: str | None = None, **metadata: Any) -> dict:
    meta = {"name": slug(name, 200)}
    if title:
        meta["title"] = title[:200]
    meta.update({k: v for k, v in metadata.items() if v})
    return _validated({"apiVersion": API_VERSION, "kind": kind, "metadata": meta, "spec": spec}, f"{kind} {meta['name']}")


def _dim(d: str) -> int | str:
    return int(d) if d.isdigit() else d


def _tensor_entry(spec) -> dict:
    if spec.is_scalar:
        return {"name": spec.name, "scalar": {"dtype": DTYPES[spec.dtype].record_name}}
    # The record schema needs at least one dimension: a 0-d tensor is written as [1] (the
    # WorkloadCase says rank 0 in its data parameters).
    return {"name": spec.name, "tensor": {"dtype": DTYPES[spec.dtype].record_name, "shape": [_dim(d) for d in spec.shape] or [1]}}


def operation_spec(definition: Definition) -> dict:
    """Mirrors how KernelIndex writes SOL-ExecBench operations, so the same definition gets the same digest."""
    axes = {}
    for axis in definition.axes.values():
        if axis.type == "const":
            axes[axis.name] = {"role": "constant", "type": "integer", "value": axis.value}
        elif axis.type == "var":
            axes[axis.name] = {"role": "variable", "type": "integer"}
        else:
            entry = {"role": "derived", "type": "integer"}
            if re.fullmatch(r"[a-z0-9_+\-*%/() ]+", axis.expression):
                entry["expression"] = axis.expression
            axes[axis.name] = entry
    spec = {
        "family": slug(definition.op_type or "other").replace(".", "-").replace("_", "-"),
        "axes": axes,
        "inputs": [_tensor_entry(s) for s in definition.inputs.values()],
        "outputs": [_tensor_entry(s) for s in definition.outputs.values()],
        "semantics": {"mutation": "none", "determinism": "unspecified"},
    }
    return _envelope("OperationSpec", definition.name, spec, definition.name,
                     description=(definition.description or "")[:2000])


def _correctness(case: WorkloadCase) -> dict:
    tol = case.tolerance
    return {
        "comparator": COMPARATOR,
        "maxAbsoluteError": tol.max_atol,
        "maxRelativeError": tol.max_rtol,
        "requiredMatchedRatio": tol.required_matched_ratio,
        "nanPolicy": "reject",
        "infinityPolicy": "exact_match" if tol.allow_negative_inf else "reject",
    }


def _given_axes(definition: Definition, case: WorkloadCase) -> dict[str, int]:
    values = definition.resolve_axes(case.axes)
    return {n: values[n] for n, a in definition.axes.items() if a.type != "expr"}


def workload_case(definition: Definition, case: WorkloadCase, operation_digest: str, root: Path | None = None) -> dict:
    values = definition.resolve_axes(case.axes)
    tensors, scalars = {}, {}
    for name, spec in definition.inputs.items():
        given = case.inputs[name]
        if spec.is_scalar:
            value = given.value
            scalars[name] = {"dtype": DTYPES[spec.dtype].record_name, "value": int(value) if isinstance(value, bool) else value}
            continue
        data: dict[str, Any] = {"generator": {"random": "seeded_random", "scalar": "constant"}.get(given.type, given.type)}
        if given.type == "safetensors" and root is not None:
            file = Path(given.path) if Path(given.path).is_absolute() else root / given.path
            if file.is_file():
                data["artifact"] = {"uri": given.path, "digest": sha256_digest(file.read_bytes())}
        if given.type == "scalar":
            data["parameters"] = {"value": float(given.value)}
        if spec.shape == ():
            data.setdefault("parameters", {})["rank"] = 0
        tensors[name] = {"shape": list(definition.shape(spec, values)) or [1], "dtype": DTYPES[spec.dtype].record_name, "data": data}
    spec = {"operationSpecDigest": operation_digest, "axes": _given_axes(definition, case), "tensors": tensors,
            "correctness": _correctness(case)}
    if scalars:
        spec["scalars"] = scalars
    axes_text = ", ".join(f"{k}={v}" for k, v in case.axes.items())
    return _envelope("WorkloadCase", f"{definition.name}-{case.uuid[:8]}", spec, f"{definition.name} · {axes_text}")


def workload_suite(definition: Definition, cases: list[WorkloadCase], operation_digest: str) -> dict:
    spec = {
        "operationSpecDigest": operation_digest,
        "cases": [{"externalId": c.uuid, "axes": _given_axes(definition, c)} for c in cases],
        "correctness": {"comparator": COMPARATOR, "description": "every case within its own workload tolerance"},
        "aggregation": {"metric": "latency", "statistic": "geomean"},
    }
    return _envelope("WorkloadSuite", f"{definition.name}-suite-{len(cases)}", spec, f"{definition.name} · {len(cases)} cases")


@dataclass
class ProblemRecords:
    operation: dict
    cases: dict[str, dict]  # uuid -> WorkloadCase
    suite: dict

    def all(self) -> list[dict]:
        return [self.operation, *self.cases.values(), self.suite]


def records_for(problem: Problem) -> ProblemRecords:
    operation = operation_spec(problem.definition)
    op_digest = digest(operation)
    cases = {c.uuid: workload_case(problem.definition, c, op_digest, problem.root) for c in problem.cases}
    return ProblemRecords(operation, cases, workload_suite(problem.definition, problem.cases, op_digest))


def problem_records(problem_dir: str | Path) -> list[dict]:
    """OperationSpec, one WorkloadCase per workload line, one WorkloadSuite."""
    return records_for(load_problem(problem_dir)).all()


def import_problem(store, path: str | Path):
    """`kernelindex import PROBLEM_DIR`: store the problem's records (idempotent, one transaction)."""
    from kernelindex.ingest.catalog import ImportReport
    from kernelindex.ingest.problems import ImportFailed
    from kernelindex.ingest.problems import Problem as ImportProblem
    from kernelindex.records.errors import RecordError
    from kernelindex.store.rows import RowError
    from kernelindex.store.writer import Writer

    report = ImportReport(str(path))
    try:
        records = problem_records(path)
    except FormatError as exc:
        raise ImportFailed([ImportProblem(exc.file, exc.line, exc.field, exc.reason)]) from None
    except RecordError as exc:
        raise ImportFailed([ImportProblem(str(path), None, None, str(exc))]) from None
    with store.begin() as conn:
        writer = Writer(conn)
        for record in records:
            report.lines += 1
            try:
                writer.add_record(record)
            except RowError as exc:
                raise ImportFailed([ImportProblem(str(path), None, exc.field, exc.reason)]) from None
        report.absorb(writer)
    return report


def sources_bundle(solution: Solution) -> bytes:
    """The solution's sources as canonical JSON: the bytes its ImplementationRevision is identified by."""
    return canonical_json({"name": solution.name, "entryPoint": solution.entry_point,
                           "sources": [{"path": s.path, "content": s.content} for s in sorted(solution.sources, key=lambda s: s.path)]})


def _architectures(solution: Solution, environment: dict) -> list[str]:
    found = set()
    for target in solution.target_hardware:
        key = re.sub(r"[^a-z0-9]", "", str(target).lower())
        arch = next((a for name, a in _ARCHITECTURES.items() if name in key), None)
        found.add(arch or _token(str(target)))
    if not found:
        found.add(environment["hardware"]["architecture"])
    return sorted(found)


def implementation_revision(solution: Solution, definition: Definition, operation_digest: str, environment: dict) -> dict:
    files = [{"path": s.path, "digest": sha256_digest(s.content.encode())} for s in sorted(solution.sources, key=lambda s: s.path)]
    bundle = sources_bundle(solution)
    dtypes = sorted({DTYPES[s.dtype].record_name for s in [*definition.inputs.values(), *definition.outputs.values()]})
    spec = {
        "projectRevision": {"treeDigest": sha256_digest(canonical_json({"files": files}))},
        "operation": {"specDigest": operation_digest},
        "callable": {"language": _token(solution.languages[0]), "path": solution.entry_file, "symbol": solution.entry_function,
                     "interface": "destination_passing" if solution.destination_passing_style else "value_returning"},
        "support": {"hardwareArchitectures": _architectures(solution, environment), "dtypes": dtypes},
        "source": {"contentDigest": sha256_digest(bundle), "fileName": f"{slug(solution.name)}.sources.json", "sizeBytes": len(bundle)},
        "licensing": {},
    }
    if solution.target_hardware:
        spec["support"]["productsTested"] = [str(t) for t in solution.target_hardware]
    authors = [{"name": solution.author[:200]}] if solution.author else None
    return _envelope("ImplementationRevision", f"{solution.name}-{files and spec['projectRevision']['treeDigest'][7:15]}", spec,
                     f"{solution.name} · {definition.name}", authors=authors, description=(solution.description or "")[:2000])


def benchmark_protocol(options, harness_name: str, harness_version: str) -> dict:
    gpu = options.device.startswith("cuda")
    spec = {
        "harness": {"name": harness_name, "version": harness_version},
        "measurement": {
            "timer": options.timer,
            "synchronization": "device_sync" if gpu else "none",
            "compileIncluded": False,
            "setupIncluded": False,
            "warmupIterations": options.warmup,
            "measuredIterations": options.iterations,
            "samples": options.iterations,
            "inputRegeneration": "per_sample",
            "outlierPolicy": "none: every sample kept; median reported with a bootstrap 95% interval",
            "primaryStatistic": "median",
        },
        "correctness": {
            "reference": f"definition reference in a separate process; {options.rounds} rounds of fresh inputs and "
                         f"{options.timed_checks} timed calls picked after timing",
            "comparator": COMPARATOR,
        },
        "comparability": {
            "family": "kernelindex_controlled",
            "notes": ("Cold L2 before every call (buffer of twice the L2 size), CUDA events." if gpu else
                      "CPU run: monotonic clock around each call, no cache flush.")
                     + " Comparable within one harness version, timer and environment.",
        },
    }
    return _envelope("BenchmarkProtocol", f"{harness_name}-{harness_version}-{options.timer}-w{options.warmup}-n{options.iterations}",
                     spec, f"{harness_name} {harness_version} ({options.timer})")


def execution_environment(environment: dict) -> dict:
    hw, sw = environment["hardware"], environment["software"]
    name = f"{hw['product']}-{sw['framework']['version']}-{sw.get('cudaToolkit', 'cpu')}"
    return _envelope("ExecutionEnvironment", name, environment, f"{hw['product']} · torch {sw['framework']['version']}")


def runner_identity() -> tuple[str, str]:
    """(runner_id, runner_host) for runs stored without a signing key: a stable id of this machine."""
    host = platform.node() or "unknown-host"
    machine = ""
    for path in ("/etc/machine-id", "/var/lib/dbus/machine-id"):
        try:
            machine = Path(path).read_text().strip()
            break
        except OSError:
            continue
    return "machine:" + hashlib.sha256(f"{machine}|{host}".encode()).hexdigest()[:32], host


@dataclass
class Artifact:
    role: str  # rawSamples | logs
    kind: str
    media_type: str
    content: bytes
    run_digest: str = ""

    @property
    def digest(self) -> str:
        return sha256_digest(self.content)

    @property
    def reference(self) -> dict:
        return {"uri": f"/artifacts/{self.digest}", "digest": self.digest}


@dataclass
class EvaluationRecords:
    problem: ProblemRecords
    implementation: dict
    protocol: dict
    environment: dict
    case_runs: list[dict]  # BenchmarkRun per case, in case order
    suite_run: dict
    artifacts: list[Artifact] = field(default_factory=list)
    sources: bytes = b""

    def bundles(self) -> list[dict]:
        return [{"run": run, "protocol": self.protocol, "environment": self.environment} for run in [*self.case_runs, self.suite_run]]


def _ns(value: float) -> int:
    return max(0, int(round(value)))


def _latency_ns(summary) -> dict:
    return {"median": _ns(summary.median), "mean": _ns(summary.mean), "p05": _ns(summary.p05), "p95": _ns(summary.p95),
            "minimum": _ns(summary.min), "maximum": _ns(summary.max), "mad": _ns(summary.mad),
            "confidence95": [_ns(summary.ci95_low), _ns(summary.ci95_high)]}


def _run_status(result) -> str:
    if result.status == "RUNTIME_ERROR" and "memory limit" in result.log:
        return "resource_exceeded"
    return STATUS.get(result.status, "runtime_error")


def evaluation_records(suite) -> EvaluationRecords:
    """All records of one evaluation (a `runner.SuiteResult`)."""
    from kernelindex.harness.runner import HARNESS_NAME, HARNESS_VERSION

    problem = records_for(suite.problem)
    op_digest = digest(problem.operation)
    implementation = implementation_revision(suite.solution, suite.problem.definition, op_digest, suite.environment)
    protocol = benchmark_protocol(suite.options, HARNESS_NAME, HARNESS_VERSION)
    environment = execution_environment(suite.environment)
    common = {"implementationDigest": digest(implementation), "protocolDigest": digest(protocol),
              "environmentDigest": digest(environment)}
    artifacts, runs = [], []
    for result in suite.cases:
        case = result.case
        log = Artifact("logs", "log", "text/plain; charset=utf-8", (result.log or "").encode())
        raw = Artifact("rawSamples", "raw_samples", "application/json", canonical_json({
            "case": case.uuid, "unit": "ns", "timer": suite.options.timer,
            "solution": result.samples_ns, "reference": result.reference_samples_ns, "checkedCalls": result.checked_calls,
            "outputs": [o.to_dict() for o in result.outputs],
        }))
        spec: dict[str, Any] = {**common, "workloadDigest": digest(problem.cases[case.uuid]), "status": _run_status(result),
                                "observedAt": result.timestamp}
        if result.outputs:
            spec["correctness"] = {
                "comparator": COMPARATOR,
                "maximumAbsoluteError": max(o.max_absolute_error for o in result.outputs),
                "maximumRelativeError": max(o.max_relative_error for o in result.outputs),
                "matchedRatio": min(o.matched_ratio for o in result.outputs),
            }
        if result.latency:
            spec["timing"] = {"primaryStatistic": "median", "samples": result.latency.count,
                              "latencyNs": _latency_ns(result.latency), "rawSamples": raw.reference}
        measurements = []
        if result.reference_latency:
            measurements.append({"metric": "reference_latency", "statistic": "median", "unit": "ns",
                                 "value": _ns(result.reference_latency.median), "sampleCount": result.reference_latency.count})
        score = result.score
        if score and score.speedup:
            measurements.append({"metric": "speedup", "statistic": "ratio", "unit": "ratio", "value": score.speedup})
        if score and score.sol is not None:
            measurements.append({"metric": "sol_score", "statistic": "value", "unit": "score", "value": score.sol})
        if measurements:
            spec["measurements"] = measurements
        metrics = {k: v for k, v in {
            "latency_ms": score.latency_ms if score else None,
            "reference_latency_ms": score.reference_latency_ms if score else None,
            "speedup_factor": score.speedup if score else None,
            "t_sol_ms": score.t_sol_ms if score else None,
            "baseline_ms": score.baseline_ms if score else None,
        }.items() if v is not None}
        spec["sourceNative"] = {"source": SOURCE_SLUG, "benchmark": suite.definition_name[:200], "externalId": case.uuid}
        if metrics:
            spec["sourceNative"]["metrics"] = metrics
        spec["evidence"] = {"logs": log.reference, "rawSamples": raw.reference}
        run = _envelope("BenchmarkRun", f"{suite.solution.name}-{case.uuid[:8]}-{result.timestamp}", spec,
                        f"{suite.solution.name} · {suite.definition_name} · {case.uuid[:8]}")
        for artifact in (log, raw):
            artifact.run_digest = digest(run)
        artifacts += [log, raw]
        runs.append(run)
    suite_run = _suite_run(suite, problem, common, artifacts)
    return EvaluationRecords(problem, implementation, protocol, environment, runs, suite_run, artifacts, sources_bundle(suite.solution))


def _suite_run(suite, problem: ProblemRecords, common: dict, artifacts: list[Artifact]) -> dict:
    score = suite.score
    statuses = [r.status for r in suite.cases]
    first_bad = next((r for r in suite.cases if not r.passed), None)
    raw = Artifact("rawSamples", "raw_samples", "application/json", canonical_json({
        "unit": "ns", "timer": suite.options.timer,
        "cases": [{"case": r.case.uuid, "status": r.status, "solution": r.samples_ns, "reference": r.reference_samples_ns} for r in suite.cases],
    }))
    measurements = []
    if score.geomean_latency_ms:
        measurements.append({"metric": "latency", "statistic": "geomean", "unit": "ns", "value": _ns(score.geomean_latency_ms * 1e6),
                             "sampleCount": score.passed})
    if score.geomean_speedup:
        measurements.append({"metric": "speedup", "statistic": "geomean", "unit": "ratio", "value": score.geomean_speedup})
    if score.sol_score is not None:
        measurements.append({"metric": "sol_score", "statistic": "mean", "unit": "score", "value": score.sol_score})
    measurements.append({"metric": "fast_1", "statistic": "count", "unit": "cases", "value": score.faster_than_baseline})
    metrics = {k: v for k, v in {
        "sol_score": score.sol_score, "latency_ms": score.geomean_latency_ms, "avg_speedup": score.geomean_speedup,
        "fast_1_count": score.faster_than_baseline, "fast_1_total": score.cases, "passed": score.passed,
    }.items() if v is not None}
    spec = {
        **common, "workloadDigest": digest(problem.suite),
        "status": "passed" if all(s == "PASSED" for s in statuses) else _run_status(first_bad),
        "observedAt": suite.finished_at, "measurements": measurements,
        "sourceNative": {"source": SOURCE_SLUG, "benchmark": suite.definition_name[:200], "externalId": "suite", "metrics": metrics},
        "evidence": {"rawSamples": raw.reference},
    }
    run = _envelope("BenchmarkRun", f"{suite.solution.name}-suite-{suite.finished_at}", spec,
                    f"{suite.solution.name} · {suite.definition_name} · suite of {score.cases}")
    raw.run_digest = digest(run)
    artifacts.append(raw)
    return run


@dataclass
class StoredEvaluation:
    run_ids: dict[str, str | None]  # run digest -> stored id (None: that digest was already stored)
    suite_run_digest: str
    case_run_digests: list[str]


def record_evaluation(store, suite, *, runner_id: str | None = None, runner_host: str | None = None,
                      private_key=None) -> StoredEvaluation:
    """Store every record of an evaluation in one transaction (idempotent: same digests, nothing new)."""
    from kernelindex.store.writer import Writer

    records = evaluation_records(suite)
    default_id, default_host = runner_identity()
    if private_key is not None:
        from kernelindex.records.signing import key_id

        runner_id = key_id(private_key.public_key())
    runner_id, runner_host = runner_id or default_id, runner_host or default_host
    run_ids: dict[str, str | None] = {}
    with store.begin() as conn:
        writer = Writer(conn)
        writer.ensure_source(SOURCE_SLUG, SOURCE_KIND, SOURCE_NAME)
        for record in records.problem.all():
            writer.add_record(record)
        writer.add_record(records.implementation)
        writer.add_artifact(run_id=None, role="source", kind="implementation_source", media_type="application/json",
                            content=records.sources)
        for bundle in records.bundles():
            run_digest = digest(bundle["run"])
            run_ids[run_digest] = writer.add_run_bundle(bundle, runner_id=runner_id, runner_host=runner_host)
        for artifact in records.artifacts:
            run_id = run_ids.get(artifact.run_digest)
            if run_id:
                writer.add_artifact(run_id=run_id, role=artifact.role, kind=artifact.kind,
                                    media_type=artifact.media_type, content=artifact.content)
    if private_key is not None:
        _sign(store, list(run_ids), private_key)
    return StoredEvaluation(run_ids, digest(records.suite_run), [digest(r) for r in records.case_runs])


def _sign(store, run_digests: list[str], private_key) -> None:
    """Sign the stored runs with the runner's key (the signature is what makes a runner id count)."""
    from kernelindex.store.evidence_store import sign_stored_record

    with store.begin() as conn:
        for run_digest in run_digests:
            sign_stored_record(conn, run_digest, private_key)

