"""Opening a store: which database, the engine, and bringing its schema to the newest revision."""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import orjson
from sqlalchemy import Connection, Engine, create_engine, event, inspect, text
from sqlalchemy.exc import SQLAlchemyError as DatabaseError  # noqa: F401  (re-exported: what callers above the store catch)

from kernelindex.store import schema_check

DEFAULT_URL = "sqlite:///kernelindex.db"
BUSY_TIMEOUT_MS = 300_000  # how long a writer waits for another one (a large import) before giving up
# PostgreSQL advisory lock keys: one for schema changes, one for writes (one writer at a time, as on SQLite)
MIGRATION_LOCK = 0x6B690001
WRITE_LOCK = 0x6B690002
_WRITE = "kernelindex_write"
URL_ENV = "KERNELINDEX_DATABASE_URL"
MIGRATIONS = Path(__file__).with_name("migrations")


def url_parts(url: str) -> tuple[str, str] | None:
    """``(backend, database)`` of a store URL (``("sqlite", "path.db")``); None when it is no URL."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        parsed = make_url(url)
    except ArgumentError:
        return None
    return parsed.get_backend_name(), parsed.database or ""


def resolve_url(db: str | None = None) -> str:
    """The database to use: ``--db`` first, then $KERNELINDEX_DATABASE_URL, then ./kernelindex.db.

    A bare path is taken as a SQLite file; ``postgresql://`` URLs are sent through psycopg 3.
    """
    url = db or os.environ.get(URL_ENV) or DEFAULT_URL
    if "://" not in url:
        url = f"sqlite:///{url}"
    for prefix in ("postgresql://", "postgres://"):
        if url.startswith(prefix):
            url = "postgresql+psycopg://" + url[len(prefix) :]
    return url


@dataclass(frozen=True)
class Store:
    engine: Engine

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    @contextmanager
    def begin(self, *, bulk: bool = False) -> Iterator[Connection]:
        """One writing transaction: committed when the block ends, rolled back if it raises.

        Writers take turns (SQLite: ``BEGIN IMMEDIATE``; PostgreSQL: an advisory transaction lock),
        so two imports at once run one after the other and the second finds the first's rows.
        ``bulk``: a large load (an import), which a new SQLite store takes in a rollback journal
        (:func:`_rollback_journal_if_new`)."""
        with self.engine.connect() as conn, _rollback_journal_if_new(conn) if bulk else nullcontext():
            with write_transaction(conn):
                yield conn

    @contextmanager
    def read(self) -> Iterator[Connection]:
        """A transaction that only reads (no turn to wait for)."""
        with self.engine.connect() as conn, conn.begin():
            yield conn

    def close(self) -> None:
        self.engine.dispose()


@dataclass(frozen=True)
class JoinedStore:
    """A store whose every ``begin()`` joins one transaction already open: a use case hands it to
    steps written against a :class:`Store` (importers, the harness's recorder) so that they all
    commit together, with the use case's own writes, or not at all."""

    conn: Connection

    @property
    def engine(self) -> Engine:
        return self.conn.engine

    @property
    def dialect(self) -> str:
        return self.conn.dialect.name

    @contextmanager
    def begin(self, *, bulk: bool = False) -> Iterator[Connection]:
        yield self.conn


# What a step writes through: a store of its own, or a use case's transaction joined.
Writable = Store | JoinedStore


@contextmanager
def write_transaction(conn: Connection) -> Iterator[Connection]:
    """Begin a writing transaction on ``conn`` (see :meth:`Store.begin`). Before it commits, every
    record it stored gets its leaf in the transparency log (:mod:`kernelindex.store.transparency`)."""
    from kernelindex.store.generation import has_written
    from kernelindex.store.transparency.append import log_new_records
    from kernelindex.store.transparency.leaves import forget_known_leaves

    conn.execution_options(**{_WRITE: True})
    try:
        with conn.begin():
            if conn.dialect.name == "postgresql":
                conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": WRITE_LOCK})
            yield conn
            if has_written(conn):
                log_new_records(conn)
    finally:
        conn.execution_options(**{_WRITE: False})
        forget_known_leaves(conn)


NEW_STORE_BYTES = 4 * 2**20  # a SQLite store no larger holds next to nothing yet (its schema alone: ~0.6 MB)


@contextmanager
def _rollback_journal_if_new(conn: Connection) -> Iterator[None]:
    """While the block runs, a new SQLite store that no other connection has open uses a rollback
    journal instead of its write-ahead log, and goes back to the log afterwards.

    In the log every page of a load is written twice (to the log, then copied into the store by
    the checkpoint); a rollback journal keeps only the pages the store had before, and a new store
    has few, so each page is written once (the commit of the real export: 0.36-0.41 -> 0.16-0.20 s,
    see benchmarks/RESULTS.md). Just as safe: a load cut short leaves a journal that rolls it back.
    The cost is that readers wait while the load commits, so this is only for a store with nothing
    to read yet, and only when no other connection has it open (leaving the log needs the store to
    itself; the attempt does not wait). Back to the log however the block ends; should that fail
    (a new reader got in first), the next connection to open the store sets it (_sqlite_pragmas)."""
    if conn.dialect.name != "sqlite":
        yield
        return
    raw = conn.connection.dbapi_connection  # outside any transaction: the journal mode cannot change inside one
    assert raw is not None
    pages, page_size = (raw.execute(f"PRAGMA {name}").fetchone()[0] for name in ("page_count", "page_size"))
    switched = False
    if pages * page_size <= NEW_STORE_BYTES:
        raw.execute("PRAGMA busy_timeout=0")
        try:
            switched = raw.execute("PRAGMA journal_mode=DELETE").fetchone()[0] == "delete"
        except sqlite3.OperationalError:  # "database is locked": another connection has the store open
            pass
        finally:
            raw.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    try:
        yield
    finally:
        if switched:
            with suppress(sqlite3.OperationalError):
                raw.execute("PRAGMA journal_mode=WAL")


BULK_CACHE_KIB = 65536  # an import's SQLite page cache (KiB; the default is 2,000)


@contextmanager
def bulk_settings(conn: Connection) -> Iterator[None]:
    """Settings for one large write on ``conn``, for the length of the block only: on SQLite a page
    cache big enough for an export's tables and indexes (the default spills dirty pages while the
    transaction is still open), restored afterwards so the pooled connection goes back as it came.
    ``synchronous`` and ``temp_store`` may not change inside a transaction (and an import joins its
    use case's), ``journal_mode`` stays WAL. PostgreSQL needs nothing here."""
    if conn.dialect.name != "sqlite":
        yield
        return
    cache_size = int(conn.exec_driver_sql("PRAGMA cache_size").scalar_one())
    conn.exec_driver_sql(f"PRAGMA cache_size=-{BULK_CACHE_KIB}")
    try:
        yield
    finally:
        conn.exec_driver_sql(f"PRAGMA cache_size={cache_size}")


# A new SQLite store's page size: a run's row (~4.6 KB: its manifest and export row beside its columns)
# fits in one page instead of spilling into overflow pages (which an index build or a read of the
# run's later columns then has to follow), and an import writes a quarter as many pages (the real
# export's commit 0.14 -> 0.08 s) for a store 5 % larger (benchmarks/RESULTS.md). A store keeps the
# size it was made with.
PAGE_SIZE = 16384


def _sqlite_pragmas(dbapi_conn, _record) -> None:
    # The driver's own transaction handling is off: transactions are begun in _sqlite_begin, so
    # schema changes are transactional too and a writer can take the write lock up front.
    dbapi_conn.isolation_level = None
    cursor = dbapi_conn.cursor()
    cursor.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    # Foreign keys on, so SQLite refuses the same dangling links PostgreSQL refuses.
    cursor.execute("PRAGMA foreign_keys=ON")
    if cursor.execute("PRAGMA page_count").fetchone()[0] == 0:  # a new store: its pages' size is set once
        cursor.execute(f"PRAGMA page_size={PAGE_SIZE}")
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.close()


def _sqlite_begin(conn: Connection) -> None:
    # a writer takes the write lock at BEGIN: a deferred transaction that read first could not
    # take it later once another writer had committed (SQLITE_BUSY_SNAPSHOT)
    conn.exec_driver_sql("BEGIN IMMEDIATE" if conn.get_execution_options().get(_WRITE) else "BEGIN")


def json_text(value) -> str:
    """JSON column text: orjson where it can (several times faster on an import), else the standard
    library (orjson refuses integers past 64 bits; the value is kept all the same). No NaN reaches
    here: every reader refuses it, and orjson would write it as null."""
    return json_bytes(value).decode("utf-8")


def json_bytes(value) -> bytes:
    """:func:`json_text` as UTF-8 bytes."""
    try:
        return orjson.dumps(value)
    except (TypeError, orjson.JSONEncodeError):
        return json.dumps(value, ensure_ascii=False).encode("utf-8")


def json_value(text: str | bytes) -> Any:
    """A JSON column's value from its text, as the standard library reads it: by orjson where it
    can (several times faster), else the standard library (orjson refuses integers past 64 bits,
    a lone surrogate, a number past a double), so a text either reads gives one value."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)


def read_only_engine(store: Store) -> Engine:
    """An engine for reads only: on a SQLite file, connections opened ``mode=ro`` (WAL lets them
    read while a writer commits, and a read path can never write by mistake); otherwise the
    store's own engine and its connection pool."""
    url = store.engine.url
    if store.dialect != "sqlite" or not url.database or url.database == ":memory:" or url.query:
        return store.engine
    return _sqlite_read_only_engine(Path(url.database))


SQLITE_HEADER = b"SQLite format 3\x00"  # how every SQLite database file begins
SIDE_FILES = ("-wal", "-shm", "-journal")  # what SQLite keeps beside a store while it is open or being written


def _side_files(path: Path) -> list[Path]:
    return [side for suffix in SIDE_FILES if (side := path.with_name(path.name + suffix)).exists()]


def sqlite_writable(path: Path) -> bool:
    """Whether this process may write the SQLite file at ``path``: the file, the folder SQLite makes
    its -wal, -shm and -journal files in, and any of those already there."""
    return all(os.access(p, os.W_OK) for p in (path, path.resolve().parent, *_side_files(path)))


def _sqlite_read_only_engine(path: Path) -> Engine:
    """Connections that only read the SQLite file at ``path`` (``mode=ro``). A reader of a WAL store
    needs its -shm file, which SQLite makes beside the store: where this process may not write that
    folder and no connection has the store open (no -wal, -shm or -journal file there), the store is
    read ``immutable`` instead (no locks, no -shm), which holds while no one writes it meanwhile."""
    resolved = path.resolve()
    immutable = not _side_files(resolved) and not os.access(resolved.parent, os.W_OK)
    query = "mode=ro&immutable=1" if immutable else "mode=ro"
    engine = create_engine(f"sqlite:///file:{quote(str(resolved))}?{query}&uri=true", json_serializer=json_text)
    event.listen(engine, "connect", _sqlite_read_pragmas)
    return engine


def table_names(store: Store) -> set[str]:
    """The tables the store's database holds (none: an empty SQLite file, or a new store)."""
    with store.read() as conn:
        return set(inspect(conn).get_table_names())


def schema_current(store: Store) -> bool:
    """Whether the store's schema is known to be the newest (see :mod:`schema_check`), asked without writing."""
    with store.read() as conn:
        return schema_check.known_current(conn, MIGRATIONS)


def _sqlite_read_pragmas(dbapi_conn, _record) -> None:
    cursor = dbapi_conn.cursor()
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


def alembic_config(connection: Connection):
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["connection"] = connection
    return config


def migrate(engine: Engine) -> None:
    """Upgrade the schema to the newest Alembic revision (a no-op when it is already there).

    Under a lock (SQLite: the write lock; PostgreSQL: an advisory lock), so processes opening a
    fresh store at once migrate it once: the others wait, then find it at the newest revision.
    Alembic is not even loaded when it already found this store current under the same scripts
    (see :mod:`kernelindex.store.schema_check`)."""
    with engine.connect() as conn:
        with conn.begin():
            if schema_check.known_current(conn, MIGRATIONS):
                return
    from alembic import command

    with engine.connect() as conn:
        conn.execution_options(**{_WRITE: True})
        with conn.begin():
            if conn.dialect.name == "postgresql":
                conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK})
            command.upgrade(alembic_config(conn), "head")
            schema_check.remember(conn, MIGRATIONS)


def open_store(db: str | None = None, *, upgrade: bool = True, read_only: bool = False) -> Store:
    """Open (and by default migrate) the store at ``db`` (a URL or path; see :func:`resolve_url`).
    ``read_only``: ``db`` is a SQLite file, read through connections that cannot write (never
    migrated; nothing is written to it, not even its journal mode), whether or not it is a store."""
    url = resolve_url(db)
    if read_only:
        parts = url_parts(url)
        assert parts is not None and parts[0] == "sqlite", url
        return Store(_sqlite_read_only_engine(Path(parts[1])))
    engine = create_engine(url, json_serializer=json_text)
    if engine.dialect.name == "sqlite":
        event.listen(engine, "connect", _sqlite_pragmas)
        event.listen(engine, "begin", _sqlite_begin)
    if upgrade:
        migrate(engine)
    from kernelindex.store.generation import track_writes

    track_writes(engine)  # after migrating: from here on every committed write bumps the generation
    return Store(engine)
