"""The migrations build exactly the schema the code declares, on both databases."""

from __future__ import annotations

import random
import shutil
import subprocess
import sys

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import inspect

from kernelindex.store import database, open_store, schema_check
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


def test_a_current_store_opens_without_loading_alembic(empty_db_url):
    """Alembic's verdict is remembered: the next process opens the store without importing it."""
    script = (
        "import sys; from kernelindex.store import open_store; open_store(sys.argv[1]).close(); "
        "print('alembic' in sys.modules)"
    )
    first = subprocess.run([sys.executable, "-c", script, empty_db_url], capture_output=True, text=True, check=True)
    again = subprocess.run([sys.executable, "-c", script, empty_db_url], capture_output=True, text=True, check=True)
    assert (first.stdout.strip(), again.stdout.strip()) == ("True", "False")


def _upgrades_run(monkeypatch) -> list[str]:
    from alembic import command

    calls: list[str] = []
    real = command.upgrade
    monkeypatch.setattr(command, "upgrade", lambda config, target: (calls.append(target), real(config, target)))
    return calls


def test_changed_scripts_send_the_store_back_to_alembic(empty_db_url, tmp_path, monkeypatch):
    open_store(empty_db_url).close()
    calls = _upgrades_run(monkeypatch)
    open_store(empty_db_url).close()
    assert calls == []  # same scripts, same revision: Alembic's verdict stands
    edited = tmp_path / "migrations"
    shutil.copytree(database.MIGRATIONS, edited)
    env = edited / "env.py"
    env.write_text(env.read_text() + f"\n# edited {random.random()}\n")
    monkeypatch.setattr(database, "MIGRATIONS", edited)
    open_store(empty_db_url).close()
    assert calls == ["head"]
    with open_store(empty_db_url).engine.connect() as conn:
        stored = conn.exec_driver_sql("SELECT scripts_digest FROM migration_checks").scalars().all()
    assert stored == [schema_check.scripts_digest(edited)]


def test_a_downgraded_store_is_upgraded_again(empty_db_url, monkeypatch):
    from alembic import command

    store = open_store(empty_db_url)
    with store.engine.begin() as conn:
        command.downgrade(database.alembic_config(conn), "0800_search_indexes")
    store.close()
    calls = _upgrades_run(monkeypatch)
    store = open_store(empty_db_url)
    with store.engine.connect() as conn:
        assert conn.exec_driver_sql("SELECT version_num FROM alembic_version").scalar_one() == "1300_log_blocks"
        assert inspect(conn).has_table("migration_checks")
    store.close()
    assert calls == ["head"]
