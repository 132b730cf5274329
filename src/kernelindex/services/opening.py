"""Opening the store a command or the server was given, with one line saying why it cannot be.

Both front ends open it this way: every CLI command, `kernelindex serve` included, which opens (so
migrates) it once before it builds the app and forks its workers.
Every decision about what is at ``--db`` is made here: whether it is a store, whether a command may
make one there, whether it can be written or only read.
"""

from __future__ import annotations

from pathlib import Path

from kernelindex.store import Store, open_store, resolve_url
from kernelindex.store.database import (
    SQLITE_HEADER,
    DatabaseError,
    schema_current,
    sqlite_writable,
    table_names,
    url_parts,
)

STORE_SUFFIXES = (".db", ".sqlite", ".sqlite3")
MADE_BY = "kernelindex import FILES or kernelindex demo"
STORE_TABLE = "alembic_version"  # every kernelindex store has it, from its first migration on


class StoreUnavailable(Exception):
    """Why the store cannot be opened, in one line for the user."""


def _sqlite_path(db: str | None) -> str | None:
    """The file ``db`` names when it is a SQLite file (None: PostgreSQL, an in-memory store, no URL)."""
    parts = url_parts(resolve_url(db))
    if parts is None or parts[0] != "sqlite" or parts[1] in ("", ":memory:"):
        return None
    return parts[1]


def missing_sqlite_store(db: str | None) -> bool:
    """Whether ``db`` names a SQLite file that holds no store yet, so that opening it would make one:
    no such file, or an empty one (as ``: > new.db`` leaves; nothing in it can be lost)."""
    path = _sqlite_path(db)
    if path is None:
        return False
    file = Path(path)
    return not file.exists() or (file.is_file() and file.stat().st_size == 0)


def store_url_problem(db: str | None, create: bool = False) -> str | None:
    """Why no store can be at ``db``, before anything is opened; None when one can.

    Only SQLite and PostgreSQL are supported. A SQLite file must be a store already, except for
    commands that make stores (``import``, ``demo``, ``eval --record``, ``keys``), and even they make
    one only where there is none (no file, or an empty one) named ``*.db``, ``*.sqlite`` or
    ``*.sqlite3``: a typo or a stray word never becomes an empty store, and a file that is not a
    SQLite database is never written to.
    """
    url = resolve_url(db)
    parts = url_parts(url)
    if parts is None:
        return f"--db {db!r} is not a database URL or a file path"
    backend, path = parts
    if backend == "postgresql":
        return None
    if backend != "sqlite":
        return f"--db {url}: {backend} is not supported; give a SQLite file path or a postgresql:// URL"
    if path in ("", ":memory:"):
        return None
    if Path(path).exists() and not (create and missing_sqlite_store(db)):
        return _not_sqlite(url, Path(path))
    if not create:
        return f"no store at {path} (no such file); check the path, or make one with {MADE_BY}"
    if not path.endswith(STORE_SUFFIXES):
        return (
            f"refusing to create a new store at {path!r}: name the file *.db (or *.sqlite), or give a postgresql:// URL"
        )
    if not Path(path).resolve().parent.is_dir():
        return f"cannot open the store at {path}: its folder {Path(path).parent} does not exist"
    return None


def _not_sqlite(url: str, file: Path) -> str | None:
    """Why the existing ``file`` is no SQLite database (None when it is one)."""
    if file.is_dir():
        return f"cannot open the store at {url}: {file} is a folder, not a kernelindex store"
    try:
        with open(file, "rb") as f:
            head = f.read(len(SQLITE_HEADER))
    except OSError as exc:
        return f"cannot open the store at {url}: cannot read {file}: {exc.strerror}"
    if head == SQLITE_HEADER:
        return None
    what = "an empty file" if not head else "not a SQLite database"
    return _not_a_store(url, what)


def _not_a_store(url: str, what: str) -> str:
    return f"cannot open the store at {url}: it is not a kernelindex store ({what}); check the path"


def open_named_store(db: str | None, create: bool = False, read_only: bool = False) -> Store:
    """The store at ``db``, migrated; :class:`StoreUnavailable` when there is none or it cannot be opened.
    ``create``: the command makes a store where there is none (:func:`store_url_problem`).
    ``read_only``: the command only reads, so a SQLite store this process may not write (the file
    or its folder) is opened for reading, unmigrated, instead of refused."""
    problem = store_url_problem(db, create)
    if problem is not None:
        raise StoreUnavailable(problem)
    path = _sqlite_path(db)
    try:
        if path is None or missing_sqlite_store(db):  # PostgreSQL, in memory, or a new store
            return open_store(db)
        return _open_sqlite_file(db, Path(path), create, read_only)
    except (DatabaseError, OSError, ImportError) as exc:
        raise StoreUnavailable(f"cannot open the store at {resolve_url(db)}: {str(exc).splitlines()[0]}") from exc


def _open_sqlite_file(db: str | None, file: Path, create: bool, read_only: bool) -> Store:
    """An existing SQLite database, looked at through connections that cannot write first: one
    that is not a kernelindex store is refused with nothing written to it (no journal mode, no
    tables), except a database with no tables at all, which a store-making command makes its store."""
    looked = open_store(db, read_only=True)
    try:
        tables = table_names(looked)
        if STORE_TABLE not in tables and (tables or not create):
            what = "a SQLite database of other tables" if tables else "a SQLite database with no tables"
            raise StoreUnavailable(_not_a_store(resolve_url(db), what))
        if sqlite_writable(file):
            looked.close()
            return open_store(db)
        folder = file.resolve().parent
        if not read_only:
            raise StoreUnavailable(
                f"cannot write to the store at {file}: the file or its folder {folder} is not writable by this user "
                "(SQLite keeps its -wal and -shm files beside the store)"
            )
        if not schema_current(looked):
            raise StoreUnavailable(
                f"the store at {file} is read-only here and was made by an older kernelindex: upgrading its schema "
                f"needs the file and its folder {folder} writable by this user"
            )
        return looked
    except BaseException:
        looked.close()
        raise
