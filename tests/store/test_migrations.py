"""The migrations build exactly the schema the code declares, on both databases."""

from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import inspect

from kernelindex.store import open_store
from kernelindex.store.schema import metadata


def test_migrated_schema_equals_metadata(empty_db_url):
    store = open_store(empty_db_url)
    try:
        with store.engine.connect() as conn:
            diff = compare_metadata(MigrationContext.configure(conn, opts={"compare_type": True}), metadata)
            assert diff == [], diff
            assert set(inspect(conn).get_table_names()) >= {"runs", "workloads", "alembic_version"}
    finally:
        store.close()


def test_opening_twice_is_a_no_op(empty_db_url):
    db_url = empty_db_url
    first = open_store(db_url)
    with first.engine.connect() as conn:
        version = conn.exec_driver_sql("select version_num from alembic_version").scalars().all()
    first.close()
    second = open_store(db_url)
    with second.engine.connect() as conn:
        assert conn.exec_driver_sql("select version_num from alembic_version").scalars().all() == version
    second.close()
    assert len(version) == 1
