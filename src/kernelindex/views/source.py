"""Sources: where records came from, their policies and the operations they have runs for."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import Field

from kernelindex.store.reads import catalog, refresh
from kernelindex.views.common import Document, ItemLinks, NextLink, SelfLink, ViewModel
from kernelindex.views.formatting import safe_url

if TYPE_CHECKING:
    from sqlalchemy import Connection


class SourceItem(ViewModel):
    slug: str
    name: str
    kind: str
    runCount: int
    policy: Document | None = Field(description="the source's policy as stated, plus `href` (its URL when http(s))")
    links: ItemLinks
    lastRefreshedAt: str | None


class SourceListing(ViewModel):
    next: None = Field(description="always null: every source is on the one page")
    links: NextLink
    items: list[SourceItem]


class SourceOperation(ViewModel):
    slug: str
    name: str | None
    runCount: int
    links: SelfLink


class Source(ViewModel):
    slug: str
    name: str
    kind: str
    runCount: int
    policy: Document | None = Field(description="the source's policy as stated, plus `href` (its URL when http(s))")
    links: ItemLinks
    operations: list[SourceOperation]
    lastRefreshedAt: str | None


def _item(r, counts: dict[str, int], refreshed: dict[str, str]) -> SourceItem:
    policy = r.policy or {}
    return SourceItem(
        slug=r.slug,
        name=r.name,
        kind=r.kind,
        runCount=counts.get(r.id, 0),
        lastRefreshedAt=refreshed.get(r.slug),
        policy={**policy, "href": safe_url(policy.get("url"))} if policy else None,
        links=ItemLinks(self=f"/sources/{r.slug}", json_=f"/api/v1/sources/{r.slug}"),
    )


def list_sources(conn: Connection) -> SourceListing:
    counts, refreshed = catalog.run_counts_by_source(conn), refresh.last_refreshed(conn)
    items = [_item(r, counts, refreshed) for r in catalog.list_sources(conn)]
    return SourceListing(items=items, next=None, links=NextLink(next=None))


def source_view(conn: Connection, slug: str) -> Source | None:
    row = catalog.source_by_slug(conn, slug)
    if row is None:
        return None
    item = _item(row, catalog.run_counts_by_source(conn, row.id), refresh.last_refreshed(conn))
    operations = [
        SourceOperation(slug=o.slug, name=o.name, runCount=o.n, links=SelfLink(self=f"/operations/{o.slug}"))
        for o in catalog.operations_of_source(conn, row.id)
    ]
    return Source(**dict(item), operations=operations)
