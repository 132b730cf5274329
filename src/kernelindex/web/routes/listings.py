"""Index pages and listings: serving runs and configurations (``/serving``), projects, implementations,
the search page and the feed; each listing has a JSON twin under /api/v1/ built from the same view."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse

from kernelindex.search.query import MAX_QUERY_CHARS
from kernelindex.views import catalog_listing as catalog
from kernelindex.views import serving_listing as serving
from kernelindex.views.common import NextLink
from kernelindex.views.search import search_view
from kernelindex.web.http.deps import Limit, base_url, connection, next_cursor, page_args
from kernelindex.web.http.pagination import DEFAULT_LIMIT
from kernelindex.web.problems import Problem, check_known_params

pages = APIRouter(include_in_schema=False)
api = APIRouter(prefix="/api/v1", tags=["listings"])
Text = Annotated[str | None, Query(max_length=serving.MAX_FILTER)]


def _next(request: Request, listing: str, last: int | None) -> tuple[str | None, str | None]:
    cursor = next_cursor(request, listing, last)
    return cursor, str(request.url.include_query_params(cursor=cursor)) if cursor else None


def _render(request: Request, template: str, **context: Any) -> HTMLResponse:
    return request.app.state.templates.TemplateResponse(request, template, context)


# ---------------------------------------------------------------- serving


def _serving_runs(request: Request, filters: serving.ServingFilters, cursor, limit) -> serving.ServingRunListing:
    after, limit = page_args(request, "serving-runs", set(serving.SERVING_RUN_FILTERS), cursor, limit)
    with connection(request) as conn:
        items, last = serving.list_serving_runs(conn, after, limit, filters, base_url(request))
    cursor, url = _next(request, "serving-runs", last)
    return serving.ServingRunListing(items=items, next=cursor, links=NextLink(next=url))


@api.get("/serving-runs", response_model=serving.ServingRunListing, summary="Serving runs, in arrival order, filtered")
def list_serving_runs(
    request: Request,
    model: str | None = Query(None, max_length=200, description="model slug or name (or part of one)"),
    gpu: str | None = Query(None, max_length=200, description="part of the accelerator's name, e.g. H200"),
    scenario: str | None = Query(None, max_length=200, description="e.g. Server, Offline"),
    status: str | None = Query(None, max_length=200, description="valid, invalid or incomplete_evidence"),
    source: str | None = Query(None, max_length=200, description="source slug"),
    configuration: str | None = Query(None, max_length=200, description="a serving configuration's id"),
    cursor: str | None = None,
    limit: Limit = DEFAULT_LIMIT,
) -> serving.ServingRunListing:
    filters = serving.ServingFilters(
        model=model, gpu=gpu, scenario=scenario, status=status, source=source, configuration=configuration
    )
    return _serving_runs(request, filters, cursor, limit)


@api.get(
    "/serving-configurations",
    response_model=serving.ConfigurationListing,
    summary="Serving configurations with their stacks, and the models and GPUs their runs serve",
)
def list_serving_configurations(
    request: Request,
    stack: str | None = Query(None, max_length=200, description="part of the serving stack's name, e.g. vLLM"),
    model: str | None = Query(None, max_length=200, description="only configurations with runs of this model"),
    cursor: str | None = None,
    limit: Limit = DEFAULT_LIMIT,
) -> serving.ConfigurationListing:
    after, limit = page_args(request, "serving-configurations", set(serving.CONFIGURATION_FILTERS), cursor, limit)
    with connection(request) as conn:
        items, last = serving.list_configurations(conn, after, limit, serving.ServingFilters(stack=stack, model=model))
    cursor, url = _next(request, "serving-configurations", last)
    return serving.ConfigurationListing(items=items, next=cursor, links=NextLink(next=url))


@pages.get("/serving", response_class=HTMLResponse)
def serving_page(
    request: Request,
    model: Text = None,
    gpu: Text = None,
    scenario: Text = None,
    status: Text = None,
    source: Text = None,
    configuration: Text = None,
    cursor: str | None = None,
    limit: Limit = DEFAULT_LIMIT,
):
    filters = serving.ServingFilters(
        model=model or None,
        gpu=gpu or None,
        scenario=scenario or None,
        status=status or None,
        source=source or None,
        configuration=configuration or None,
    )
    listing = _serving_runs(request, filters, cursor, limit)
    asked = {k: v or "" for k, v in vars(filters).items() if k != "stack"}
    return _render(request, "serving.html", listing=listing.model_dump(), asked=asked)


# ---------------------------------------------------------------- projects and implementations


def _projects(request: Request, name, cursor, limit) -> catalog.ProjectListing:
    after, limit = page_args(request, "projects", {"name"}, cursor, limit)
    with connection(request) as conn:
        items, last = catalog.list_projects(conn, after, limit, name or None)
    cursor, url = _next(request, "projects", last)
    return catalog.ProjectListing(items=items, next=cursor, links=NextLink(next=url))


def _implementations(request: Request, operation, project, cursor, limit) -> catalog.ImplementationListing:
    after, limit = page_args(request, "implementations", {"operation", "project"}, cursor, limit)
    with connection(request) as conn:
        items, last = catalog.list_implementations(conn, after, limit, operation or None, project or None)
    cursor, url = _next(request, "implementations", last)
    return catalog.ImplementationListing(items=items, next=cursor, links=NextLink(next=url))


@api.get("/projects", response_model=catalog.ProjectListing, summary="Projects, with their implementations and runs")
def list_projects(
    request: Request,
    name: str | None = Query(None, max_length=200, description="part of a project's slug or name"),
    cursor: str | None = None,
    limit: Limit = DEFAULT_LIMIT,
) -> catalog.ProjectListing:
    return _projects(request, name, cursor, limit)


@api.get(
    "/implementations",
    response_model=catalog.ImplementationListing,
    summary="Implementations, optionally of one operation or project",
)
def list_implementations(
    request: Request,
    operation: str | None = Query(None, max_length=200, description="operation slug, name or alias"),
    project: str | None = Query(None, max_length=200, description="project slug"),
    cursor: str | None = None,
    limit: Limit = DEFAULT_LIMIT,
) -> catalog.ImplementationListing:
    return _implementations(request, operation, project, cursor, limit)


@pages.get("/projects", response_class=HTMLResponse)
def projects_page(request: Request, name: Text = None, cursor: str | None = None, limit: Limit = DEFAULT_LIMIT):
    listing = _projects(request, name, cursor, limit)
    return _render(request, "projects.html", listing=listing.model_dump(), name=name or "")


@pages.get("/implementations", response_class=HTMLResponse)
def implementations_page(
    request: Request,
    operation: Text = None,
    project: Text = None,
    cursor: str | None = None,
    limit: Limit = DEFAULT_LIMIT,
):
    listing = _implementations(request, operation, project, cursor, limit)
    asked = {"operation": operation or "", "project": project or ""}
    return _render(request, "implementations.html", listing=listing.model_dump(by_alias=True), asked=asked)


# ---------------------------------------------------------------- search and feed


@pages.get("/search", response_class=HTMLResponse)
def search_page(request: Request, q: str = ""):
    """The search page: the form with examples, or (given ``q``) the same answer as ``/?q=``."""
    check_known_params(request, {"q"})
    if len(q) > MAX_QUERY_CHARS:
        raise Problem(400, "bad-query", f"q is longer than {MAX_QUERY_CHARS} characters", parameter="q")
    if not q.strip():
        return _render(request, "search_index.html", q="")
    with connection(request) as conn:
        answer = search_view(conn, q)
    return _render(request, "search.html", q=q, answer=answer.document())


@pages.get("/feed")
def feed(request: Request):
    """The site's feed is the records ledger's Atom feed (its filters pass through)."""
    check_known_params(request, {"operation", "gpu", "source", "kind"})
    query = f"?{request.url.query}" if request.url.query else ""
    return RedirectResponse(f"/records/feed.xml{query}", status_code=308)
