"""Writing refresh rows: which sources an import or sync refreshed, from where, with which export."""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import Connection, insert

from kernelindex.store.refresh.tables import source_refreshes
from kernelindex.store.writer import now_iso


def record_refresh(
    conn: Connection, slugs: Iterable[str], origin: str, *, export_digest: str | None = None, rows_added: int = 0
) -> None:
    """One row per source refreshed (one with no source when there were none, so the origin's
    export digest is still remembered)."""
    at = now_iso()
    rows = [
        {
            "source_slug": slug,
            "origin": origin[:2000],
            "export_digest": export_digest,
            "rows_added": rows_added,
            "refreshed_at": at,
        }
        for slug in sorted(set(slugs))
    ]
    conn.execute(
        insert(source_refreshes),
        rows
        or [
            {
                "source_slug": None,
                "origin": origin[:2000],
                "export_digest": export_digest,
                "rows_added": rows_added,
                "refreshed_at": at,
            }
        ],
    )
