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


def _url(kind: str, tmp_path, *, migrated: bool) -> str:
    if kind == "sqlite":
        return f"sqlite:///{tmp_path / 'store.db'}"
    try:
        server = shared_server()
    except Unavailable as exc:
        pytest.skip(f"PostgreSQL unavailable: {exc}")
    return server.new_database(template=_migrated_template(server) if migrated else None)


BACKENDS = ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]


@pytest.fixture(params=BACKENDS)
def db_url(request, tmp_path) -> str:
    """A database for one test (on PostgreSQL a copy of one migrated once: faster)."""
    return _url(request.param, tmp_path, migrated=True)


@pytest.fixture(params=BACKENDS)
def empty_db_url(request, tmp_path) -> str:
    """A database nothing has touched yet, for tests of the migrations themselves."""
    return _url(request.param, tmp_path, migrated=False)


@pytest.fixture
def store(db_url):
    from kernelindex.store import open_store

    opened = open_store(db_url)
    yield opened
    opened.close()
