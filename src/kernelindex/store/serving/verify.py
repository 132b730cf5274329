"""Recomputing the digests and cohort keys of stored serving rows (part of ``kernelindex verify``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from sqlalchemy import Connection, func, select

from kernelindex.records.canonical import digest
from kernelindex.records.serving_keys import run_keys
from kernelindex.store.serving import tables as st

_DIGESTED = [
    (st.model_revisions, "model_digest"),
    (st.serving_stack_revisions, "stack_digest"),
    (st.serving_configurations, "configuration_digest"),
    (st.serving_workloads, "workload_digest"),
]


def serving_checks(conn: Connection) -> Iterator[tuple[str, str, list[tuple[str, Any, Any]]]]:
    """``(table, id, [(field, stored, recomputed), ...])`` for every serving row with a digest or key."""
    stream = conn.execution_options(stream_results=True, yield_per=1000)
    for table, column in _DIGESTED:
        for stored in stream.execute(select(table.c.id, table.c[column], table.c.manifest).order_by(table.c.seq)):
            yield table.name, stored.id, [(column, stored[1], digest(stored.manifest))]
    r, m, w = st.serving_runs, st.model_revisions, st.serving_workloads
    query = (
        select(
            r.c.id,
            r.c.run_digest,
            r.c.cohort_key,
            r.c.protocol_key,
            r.c.metric_set_key,
            r.c.manifest,
            m.c.manifest.label("model"),
            w.c.manifest.label("workload"),
        )
        .select_from(r.outerjoin(m, r.c.model_revision_id == m.c.id).outerjoin(w, r.c.workload_id == w.c.id))
        .order_by(r.c.seq)
    )
    for row in stream.execute(query):
        checks = [("run_digest", row.run_digest, digest(row.manifest))]
        if row.model is not None and row.workload is not None:
            keys = run_keys(row.manifest["spec"], row.model["spec"], row.workload["spec"])
            checks += [
                ("cohort_key", row.cohort_key, keys["cohortKey"]),
                ("protocol_key", row.protocol_key, keys["protocolKey"]),
                ("metric_set_key", row.metric_set_key, keys["metricSetKey"]),
            ]
        yield "serving_runs", row.id, checks


def count_serving(conn: Connection) -> int:
    tables = [table for table, _ in _DIGESTED] + [st.serving_runs]
    return sum(conn.scalar(select(func.count()).select_from(table)) or 0 for table in tables)
