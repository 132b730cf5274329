"""Sources: where records came from, their policies and the operations they have runs for."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kernelindex.store.reads import catalog, refresh
from kernelindex.views.formatting import safe_url

if TYPE_CHECKING:
    from sqlalchemy import Connection


def source_item(r, counts: dict[str, int], refreshed: dict[str, str] | None = None) -> dict[str, Any]:
    policy = r.policy or {}
    return {
        "slug": r.slug,
        "name": r.name,
        "kind": r.kind,
        "runCount": counts.get(r.id, 0),
        "lastRefreshedAt": (refreshed or {}).get(r.slug),
        "policy": {**policy, "href": safe_url(policy.get("url"))} if policy else None,
        "links": {"self": f"/sources/{r.slug}", "json": f"/api/v1/sources/{r.slug}"},
    }


def list_sources(conn: Connection) -> list[dict[str, Any]]:
    counts, refreshed = catalog.run_counts_by_source(conn), refresh.last_refreshed(conn)
    return [source_item(r, counts, refreshed) for r in catalog.list_sources(conn)]


def source_view(conn: Connection, slug: str) -> dict[str, Any] | None:
    row = catalog.source_by_slug(conn, slug)
    if row is None:
        return None
    counts = catalog.run_counts_by_source(conn, row.id)
    ops = catalog.operations_of_source(conn, row.id)
    return {
        **source_item(row, counts, refresh.last_refreshed(conn)),
        "operations": [
            {"slug": o.slug, "name": o.name, "runCount": o.n, "links": {"self": f"/operations/{o.slug}"}} for o in ops
        ],
    }
