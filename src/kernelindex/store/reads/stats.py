"""Counts over the whole store (``kernelindex stats``)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, func, select

from kernelindex.store import tables as t


def store_stats(conn: Connection) -> dict[str, Any]:
    counts = {
        table.name: conn.scalar(select(func.count()).select_from(table)) or 0
        for table in (
            t.sources,
            t.projects,
            t.operations,
            t.operation_aliases,
            t.workloads,
            t.implementations,
            t.protocols,
            t.environments,
            t.runs,
            t.measurements,
            t.artifacts,
            t.record_events,
            t.foreign_rows,
        )
    }
    r = t.runs
    pending = {
        "workload": conn.scalar(select(func.count()).where(r.c.workload_id.is_(None))) or 0,
        "implementation": conn.scalar(select(func.count()).where(r.c.implementation_id.is_(None))) or 0,
    }
    by_source = dict(
        conn.execute(
            select(func.coalesce(t.sources.c.slug, r.c.source_slug, "(none)"), func.count())
            .select_from(r.outerjoin(t.sources, r.c.source_id == t.sources.c.id))
            .group_by(func.coalesce(t.sources.c.slug, r.c.source_slug, "(none)"))
        ).all()
    )
    by_status = dict(conn.execute(select(r.c.status, func.count()).group_by(r.c.status)).all())
    cohorts = conn.scalar(select(func.count(func.distinct(r.c.comparison_key)))) or 0
    return {
        "tables": counts,
        "pendingLinks": pending,
        "runsBySource": by_source,
        "runsByStatus": by_status,
        "cohorts": cohorts,
    }
