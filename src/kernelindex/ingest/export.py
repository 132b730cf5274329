"""Writing the store back out as a catalog export (``.jsonl.zst``), in the public format.

Each stored row is written as it came (``export_row`` with its record put back), parents before
children and in arrival order, so exporting an imported file gives the same lines, byte for byte.
Runs that came as bundles get their links and keys from the columns once those are known.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import zstandard
from sqlalchemy import Connection, func, select

from kernelindex.ingest.jsonlines import js_dumps
from kernelindex.store import tables as t
from kernelindex.store.serving_tables import SERVING_EXPORT_ORDER
from kernelindex.store.database import Store

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


def export_catalog(store: Store, path: Path, *, on_row: Callable[[], None] | None = None) -> Counter:
    """Write the whole store to ``path`` (written beside it, then renamed: never half a file)."""
    counts: Counter = Counter()
    partial = path.with_name(path.name + ".partial")
    with store.begin() as conn, open(partial, "wb") as raw:
        with zstandard.ZstdCompressor(level=10).stream_writer(raw, closefd=False) as out:
            for table, row in export_lines(conn):
                out.write((js_dumps({"table": table, "row": row}) + "\n").encode("utf-8"))
                counts[table] += 1
                if on_row:
                    on_row()
    os.replace(partial, path)
    return counts
