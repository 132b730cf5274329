"""Opening a store: which database, the engine, and bringing its schema to the newest revision."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from sqlalchemy import Connection, Engine, create_engine, event

DEFAULT_URL = "sqlite:///kernelindex.db"
URL_ENV = "KERNELINDEX_DATABASE_URL"
MIGRATIONS = Path(__file__).with_name("migrations")


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
    def begin(self) -> Iterator[Connection]:
        """One transaction: committed when the block ends, rolled back if it raises."""
        with self.engine.begin() as conn:
            yield conn

    def close(self) -> None:
        self.engine.dispose()


def _sqlite_pragmas(dbapi_conn, _record) -> None:
    # Foreign keys on, so SQLite refuses the same dangling links PostgreSQL refuses.
    cursor = dbapi_conn.cursor()
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.close()


def read_only_engine(store: Store) -> Engine:
    """An engine for reads only: on a SQLite file, connections opened ``mode=ro`` (WAL lets them
    read while a writer commits, and a read path can never write by mistake); otherwise the
    store's own engine and its connection pool."""
    url = store.engine.url
    if store.dialect != "sqlite" or not url.database or url.database == ":memory:" or url.query:
        return store.engine
    path = quote(str(Path(url.database).resolve()))
    engine = create_engine(f"sqlite:///file:{path}?mode=ro&uri=true")
    event.listen(engine, "connect", _sqlite_read_pragmas)
    return engine


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
    """Upgrade the schema to the newest Alembic revision (a no-op when it is already there)."""
    from alembic import command

    with engine.begin() as conn:
        command.upgrade(alembic_config(conn), "head")


def open_store(db: str | None = None, *, upgrade: bool = True) -> Store:
    """Open (and by default migrate) the store at ``db`` (a URL or path; see :func:`resolve_url`)."""
    url = resolve_url(db)
    engine = create_engine(url)
    if engine.dialect.name == "sqlite":
        event.listen(engine, "connect", _sqlite_pragmas)
    if upgrade:
        migrate(engine)
    from kernelindex.store.generation import track_writes

    track_writes(engine)  # after migrating: from here on every committed write bumps the generation
    return Store(engine)
