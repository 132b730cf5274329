"""Rerun requests as JSON-ready dicts, for the queue pages, the API and the CLI."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sqlalchemy import Connection

from kernelindex.ranking.evidence_facts import evidence_for_runs
from kernelindex.store.evidence_store import signature_checks
from kernelindex.store.reads import queue as reads


def _seconds(start: str | None, end: str | None) -> float | None:
    if not start or not end:
        return None
    parse = lambda text: datetime.fromisoformat(text.replace("Z", "+00:00"))  # noqa: E731
    return round((parse(end) - parse(start)).total_seconds(), 3)


def request_summary(row: Any) -> dict[str, Any]:
    return {
        "id": row.id,
        "state": row.state,
        "problem": row.problem_name,
        "solution": row.solution_name,
        "entryPoint": row.entry_point,
        "hardware": row.hardware,
        "replicas": row.replicas,
        "protocol": row.protocol,
        "attempts": row.attempts,
        "maxAttempts": row.max_attempts,
        "submittedBy": row.submitted_by,
        "rerunOf": row.rerun_of,
        "createdAt": row.created_at,
        "updatedAt": row.updated_at,
        "finishedAt": row.finished_at,
        "failure": row.failure,
        "solutionDigest": row.solution_digest,
        "problemDigest": row.problem_digest,
        "links": {"page": f"/queue/{row.id}", "api": f"/api/v1/rerun-requests/{row.id}"},
    }


def request_detail(conn: Connection, row: Any) -> dict[str, Any]:
    """A request with every lease (runner, timings, outcome) and the runs it produced, with signatures."""
    out = request_summary(row)
    leases = reads.leases_of(conn, row.id)
    suite_runs = [lease.suite_run_digest for lease in leases if lease.suite_run_digest]
    ids = reads.run_ids_by_digest(conn, suite_runs)
    checks = signature_checks(conn, suite_runs)
    levels = evidence_for_runs(conn, suite_runs)
    out["leases"] = [
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
    return out


def run_panel(conn: Connection, run_digest: str) -> dict[str, Any]:
    """The run page's queue panel: requests that produced or repeat this run, and whether its
    implementation's sources are stored here (then "Rerun this run" is offered)."""
    rows = {
        r.id: r for r in [*reads.requests_with_result(conn, run_digest), *reads.requests_repeating(conn, run_digest)]
    }
    found = reads.run_source(conn, run_digest)
    spec = ((found.manifest if found is not None else None) or {}).get("spec") or {}
    source = (spec.get("source") or {}).get("contentDigest")
    return {
        "requests": [request_detail(conn, row) for row in rows.values()],
        "rerunnable": bool(source) and reads.has_blob(conn, source),
    }
