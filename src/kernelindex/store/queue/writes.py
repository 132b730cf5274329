"""Writes of the rerun queue: runner keys, requests, leases; one caller transaction each.

Taking a lease is the contended write. On PostgreSQL the oldest eligible request is locked with
``SELECT ... FOR UPDATE SKIP LOCKED``, so two runners never wait on, or get, the same row; on
SQLite the whole lease runs in an immediate transaction (the write lock is taken first), so
leases are handed out one after another. Either way exactly one runner gets a given slot.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Connection, and_, exists, func, insert, select, update

from kernelindex.records.refusal import Refusal, RefusalKind
from kernelindex.store.database import Store
from kernelindex.store.ids import uuid7
from kernelindex.store.queue.tables import rerun_leases, rerun_requests, runner_keys
from kernelindex.store.writer import Writer

OPEN_STATES = ("queued", "leased")


class QueueError(Refusal, ValueError):
    """A refused queue operation; ``code`` is machine-readable; its kind is what the front ends map."""

    def __init__(self, code: str, message: str) -> None:
        self._code = code
        self.kind = _QUEUE_KINDS.get(code, RefusalKind.BAD_REQUEST)
        super().__init__(message)

    @property
    def code(self) -> str:
        return self._code


_QUEUE_KINDS = {
    "bad_solution": RefusalKind.INVALID,
    "bad_problem": RefusalKind.INVALID,
    "unknown_problem": RefusalKind.INVALID,
    "no_sources": RefusalKind.INVALID,
    "bad_result": RefusalKind.INVALID,
    "bad_signature": RefusalKind.INVALID,
    "environment_mismatch": RefusalKind.INVALID,
    "too_large": RefusalKind.TOO_LARGE,
    "unknown_run": RefusalKind.NOT_FOUND,
    "unknown_runner": RefusalKind.NOT_FOUND,
    "unknown_lease": RefusalKind.NOT_FOUND,
    "conflict": RefusalKind.CONFLICT,
    "lease_closed": RefusalKind.CONFLICT,
    "duplicate": RefusalKind.CONFLICT,
    "unauthorized": RefusalKind.UNAUTHORIZED,
    "revoked": RefusalKind.FORBIDDEN,
    "not_holder": RefusalKind.FORBIDDEN,
    "rate_limited": RefusalKind.RATE_LIMITED,
}


def time_text(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def now() -> datetime:
    return datetime.now(UTC)


@contextmanager
def write_transaction(store: Store) -> Iterator[Connection]:
    """A transaction that holds the write lock from its first statement: the store's own writing
    transaction (SQLite ``BEGIN IMMEDIATE``, PostgreSQL an advisory lock)."""
    with store.begin() as conn:
        yield conn


# --- runner keys ---------------------------------------------------------------------------


def add_runner_key(conn: Connection, kid: str, public_key: str, label: str, machine: str, hardware: str) -> None:
    found = conn.execute(select(runner_keys.c.revoked_at).where(runner_keys.c.key_id == kid)).first()
    if found is not None:
        state = "revoked" if found.revoked_at else "registered"
        raise QueueError("conflict", f"runner key {kid} is already {state}; a revoked key cannot come back")
    conn.execute(
        insert(runner_keys).values(
            key_id=kid,
            public_key=public_key,
            label=label[:200],
            machine=machine[:300],
            hardware=hardware,
            created_at=time_text(now()),
        )
    )


def revoke_runner_key(conn: Connection, kid: str) -> None:
    result = conn.execute(
        update(runner_keys)
        .where(runner_keys.c.key_id == kid, runner_keys.c.revoked_at.is_(None))
        .values(revoked_at=time_text(now()))
    )
    if result.rowcount != 1:
        raise QueueError("unknown_runner", f"no active runner key {kid}")


# --- content-addressed blobs -----------------------------------------------------------------


def store_blob(conn: Connection, kind: str, media_type: str, content: bytes) -> str:
    """Keep bytes once by their digest (a second copy of the same bytes is the first one)."""
    return Writer(conn).add_artifact(run_id=None, role=kind, kind=kind, media_type=media_type, content=content)


# --- requests ------------------------------------------------------------------------------


def insert_request(conn: Connection, values: Mapping[str, Any]) -> str:
    request_id = uuid7()
    stamp = time_text(now())
    conn.execute(
        insert(rerun_requests).values(
            id=request_id, state="queued", attempts=0, created_at=stamp, updated_at=stamp, **values
        )
    )
    return request_id


def cancel_request(conn: Connection, request_id: str) -> None:
    stamp = time_text(now())
    result = conn.execute(
        update(rerun_requests)
        .where(rerun_requests.c.id == request_id, rerun_requests.c.state.in_(OPEN_STATES))
        .values(state="cancelled", updated_at=stamp, finished_at=stamp)
    )
    if result.rowcount != 1:
        raise QueueError("conflict", f"no queued or leased request {request_id}")
    conn.execute(
        update(rerun_leases)
        .where(rerun_leases.c.request_id == request_id, rerun_leases.c.state == "active")
        .values(state="cancelled", finished_at=stamp, reason="request cancelled")
    )


def settle_request(conn: Connection, request_id: str) -> str:
    """Recompute a request's state from its leases; returns the new state."""
    request = conn.execute(select(rerun_requests).where(rerun_requests.c.id == request_id).with_for_update()).one()
    if request.state not in OPEN_STATES:
        return request.state
    counts: dict[str, int] = dict(
        conn.execute(
            select(rerun_leases.c.state, func.count())
            .where(rerun_leases.c.request_id == request_id)
            .group_by(rerun_leases.c.state)
        ).all()
    )
    done, active = counts.get("completed", 0), counts.get("active", 0)
    stamp = time_text(now())
    values: dict[str, Any] = {"updated_at": stamp}
    if done >= request.replicas:
        values.update(state="done", finished_at=stamp)
    elif active == 0 and request.attempts >= request.max_attempts:
        reasons = [
            row.reason or row.state
            for row in conn.execute(
                select(rerun_leases.c.state, rerun_leases.c.reason)
                .where(rerun_leases.c.request_id == request_id, rerun_leases.c.state.not_in(["completed", "active"]))
                .order_by(rerun_leases.c.seq)
            )
        ]
        values.update(
            state="failed",
            finished_at=stamp,
            failure=f"{request.attempts} attempt(s) used, {done} of {request.replicas} done: " + "; ".join(reasons),
        )
    else:
        values["state"] = "leased" if done + active >= request.replicas else "queued"
    conn.execute(update(rerun_requests).where(rerun_requests.c.id == request_id).values(**values))
    return values["state"]


# --- leases --------------------------------------------------------------------------------


def expire_leases(conn: Connection, moment: datetime) -> list[str]:
    """Active leases past their expiry become expired and their requests go back to the queue."""
    stamp = time_text(moment)
    due = conn.execute(
        select(rerun_leases.c.id, rerun_leases.c.request_id, rerun_leases.c.expires_at).where(
            rerun_leases.c.state == "active", rerun_leases.c.expires_at < stamp
        )
    ).all()
    for row in due:  # the reason names the lease's own deadline; finished_at is when it was noticed
        conn.execute(
            update(rerun_leases)
            .where(rerun_leases.c.id == row.id, rerun_leases.c.state == "active")
            .values(state="expired", finished_at=stamp, reason=f"lease expired at {row.expires_at} (no heartbeat)")
        )
    for request_id in sorted({row.request_id for row in due}):
        settle_request(conn, request_id)
    return [row.id for row in due]


def take_lease(conn: Connection, dialect: str, kid: str, hardware: str, seconds: float) -> tuple[Any, Any] | None:
    """(lease, request) for the oldest queued request of ``hardware`` this key has not done, or None."""
    moment = now()
    expire_leases(conn, moment)
    mine = exists().where(
        rerun_leases.c.request_id == rerun_requests.c.id,
        rerun_leases.c.runner_key_id == kid,
        rerun_leases.c.state.in_(["active", "completed"]),
    )
    query = (
        select(rerun_requests)
        .where(rerun_requests.c.state == "queued", rerun_requests.c.hardware == hardware, ~mine)
        .order_by(rerun_requests.c.seq)
        .limit(1)
    )
    if dialect == "postgresql":
        query = query.with_for_update(skip_locked=True)
    request = conn.execute(query).first()
    if request is None:
        return None
    attempt = request.attempts + 1
    lease_id, stamp = uuid7(), time_text(moment)
    conn.execute(
        insert(rerun_leases).values(
            id=lease_id,
            request_id=request.id,
            runner_key_id=kid,
            attempt=attempt,
            state="active",
            leased_at=stamp,
            heartbeat_at=stamp,
            expires_at=time_text(moment + timedelta(seconds=seconds)),
        )
    )
    conn.execute(
        update(rerun_requests).where(rerun_requests.c.id == request.id).values(attempts=attempt, updated_at=stamp)
    )
    settle_request(conn, request.id)
    lease = conn.execute(select(rerun_leases).where(rerun_leases.c.id == lease_id)).one()
    return lease, request


def held_lease(conn: Connection, lease_id: str, kid: str) -> Any:
    """The active, unexpired lease ``lease_id`` held by ``kid`` (locked); QueueError naming why not."""
    lease = conn.execute(select(rerun_leases).where(rerun_leases.c.id == lease_id).with_for_update()).first()
    if lease is None:
        raise QueueError("unknown_lease", f"no lease {lease_id}")
    if lease.runner_key_id != kid:
        raise QueueError("not_holder", f"lease {lease_id} is held by another runner key, not {kid}")
    if lease.state != "active":
        raise QueueError(
            "lease_closed",
            f"lease {lease_id} is {lease.state}, not active" + (f" ({lease.reason})" if lease.reason else ""),
        )
    if lease.expires_at < time_text(now()):
        raise QueueError("lease_closed", f"lease {lease_id} expired at {lease.expires_at}")
    return lease


def extend_lease(conn: Connection, lease_id: str, seconds: float) -> str:
    moment = now()
    expires = time_text(moment + timedelta(seconds=seconds))
    conn.execute(
        update(rerun_leases)
        .where(rerun_leases.c.id == lease_id)
        .values(heartbeat_at=time_text(moment), expires_at=expires)
    )
    return expires


def close_lease(
    conn: Connection,
    lease_id: str,
    state: str,
    *,
    reason: str | None = None,
    suite_run_digest: str | None = None,
    run_digests: list[str] | None = None,
    timings: Mapping[str, float] | None = None,
) -> str:
    """Close an active lease (completed or failed) and settle its request; returns the request's state."""
    lease = conn.execute(select(rerun_leases.c.request_id).where(rerun_leases.c.id == lease_id)).one()
    conn.execute(
        update(rerun_leases)
        .where(and_(rerun_leases.c.id == lease_id, rerun_leases.c.state == "active"))
        .values(
            state=state,
            finished_at=time_text(now()),
            reason=reason,
            suite_run_digest=suite_run_digest,
            run_digests=run_digests,
            timings=dict(timings) if timings else None,
        )
    )
    return settle_request(conn, lease.request_id)
