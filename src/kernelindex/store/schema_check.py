"""Alembic's verdict "this store is at the newest revision", remembered for the scripts it was given.

Bringing a store up to date means importing Alembic and reading every migration script: about a
sixth of a second, paid by every command that opens a store, though the answer is almost always
"nothing to do". After Alembic has upgraded (or found current) a store, :func:`remember` stores
the digest of the migration scripts beside the revision Alembic left; :func:`known_current` is
true only while both still hold: the same scripts on disk and the same revision in the store's
``alembic_version``. Any change to either (a new migration, an edited one, a downgrade) sends the
store back to Alembic, which stays the only judge of what the head is.
"""

from __future__ import annotations

import hashlib
from functools import cache
from pathlib import Path

from sqlalchemy import Column, Connection, String, Table, inspect, text

from kernelindex.store.tables import metadata

migration_checks = Table(
    "migration_checks",
    metadata,
    Column("scripts_digest", String(71), primary_key=True),  # sha256: of the migration scripts
    Column("revision", String(64), nullable=False),  # what alembic_version held after Alembic ran
)

_KNOWN = text(
    "SELECT 1 FROM migration_checks JOIN alembic_version ON alembic_version.version_num = migration_checks.revision "
    "WHERE migration_checks.scripts_digest = :digest"
)


@cache
def scripts_digest(folder: Path) -> str:
    """Digest of every file Alembic reads to find the head (env.py and each revision), by name."""
    files = [folder / "env.py", *sorted((folder / "versions").glob("*.py"))]
    h = hashlib.sha256()
    for path in files:
        data = path.read_bytes()
        h.update(f"{path.relative_to(folder).as_posix()}\0{len(data)}\0".encode())
        h.update(data)
    return "sha256:" + h.hexdigest()


def known_current(conn: Connection, folder: Path) -> bool:
    """True when Alembic already found this store current under exactly these scripts."""
    if not inspect(conn).has_table("migration_checks"):
        return False
    return conn.execute(_KNOWN, {"digest": scripts_digest(folder)}).first() is not None


def remember(conn: Connection, folder: Path) -> None:
    """After Alembic ran on ``conn`` (in its transaction, under the migration lock): note its verdict."""
    (revision,) = conn.exec_driver_sql("SELECT version_num FROM alembic_version").one()
    conn.execute(migration_checks.delete())
    conn.execute(migration_checks.insert().values(scripts_digest=scripts_digest(folder), revision=revision))
