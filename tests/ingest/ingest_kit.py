"""What the refused-import tests compare: the whole store, before and after."""

from __future__ import annotations

from sqlalchemy import func, select

from kernelindex.store.reads.export import export_lines
from kernelindex.store.schema import metadata


def snapshot(store) -> tuple:
    """Row counts of every table and every exported line: equal snapshots mean nothing changed."""
    with store.begin() as conn:
        counts = {name: conn.scalar(select(func.count()).select_from(table)) for name, table in metadata.tables.items()}
        return counts, list(export_lines(conn))
