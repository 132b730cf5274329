"""What a leaderboard shows beside the ranks: each row's title, each group's protocol and environment
labels, and each group's recorded leader history."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import Connection, Row, select

from kernelindex.store import tables as t
from kernelindex.store.reads.runs import manifest_title


def run_briefs(conn: Connection, run_ids: Iterable[str]) -> dict[str, Row]:
    """Per-run facts a leaderboard row shows, keyed by run id."""
    r, i = t.runs, t.implementations
    query = (
        select(
            r.c.id,
            r.c.run_digest,
            r.c.comparison_key,
            r.c.workload_id,
            r.c.protocol_key,
            r.c.environment_key,
            i.c.title.label("impl_title"),
            manifest_title(r.c.manifest["run"]).label("run_title"),
        )
        .outerjoin(i, i.c.id == r.c.implementation_id)
        .where(r.c.id.in_(sorted(set(run_ids))))
    )
    return {row.id: row for row in conn.execute(query)}


def protocol_labels(conn: Connection, digests: Iterable[str]) -> dict[str, Row]:
    p = t.protocols
    return {
        row.protocol_digest: row
        for row in conn.execute(
            select(p.c.protocol_digest, p.c.name, p.c.family, manifest_title(p.c.manifest).label("title")).where(
                p.c.protocol_digest.in_(sorted(set(digests)))
            )
        )
    }


def environment_labels(conn: Connection, digests: Iterable[str]) -> dict[str, Row]:
    e = t.environments
    return {
        row.environment_digest: row
        for row in conn.execute(
            select(
                e.c.environment_digest, e.c.name, e.c.hardware_model, manifest_title(e.c.manifest).label("title")
            ).where(e.c.environment_digest.in_(sorted(set(digests))))
        )
    }


def group_history(conn: Connection, keys: Sequence[str]) -> dict[str, list[dict[str, Any]]]:
    """Each group's recorded events (leader changes, retractions), oldest first."""
    e = t.record_events
    out: dict[str, list[dict[str, Any]]] = {k: [] for k in keys}
    query = select(e).where(e.c.comparison_key.in_(keys)).order_by(e.c.at, e.c.seq)
    for row in conn.execute(query):
        out.setdefault(row.comparison_key, []).append(
            {
                "runId": row.run_id,
                "previousRunId": row.previous_run_id,
                "cause": row.cause,
                "at": row.at,
                "policyVersion": row.policy_version,
            }
        )
    return out
