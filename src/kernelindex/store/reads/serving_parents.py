"""The records a serving run's keys are computed from: its model and its workload, by digest."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, select

from kernelindex.store.serving import tables as st


def serving_key_parents(conn: Connection, model_digest: str, workload_digest: str) -> tuple[Any, Any]:
    """``(model record, workload record)`` as stored (None where not stored)."""
    model = conn.scalar(select(st.model_revisions.c.manifest).where(st.model_revisions.c.model_digest == model_digest))
    workload = conn.scalar(
        select(st.serving_workloads.c.manifest).where(st.serving_workloads.c.workload_digest == workload_digest)
    )
    return model, workload
