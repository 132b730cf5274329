"""Reads of refresh rows: each source's last refresh, and the export digest an origin last synced."""

from __future__ import annotations

from sqlalchemy import Connection, func, select

from kernelindex.store.refresh.tables import source_refreshes as sr


def last_refreshed(conn: Connection) -> dict[str, str]:
    """source slug -> when it was last refreshed."""
    query = select(sr.c.source_slug, func.max(sr.c.refreshed_at)).where(sr.c.source_slug.is_not(None))
    return dict(conn.execute(query.group_by(sr.c.source_slug)).all())


def last_synced_digest(conn: Connection, origin: str) -> str | None:
    query = select(sr.c.export_digest).where(sr.c.origin == origin[:2000]).order_by(sr.c.seq.desc()).limit(1)
    return conn.scalar(query)
