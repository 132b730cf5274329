"""Reads for the run page's additions: the per-case runs of a suite evaluation and the source's terms."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, Row, select

from kernelindex.store.tables import runs, sources, workloads


def case_runs_of_suite(conn: Connection, row, operation_id: str) -> Sequence[Row]:
    """Case runs of the same implementation, protocol and environment on the suite's operation,
    newest first (the harness writes one per case beside the suite run)."""
    query = (
        select(
            runs.c.id,
            runs.c.status,
            runs.c.observed_at,
            runs.c.primary_value,
            runs.c.primary_unit,
            runs.c.manifest["run"]["spec"]["correctness"].label("correctness"),
            workloads.c.id.label("workload_id"),
            workloads.c.name,
            workloads.c.shape_summary,
        )
        .join(workloads, workloads.c.id == runs.c.workload_id)
        .where(
            workloads.c.operation_id == operation_id,
            workloads.c.kind == "WorkloadCase",
            runs.c.implementation_digest == row.implementation_digest,
            runs.c.protocol_key == row.protocol_key,
            runs.c.environment_key == row.environment_key,
        )
        .order_by(runs.c.observed_at.desc())
    )
    return conn.execute(query).all()


def source_terms(conn: Connection, source_id: str | None) -> dict[str, Any] | None:
    if not source_id:
        return None
    found = conn.execute(
        select(sources.c.slug, sources.c.name, sources.c.policy).where(sources.c.id == source_id)
    ).first()
    return {"slug": found.slug, "name": found.name, "policy": found.policy or {}} if found is not None else None
