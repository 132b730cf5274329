"""Checking every denormalised column against the record it was derived from (part of ``verify``).

The store copies facts out of each record into columns for its queries (a run's primary value,
status and hardware; a measurement's value; an operation's slug). Nothing re-reads the record
afterwards, so an edited column would change rankings while every digest still matched. Here each
row's columns are derived again by the very functions that derived them on the way in
(:mod:`kernelindex.store.rows`), from the stored manifest and export row, and compared. Links the
writer may point at a stored twin (``*_id`` of a parent) are checked by the key checks instead.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from sqlalchemy import Connection, Table, select

from kernelindex.store import rows as r
from kernelindex.store import tables as t
from kernelindex.store.rows import RowError

Check = tuple[str, str, list[tuple[str, Any, Any]]]
LINKS = frozenset(
    {"operation_id", "project_id", "run_id", "previous_run_id", "source_id", "workload_id", "implementation_id"}
)
SOURCES = frozenset({"manifest", "export_row"})


def _with_manifest(row: Mapping[Any, Any]) -> dict[str, Any]:
    return {**row["export_row"], "manifest": row["manifest"]}


# table -> (its row's conversion input from the stored row, the converter the writer used)
_CONVERTED: tuple[tuple[Table, Callable[[Mapping[Any, Any]], Any], Callable[..., dict[str, Any]]], ...] = (
    (t.sources, lambda row: row["export_row"], r.source_columns),
    (t.projects, _with_manifest, r.project_columns),
    (t.operations, _with_manifest, r.operation_columns),
    (t.workloads, _with_manifest, r.workload_columns),
    (t.implementations, _with_manifest, r.implementation_columns),
    (t.protocols, lambda row: row["manifest"], r.protocol_columns),
    (t.environments, lambda row: row["manifest"], r.environment_columns),
    (t.measurements, lambda row: row["export_row"], r.measurement_columns),
    (t.artifacts, lambda row: row["export_row"], r.artifact_columns),
    (t.record_events, lambda row: row["export_row"], r.event_columns),
)


def _where(table: Table, row: Mapping[Any, Any]) -> str:
    return str(row["id"]) if "id" in row else f"seq {row['seq']}"


def _compare(table: Table, stored: Mapping[Any, Any], derived: Mapping[Any, Any]) -> list[tuple[str, Any, Any]]:
    return [
        (name, stored[name], value)
        for name, value in derived.items()
        if name in stored and name not in LINKS and name not in SOURCES and stored[name] != value
    ]


def column_checks(conn: Connection) -> Iterator[Check]:
    stream = conn.execution_options(stream_results=True, yield_per=1000)
    for table, source, convert in _CONVERTED:
        for row in stream.execute(select(table).order_by(table.c.seq)).mappings():
            try:
                derived = convert(source(row))
            except (RowError, KeyError, TypeError, AttributeError) as exc:
                yield table.name, _where(table, row), [("manifest", "unreadable", str(exc)[:200])]
                continue
            yield table.name, _where(table, row), _compare(table, row, derived)
    yield from _run_column_checks(conn)


# a run's columns that come from its export row rather than its manifest: column -> export-row key
_RUN_FROM_ROW = {"id": "id", "published_at": "publishedAt", "supersedes_id": "supersedesId"}


def _run_column_checks(conn: Connection) -> Iterator[Check]:
    runs = t.runs
    stream = conn.execution_options(stream_results=True, yield_per=1000)
    for row in stream.execute(select(runs).order_by(runs.c.seq)).mappings():
        try:
            derived = r.run_columns(row["manifest"])
        except (RowError, KeyError, TypeError, AttributeError) as exc:
            yield "runs", row["id"], [("manifest", "unreadable", str(exc)[:200])]
            continue
        export = row["export_row"]
        derived["has_raw_evidence"] = export.get("hasRawEvidence", derived["has_raw_evidence"])
        for column, key in _RUN_FROM_ROW.items():
            if key in export:
                derived[column] = export[key]
        yield "runs", row["id"], _compare(runs, row, derived)


def count_column_checks(conn: Connection) -> int:
    """How many rows :func:`column_checks` yields (for a progress bar)."""
    from sqlalchemy import func

    tables = [table for table, _, _ in _CONVERTED] + [t.runs]
    return sum(conn.scalar(select(func.count()).select_from(table)) or 0 for table in tables)
