"""What a sitemap lists: the slugs of the collections that have pages."""

from __future__ import annotations

from sqlalchemy import Connection, select

from kernelindex.store import tables as t
from kernelindex.store.reads.implementation_slugs import all_public_slugs


def sitemap_slugs(conn: Connection, implementation_limit: int) -> dict[str, list[str]]:
    """Operation, source and project slugs, and up to ``implementation_limit`` implementation slugs."""
    return {
        "operations": list(conn.scalars(select(t.operations.c.slug).distinct().order_by(t.operations.c.slug))),
        "sources": list(conn.scalars(select(t.sources.c.slug).order_by(t.sources.c.slug))),
        "projects": list(conn.scalars(select(t.projects.c.slug).order_by(t.projects.c.seq))),
        "implementations": all_public_slugs(conn, implementation_limit),
    }
