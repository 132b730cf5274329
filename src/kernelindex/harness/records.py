"""KernelIndex records of an evaluation: built here, pure (no store, no I/O);
`kernelindex.ingest.evaluations` stores them.

The problem and solution records come from `kernelindex.formats.records` (the importers build
the same ones); an evaluation adds a BenchmarkProtocol naming this harness, an
ExecutionEnvironment read from the machine, and a BenchmarkRun per case plus one for the suite,
with raw samples and logs as artifacts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kernelindex.formats.records import (
    ProblemRecords,
    envelope,
    implementation_revision,
    records_for,
    sources_bundle,
    workload_suite,
)
from kernelindex.harness.compare import comparator_for
from kernelindex.harness.replies import LOG_CHARS, untrusted
from kernelindex.harness.sampling_judge import rule_for
from kernelindex.records.canonical import canonical_json, digest, sha256_digest
from kernelindex.records.vocabulary import UNSANDBOXED_RERUN

# A sandboxed run is this index's verified evidence; a run without a sandbox is only reproducible
# (the source kind is what evidence levels are derived from), and its logs say why.
SOURCE_SLUG = "kernelindex-harness"
SOURCE_KIND = "controlled"
SOURCE_NAME = "KernelIndex controlled harness"
UNSANDBOXED_SLUG = "kernelindex-harness-unsandboxed"
UNSANDBOXED_KIND = UNSANDBOXED_RERUN
UNSANDBOXED_NAME = "KernelIndex harness without a sandbox (reproducible, not verified)"


def benchmark_protocol(
    options, harness_name: str, harness_version: str, comparator: str, reference: str | None = None
) -> dict:
    """``comparator``: the name of the benchmark's own rule the problem is judged by (part of the key);
    ``reference``: how that rule uses the reference, where the default words do not say it."""
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
            "inputs and every timed call checked by the parent after its batch, by the benchmark's own rule; "
            "our stricter rule (kernelindex_strict) runs beside it and its disagreements are logged",
            "comparator": comparator,
        },
        "comparability": {
            "family": "kernelindex_controlled",
            "notes": (
                f"Reference and solution timed interleaved in {options.pair_count} paired batches of at least "
                f"{options.batch} calls, more (up to {MAX_BATCH}) until a batch lasts {options.batch_target_ms:g} ms "
                f"(a case whose buffers fit fewer slots on the machine: more pairs of fewer calls, {options.iterations} "
                "timed calls a side at least); "
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
    if reference is not None:
        spec["correctness"]["reference"] = reference
    if options.rule:  # KernelBench's judge (harness/kernelbench_judge.py): its rule, in the words that judge uses
        comparator = options.rule.split(":", 1)[0]
        spec["correctness"] = {"reference": options.rule[:500], "comparator": comparator}
    return envelope(
        "BenchmarkProtocol",
        f"{harness_name}-{harness_version}-{options.timer}-w{options.warmup}-n{options.iterations}-p{options.pair_count}"
        f"-t{options.batch_target_ms:g}-{comparator}" + (f"-r{options.rounds}" if options.rule else ""),
        spec,
        f"{harness_name} {harness_version} ({options.timer})",
    )


def execution_environment(environment: dict) -> dict:
    hw, sw = environment["hardware"], environment["software"]
    name = f"{hw['product']}-{sw['framework']['version']}-{sw.get('cudaToolkit', 'cpu')}"
    return envelope("ExecutionEnvironment", name, environment, f"{hw['product']} · torch {sw['framework']['version']}")


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
    if result.phases:
        lines.append(f"harness cost: {_phases(result.phases)}")
    if result.flags:
        lines.append(f"flags (kept, not ranked): {', '.join(result.flags)}")
    for disagreement in result.disagreements:
        lines.append(f"second opinion (the benchmark's verdict stands): {disagreement}")
    if result.solution_output:
        lines.append(
            "the solution's own output: kept apart, in the artifact cited as solutionOutput by the raw samples"
        )
    if result.log:
        lines += ["", untrusted(result.log, LOG_CHARS)]
    return ("\n".join(lines) + "\n").encode()


def _phases(seconds: dict[str, float]) -> str:
    """Where the case's wall time went, by the parent's clock (timing.PhaseClock)."""
    parts = [f"{name} {value:.3f} s" for name, value in seconds.items()]
    return f"{', '.join(parts)}; case {sum(seconds.values()):.3f} s"


def _checked(tags: list[str]) -> str:
    rounds = sum(1 for t in tags if t.startswith("round-"))
    sampling = [t for t in tags if t.startswith("sampling-")]
    tiled = [t[len("sampling-tiled-") :] for t in sampling if t.startswith("sampling-tiled-")]
    timed = len(tags) - rounds - len(sampling)
    drawn = f", {len(sampling) - len(tiled)} sampling validation call(s)" if sampling else ""
    drawn += f", {tiled[0].replace('x', ' tiled call(s) of ', 1)} copies" if tiled else ""
    return (
        f"{rounds} correctness round(s){drawn} and {timed} timed call(s), every call the solution made"
        if tags
        else "none"
    )


def evaluation_records(suite) -> EvaluationRecords:
    """All records of one evaluation (a `runner.SuiteResult`); pure, nothing is stored."""
    from kernelindex.harness.machine import runner_identity
    from kernelindex.harness.runner import HARNESS_NAME, HARNESS_VERSION

    problem = records_for(suite.problem, suite.options.blob_root, suite.blob_digests)
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
    sampling = rule_for(suite.problem.format, suite.problem.definition, [])
    comparator = sampling.name if sampling else comparator_for(suite.problem.format).name
    # a sampling rule's parameters in the protocol's words: in its digest, so in the comparison key
    reference = sampling.describe(suite.options.rounds) if sampling else None
    protocol = benchmark_protocol(suite.options, HARNESS_NAME, HARNESS_VERSION, comparator, reference)
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
                    "disagreements": result.disagreements,  # where our stricter rule judged otherwise
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
                "comparator": comparator,
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
        run = envelope(
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
                        "disagreements": r.disagreements,
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
    run = envelope(
        "BenchmarkRun",
        f"{suite.solution.name}-suite-{suite.finished_at}",
        spec,
        f"{suite.solution.name} · {suite.definition_name} · suite of {score.cases}",
    )
    for artifact in (log, raw):
        artifact.run_digest = digest(run)
        artifacts.append(artifact)
    return run
