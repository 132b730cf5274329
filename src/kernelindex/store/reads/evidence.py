"""The stored facts a run's evidence level is derived from, read for many runs at once."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import Connection, Row, bindparam, or_, select

from kernelindex.store import tables as t
from kernelindex.store.evidence.tables import attestations

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


# Built once, values bound per call: building a statement costs more than running it here.
_QUERY = select(*_RUN_COLUMNS).select_from(t.runs.outerjoin(t.sources, t.sources.c.id == t.runs.c.source_id))
_BY_DIGESTS = _QUERY.where(t.runs.c.run_digest.in_(bindparam("digests")))
_MANIFESTS = select(t.implementations.c.id, t.implementations.c.manifest).where(
    t.implementations.c.id.in_(bindparam("ids"))
)
_WORKLOAD_IDS = select(t.workloads.c.id).where(t.workloads.c.id.in_(bindparam("ids")))
_REPRODUCTIONS = select(attestations.c.run_digest, attestations.c.reproduction_run_digest).where(
    attestations.c.run_digest.in_(bindparam("digests")), attestations.c.reproduction_run_digest.is_not(None)
)


def _rows(conn: Connection, condition) -> Sequence[Row]:
    return conn.execute(_QUERY.where(condition)).all()


def evidence_rows(conn: Connection, run_digests: Iterable[str]) -> Sequence[Row]:
    """The evidence columns of these runs (with their source's kind)."""
    digests = sorted(set(run_digests))
    return conn.execute(_BY_DIGESTS, {"digests": digests}).all() if digests else []


def evidence_rows_measuring(conn: Connection, identities: Iterable[tuple[str, str, str]]) -> Sequence[Row]:
    """Runs of each (implementation digest, workload digest, protocol key): the same measurement."""
    r = t.runs
    conditions = [
        (r.c.implementation_digest == i) & (r.c.workload_digest == w) & (r.c.protocol_key == p)
        for i, w, p in sorted(set(identities))
    ]
    return _rows(conn, or_(*conditions)) if conditions else []


def implementation_manifests(conn: Connection, implementation_ids: Iterable[str]) -> dict[str, Any]:
    ids = sorted(set(implementation_ids))
    return {row.id: row.manifest for row in conn.execute(_MANIFESTS, {"ids": ids})} if ids else {}


def stored_workload_ids(conn: Connection, workload_ids: Iterable[str]) -> set[str]:
    ids = sorted(set(workload_ids))
    return set(conn.scalars(_WORKLOAD_IDS, {"ids": ids})) if ids else set()


def reproductions(conn: Connection, run_digests: Iterable[str]) -> list[tuple[str, str]]:
    """``(run digest, digest of the harness run an attestation says repeated it)`` pairs."""
    digests = sorted(set(run_digests))
    if not digests:
        return []
    return [(row.run_digest, row.reproduction_run_digest) for row in conn.execute(_REPRODUCTIONS, {"digests": digests})]
