"""Opening the store a command or the server was given, with one line saying why it cannot be.

Both front ends open it this way: every CLI command, and `kernelindex serve`'s master, which opens
it after the CLI has handed over, so the CLI never loads SQLAlchemy on the way to the first page.
"""

from __future__ import annotations

from pathlib import Path

from kernelindex.store import Store, open_store, resolve_url
from kernelindex.store.database import DatabaseError, url_parts

STORE_SUFFIXES = (".db", ".sqlite", ".sqlite3")
MADE_BY = "kernelindex import FILES or kernelindex demo"


class StoreUnavailable(Exception):
    """Why the store cannot be opened, in one line for the user."""


def missing_sqlite_store(db: str | None) -> bool:
    """Whether ``db`` names a SQLite file that does not exist (so opening it would create one)."""
    parts = url_parts(resolve_url(db))
    if parts is None:
        return False
    backend, path = parts
    return backend == "sqlite" and path not in ("", ":memory:") and not Path(path).exists()


def store_url_problem(db: str | None, create: bool = False) -> str | None:
    """Why no store can be at ``db``, before anything is opened; None when one can.

    Only SQLite and PostgreSQL are supported. A SQLite file must exist, except for commands that
    make stores (``import``, ``demo``, ``eval --record``, ``keys``), and even they create only a file
    named ``*.db``, ``*.sqlite`` or ``*.sqlite3``: a typo or a stray word never becomes an empty store.
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
    if path in ("", ":memory:") or Path(path).exists():
        return None
    if not create:
        return f"no store at {path} (no such file); check the path, or make one with {MADE_BY}"
    if not path.endswith(STORE_SUFFIXES):
        return (
            f"refusing to create a new store at {path!r}: name the file *.db (or *.sqlite), or give a postgresql:// URL"
        )
    if not Path(path).resolve().parent.is_dir():
        return f"cannot open the store at {path}: its folder {Path(path).parent} does not exist"
    return None


def open_named_store(db: str | None, create: bool = False) -> Store:
    """The store at ``db``, migrated; :class:`StoreUnavailable` when there is none or it cannot be opened."""
    problem = store_url_problem(db, create)
    if problem is not None:
        raise StoreUnavailable(problem)
    try:
        return open_store(db)
    except (DatabaseError, OSError, ImportError) as exc:
        raise StoreUnavailable(f"cannot open the store at {resolve_url(db)}: {str(exc).splitlines()[0]}") from exc
