"""KernelIndex records for problems and for evaluations: built here, pure (no store, no I/O
beyond reading the problem folder); `kernelindex.ingest.evaluations` stores them.

A problem folder becomes an OperationSpec, one WorkloadCase per workload line and a
WorkloadSuite; an evaluation adds an ImplementationRevision (identified by the digest of its
sources), a BenchmarkProtocol naming this harness, an ExecutionEnvironment read from the machine,
and a BenchmarkRun per case plus one for the suite, with raw samples and logs as artifacts.
Every record is validated with `kernelindex.records.models.parse_record` before it is returned.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernelindex import API_VERSION
from kernelindex.harness.dtypes import DTYPES
from kernelindex.harness.formats import Definition, FormatError, Problem, Solution, WorkloadCase, load_problem
from kernelindex.harness.replies import LOG_CHARS, untrusted
from kernelindex.records.canonical import canonical_json, digest, sha256_digest
from kernelindex.records.errors import RecordError
from kernelindex.records.vocabulary import UNSANDBOXED_RERUN

# A sandboxed run is this index's verified evidence; a run without a sandbox is only reproducible
# (the source kind is what evidence levels are derived from), and its logs say why.
SOURCE_SLUG = "kernelindex-harness"
SOURCE_KIND = "controlled"
SOURCE_NAME = "KernelIndex controlled harness"
UNSANDBOXED_SLUG = "kernelindex-harness-unsandboxed"
UNSANDBOXED_KIND = UNSANDBOXED_RERUN
UNSANDBOXED_NAME = "KernelIndex harness without a sandbox (reproducible, not verified)"
COMPARATOR = "elementwise_close"
_ARCHITECTURES = {
    "b200": "sm_100",
    "gb200": "sm_100",
    "b100": "sm_100",
    "h200": "sm_90",
    "h100": "sm_90",
    "h20": "sm_90",
    "a100": "sm_80",
    "l40s": "sm_89",
    "l4": "sm_89",
    "rtx4090": "sm_89",
}


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
    return _validated(
        {"apiVersion": API_VERSION, "kind": kind, "metadata": meta, "spec": spec}, f"{kind} {meta['name']}"
    )


def _dim(d: str) -> int | str:
    return int(d) if d.isdigit() else d


def _tensor_entry(spec) -> dict:
    if spec.is_scalar:
        return {"name": spec.name, "scalar": {"dtype": DTYPES[spec.dtype].record_name}}
    # The record schema needs at least one dimension: a 0-d tensor is written as [1] (the
    # WorkloadCase says rank 0 in its data parameters).
    return {
        "name": spec.name,
        "tensor": {"dtype": DTYPES[spec.dtype].record_name, "shape": [_dim(d) for d in spec.shape] or [1]},
    }


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
    return _envelope(
        "OperationSpec", definition.name, spec, definition.name, description=(definition.description or "")[:2000]
    )


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
            scalars[name] = {
                "dtype": DTYPES[spec.dtype].record_name,
                "value": int(value) if isinstance(value, bool) else value,
            }
            continue
        data: dict[str, Any] = {
            "generator": {"random": "seeded_random", "scalar": "constant"}.get(given.type, given.type)
        }
        if given.type == "safetensors" and root is not None:
            file = Path(given.path) if Path(given.path).is_absolute() else root / given.path
            if file.is_file():
                data["artifact"] = {"uri": given.path, "digest": sha256_digest(file.read_bytes())}
        if given.type == "scalar":
            data["parameters"] = {"value": float(given.value)}
        if spec.shape == ():
            data.setdefault("parameters", {})["rank"] = 0
        tensors[name] = {
            "shape": list(definition.shape(spec, values)) or [1],
            "dtype": DTYPES[spec.dtype].record_name,
            "data": data,
        }
    spec = {
        "operationSpecDigest": operation_digest,
        "axes": _given_axes(definition, case),
        "tensors": tensors,
        "correctness": _correctness(case),
    }
    if scalars:
        spec["scalars"] = scalars
    axes_text = ", ".join(f"{k}={v}" for k, v in case.axes.items())
    return _envelope("WorkloadCase", f"{definition.name}-{case.uuid[:8]}", spec, f"{definition.name} · {axes_text}")


def workload_suite(
    definition: Definition, cases: list[WorkloadCase], operation_digest: str, total: int | None = None
) -> dict:
    """The suite of exactly these cases; a subset of a problem's cases is its own suite (own name and digest)."""
    spec = {
        "operationSpecDigest": operation_digest,
        "cases": [{"externalId": c.uuid, "axes": _given_axes(definition, c)} for c in cases],
        "correctness": {"comparator": COMPARATOR, "description": "every case within its own workload tolerance"},
        "aggregation": {"metric": "latency", "statistic": "geomean"},
    }
    if total is None or total == len(cases):
        return _envelope(
            "WorkloadSuite", f"{definition.name}-suite-{len(cases)}", spec, f"{definition.name} · {len(cases)} cases"
        )
    picked = sha256_digest(canonical_json(sorted(c.uuid for c in cases)))[7:15]
    return _envelope(
        "WorkloadSuite",
        f"{definition.name}-suite-{len(cases)}-of-{total}-{picked}",
        spec,
        f"{definition.name} · {len(cases)} of {total} cases",
    )


@dataclass
class ProblemRecords:
    operation: dict
    cases: dict[str, dict]  # uuid -> WorkloadCase
    suite: dict

    def all(self) -> list[dict]:
        return [self.operation, *self.cases.values(), self.suite]


@contextmanager
def _as_format_error(file: str | Path, line: int | None = None) -> Iterator[None]:
    """A value the problem and solution formats let through but a record bounds (an axis past
    2**53, a 300-character uuid or GPU name) is refused like any other format error: by file."""
    try:
        yield
    except RecordError as exc:
        raise FormatError(file, line, exc.path or None, exc.reason) from None


def records_for(problem: Problem) -> ProblemRecords:
    definition_file, workload_file = problem.root / "definition.json", problem.root / "workload.jsonl"
    with _as_format_error(definition_file):
        operation = operation_spec(problem.definition)
    op_digest = digest(operation)
    cases = {}
    for case in problem.cases:
        with _as_format_error(workload_file, case.line):
            cases[case.uuid] = workload_case(problem.definition, case, op_digest, problem.root)
    with _as_format_error(workload_file):
        suite = workload_suite(problem.definition, problem.cases, op_digest)
    return ProblemRecords(operation, cases, suite)


def problem_records(problem_dir: str | Path) -> list[dict]:
    """OperationSpec, one WorkloadCase per workload line, one WorkloadSuite."""
    return records_for(load_problem(problem_dir)).all()


@dataclass
class TraceLinks:
    """What a trace import needs to name the workload and implementation its lines measured."""

    records: list[dict]  # the problem's records, stored with the trace
    definition_name: str
    case_digests: dict[str, str]  # uuid -> WorkloadCase digest
    implementation: dict | None
    solution_name: str | None


def trace_links(problem_dir: str | Path, solution_path: str | Path | None = None) -> TraceLinks:
    """Read a problem folder (and a solution.json) for `ingest.traces.import_traces`; raises FormatError."""
    from kernelindex.harness.environment import read_environment
    from kernelindex.harness.formats import load_solution

    problem = load_problem(problem_dir)
    records = records_for(problem)
    implementation, solution_name = None, None
    if solution_path is not None:
        solution = load_solution(solution_path)
        solution_name = solution.name
        implementation = implementation_revision(
            solution, problem.definition, digest(records.operation), read_environment("cpu")
        )
    return TraceLinks(
        records.all(),
        problem.definition.name,
        {u: digest(c) for u, c in records.cases.items()},
        implementation,
        solution_name,
    )


def sources_bundle(solution: Solution) -> bytes:
    """The solution's sources as canonical JSON: the bytes its ImplementationRevision is identified by."""
    return canonical_json(
        {
            "name": solution.name,
            "entryPoint": solution.entry_point,
            "sources": [{"path": s.path, "content": s.content} for s in sorted(solution.sources, key=lambda s: s.path)],
        }
    )


def _architectures(solution: Solution, environment: dict) -> list[str]:
    found = set()
    for target in solution.target_hardware:
        key = re.sub(r"[^a-z0-9]", "", str(target).lower())
        arch = next((a for name, a in _ARCHITECTURES.items() if name in key), None)
        found.add(arch or _token(str(target)))
    if not found:
        found.add(environment["hardware"]["architecture"])
    return sorted(found)


def implementation_revision(
    solution: Solution, definition: Definition, operation_digest: str, environment: dict
) -> dict:
    files = [
        {"path": s.path, "digest": sha256_digest(s.content.encode())}
        for s in sorted(solution.sources, key=lambda s: s.path)
    ]
    bundle = sources_bundle(solution)
    dtypes = sorted({DTYPES[s.dtype].record_name for s in [*definition.inputs.values(), *definition.outputs.values()]})
    spec = {
        "projectRevision": {"treeDigest": sha256_digest(canonical_json({"files": files}))},
        "operation": {"specDigest": operation_digest},
        "callable": {
            "language": _token(solution.languages[0]),
            "path": solution.entry_file,
            "symbol": solution.entry_function,
            "interface": "destination_passing" if solution.destination_passing_style else "value_returning",
        },
        "support": {"hardwareArchitectures": _architectures(solution, environment), "dtypes": dtypes},
        "source": {
            "contentDigest": sha256_digest(bundle),
            "fileName": f"{slug(solution.name)}.sources.json",
            "sizeBytes": len(bundle),
        },
        "licensing": {},
    }
    if solution.target_hardware:
        spec["support"]["productsTested"] = [str(t) for t in solution.target_hardware]
    authors = [{"name": solution.author[:200]}] if solution.author else None
    with _as_format_error(solution.path or "solution.json"):
        return _envelope(
            "ImplementationRevision",
            f"{solution.name}-{files and spec['projectRevision']['treeDigest'][7:15]}",
            spec,
            f"{solution.name} · {definition.name}",
            authors=authors,
            description=(solution.description or "")[:2000],
        )


def benchmark_protocol(options, harness_name: str, harness_version: str) -> dict:
    from kernelindex.harness.runner import MAX_BATCH

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
            "samples": options.pair_count,
            "inputRegeneration": "per_sample",
            "outlierPolicy": "none: every sample kept; median reported with a bootstrap 95% interval",
            "primaryStatistic": "median",
        },
        "correctness": {
            "reference": f"definition reference in its own sandbox from a pristine copy; {options.rounds} rounds of fresh "
            "inputs and every timed call checked by the parent after its batch",
            "comparator": COMPARATOR,
        },
        "comparability": {
            "family": "kernelindex_controlled",
            "notes": (
                f"Reference and solution timed interleaved in {options.pair_count} paired batches of at least "
                f"{options.batch} calls, more (up to {MAX_BATCH}) until a batch lasts {options.batch_target_ms:g} ms; "
                "one sample per batch: the parent's clock around the whole batch, less an empty batch of the same "
                "size calibrated in the same sandbox before the solution loaded, divided by its calls. "
                + (
                    "Cold L2 before every call (buffer of twice the L2 size), device synchronised after each call."
                    if gpu
                    else "CPU run: no cache flush; each side on a CPU of its own."
                )
                + " Comparable within one harness version and environment."
            ),
        },
    }
    if options.rule:  # an upstream judge (kernelbench_judge): its rule, in the words that judge uses
        spec["correctness"] = {"reference": options.rule[:500], "comparator": options.rule.split(":", 1)[0]}
    return _envelope(
        "BenchmarkProtocol",
        f"{harness_name}-{harness_version}-{options.timer}-w{options.warmup}-n{options.iterations}-p{options.pair_count}"
        f"-t{options.batch_target_ms:g}" + (f"-r{options.rounds}-kernelbench" if options.rule else ""),
        spec,
        f"{harness_name} {harness_version} ({options.timer})",
    )


def execution_environment(environment: dict) -> dict:
    hw, sw = environment["hardware"], environment["software"]
    name = f"{hw['product']}-{sw['framework']['version']}-{sw.get('cudaToolkit', 'cpu')}"
    return _envelope("ExecutionEnvironment", name, environment, f"{hw['product']} · torch {sw['framework']['version']}")


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
    """Everything one evaluation stores, as plain data: records, artifacts, the source it is filed
    under and the machine that ran it. `kernelindex.ingest.evaluations.store_evaluation` stores it."""

    problem: ProblemRecords
    suite: dict  # the WorkloadSuite of exactly the cases that ran
    implementation: dict
    protocol: dict
    environment: dict
    case_runs: list[dict]  # BenchmarkRun per case, in case order
    suite_run: dict
    artifacts: list[Artifact] = field(default_factory=list)
    sources: bytes = b""
    source: tuple[str, str, str] = (SOURCE_SLUG, SOURCE_KIND, SOURCE_NAME)  # slug, kind, name
    runner_id: str = ""
    runner_host: str = ""

    def records(self) -> list[dict]:
        """Problem, suite and implementation records, in the order they must be stored."""
        return [
            *self.problem.all(),
            *([self.suite] if self.suite is not self.problem.suite else []),
            self.implementation,
        ]

    def bundles(self) -> list[dict]:
        return [
            {"run": run, "protocol": self.protocol, "environment": self.environment}
            for run in [*self.case_runs, self.suite_run]
        ]


def _ns(value: float) -> int:
    return max(0, int(round(value)))


def _latency_ns(summary) -> dict:
    return {
        "median": _ns(summary.median),
        "mean": _ns(summary.mean),
        "p05": _ns(summary.p05),
        "p95": _ns(summary.p95),
        "minimum": _ns(summary.min),
        "maximum": _ns(summary.max),
        "mad": _ns(summary.mad),
        "confidence95": [_ns(summary.ci95_low), _ns(summary.ci95_high)],
    }


def _interval_measurements(interval) -> list[dict]:
    if interval is None:
        return []
    return [
        {"metric": "speedup", "statistic": "ci95_low", "unit": "ratio", "value": interval.low},
        {"metric": "speedup", "statistic": "ci95_high", "unit": "ratio", "value": interval.high},
    ]


def _flag_metrics(flags: list[str]) -> dict:
    return {f"flag_{flag}": 1 for flag in flags}


def _log_text(suite, result) -> bytes:
    """The case's log as stored: never empty, it always says how the run was made."""
    lines = [
        f"verdict: {result.verdict.value} ({result.status})",
        f"input nonce: {suite.nonce}",
        "sandbox: bubblewrap"
        if suite.sandboxed
        else f"sandbox: none ({suite.sandbox_note}); reproducible, not verified",
        f"checked calls: {_checked(result.checked_calls)}",
        "timing: the parent's clock around each batch, less a calibrated empty batch; one sample per batch",
    ]
    if result.flags:
        lines.append(f"flags (kept, not ranked): {', '.join(result.flags)}")
    if result.solution_output:
        lines.append(
            "the solution's own output: kept apart, in the artifact cited as solutionOutput by the raw samples"
        )
    if result.log:
        lines += ["", untrusted(result.log, LOG_CHARS)]
    return ("\n".join(lines) + "\n").encode()


def _checked(tags: list[str]) -> str:
    rounds = sum(1 for t in tags if t.startswith("round-"))
    timed = len(tags) - rounds
    return f"{rounds} correctness round(s) and {timed} timed call(s), every call the solution made" if tags else "none"


def evaluation_records(suite) -> EvaluationRecords:
    """All records of one evaluation (a `runner.SuiteResult`); pure, nothing is stored."""
    from kernelindex.harness.machine import runner_identity
    from kernelindex.harness.runner import HARNESS_NAME, HARNESS_VERSION

    problem = records_for(suite.problem)
    op_digest = digest(problem.operation)
    ran = [r.case for r in suite.cases]
    suite_record = (
        problem.suite
        if not suite.partial
        else workload_suite(suite.problem.definition, ran, op_digest, total=len(suite.problem.cases))
    )
    source = (
        (SOURCE_SLUG, SOURCE_KIND, SOURCE_NAME)
        if suite.sandboxed
        else (UNSANDBOXED_SLUG, UNSANDBOXED_KIND, UNSANDBOXED_NAME)
    )
    implementation = implementation_revision(suite.solution, suite.problem.definition, op_digest, suite.environment)
    protocol = benchmark_protocol(suite.options, HARNESS_NAME, HARNESS_VERSION)
    environment = execution_environment(suite.environment)
    common = {
        "implementationDigest": digest(implementation),
        "protocolDigest": digest(protocol),
        "environmentDigest": digest(environment),
    }
    artifacts, runs = [], []
    for result in suite.cases:
        case = result.case
        log = Artifact("logs", "log", "text/plain; charset=utf-8", _log_text(suite, result))
        said = (
            Artifact("solutionOutput", "solution_output", "text/plain; charset=utf-8", result.solution_output.encode())
            if result.solution_output
            else None
        )
        raw = Artifact(
            "rawSamples",
            "raw_samples",
            "application/json",
            canonical_json(
                {
                    "case": case.uuid,
                    "unit": "ns",
                    "timer": suite.options.timer,
                    "inputNonce": suite.nonce,
                    "solution": result.samples_ns,
                    "reference": result.reference_samples_ns,
                    "samplesFrom": "parent batch clock less a calibrated empty batch, per call; one per pair",
                    "checkedCalls": result.checked_calls,
                    "pairs": [p.to_dict() for p in result.pairs],
                    "solutionOutput": said.reference if said else None,
                    "flags": result.flags,
                    "speedupInterval": result.speedup.to_dict() if result.speedup else None,
                    "outputs": [o.to_dict() for o in result.outputs],
                }
            ),
        )
        spec: dict[str, Any] = {
            **common,
            "workloadDigest": digest(problem.cases[case.uuid]),
            "status": result.verdict.value,
            "observedAt": result.timestamp,
        }
        if result.outputs:
            spec["correctness"] = {
                "comparator": COMPARATOR,
                "maximumAbsoluteError": max(o.max_absolute_error for o in result.outputs),
                "maximumRelativeError": max(o.max_relative_error for o in result.outputs),
                "matchedRatio": min(o.matched_ratio for o in result.outputs),
            }
        if result.latency:
            spec["timing"] = {
                "primaryStatistic": "median",
                "samples": result.latency.count,
                "latencyNs": _latency_ns(result.latency),
                "rawSamples": raw.reference,
            }
        measurements = []
        if result.reference_latency:
            measurements.append(
                {
                    "metric": "reference_latency",
                    "statistic": "median",
                    "unit": "ns",
                    "value": _ns(result.reference_latency.median),
                    "sampleCount": result.reference_latency.count,
                }
            )
        score = result.score
        if score and score.speedup:
            measurements.append({"metric": "speedup", "statistic": "ratio", "unit": "ratio", "value": score.speedup})
            measurements += _interval_measurements(result.speedup)
        if score and score.sol is not None:
            measurements.append({"metric": "sol_score", "statistic": "value", "unit": "score", "value": score.sol})
        if measurements:
            spec["measurements"] = measurements
        metrics = {
            k: v
            for k, v in {
                "latency_ms": score.latency_ms if score else None,
                "reference_latency_ms": score.reference_latency_ms if score else None,
                "speedup_factor": score.speedup if score else None,
                "t_sol_ms": score.t_sol_ms if score else None,
                "baseline_ms": score.baseline_ms if score else None,
                **_flag_metrics(result.flags),
            }.items()
            if v is not None
        }
        spec["sourceNative"] = {"source": source[0], "benchmark": suite.definition_name[:200], "externalId": case.uuid}
        if metrics:
            spec["sourceNative"]["metrics"] = metrics
        spec["evidence"] = {"logs": log.reference, "rawSamples": raw.reference}
        run = _envelope(
            "BenchmarkRun",
            f"{suite.solution.name}-{case.uuid[:8]}-{result.timestamp}",
            spec,
            f"{suite.solution.name} · {suite.definition_name} · {case.uuid[:8]}",
        )
        kept = [log, raw, *([said] if said else [])]
        for artifact in kept:
            artifact.run_digest = digest(run)
        artifacts += kept
        runs.append(run)
    suite_run = _suite_run(suite, suite_record, source, common, artifacts)
    runner_id, runner_host = runner_identity()
    return EvaluationRecords(
        problem,
        suite_record,
        implementation,
        protocol,
        environment,
        runs,
        suite_run,
        artifacts,
        sources_bundle(suite.solution),
        source,
        runner_id,
        runner_host,
    )


def _suite_run(
    suite, suite_record: dict, source: tuple[str, str, str], common: dict, artifacts: list[Artifact]
) -> dict:
    score = suite.score
    first_bad = next((r for r in suite.cases if not r.passed), None)
    flagged = sorted({f for r in suite.cases for f in r.flags})
    raw = Artifact(
        "rawSamples",
        "raw_samples",
        "application/json",
        canonical_json(
            {
                "unit": "ns",
                "timer": suite.options.timer,
                "inputNonce": suite.nonce,
                "flags": flagged,
                "speedupInterval": suite.speedup.to_dict() if suite.speedup else None,
                "cases": [
                    {
                        "case": r.case.uuid,
                        "status": r.verdict.value,
                        "flags": r.flags,
                        "solution": r.samples_ns,
                        "reference": r.reference_samples_ns,
                    }
                    for r in suite.cases
                ],
            }
        ),
    )
    log = Artifact(
        "logs",
        "log",
        "text/plain; charset=utf-8",
        (
            f"suite of {score.cases} case(s), {score.passed} passed; input nonce {suite.nonce}\n"
            + (
                "sandbox: bubblewrap\n"
                if suite.sandboxed
                else f"sandbox: none ({suite.sandbox_note}); reproducible, not verified\n"
            )
            + "".join(
                f"{r.case.uuid} {r.verdict.value}{' flags ' + ','.join(r.flags) if r.flags else ''}\n"
                for r in suite.cases
            )
        ).encode(),
    )
    measurements = []
    if score.geomean_latency_ms:
        measurements.append(
            {
                "metric": "latency",
                "statistic": "geomean",
                "unit": "ns",
                "value": _ns(score.geomean_latency_ms * 1e6),
                "sampleCount": score.passed,
            }
        )
    if score.geomean_speedup:
        measurements.append(
            {"metric": "speedup", "statistic": "geomean", "unit": "ratio", "value": score.geomean_speedup}
        )
    measurements += _interval_measurements(suite.speedup)
    if score.sol_score is not None:
        measurements.append({"metric": "sol_score", "statistic": "mean", "unit": "score", "value": score.sol_score})
    measurements.append(
        {"metric": "fast_1", "statistic": "count", "unit": "cases", "value": score.faster_than_baseline}
    )
    metrics = {
        k: v
        for k, v in {
            "sol_score": score.sol_score,
            "latency_ms": score.geomean_latency_ms,
            "avg_speedup": score.geomean_speedup,
            "fast_1_count": score.faster_than_baseline,
            "fast_1_total": score.cases,
            "passed": score.passed,
            **_flag_metrics(flagged),
        }.items()
        if v is not None
    }
    spec = {
        **common,
        "workloadDigest": digest(suite_record),
        "status": first_bad.verdict.value if first_bad else "passed",
        "observedAt": suite.finished_at,
        "measurements": measurements,
        "sourceNative": {
            "source": source[0],
            "benchmark": suite.definition_name[:200],
            "externalId": "suite",
            "metrics": metrics,
        },
        "evidence": {"logs": log.reference, "rawSamples": raw.reference},
    }
    run = _envelope(
        "BenchmarkRun",
        f"{suite.solution.name}-suite-{suite.finished_at}",
        spec,
        f"{suite.solution.name} · {suite.definition_name} · suite of {score.cases}",
    )
    for artifact in (log, raw):
        artifact.run_digest = digest(run)
        artifacts.append(artifact)
    return run
