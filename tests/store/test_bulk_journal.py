"""A bulk load into a new SQLite store goes through a rollback journal (each page written once)
and leaves the store in WAL mode, whole or untouched; a store in use or not new keeps its log."""

from __future__ import annotations

import os
import random
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from kernelindex.store import database, open_store

SEED = int(os.environ.get("KERNELINDEX_TEST_SEED", random.randrange(2**32)))


def _header_mode(path: Path) -> int:
    """The journal mode the file itself records: 1 rollback journal, 2 write-ahead log."""
    with open(path, "rb") as f:
        header = f.read(20)
    assert header[18] == header[19]
    return header[18]


def _add_sources(conn, count: int, rng: random.Random) -> list[str]:
    slugs = [f"s{n}-{rng.randrange(10**9)}" for n in range(count)]
    conn.exec_driver_sql(
        "INSERT INTO sources (id, slug, kind, name, export_row) VALUES (?, ?, 'dataset', ?, '{}')",
        [(f"id-{slug}", slug, "x" * rng.randrange(500, 3000)) for slug in slugs],
    )
    return slugs


def _mode_inside(conn) -> str:
    return conn.exec_driver_sql("PRAGMA journal_mode").scalar_one()


def _stored(path: Path) -> int:
    with sqlite3.connect(path) as check:
        assert check.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        return check.execute("SELECT count(*) FROM sources").fetchone()[0]


def test_a_bulk_load_into_a_new_store_uses_a_rollback_journal_and_ends_in_wal(tmp_path):
    rng = random.Random(SEED)
    path = tmp_path / "store.db"
    store = open_store(f"sqlite:///{path}")
    count = rng.randrange(200, 400)
    with store.begin(bulk=True) as conn:
        assert _mode_inside(conn) == "delete"
        _add_sources(conn, count, rng)
    with store.begin() as conn:
        assert _mode_inside(conn) == "wal"  # a plain write keeps the log
    store.close()
    assert _header_mode(path) == 2
    assert _stored(path) == count
    assert not (tmp_path / "store.db-journal").exists()


def test_a_refused_bulk_load_leaves_the_store_untouched_and_in_wal(tmp_path):
    rng = random.Random(SEED)
    path = tmp_path / "store.db"
    store = open_store(f"sqlite:///{path}")
    with pytest.raises(RuntimeError, match="refused"), store.begin(bulk=True) as conn:
        assert _mode_inside(conn) == "delete"
        _add_sources(conn, 300, rng)
        raise RuntimeError("refused")
    store.close()
    assert _header_mode(path) == 2
    assert _stored(path) == 0


def test_a_store_another_connection_has_open_keeps_its_log(tmp_path):
    """Leaving the log needs the store to itself: a reader (a server) keeps it, and the load does not wait."""
    rng = random.Random(SEED)
    path = tmp_path / "store.db"
    store = open_store(f"sqlite:///{path}")
    reader = sqlite3.connect(path)
    reader.execute("SELECT count(*) FROM sources").fetchone()  # a reader that has read holds the log open
    with store.begin(bulk=True) as conn:
        assert _mode_inside(conn) == "wal"
        _add_sources(conn, 50, rng)
        assert reader.execute("SELECT count(*) FROM sources").fetchone() == (0,)  # it still reads, unblocked
    assert reader.execute("SELECT count(*) FROM sources").fetchone() == (50,)
    reader.close()
    store.close()
    assert _stored(path) == 50


def test_a_store_that_holds_data_keeps_its_log(tmp_path, monkeypatch):
    rng = random.Random(SEED)
    path = tmp_path / "store.db"
    store = open_store(f"sqlite:///{path}")
    with store.begin() as conn:
        _add_sources(conn, 10, rng)
    monkeypatch.setattr(database, "NEW_STORE_BYTES", path.stat().st_size - 1)
    with store.begin(bulk=True) as conn:
        assert _mode_inside(conn) == "wal"
    store.close()


def test_a_bulk_load_killed_halfway_is_rolled_back_on_the_next_open(tmp_path):
    """The process dies after its load has spilled pages into the store file: the journal it
    leaves restores the store when it is next opened."""
    path = tmp_path / "store.db"
    open_store(f"sqlite:///{path}").close()
    child = textwrap.dedent(
        f"""
        import random, sys
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        from test_bulk_journal import _add_sources
        from kernelindex.store import open_store
        store = open_store("sqlite:///{path}")
        with store.begin(bulk=True) as conn:
            conn.exec_driver_sql("PRAGMA cache_size=-1024")  # a small cache: the load spills into the file
            _add_sources(conn, 3000, random.Random({SEED}))
            print(conn.exec_driver_sql("PRAGMA journal_mode").scalar_one(), flush=True)
            sys.stdin.read()  # held open until killed
        """
    )
    size_before = path.stat().st_size
    process = subprocess.Popen([sys.executable, "-c", child], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout.readline().strip() == "delete"
        assert (tmp_path / "store.db-journal").exists()
        assert path.stat().st_size > size_before  # pages of the unfinished load are in the file
    finally:
        process.kill()
        process.wait()
    store = open_store(f"sqlite:///{path}")  # rolls the hot journal back, then sets WAL again
    with store.read() as conn:
        assert conn.exec_driver_sql("SELECT count(*) FROM sources").scalar_one() == 0
    store.close()
    assert _header_mode(path) == 2
    assert _stored(path) == 0
