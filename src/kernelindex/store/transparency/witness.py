"""The newest checkpoint seen of each mirrored server (``log_witnessed``), read and replaced."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import Connection, delete, insert, select

from kernelindex.store.transparency.tables import log_witnessed


@dataclass(frozen=True)
class Witnessed:
    server: str
    size: int
    note: str
    verifier_key: str


def last_seen(conn: Connection, server: str) -> Witnessed | None:
    row = conn.execute(
        select(log_witnessed.c.size, log_witnessed.c.note, log_witnessed.c.verifier_key).where(
            log_witnessed.c.server == server
        )
    ).first()
    return None if row is None else Witnessed(server, int(row[0]), row[1], row[2])


def remember(conn: Connection, server: str, size: int, note: str, verifier_key: str) -> None:
    conn.execute(delete(log_witnessed).where(log_witnessed.c.server == server))
    conn.execute(
        insert(log_witnessed).values(
            server=server,
            size=size,
            note=note,
            verifier_key=verifier_key,
            seen_at=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        )
    )
