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


def test_the_scripts_head_read_from_their_text_is_alembics(empty_db_url):
    from alembic.script import ScriptDirectory

    from kernelindex.store.database import MIGRATIONS, alembic_config, script_head

    store = open_store(empty_db_url)
    try:
        with store.engine.connect() as conn:
            heads = ScriptDirectory.from_config(alembic_config(conn)).get_heads()
            stored = conn.exec_driver_sql("select version_num from alembic_version").scalars().all()
    finally:
        store.close()
    assert [script_head()] == heads == stored
    assert len(list((MIGRATIONS / "versions").glob("*.py"))) >= 2


def test_a_store_behind_the_newest_revision_is_still_upgraded(empty_db_url):
    """Skipping Alembic is only for a store already at the head: one a revision behind is upgraded."""
    from alembic import command
    from alembic.script import ScriptDirectory

    from kernelindex.store.database import alembic_config

    store = open_store(empty_db_url)
    with store.engine.begin() as conn:
        config = alembic_config(conn)
        previous = ScriptDirectory.from_config(config).get_revision("head").down_revision
        command.downgrade(config, previous)
        assert conn.exec_driver_sql("select version_num from alembic_version").scalars().all() == [previous]
    store.close()
    again = open_store(empty_db_url)
    try:
        with again.engine.connect() as conn:
            diff = compare_metadata(MigrationContext.configure(conn, opts={"compare_type": True}), metadata)
            assert diff == [], diff
            assert conn.exec_driver_sql("select version_num from alembic_version").scalars().all() != [previous]
    finally:
        again.close()
