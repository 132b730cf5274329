"""The index pages of projects and implementations (``/projects``, ``/implementations``,
``GET /api/v1/projects`` and ``GET /api/v1/implementations``), keyset-paged in arrival order."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import Field

from kernelindex.records.refusal import RefusalKind, ViewRefusal
from kernelindex.store.reads import catalog_listing as reads
from kernelindex.store.reads import entities
from kernelindex.store.reads.lookup import check_filter, resolve_operation
from kernelindex.views.common import ItemLinks, NextLink, ViewModel

if TYPE_CHECKING:
    from sqlalchemy import Connection

MAX_FILTER = 200


class ListedProject(ViewModel):
    id: str
    slug: str
    name: str | None
    implementations: int
    runs: int
    links: ItemLinks


class ProjectListing(ViewModel):
    items: list[ListedProject]
    next: str | None = Field(description="opaque cursor of the next page (expires), or null")
    links: NextLink


class NamedLink(ViewModel):
    slug: str
    name: str | None
    href: str


class ListedImplementation(ViewModel):
    id: str
    slug: str | None
    title: str | None
    language: str | None
    digest: str
    project: NamedLink | None
    operation: NamedLink | None
    runs: int
    links: ItemLinks


class ImplementationListing(ViewModel):
    items: list[ListedImplementation]
    next: str | None = Field(description="opaque cursor of the next page (expires), or null")
    links: NextLink


def _bounded(name: str, value: str | None) -> None:
    if value is not None and len(value) > MAX_FILTER:
        raise ViewRefusal(
            RefusalKind.BAD_REQUEST, "bad-parameter", f"{name} is longer than {MAX_FILTER} characters", parameter=name
        )


def list_projects(
    conn: Connection, after: int | None, limit: int, name: str | None = None
) -> tuple[list[ListedProject], int | None]:
    _bounded("name", name)
    rows, last = reads.projects_page(conn, after, limit, name)
    return [
        ListedProject(
            id=r["id"],
            slug=r["slug"],
            name=r["name"],
            implementations=r["implementations"],
            runs=r["runs"],
            links=ItemLinks(self=f"/projects/{r['slug']}", json_=f"/api/v1/projects/{r['slug']}"),
        )
        for r in rows
    ], last


def list_implementations(
    conn: Connection, after: int | None, limit: int, operation: str | None = None, project: str | None = None
) -> tuple[list[ListedImplementation], int | None]:
    """A page of implementations; each links by id, which the resolver always answers uniquely."""
    _bounded("operation", operation)
    _bounded("project", project)
    for name, value in (("operation", operation), ("project", project)):
        if value:
            check_filter(conn, name, value)
    op_id = resolve_operation(conn, operation).id if operation else None
    project_row = entities.project_by_slug(conn, project) if project else None
    rows, last = reads.implementations_page(conn, after, limit, op_id, project_row.id if project_row else None)
    return [
        ListedImplementation(
            id=r["id"],
            slug=r["slug"],
            title=r["title"],
            language=r["language"],
            digest=r["implementation_digest"],
            project=NamedLink(slug=r["project_slug"], name=r["project_name"], href=f"/projects/{r['project_slug']}")
            if r["project_slug"]
            else None,
            operation=NamedLink(
                slug=r["operation_slug"], name=r["operation_name"], href=f"/operations/{r['operation_slug']}"
            )
            if r["operation_slug"]
            else None,
            runs=r["runs"],
            links=ItemLinks(self=f"/implementations/{r['id']}", json_=f"/api/v1/implementations/{r['id']}"),
        )
        for r in rows
    ], last
