"""A cheap fingerprint of everything an export holds: the row count and newest sequence number of
each exported table. Rows are only ever added (the one UPDATE fills a run's pending links, and
those arrive with new rows), so an unchanged fingerprint means an unchanged export."""

from __future__ import annotations

import hashlib

from sqlalchemy import Connection, func, select

from kernelindex.store import tables as t
from kernelindex.store.serving.tables import SERVING_EXPORT_ORDER

EXPORTED = (
    t.sources,
    t.projects,
    t.operations,
    t.operation_aliases,
    t.workloads,
    t.implementations,
    t.runs,
    t.measurements,
    t.record_events,
    t.artifacts,
    t.foreign_rows,
    *(table for _, table in SERVING_EXPORT_ORDER),
)


def export_fingerprint(conn: Connection) -> str:
    parts = []
    for table in EXPORTED:
        count, newest = conn.execute(select(func.count(), func.max(table.c.seq)).select_from(table)).one()
        parts.append(f"{table.name}:{count}:{newest}")
    return hashlib.sha256("|".join(parts).encode()).hexdigest()
