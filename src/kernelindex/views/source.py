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
    runCount: int = Field(description="kernel benchmark runs")
    servingRunCount: int = Field(description="serving (end-to-end inference) runs, such as MLPerf's")
    policy: Document | None = Field(description="the source's policy as stated, plus `href` (its URL when http(s))")
    links: ItemLinks
    dataAsOf: str | None = Field(
        description="the newest time the source's own records state (published, else observed)"
    )
    lastRefreshedAt: str | None = Field(
        description="when this server last imported or synced it (local time of import)"
    )


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
    servingRunCount: int
    policy: Document | None = Field(description="the source's policy as stated, plus `href` (its URL when http(s))")
    links: ItemLinks
    operations: list[SourceOperation]
    dataAsOf: str | None
    lastRefreshedAt: str | None


def _item(r, facts: _Facts) -> SourceItem:
    policy = r.policy or {}
    counts, serving, as_of, refreshed = facts
    return SourceItem(
        slug=r.slug,
        name=r.name,
        kind=r.kind,
        runCount=counts.get(r.id, 0),
        servingRunCount=serving.get(r.id, 0),
        dataAsOf=as_of.get(r.id),
        lastRefreshedAt=refreshed.get(r.slug),
        policy={**policy, "href": safe_url(policy.get("url"))} if policy else None,
        links=ItemLinks(self=f"/sources/{r.slug}", json_=f"/api/v1/sources/{r.slug}"),
    )


_Facts = tuple[dict[str, int], dict[str, int], dict[str, str], dict[str, str]]


def _facts(conn: Connection, source_id: str | None = None) -> _Facts:
    return (
        catalog.run_counts_by_source(conn, source_id),
        catalog.serving_counts_by_source(conn),
        catalog.data_as_of(conn),
        refresh.last_refreshed(conn),
    )


def list_sources(conn: Connection) -> SourceListing:
    facts = _facts(conn)
    items = [_item(r, facts) for r in catalog.list_sources(conn)]
    return SourceListing(items=items, next=None, links=NextLink(next=None))


def source_view(conn: Connection, slug: str) -> Source | None:
    row = catalog.source_by_slug(conn, slug)
    if row is None:
        return None
    item = _item(row, _facts(conn, row.id))
    operations = [
        SourceOperation(slug=o.slug, name=o.name, runCount=o.n, links=SelfLink(self=f"/operations/{o.slug}"))
        for o in catalog.operations_of_source(conn, row.id)
    ]
    return Source(**dict(item), operations=operations)
