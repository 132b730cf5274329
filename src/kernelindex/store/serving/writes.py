"""Writing serving rows: a run's keys need its stored parents, and older stores kept serving rows
as foreign rows, which revision 0400_serving_tables turns into typed rows with this module."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy import Connection, delete, select

from kernelindex.store import tables as t
from kernelindex.store.reads.serving_parents import serving_key_parents
from kernelindex.store.rows import RowError, check_record
from kernelindex.store.serving import rows as serving_rows
from kernelindex.store.writer import Writer

CONVERTERS = {
    "model_revisions": serving_rows.model_revision_columns,
    "serving_stack_revisions": serving_rows.stack_revision_columns,
    "serving_configurations": serving_rows.configuration_columns,
    "serving_workloads": serving_rows.serving_workload_columns,
    "serving_measurements": serving_rows.serving_measurement_columns,
}


def serving_run_row(writer: Writer, row: Mapping[str, Any]) -> dict[str, Any]:
    """The columns of a serving run, its keys recomputed from the model and workload it names
    (queued earlier in this transaction, or stored before)."""
    check_record(row.get("manifest"), "manifest", ("ServingRun",))
    spec = row["manifest"]["spec"]
    model, workload = serving_key_parents(writer.conn, spec["modelDigest"], spec["workloadDigest"])
    if model is None or workload is None:  # parents queued just before this run are not written yet
        writer.flush()
        model, workload = serving_key_parents(writer.conn, spec["modelDigest"], spec["workloadDigest"])
    if model is None:
        raise RowError(
            "manifest.spec.modelDigest",
            f"names model {spec['modelDigest']}, which is neither in this import nor stored",
        )
    if workload is None:
        raise RowError(
            "manifest.spec.workloadDigest",
            f"names serving workload {spec['workloadDigest']}, which is neither in this import nor stored",
        )
    return serving_rows.serving_run_columns(row, model, workload)


def adopt_foreign_serving_rows(conn: Connection) -> int:
    """Move foreign rows of the serving tables into their typed tables, in arrival order.

    A row that does not pass the checks an import makes stays a foreign row (nothing is lost);
    returns how many rows were adopted."""
    names = [*CONVERTERS, "serving_runs"]
    query = (
        select(t.foreign_rows.c.seq, t.foreign_rows.c.table_name, t.foreign_rows.c.row)
        .where(t.foreign_rows.c.table_name.in_(names))
        .order_by(t.foreign_rows.c.seq)
    )
    writer = Writer(conn)
    adopted = []
    for seq, table, row in conn.execute(query).all():
        try:
            columns = serving_run_row(writer, row) if table == "serving_runs" else CONVERTERS[table](row)
        except RowError:
            continue
        writer.add(table, seq, columns)
        adopted.append(seq)
    writer.flush()
    failed = {problem.line for problem in writer.problems}
    moved = [seq for seq in adopted if seq not in failed]
    for start in range(0, len(moved), 500):
        conn.execute(delete(t.foreign_rows).where(t.foreign_rows.c.seq.in_(moved[start : start + 500])))
    return len(moved)
