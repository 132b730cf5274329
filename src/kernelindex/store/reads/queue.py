"""Reads of the rerun queue: runner keys, requests, leases and the stored bytes they name."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, Row, bindparam, func, select

from kernelindex.store.evidence.tables import api_keys
from kernelindex.store.queue.tables import rerun_leases, rerun_requests, runner_keys
from kernelindex.store.tables import artifacts, implementations, operations, runs


def runner_key(conn: Connection, kid: str) -> Any:
    return conn.execute(select(runner_keys).where(runner_keys.c.key_id == kid)).first()


def all_runner_keys(conn: Connection) -> Sequence[Row]:
    return conn.execute(select(runner_keys).order_by(runner_keys.c.seq)).all()


def request_row(conn: Connection, request_id: str) -> Any:
    return conn.execute(select(rerun_requests).where(rerun_requests.c.id == request_id)).first()


def requests_page(
    conn: Connection, *, state: str | None = None, before: int | None = None, limit: int = 50
) -> Sequence[Row]:
    """Newest first, keyset-paged on ``seq``."""
    query = select(rerun_requests).order_by(rerun_requests.c.seq.desc()).limit(limit)
    if state:
        query = query.where(rerun_requests.c.state == state)
    if before is not None:
        query = query.where(rerun_requests.c.seq < before)
    return conn.execute(query).all()


def state_counts(conn: Connection) -> dict[str, int]:
    return dict(conn.execute(select(rerun_requests.c.state, func.count()).group_by(rerun_requests.c.state)).all())


def leases_of(conn: Connection, request_id: str) -> Sequence[Row]:
    query = (
        select(rerun_leases, runner_keys.c.label, runner_keys.c.machine)
        .join(runner_keys, runner_keys.c.key_id == rerun_leases.c.runner_key_id)
        .where(rerun_leases.c.request_id == request_id)
        .order_by(rerun_leases.c.seq)
    )
    return conn.execute(query).all()


def lease_row(conn: Connection, lease_id: str) -> Any:
    return conn.execute(select(rerun_leases).where(rerun_leases.c.id == lease_id)).first()


def blob(conn: Connection, content_digest: str) -> bytes | None:
    row = conn.execute(select(artifacts.c.content).where(artifacts.c.content_digest == content_digest)).first()
    return bytes(row.content) if row is not None and row.content is not None else None


# What every run page's queue panel reads: built once, values bound per call.
_HAS_BLOB = select(artifacts.c.id).where(
    artifacts.c.content_digest == bindparam("digest"), artifacts.c.content.is_not(None)
)
_RUN_SOURCE = (
    select(runs.c.id, runs.c.run_digest, implementations.c.manifest, operations.c.name.label("operation"))
    .select_from(
        runs.outerjoin(implementations, implementations.c.id == runs.c.implementation_id).outerjoin(
            operations, operations.c.semantic_digest == runs.c.operation_digest
        )
    )
    .where(runs.c.run_digest == bindparam("run_digest"))
)
_REPEATING = (
    select(rerun_requests).where(rerun_requests.c.rerun_of == bindparam("run_digest")).order_by(rerun_requests.c.seq)
)
_WITH_RESULT = (
    select(rerun_requests)
    .join(rerun_leases, rerun_leases.c.request_id == rerun_requests.c.id)
    .where(rerun_leases.c.suite_run_digest == bindparam("run_digest"))
)


def has_blob(conn: Connection, content_digest: str) -> bool:
    return conn.execute(_HAS_BLOB, {"digest": content_digest}).first() is not None


def stored_problem(conn: Connection, name: str) -> str | None:
    """The problem bundle digest most recently submitted under definition ``name``."""
    query = (
        select(rerun_requests.c.problem_digest)
        .where(rerun_requests.c.problem_name == name)
        .order_by(rerun_requests.c.seq.desc())
        .limit(1)
    )
    return conn.execute(query).scalar()


def run_source(conn: Connection, run_digest: str) -> Any:
    """A run with its implementation's manifest and its operation's name (None if no such run)."""
    return conn.execute(_RUN_SOURCE, {"run_digest": run_digest}).first()


def requests_repeating(conn: Connection, run_digest: str) -> Sequence[Row]:
    return conn.execute(_REPEATING, {"run_digest": run_digest}).all()


def requests_with_result(conn: Connection, run_digest: str) -> Sequence[Row]:
    """Requests whose completed leases stored ``run_digest`` as their suite run."""
    return conn.execute(_WITH_RESULT, {"run_digest": run_digest}).all()


def submissions_since(conn: Connection, submitted_by: str, since: str) -> int:
    query = (
        select(func.count())
        .select_from(rerun_requests)
        .where(rerun_requests.c.submitted_by == submitted_by, rerun_requests.c.created_at >= since)
    )
    return conn.execute(query).scalar_one()


def api_key_daily_limit(conn: Connection, key_id: str) -> int:
    return conn.execute(select(api_keys.c.daily_limit).where(api_keys.c.key_id == key_id)).scalar_one()


def run_ids_by_digest(conn: Connection, digests: list[str]) -> dict[str, str]:
    """Run digest -> run id for the stored runs among ``digests``."""
    from kernelindex.store.tables import runs

    return dict(conn.execute(select(runs.c.run_digest, runs.c.id).where(runs.c.run_digest.in_(digests))).all())
