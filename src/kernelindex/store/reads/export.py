"""Every stored row as the catalog export writes it (``export_row`` with its record put back),
parents before children and in arrival order, streamed from the database."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from sqlalchemy import Connection, func, select

from kernelindex.store import tables as t
from kernelindex.store.serving.tables import SERVING_EXPORT_ORDER
from kernelindex.store.writer import DERIVED_FROM_RUN_ROW

# export table name -> store table, in the order parents come before children
EXPORT_ORDER = [
    ("sources", t.sources),
    ("projects", t.projects),
    ("operations", t.operations),
    ("operation_aliases", t.operation_aliases),
    ("workloads", t.workloads),
    ("implementations", t.implementations),
    ("benchmark_runs", t.runs),
    ("measurements", t.measurements),
    ("record_events", t.record_events),
    ("artifacts", t.artifacts),
    *SERVING_EXPORT_ORDER,
]

# run export-row key -> column that fills it when the row left it empty (a link made later)
_RUN_LINKS = {
    "implementationId": "implementation_id",
    "workloadId": "workload_id",
    "sourceId": "source_id",
    "correctnessKey": "correctness_key",
    "comparisonKey": "comparison_key",
}


def count_rows(conn: Connection) -> int:
    total = sum(conn.scalar(select(func.count()).select_from(table)) or 0 for _, table in EXPORT_ORDER)
    return total + (conn.scalar(select(func.count()).select_from(t.foreign_rows)) or 0)


def export_lines(conn: Connection) -> Iterator[tuple[str, dict[str, Any]]]:
    """``(table, row)`` for every stored row, streamed from the database."""
    streaming = conn.execution_options(stream_results=True, yield_per=1000)
    for name, table in EXPORT_ORDER:
        extra = [table.c[c] for c in _RUN_LINKS.values()] if table is t.runs else []
        manifest = [table.c.manifest] if "manifest" in table.c else []
        query = select(table.c.export_row, *manifest, *extra).order_by(table.c.seq)
        for row in streaming.execute(query):
            out = dict(row.export_row)
            if out.get("derivedFrom") == DERIVED_FROM_RUN_ROW:
                continue  # the run's own row states this retraction (retractedAt), as it came
            if manifest:
                out["manifest"] = row.manifest
            if table is t.runs:
                for key, column in _RUN_LINKS.items():
                    if out.get(key) is None and row._mapping[column] is not None:
                        out[key] = row._mapping[column]
            yield name, out
    query = select(t.foreign_rows.c.table_name, t.foreign_rows.c.row).order_by(t.foreign_rows.c.seq)
    for table_name, row in streaming.execute(query):
        yield table_name, row
