"""The ranking reads of a group's runs are index-only on SQLite (migration 0200_rank_indexes).

A plan check, not a timing: EXPLAIN QUERY PLAN of the very statements `rank_inputs` sends must name
a COVERING INDEX for `runs`, so a group's read never touches the wide rows (manifests).
"""

from __future__ import annotations

from sqlalchemy import event, text

from kernelindex.ranking.reads import rank_inputs
from kernelindex.store.database import open_store


def test_group_and_workload_reads_use_covering_indexes(tmp_path):
    store = open_store(str(tmp_path / "plans.db"))
    sent: list[tuple[str, tuple]] = []

    def keep(conn, cursor, statement, parameters, context, executemany):
        if "FROM runs" in statement and "comparison_key" in statement:
            sent.append((statement, parameters))

    try:
        with store.engine.connect() as conn:
            event.listen(store.engine, "before_cursor_execute", keep)
            rank_inputs(conn, workload_id="01a00000-0000-7000-8000-000000000000")
            rank_inputs(conn, ["sha256:" + "a" * 64, "sha256:" + "b" * 64])
            event.remove(store.engine, "before_cursor_execute", keep)
            assert len(sent) == 2, sent  # the workload's keys (none here), then the groups' runs
            for statement, parameters in sent:
                plan = [row[-1] for row in conn.exec_driver_sql("EXPLAIN QUERY PLAN " + statement, parameters)]
                assert any("COVERING INDEX ix_runs_" in step for step in plan), (statement, plan)
            names = {r[0] for r in conn.execute(text("SELECT name FROM sqlite_master WHERE type = 'index'"))}
            assert {"ix_runs_rank_cover", "ix_runs_workload_key"} <= names
    finally:
        store.close()
