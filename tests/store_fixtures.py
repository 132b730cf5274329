"""Fixtures shared by the store and ingest tests: each test runs on SQLite and on PostgreSQL.

Imported by ``tests/store/conftest.py`` and ``tests/ingest/conftest.py``.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
from pathlib import Path

import pytest

from pgserver import Unavailable, shared_server

_template: list[str] = []  # a database migrated once, copied for each test
_sqlite_template: list[Path] = []  # the same for SQLite: a migrated file, copied (migrating costs more)


def _migrated_template(server) -> str:
    if not _template:
        from kernelindex.store import open_store

        url = server.new_database()
        open_store(url).close()
        _template.append(url.rsplit("/", 1)[1])
    return _template[0]


def _copy_migrated_sqlite(target: Path) -> None:
    if not _sqlite_template:
        from kernelindex.store import open_store

        folder = Path(tempfile.mkdtemp(prefix="kernelindex-template-"))
        atexit.register(shutil.rmtree, folder, True)
        open_store(f"sqlite:///{folder / 'store.db'}").close()  # closed: the WAL is folded back in
        _sqlite_template.append(folder / "store.db")
    shutil.copyfile(_sqlite_template[0], target)


def database_url(kind: str, folder, *, migrated: bool = False) -> str:
    """A fresh database of ``kind`` (sqlite: a file in ``folder``; postgresql: a new database on
    the shared throw-away server, skipping the test when none can start). ``migrated``: a copy of a
    database migrated once."""
    if kind == "sqlite":
        if migrated:
            _copy_migrated_sqlite(folder / "store.db")
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
