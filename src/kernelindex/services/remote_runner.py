"""A remote runner: lease one job over HTTP, run it in the harness here, sign the records, post them.

The runner holds only its Ed25519 key. Every call is a signed request; while the harness runs,
a thread sends heartbeats so the lease stays ours. If the process dies the heartbeats stop, the
lease expires on the server and the job goes back to the queue for another runner.
"""

from __future__ import annotations

import json
import tempfile
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kernelindex.client import ApiError, Client, SignedRequests
from kernelindex.records.signing import sign_record_digest
from kernelindex.services import harness_adapter as harness


@dataclass
class Outcome:
    lease: str
    request: str
    accepted: bool
    detail: str
    request_state: str | None = None
    suite_run: str | None = None
    timings: dict[str, float] = field(default_factory=dict)


@dataclass
class Runner:
    """This runner's connection to a server: every call signed with its key, which also signs the records."""

    api: Client
    key: Any

    def close(self) -> None:
        self.api.close()


def connect(server: str, private_key, timeout: float = 60.0) -> Runner:
    """A runner for ``server`` (no API key: the signature is the credential)."""
    return Runner(Client(server, api_key="", timeout=timeout, auth=SignedRequests(private_key)), private_key)


class _Heartbeat(threading.Thread):
    def __init__(self, runner: Runner, lease_id: str, every: float) -> None:
        super().__init__(daemon=True)
        self.runner, self.lease_id, self.every = runner, lease_id, every
        self.stopped = threading.Event()
        self.lost: str | None = None

    def run(self) -> None:
        while not self.stopped.wait(self.every):
            try:
                self.runner.api.heartbeat(self.lease_id)
            except ApiError as exc:
                if exc.status in (403, 404, 409):
                    self.lost = str(exc)
                    return
                # any other answer, or none: the server may come back before the lease expires


def signed_result(suite, private_key) -> dict[str, Any]:
    payload = harness.evaluation_payload(suite)
    stamp = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    payload["signatures"] = {
        json_digest: sign_record_digest(private_key, json_digest, "BenchmarkRun", stamp)
        for json_digest in (_digest(bundle["run"]) for bundle in payload["bundles"])
    }
    return payload


def _digest(record: dict) -> str:
    from kernelindex.records.canonical import digest

    return digest(record)


def take(runner: Runner) -> dict[str, Any] | None:
    """Lease one job (None when the queue has nothing for this runner) and start its heartbeats."""
    job = runner.api.lease()
    if job is None:
        return None
    job["heartbeat"] = _Heartbeat(runner, job["lease"], float(job["heartbeatEveryS"]))
    job["heartbeat"].start()
    return job


def job_inputs(runner: Runner, job: dict[str, Any]) -> tuple[dict[str, str], dict[str, Any]]:
    """(problem files, solution.json document) a job names, fetched by digest."""
    document = runner.api.runner_blob(job["solution"]["document"])
    problem = runner.api.runner_blob(job["problem"]["digest"])
    return problem["files"], document


def give_back(runner: Runner, job: dict[str, Any], reason: str) -> Outcome:
    job["heartbeat"].stopped.set()
    runner.api.fail_lease(job["lease"], reason)
    return Outcome(job["lease"], job["request"], False, f"gave the job back: {reason}")


def post(runner: Runner, job: dict[str, Any], suite, timings: dict[str, float]) -> Outcome:
    """Stop the heartbeats, sign the suite's records and post them for the job's lease."""
    beat = job["heartbeat"]
    beat.stopped.set()
    lease_id = job["lease"]
    if beat.lost:
        return Outcome(lease_id, job["request"], False, f"lease lost while running: {beat.lost}", timings=timings)
    result = signed_result(suite, runner.key)
    started = time.perf_counter()
    try:
        stored = runner.api.post_result(lease_id, result, timings)
    except ApiError as exc:
        return Outcome(lease_id, job["request"], False, str(exc), timings=timings)
    timings["uploadS"] = time.perf_counter() - started
    return Outcome(
        lease_id,
        job["request"],
        True,
        f"stored {len(stored['runs'])} run(s) as "
        + (
            "verified evidence"
            if suite.sandboxed
            else f"reproducible evidence, not verified: no sandbox ({suite.sandbox_note})"
        ),
        stored["state"],
        stored["suiteRun"],
        timings,
    )


@dataclass(frozen=True)
class RunnerLimits:
    """What the runner's operator decides for every job, whatever the server asks: the sandbox mode, each
    worker's memory cap (MiB; None: the harness's default), the cases to keep to (None: the job's) and the
    blob root safetensors inputs are read under (None: the worker's KERNELINDEX_BLOB_ROOT, if any)."""

    sandbox: str = "required"
    memory_mb: int | None = None
    cases: list[str] | None = None
    blob_root: str | None = None

    def protocol(self, job: Mapping[str, Any]) -> dict[str, Any]:
        return {**job["protocol"], "sandbox": self.sandbox, "memory_mb": self.memory_mb, "blob_root": self.blob_root}

    def cases_of(self, job: Mapping[str, Any]) -> list[str] | None:
        return harness.narrowed_cases(job["protocol"].get("cases"), self.cases)


def run_one(runner: Runner, device: str = "cpu", progress=None, limits: RunnerLimits | None = None) -> Outcome | None:
    """Lease one job, run it here, post it; None when the queue has nothing for this runner."""
    limits = limits or RunnerLimits()
    job = take(runner)
    if job is None:
        return None
    try:
        files, document = job_inputs(runner, job)
        started = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix="kernelindex-job-") as tmp:
            problem_dir = harness.write_problem(files, Path(tmp) / "problem")
            solution_path = harness.write_solution(document, Path(tmp) / "solution")
            suite = harness.run(
                problem_dir,
                solution_path,
                harness.evaluation_options(limits.protocol(job), device, limits.cases_of(job)),
                progress=progress,
            )
    except Exception as exc:  # the harness itself failed here: give the job back with the reason
        return give_back(runner, job, f"{type(exc).__name__}: {exc}")
    return post(runner, job, suite, {"harnessS": time.perf_counter() - started})


def run_on_ray(runner: Runner, hardware: str, jobs: int, limits: RunnerLimits | None = None) -> list[Outcome]:
    """Lease up to ``jobs`` jobs and run each as one Ray task (the campaign's task) on the cluster;
    post each as soon as its task is back. Ray must already be started."""
    limits = limits or RunnerLimits()
    import ray
    from ray.exceptions import RayError

    from kernelindex.services.campaign import batch_memory, device_for, task_for

    device = device_for(hardware)
    running: dict[Any, tuple[dict[str, Any], float]] = {}
    outcomes: list[Outcome] = []
    for _ in range(jobs):
        job = take(runner)
        if job is None:
            break
        try:
            files, document = job_inputs(runner, job)
            cases = limits.cases_of(job)
            need = batch_memory(files, limits.protocol(job), device, cases)
            task = task_for(hardware, need)
        except (ApiError, ValueError, KeyError) as exc:  # a problem that does not load, a case it lacks
            outcomes.append(give_back(runner, job, str(exc.args[0]) if isinstance(exc, KeyError) else str(exc)))
            continue
        running[task.remote(files, [document], limits.protocol(job), device, cases, need)] = (
            job,
            time.perf_counter(),
        )
    pending = list(running)
    while pending:
        done, pending = ray.wait(pending, num_returns=1)
        job, started = running[done[0]]
        try:
            suite = ray.get(done[0])[0]  # the task's one solution
        except RayError as exc:
            outcomes.append(give_back(runner, job, f"{type(exc).__name__}: {str(exc).splitlines()[0]}"))
            continue
        outcomes.append(post(runner, job, suite, {"harnessS": time.perf_counter() - started}))
    return outcomes


def summary(outcome: Outcome) -> str:
    return json.dumps(
        {
            "lease": outcome.lease,
            "request": outcome.request,
            "accepted": outcome.accepted,
            "detail": outcome.detail,
            "requestState": outcome.request_state,
            "suiteRun": outcome.suite_run,
            "timings": {k: round(v, 3) for k, v in outcome.timings.items()},
        }
    )
