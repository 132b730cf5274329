"""When each source was last refreshed (revision 0600_source_refresh): one row per source per
import or sync that brought its records, with where they came from and the export's digest.

Operational rows, append-only: the newest row of a source is its last refresh; the newest row
of a sync origin holds the export digest a later sync compares against.
"""

from __future__ import annotations

from sqlalchemy import Column, Index, Integer, String, Table

from kernelindex.store.tables import DIGEST, TIME, metadata

source_refreshes = Table(
    "source_refreshes",
    metadata,
    Column("seq", Integer, primary_key=True, autoincrement=True),
    Column("source_slug", String(200), nullable=True),  # null: a sync that found nothing new
    Column("origin", String(2000), nullable=False),  # the sync URL or the imported path
    Column("export_digest", DIGEST, nullable=True),
    Column("rows_added", Integer, nullable=False),
    Column("refreshed_at", TIME, nullable=False),
    Index("ix_source_refreshes_slug", "source_slug", "refreshed_at"),
    Index("ix_source_refreshes_origin", "origin", "seq"),
)
