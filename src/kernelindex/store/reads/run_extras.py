"""Reads for the run page's additions: the per-case runs of a suite evaluation."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Connection, Row, bindparam, select

from kernelindex.store.tables import runs, workloads

_CASE_RUNS = (  # built once, values bound per call
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
        workloads.c.operation_id == bindparam("operation_id"),
        workloads.c.kind == "WorkloadCase",
        runs.c.implementation_digest == bindparam("implementation_digest"),
        runs.c.protocol_key == bindparam("protocol_key"),
        runs.c.environment_key == bindparam("environment_key"),
    )
    .order_by(runs.c.observed_at.desc())
)


def case_runs_of_suite(conn: Connection, row, operation_id: str) -> Sequence[Row]:
    """Case runs of the same implementation, protocol and environment on the suite's operation,
    newest first (the harness writes one per case beside the suite run)."""
    values = {
        "operation_id": operation_id,
        "implementation_digest": row.implementation_digest,
        "protocol_key": row.protocol_key,
        "environment_key": row.environment_key,
    }
    return list(conn.execute(_CASE_RUNS, values).all())
