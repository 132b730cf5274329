"""Choosing the database and making ids."""

from __future__ import annotations

import re
import time
import uuid

from kernelindex.store.database import resolve_url
from kernelindex.store.ids import uuid7


def test_resolve_url(monkeypatch, tmp_path):
    monkeypatch.delenv("KERNELINDEX_DATABASE_URL", raising=False)
    assert resolve_url() == "sqlite:///kernelindex.db"
    monkeypatch.setenv("KERNELINDEX_DATABASE_URL", "postgresql://u@h/db")
    assert resolve_url() == "postgresql+psycopg://u@h/db"
    assert resolve_url(str(tmp_path / "x.db")) == f"sqlite:///{tmp_path / 'x.db'}"
    assert resolve_url("sqlite:///other.db") == "sqlite:///other.db"


def test_uuid7_layout_and_time():
    before = time.time_ns() // 1_000_000
    values = [uuid7() for _ in range(1000)]
    after = time.time_ns() // 1_000_000
    assert len(set(values)) == 1000
    for value in values:
        parsed = uuid.UUID(value)
        assert parsed.version == 7 and parsed.variant == uuid.RFC_4122
        assert before <= parsed.int >> 80 <= after
        assert re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}", value)


def test_a_new_sqlite_store_gets_large_pages_and_an_old_one_keeps_its_own(tmp_path):
    """Page size is fixed when a store is made (WAL allows no change later): a new store gets 16 KiB
    pages; a store made with 4 KiB pages opens, takes writes and keeps them."""
    import sqlite3

    from kernelindex.store import open_store
    from kernelindex.store.database import PAGE_SIZE

    def page_size(path) -> int:
        with sqlite3.connect(path) as conn:
            return conn.execute("PRAGMA page_size").fetchone()[0]

    new = tmp_path / "new.db"
    open_store(f"sqlite:///{new}").close()
    assert page_size(new) == PAGE_SIZE == 16384

    old = tmp_path / "old.db"
    with sqlite3.connect(old) as conn:
        conn.execute("PRAGMA page_size=4096")
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("CREATE TABLE made_before (x)")
    store = open_store(f"sqlite:///{old}")
    with store.begin() as conn:
        conn.exec_driver_sql("INSERT INTO made_before VALUES (1)")
    store.close()
    assert page_size(old) == 4096
    with sqlite3.connect(old) as conn:
        assert conn.execute("SELECT x FROM made_before").fetchall() == [(1,)]
