"""Evaluating a solution on a problem: one isolated process per case, the reference elsewhere.

Per case: write the solution's sources alone into a fresh scratch folder; run every round, the
warm-up and the timed calls in a solution process (`worker.SolutionRunner`); pick, only after
timing, which timed calls get checked; end that process; then let the reference process
regenerate the same inputs, compare, and time the reference the same way. The problem folder
and the harness's own files are digested before and after each case.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import shutil
import stat
import tempfile
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from kernelindex import __version__
from kernelindex.harness.compare import OutputCheck, merge
from kernelindex.harness.environment import read_environment, trace_environment
from kernelindex.harness.formats import Problem, Solution, WorkloadCase
from kernelindex.harness.isolation import Worker, WorkerError
from kernelindex.harness.scores import CaseScore, SuiteScore, case_score, suite_score
from kernelindex.harness.stats import Summary, summarize

HARNESS_NAME = "kernelindex-harness"
HARNESS_VERSION = f"{__version__}+h1"
HARNESS_DIR = Path(__file__).resolve().parent


@dataclass
class EvalOptions:
    device: str = "cpu"
    rounds: int = 10
    warmup: int = 10
    iterations: int = 50
    timed_checks: int = 5  # timed calls whose outputs are checked, chosen after timing
    timeout_s: float = 300.0  # per case and process
    memory_limit_mb: int = 16384
    keep_bytes: int = 4 << 30  # timed outputs the solution process may hold for the later pick
    thread_join_s: float = 10.0  # how long threads a call started may take to finish before it counts as a hack
    cases: list[str] | None = None  # uuids (or prefixes) to run; all when None

    @property
    def timer(self) -> str:
        return "cuda_events" if self.device.startswith("cuda") else "monotonic_clock"


@dataclass
class CaseResult:
    case: WorkloadCase
    status: str
    log: str
    timestamp: str
    outputs: list[OutputCheck] = field(default_factory=list)
    samples_ns: list[int] = field(default_factory=list)
    reference_samples_ns: list[int] = field(default_factory=list)
    checked_calls: list[str] = field(default_factory=list)
    latency: Summary | None = None
    reference_latency: Summary | None = None
    score: CaseScore | None = None

    @property
    def passed(self) -> bool:
        return self.status == "PASSED"


@dataclass
class SuiteResult:
    problem_root: str
    definition_name: str
    solution: Solution
    problem: Problem
    options: EvalOptions
    environment: dict
    cases: list[CaseResult]
    score: SuiteScore
    started_at: str
    finished_at: str

    def trace_lines(self) -> list[dict]:
        return [trace_line(self, c) for c in self.cases]


def utc_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _digests(root: Path) -> dict[str, str]:
    out = {}
    for path in sorted(p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        out[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def _read_only(root: Path) -> None:
    for path in root.rglob("*"):
        path.chmod(stat.S_IRUSR | (stat.S_IXUSR if path.is_dir() else 0))
    root.chmod(stat.S_IRUSR | stat.S_IXUSR)


def _writable(root: Path) -> None:
    for path in [root, *root.rglob("*")]:
        try:
            path.chmod(path.stat().st_mode | stat.S_IWUSR | stat.S_IRUSR | stat.S_IXUSR)
        except OSError:
            pass


class _Session:
    def __init__(self, problem: Problem, solution: Solution, options: EvalOptions):
        self.problem, self.solution, self.options = problem, solution, options
        self.base = Path(tempfile.mkdtemp(prefix="kernelindex-eval-"))
        self.snapshot = self.base / "problem"
        shutil.copytree(problem.root, self.snapshot)
        _read_only(self.snapshot)
        self.watched = [problem.root.resolve(), self.snapshot, HARNESS_DIR]
        self.digests = {str(r): _digests(r) for r in self.watched}
        self.reference: Worker | None = None
        self.memory = options.memory_limit_mb << 20

    def tampered(self) -> list[str]:
        changes = []
        for root in self.watched:
            now = _digests(root)
            before = self.digests[str(root)]
            for path in sorted(set(now) | set(before)):
                if now.get(path) != before.get(path):
                    changes.append(f"problem or harness file {path} was {'changed' if path in before and path in now else 'added or removed'}")
        return changes

    def _reference_worker(self, deadline: float) -> Worker:
        if self.reference is None or self.reference.proc.poll() is not None:
            folder = self.base / "reference"
            folder.mkdir(exist_ok=True)
            self.reference = Worker("reference", folder, self.base / "reference.log", self.memory, self.options.device)
            reply = self.reference.request(
                {"op": "start", "device": self.options.device, "definition_path": str(self.snapshot / "definition.json")}, deadline)
            if not reply["ok"]:
                raise WorkerError(reply["status"], reply["log"])
        return self.reference

    def run_case(self, number: int, case: WorkloadCase) -> CaseResult:
        opts = self.options
        started = utc_now()
        case_dir = self.base / f"case-{number}"
        scratch, io_dir, own_problem = case_dir / "scratch", case_dir / "io", case_dir / "io" / "problem"
        scratch.mkdir(parents=True)
        io_dir.mkdir()
        shutil.copytree(self.snapshot, own_problem)
        _writable(own_problem)
        for source in self.solution.sources:
            target = scratch / source.path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(source.content, encoding="utf-8")
        worker = Worker("solution", scratch, io_dir / "solution.log", self.memory, opts.device)
        deadline = time.monotonic() + opts.timeout_s
        status, log, samples, checked = "PASSED", "", [], []
        try:
            reply = worker.request({
                "op": "start", "device": opts.device, "definition_path": str(own_problem / "definition.json"),
                "problem_root": str(own_problem), "scratch": str(scratch), "entry_file": self.solution.entry_file,
                "entry_function": self.solution.entry_function, "dps": self.solution.destination_passing_style,
                "compiled": self.solution.compiled, "sources": [s.path for s in self.solution.sources],
                "compile_options": self.solution.compile_options,
            }, deadline)
            if reply["ok"]:
                reply = worker.request({
                    "op": "run", "case": case.raw, "rounds": opts.rounds, "warmup": opts.warmup,
                    "iterations": opts.iterations, "io_dir": str(io_dir), "keep_bytes": opts.keep_bytes,
                    "thread_join_s": opts.thread_join_s,
                }, deadline)
            if reply["ok"]:
                samples = reply["samples_ns"]
                pick = random.SystemRandom().sample(reply["kept"], min(opts.timed_checks, len(reply["kept"])))
                reply = worker.request({"op": "save_timed", "indices": sorted(pick), "io_dir": str(io_dir)}, deadline)
                checked = [("round", r) for r in range(opts.rounds)] + [("timed", i) for i in sorted(pick)]
            if not reply["ok"]:
                status, log = reply["status"], reply["log"]
            elif worker.leftover():
                status, log = "REWARD_HACK", "extra replies on the solution process's control pipe (forged replies)"
        except WorkerError as exc:
            status, log = exc.status, exc.log
        finally:
            worker.close()
        tampering = self.tampered()
        if tampering:
            status, log = "REWARD_HACK", "; ".join(tampering)
            self.digests = {str(r): _digests(r) for r in self.watched}
        result = CaseResult(case, status, log, started, samples_ns=samples,
                            checked_calls=[f"{p}-{i}" for p, i in checked])
        if status == "PASSED":
            self._check(case, io_dir, checked, result)
        if result.status != "PASSED":
            tail = worker.log_tail(2000).strip()
            if tail:
                result.log = f"{result.log}\n--- solution process output ---\n{tail}".strip()
        if result.samples_ns and result.passed:
            result.latency = summarize(result.samples_ns)
        if result.reference_samples_ns:
            result.reference_latency = summarize(result.reference_samples_ns)
        shutil.rmtree(case_dir, ignore_errors=True)
        return result

    def _check(self, case: WorkloadCase, io_dir: Path, checked: list, result: CaseResult) -> None:
        deadline = time.monotonic() + self.options.timeout_s
        try:
            reply = self._reference_worker(deadline).request({
                "op": "check", "case": case.raw, "calls": checked, "io_dir": str(io_dir),
                "problem_root": str(self.snapshot), "warmup": self.options.warmup, "iterations": self.options.iterations,
            }, deadline)
        except WorkerError as exc:
            if self.reference:
                self.reference.close()
            self.reference = None
            result.status, result.log = "INVALID_REFERENCE", f"reference process: {exc.log}\n{(self.base / 'reference.log').read_text(errors='replace')[-4000:]}"
            return
        if not reply["ok"]:
            result.status, result.log = reply["status"], reply["log"]
            return
        per_output: dict[str, list[OutputCheck]] = {}
        first_failure = None
        for tag, checks in reply["checks"].items():
            for item in checks:
                check = OutputCheck(**item)
                per_output.setdefault(check.name, []).append(check)
                if check.status != "PASSED" and first_failure is None:
                    first_failure = (tag, check)
        result.outputs = [merge(v) for v in per_output.values()]
        result.reference_samples_ns = reply["samples_ns"]
        if first_failure:
            tag, check = first_failure
            result.status, result.log = check.status, f"{tag}: output {check.name!r}: {check.reason}"

    def close(self) -> None:
        if self.reference:
            self.reference.close()
        _writable(self.base)
        shutil.rmtree(self.base, ignore_errors=True)


def evaluate(problem: Problem, solution: Solution, options: EvalOptions | None = None, progress=None) -> SuiteResult:
    """Run every selected case; never raises for what a solution does, only for bad arguments."""
    options = options or EvalOptions()
    cases = problem.cases if not options.cases else [problem.case(u) for u in options.cases]
    environment = read_environment(options.device)
    started = utc_now()
    session = _Session(problem, solution, options)
    results = []
    try:
        for number, case in enumerate(cases):
            result = session.run_case(number, case)
            axis_values = problem.definition.resolve_axes(case.axes)
            result.score = case_score(
                case, problem.definition, axis_values, result.passed,
                result.latency.median / 1e6 if result.latency else None,
                result.reference_latency.median / 1e6 if result.reference_latency else None,
                environment["hardware"]["product"],
            )
            results.append(result)
            if progress:
                progress(result)
    finally:
        session.close()
    return SuiteResult(
        problem_root=str(problem.root), definition_name=problem.definition.name, solution=solution, problem=problem,
        options=options, environment=environment, cases=results,
        score=suite_score([r.score for r in results], [r.passed for r in results]),
        started_at=started, finished_at=utc_now(),
    )


def _clean(value):
    """Strict JSON: NaN and infinities become null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


def trace_line(suite: SuiteResult, result: CaseResult) -> dict:
    """One upstream-format trace line for a case."""
    case = result.case
    correctness = None
    if result.outputs:
        correctness = {
            "max_relative_error": max(o.max_relative_error for o in result.outputs),
            "max_absolute_error": max(o.max_absolute_error for o in result.outputs),
            "has_nan": any(o.has_nan for o in result.outputs),
            "has_inf": any(o.has_inf for o in result.outputs),
        }
    performance = None
    if result.passed and result.latency:
        performance = {
            "latency_ms": result.latency.median / 1e6,
            "reference_latency_ms": result.reference_latency.median / 1e6 if result.reference_latency else None,
            "speedup_factor": result.score.speedup if result.score else None,
        }
    workload = {
        "uuid": case.uuid, "axes": case.axes,
        "inputs": {k: v for k, v in (case.raw.get("inputs") or {}).items()},
        "tolerance": {k: getattr(case.tolerance, k) for k in ("max_atol", "max_rtol", "required_matched_ratio", "max_error_cap", "allow_negative_inf")},
    }
    return _clean({
        "definition": suite.definition_name,
        "solution": suite.solution.name,
        "workload": workload,
        "evaluation": {
            "status": result.status,
            "environment": trace_environment(suite.environment),
            "timestamp": result.timestamp,
            "log": result.log,
            "correctness": correctness,
            "performance": performance,
        },
    })


def write_traces(suite: SuiteResult, path: str | Path) -> None:
    with open(path, "w", encoding="utf-8") as f:
        for line in suite.trace_lines():
            f.write(json.dumps(line, allow_nan=False) + "\n")
