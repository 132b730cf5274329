"""Rerun requests, for the queue pages, the API, ``kernelindex queue`` and the run page's queue panel."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sqlalchemy import Connection

from pydantic import Field

from kernelindex.ranking.evidence_facts import evidence_for_runs
from kernelindex.store.evidence.records import signature_checks
from kernelindex.store.reads import queue as reads
from kernelindex.views.common import Document, ViewModel


class RequestLinks(ViewModel):
    page: str
    api: str


class RerunRequest(ViewModel):
    id: str
    state: str
    problem: str
    solution: str
    entryPoint: str
    hardware: str = Field(description="GPU product wanted, or cpu")
    replicas: int = Field(description="independent runner keys that must complete it")
    protocol: Document = Field(description="rounds, warmup, iterations, timeout")
    attempts: int
    maxAttempts: int
    submittedBy: str = Field(description="cli or the API key id")
    rerunOf: str | None = Field(description="the run digest it repeats, when it came from Rerun this run")
    createdAt: str
    updatedAt: str
    finishedAt: str | None
    failure: str | None
    solutionDigest: str
    problemDigest: str
    links: RequestLinks


class LeaseSignature(ViewModel):
    keyId: str
    signer: str | None
    valid: bool
    signedAt: str


class Lease(ViewModel):
    id: str
    attempt: int
    state: str
    runner: str
    runnerLabel: str | None
    machine: str | None
    leasedAt: str
    heartbeatAt: str
    expiresAt: str
    finishedAt: str | None
    reason: str | None
    queueWaitS: float | None
    timings: Document | None = Field(description="seconds: queue wait, harness, upload")
    suiteRun: str | None
    runCount: int
    runPage: str | None
    evidence: str | None
    signatures: list[LeaseSignature]


class RerunRequestDetail(RerunRequest):
    """A request with every lease (runner, timings, outcome) and the runs it produced."""

    leases: list[Lease]


class QueuePanel(ViewModel):
    """The run page's queue panel: requests that produced or repeat the run; is a rerun offered."""

    requests: list[RerunRequestDetail]
    rerunnable: bool


class QueuePage(ViewModel):
    """``GET /api/v1/rerun-requests``: newest first."""

    counts: dict[str, int] = Field(description="requests per state")
    items: list[RerunRequest]
    next: str | None


def _seconds(start: str | None, end: str | None) -> float | None:
    if not start or not end:
        return None
    parse = lambda text: datetime.fromisoformat(text.replace("Z", "+00:00"))  # noqa: E731
    return round((parse(end) - parse(start)).total_seconds(), 3)


def request_summary(row: Any) -> RerunRequest:
    return RerunRequest(
        id=row.id,
        state=row.state,
        problem=row.problem_name,
        solution=row.solution_name,
        entryPoint=row.entry_point,
        hardware=row.hardware,
        replicas=row.replicas,
        protocol=row.protocol,
        attempts=row.attempts,
        maxAttempts=row.max_attempts,
        submittedBy=row.submitted_by,
        rerunOf=row.rerun_of,
        createdAt=row.created_at,
        updatedAt=row.updated_at,
        finishedAt=row.finished_at,
        failure=row.failure,
        solutionDigest=row.solution_digest,
        problemDigest=row.problem_digest,
        links=RequestLinks(page=f"/queue/{row.id}", api=f"/api/v1/rerun-requests/{row.id}"),
    )


def request_detail(conn: Connection, row: Any) -> RerunRequestDetail:
    """A request with every lease (runner, timings, outcome) and the runs it produced, with signatures."""
    leases = reads.leases_of(conn, row.id)
    suite_runs = [lease.suite_run_digest for lease in leases if lease.suite_run_digest]
    ids = reads.run_ids_by_digest(conn, suite_runs)
    checks = signature_checks(conn, suite_runs)
    levels = evidence_for_runs(conn, suite_runs)
    shown = [
        {
            "id": lease.id,
            "attempt": lease.attempt,
            "state": lease.state,
            "runner": lease.runner_key_id,
            "runnerLabel": lease.label,
            "machine": lease.machine,
            "leasedAt": lease.leased_at,
            "heartbeatAt": lease.heartbeat_at,
            "expiresAt": lease.expires_at,
            "finishedAt": lease.finished_at,
            "reason": lease.reason,
            "queueWaitS": _seconds(row.created_at, lease.leased_at),
            "timings": lease.timings,
            "suiteRun": lease.suite_run_digest,
            "runCount": len(lease.run_digests or []),
            "runPage": f"/runs/{ids[lease.suite_run_digest]}" if lease.suite_run_digest in ids else None,
            "evidence": levels[lease.suite_run_digest].level if lease.suite_run_digest in levels else None,
            "signatures": [
                {"keyId": c.key_id, "signer": c.label, "valid": c.valid, "signedAt": c.signed_at}
                for c in checks.get(lease.suite_run_digest, [])
            ],
        }
        for lease in leases
    ]
    return RerunRequestDetail(**dict(request_summary(row)), leases=shown)


def run_panel(conn: Connection, run_digest: str) -> QueuePanel:
    """The run page's queue panel: requests that produced or repeat this run, and whether its
    implementation's sources are stored here (then "Rerun this run" is offered)."""
    rows = {
        r.id: r for r in [*reads.requests_with_result(conn, run_digest), *reads.requests_repeating(conn, run_digest)]
    }
    found = reads.run_source(conn, run_digest)
    spec = ((found.manifest if found is not None else None) or {}).get("spec") or {}
    source = (spec.get("source") or {}).get("contentDigest")
    return QueuePanel(
        requests=[request_detail(conn, row) for row in rows.values()],
        rerunnable=bool(source and reads.has_blob(conn, source)),
    )
