"""Reads behind the records ledger: what entered or changed in the index, newest first.

Four streams are merged: runs as they arrived in the index, leader changes and
retractions (``retracted`` record events), superseding runs (corrections) and
correction requests. Each stream is read newest first and cut at ``depth`` rows, so a page of the
merged ledger never reads more than ``depth`` rows of any table.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, Select, func, select
from sqlalchemy.sql import ColumnElement

from kernelindex.store.evidence.tables import correction_requests
from kernelindex.store.tables import record_events, runs


@dataclass(frozen=True)
class LedgerFilter:
    operation_digests: tuple[str, ...] | None = None  # runs of these operations only
    hardware_models: tuple[str, ...] | None = None
    source_slug: str | None = None
    since: str | None = None  # a time text floor (seconds precision); exact filtering is the caller's


@dataclass(frozen=True)
class LedgerRow:
    kind: str  # new_run, new_leader, retraction, correction, correction_request
    at: str
    entry_id: str
    run_id: str | None
    run_digest: str | None
    detail: dict[str, Any]


def _run_conditions(f: LedgerFilter, table=runs) -> list[ColumnElement]:
    out: list[ColumnElement] = []
    if f.operation_digests is not None:
        out.append(table.c.operation_digest.in_(f.operation_digests))
    if f.hardware_models is not None:
        out.append(table.c.hardware_model.in_(f.hardware_models))
    if f.source_slug is not None:
        out.append(table.c.source_slug == f.source_slug)
    return out


def _published(table=runs):
    return func.coalesce(table.c.published_at, table.c.observed_at)


def ledger_rows(conn: Connection, f: LedgerFilter, depth: int) -> list[LedgerRow]:
    """Up to ``depth`` newest rows of each stream that pass ``f`` (not yet merged or cut)."""
    rows: list[LedgerRow] = []
    published = _published()
    query: Select = select(  # any columns: the name is reused for the other streams' queries
        runs.c.id,
        runs.c.run_digest,
        published.label("at"),
        runs.c.supersedes_id,
        runs.c.status,
        runs.c.primary_value,
        runs.c.primary_unit,
        runs.c.hardware_model,
        runs.c.source_slug,
        runs.c.comparison_key,
    ).where(published.isnot(None), *_run_conditions(f))
    if f.since:
        query = query.where(published >= f.since)
    # Newest arrivals first by ``seq`` (the primary key: no sort, no full scan); each is shown at its
    # publication time. Rows arrive in publication order except when an older export is imported late.
    for r in conn.execute(query.order_by(runs.c.seq.desc()).limit(depth)):
        kind = "correction" if r.supersedes_id else "new_run"
        rows.append(
            LedgerRow(
                kind,
                r.at,
                f"{kind}:{r.id}",
                r.id,
                r.run_digest,
                {
                    "status": r.status,
                    "value": r.primary_value,
                    "unit": r.primary_unit,
                    "hardware": r.hardware_model,
                    "source": r.source_slug,
                    "comparisonKey": r.comparison_key,
                    "supersedes": r.supersedes_id,
                },
            )
        )

    query = (
        select(
            record_events.c.id,
            record_events.c.cause,
            record_events.c.at,
            record_events.c.run_id,
            record_events.c.previous_run_id,
            record_events.c.comparison_key,
            record_events.c.reason,
            record_events.c.policy_version,
            runs.c.run_digest,
        )
        .select_from(record_events.outerjoin(runs, runs.c.id == record_events.c.run_id))
        .where(*_run_conditions(f))
    )
    if f.since:
        query = query.where(record_events.c.at >= f.since)
    for e in conn.execute(query.order_by(record_events.c.at.desc(), record_events.c.seq.desc()).limit(depth)):
        kind = "retraction" if e.cause == "retracted" else "new_leader"
        rows.append(
            LedgerRow(
                kind,
                e.at,
                f"event:{e.id}",
                e.run_id,
                e.run_digest,
                {
                    "cause": e.cause,
                    "previousRunId": e.previous_run_id,
                    "comparisonKey": e.comparison_key,
                    "reason": e.reason,
                    "policyVersion": e.policy_version,
                },
            )
        )

    # a retraction is one fact, its ``retracted`` event, listed with the events above

    query = (
        select(
            correction_requests.c.id,
            correction_requests.c.created_at,
            correction_requests.c.problem,
            correction_requests.c.details,
            correction_requests.c.requested_action,
            correction_requests.c.status,
            correction_requests.c.resolution,
            runs.c.id.label("run_id"),
            runs.c.run_digest,
        )
        .select_from(correction_requests.join(runs, runs.c.run_digest == correction_requests.c.run_digest))
        .where(*_run_conditions(f))
    )
    if f.since:
        query = query.where(correction_requests.c.created_at >= f.since)
    for c in conn.execute(query.order_by(correction_requests.c.created_at.desc()).limit(depth)):
        rows.append(
            LedgerRow(
                "correction_request",
                c.created_at,
                f"request:{c.id}",
                c.run_id,
                c.run_digest,
                {
                    "problem": c.problem,
                    "details": c.details,
                    "requestedAction": c.requested_action,
                    "status": c.status,
                    "resolution": c.resolution,
                },
            )
        )
    return rows


def hardware_models(conn: Connection) -> list[str]:
    return list(conn.scalars(select(runs.c.hardware_model).distinct().where(runs.c.hardware_model.isnot(None))))
