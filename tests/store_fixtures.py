"""Fixtures shared by the store and ingest tests: each test runs on SQLite and on PostgreSQL.

Imported by ``tests/store/conftest.py`` and ``tests/ingest/conftest.py``.
"""

from __future__ import annotations

import pytest

from pgserver import Unavailable, shared_server

_template: list[str] = []  # a database migrated once, copied for each test


def _migrated_template(server) -> str:
    if not _template:
        from kernelindex.store import open_store

        url = server.new_database()
        open_store(url).close()
        _template.append(url.rsplit("/", 1)[1])
    return _template[0]


def database_url(kind: str, folder, *, migrated: bool = False) -> str:
    """A fresh database of ``kind`` (sqlite: a file in ``folder``; postgresql: a new database on
    the shared throw-away server, skipping the test when none can start)."""
    if kind == "sqlite":
        return f"sqlite:///{folder / 'store.db'}"
    try:
        server = shared_server()
    except Unavailable as exc:
        pytest.skip(f"PostgreSQL unavailable: {exc}")
    return server.new_database(template=_migrated_template(server) if migrated else None)


BACKENDS = ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]


@pytest.fixture(params=BACKENDS)
def db_url(request, tmp_path) -> str:
    """A database for one test (on PostgreSQL a copy of one migrated once: faster)."""
    return database_url(request.param, tmp_path, migrated=True)


@pytest.fixture(params=BACKENDS)
def empty_db_url(request, tmp_path) -> str:
    """A database nothing has touched yet, for tests of the migrations themselves."""
    return database_url(request.param, tmp_path)


@pytest.fixture
def store(db_url):
    from kernelindex.store import open_store

    opened = open_store(db_url)
    yield opened
    opened.close()
