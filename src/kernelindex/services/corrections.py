"""Correction requests: reported through the API, resolved by a maintainer (retract, supersede or reject)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from kernelindex.ranking.history import LeaderEvent
from kernelindex.ranking.leaders import record_leader_changes
from kernelindex.records.canonical import digest
from kernelindex.store.database import Store
from kernelindex.store.evidence.records import (
    EvidenceError,
    add_correction_request,
    authenticate,
    close_correction_request,
)
from kernelindex.store.reads.corrections import correction_request
from kernelindex.store.reads.lookup import resolve_run
from kernelindex.store.reads.runs import run_by_digest, run_by_id
from kernelindex.store.writer import Writer


class Decision(StrEnum):
    RETRACT = "retract"
    SUPERSEDE = "supersede"
    REJECT = "reject"


@dataclass(frozen=True)
class Resolution:
    request_id: str
    status: str  # accepted or rejected
    new_run_digest: str | None
    leader_events: list[LeaderEvent]


def resolve_correction(
    store: Store, request_id: str, decision: Decision, reason: str, bundle: dict[str, Any] | None = None
) -> Resolution:
    """Retract the run, store ``bundle`` as superseding it, or reject the request; close the request and
    append the leader changes the decision causes, all in one transaction. Raises :class:`EvidenceError`
    (or ``RowError`` for a bad bundle) with nothing stored."""
    if (decision is Decision.SUPERSEDE) != (bundle is not None):
        raise EvidenceError("bad_request", "a superseding bundle goes with --supersede-with, and only with it")
    with store.begin() as conn:
        request = correction_request(conn, request_id)
        if request is None:
            raise EvidenceError("unknown_request", f"no correction request {request_id}")
        run = run_by_digest(conn, request.run_digest)
        if run is None:
            raise EvidenceError("unknown_run", f"no run with digest {request.run_digest} is stored here")
        writer = Writer(conn)
        new_digest = None
        keys = {run.comparison_key}
        if decision is Decision.RETRACT:
            writer.retract_run(run.id, reason)
        elif decision is Decision.SUPERSEDE:
            assert bundle is not None
            new_id = writer.add_run_bundle(bundle, supersedes_id=run.id)
            if new_id is None:
                raise EvidenceError("bad_request", "that run is already stored; a superseding run must be new")
            new_digest = digest(bundle["run"])
            new_run = run_by_id(conn, new_id)
            assert new_run is not None  # added just above, in this transaction
            keys.add(new_run.comparison_key)
        status = "rejected" if decision is Decision.REJECT else "accepted"
        close_correction_request(conn, request_id, status, reason, new_digest)
        keys.discard(None)
        events = record_leader_changes(conn, sorted(keys)) if keys and decision is not Decision.REJECT else []
        return Resolution(request_id, status, new_digest, events)


def report_correction(
    store: Store, token: str | None, run: str, problem: str, details: str, requested_action: str
) -> tuple[Any, str]:
    """An API key holder's request to correct a run: ``(run row, request id)``."""
    with store.begin() as conn:
        key_id = authenticate(conn, token, "report")
        row = resolve_run(conn, run)
        return row, add_correction_request(conn, row.run_digest, problem, details, requested_action, key_id)
