"""The stored facts a run's evidence level is derived from, read for many runs at once."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import Connection, Row, or_, select

from kernelindex.store import tables as t
from kernelindex.store.evidence_tables import attestations

_RUN_COLUMNS = (
    t.runs.c.id,
    t.runs.c.run_digest,
    t.runs.c.status,
    t.runs.c.source_slug,
    t.runs.c.implementation_digest,
    t.runs.c.implementation_id,
    t.runs.c.workload_digest,
    t.runs.c.workload_id,
    t.runs.c.protocol_key,
    t.runs.c.runner_id,
    t.runs.c.runner_host,
    t.runs.c.has_raw_evidence,
    t.sources.c.kind.label("source_kind"),
)


def _rows(conn: Connection, condition) -> Sequence[Row]:
    query = select(*_RUN_COLUMNS).select_from(t.runs.outerjoin(t.sources, t.sources.c.id == t.runs.c.source_id))
    return conn.execute(query.where(condition)).all()


def evidence_rows(conn: Connection, run_digests: Iterable[str]) -> Sequence[Row]:
    """The evidence columns of these runs (with their source's kind)."""
    return _rows(conn, t.runs.c.run_digest.in_(sorted(set(run_digests))))


def evidence_rows_measuring(conn: Connection, identities: Iterable[tuple[str, str, str]]) -> Sequence[Row]:
    """Runs of each (implementation digest, workload digest, protocol key): the same measurement."""
    r = t.runs
    conditions = [
        (r.c.implementation_digest == i) & (r.c.workload_digest == w) & (r.c.protocol_key == p)
        for i, w, p in sorted(set(identities))
    ]
    return _rows(conn, or_(*conditions)) if conditions else []


def implementation_manifests(conn: Connection, implementation_ids: Iterable[str]) -> dict[str, Any]:
    i = t.implementations
    return {
        row.id: row.manifest
        for row in conn.execute(select(i.c.id, i.c.manifest).where(i.c.id.in_(sorted(set(implementation_ids)))))
    }


def stored_workload_ids(conn: Connection, workload_ids: Iterable[str]) -> set[str]:
    return set(conn.scalars(select(t.workloads.c.id).where(t.workloads.c.id.in_(sorted(set(workload_ids))))))


def reproductions(conn: Connection, run_digests: Iterable[str]) -> list[tuple[str, str]]:
    """``(run digest, digest of the harness run an attestation says repeated it)`` pairs."""
    a = attestations
    return [
        (row.run_digest, row.reproduction_run_digest)
        for row in conn.execute(
            select(a.c.run_digest, a.c.reproduction_run_digest).where(
                a.c.run_digest.in_(sorted(set(run_digests))), a.c.reproduction_run_digest.is_not(None)
            )
        )
    ]
