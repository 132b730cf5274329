"""The store generation: a counter that every committed write moves, so caches can be exact.

Nothing that writes has to remember it. :func:`track_writes` listens on the engine: the first
INSERT, UPDATE or DELETE of a transaction (from an import, an attestation, a raw statement: any
path) also bumps the one-row ``store_generation`` table on the same connection, so the bump
commits or rolls back with the write. A reader that sees generation G therefore sees every write
committed before G was bumped, and a cache keyed by G is never stale.
"""

from __future__ import annotations

import re
import threading
import weakref

from sqlalchemy import BigInteger, Column, Connection, Engine, Integer, Table, event, inspect
from sqlalchemy.pool import PoolProxiedConnection

from kernelindex.store.tables import metadata

store_generation = Table(
    "store_generation",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=False),  # always 1: one row
    Column("value", BigInteger, nullable=False),
)

BUMP = "UPDATE store_generation SET value = value + 1 WHERE id = 1"
READ = "SELECT value FROM store_generation WHERE id = 1"
_WRITE = re.compile(r"^\s*(?:INSERT|UPDATE|DELETE|REPLACE|MERGE|UPSERT)\b", re.IGNORECASE)
_CTE_WRITE = re.compile(r"^\s*WITH\b.*\b(?:INSERT|UPDATE|DELETE|MERGE)\b", re.IGNORECASE | re.DOTALL)
_BUMPED = "kernelindex.generation_bumped"


def is_write(statement: str) -> bool:
    """True for a statement that changes rows (Alembic's own bookkeeping excluded)."""
    if "alembic_version" in statement:
        return False
    return bool(_WRITE.match(statement) or _CTE_WRITE.match(statement))


def _after_cursor_execute(conn, cursor, statement, parameters, context, executemany) -> None:
    if conn.info.get(_BUMPED) or not is_write(statement):
        return
    conn.info[_BUMPED] = True
    # A cursor of its own: the statement's cursor may still hold rows (INSERT ... RETURNING).
    bump = cursor.connection.cursor()
    try:
        bump.execute(BUMP)
    finally:
        bump.close()


def note_write(conn: Connection) -> None:
    """Move the generation for a write the listener cannot see (a PostgreSQL COPY is no statement
    SQLAlchemy executes), once per transaction as the listener does, and only where it listens
    (not during the migrations, which may predate the counter)."""
    if not conn.info.get(_BUMPED) and event.contains(conn.engine, "after_cursor_execute", _after_cursor_execute):
        conn.info[_BUMPED] = True
        conn.exec_driver_sql(BUMP)


def _transaction_ended(conn, *_args) -> None:
    # After a commit, a rollback, or a rolled-back savepoint (which undid its bump too), the next
    # write must bump again.
    conn.info.pop(_BUMPED, None)


def track_writes(engine: Engine) -> None:
    """Make every write through ``engine`` bump the generation in its own transaction."""
    if event.contains(engine, "after_cursor_execute", _after_cursor_execute):
        return
    event.listen(engine, "after_cursor_execute", _after_cursor_execute)
    for name in ("begin", "commit", "rollback", "rollback_savepoint"):
        event.listen(engine, name, _transaction_ended)


class GenerationReader:
    """Reads the current generation with one tiny query on a connection kept for the purpose
    (no pool checkout, no SQLAlchemy compile): cheap enough to run on every request."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._lock = threading.Lock()
        self._raw: PoolProxiedConnection | None = None

    def __call__(self) -> int | None:
        """The generation, or None when it cannot be read (no such table yet, a broken connection):
        callers then serve fresh, uncached answers."""
        with self._lock:
            try:
                if self._raw is None:
                    self._raw = self._engine.raw_connection()
                cursor = self._raw.cursor()
                try:
                    cursor.execute(READ)
                    row = cursor.fetchone()
                finally:
                    cursor.close()
                self._raw.rollback()  # end the read snapshot (PostgreSQL), so the next read is fresh
            except self._engine.dialect.loaded_dbapi.Error:
                self.close()
                return None
            return None if row is None else int(row[0])

    def close(self) -> None:
        if self._raw is not None:
            raw, self._raw = self._raw, None
            try:
                raw.close()
            except Exception:  # a connection that already broke: nothing left to release
                pass


def has_written(conn: Connection) -> bool:
    """True while ``conn``'s transaction holds writes not yet committed."""
    return bool(conn.info.get(_BUMPED))


def generation_of(conn: Connection) -> int | None:
    """The generation as ``conn`` sees it (None when the store predates the generation table)."""
    engine = conn.engine
    if engine not in _has_table:
        _has_table[engine] = inspect(conn).has_table(store_generation.name)
    if not _has_table[engine]:
        return None
    value = conn.exec_driver_sql(READ).scalar()
    return None if value is None else int(value)


_has_table: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
