"""Entity pages (implementations, projects, GPUs), the records ledger, its Atom feed and badges;
each page has a JSON twin under /api/v1/ built from the same view model."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response

from kernelindex.store.reads import entities
from kernelindex.store.reads.ledger import hardware_models
from kernelindex.store.reads.lookup import LookupFailed, resolve_implementation
from kernelindex.views import changes
from kernelindex.views import gpu as gpu_views
from kernelindex.views import implementation as implementation_views
from kernelindex.views import ledger as ledger_view
from kernelindex.views import project as project_views
from kernelindex.web.atom import atom_feed
from kernelindex.web.http.deps import (
    DEFAULT_LIMIT,
    Limit,
    base_url,
    connection,
    next_cursor,
    not_found,
    page_args,
    this_url,
)
from kernelindex.web.problems import check_known_params
from kernelindex.web.svg import badges

pages = APIRouter(include_in_schema=False)
api = APIRouter(prefix="/api/v1", tags=["entities"])
FEED_ENTRIES = 50
LEDGER_PARAMS = {"since", "operation", "gpu", "source", "kind"}
BADGE_PREFIX = "/badges/implementations/"
BADGE_CACHE = "max-age=300"


def render(request: Request, template: str, **context: Any) -> HTMLResponse:
    return request.app.state.templates.TemplateResponse(request, template, context)


# ---------------------------------------------------------------- views shared by page and API


class Chooser(Exception):
    """A shared slug was asked for: answer 300 Multiple Choices with the candidates."""

    def __init__(self, choices: implementation_views.ImplementationChoices) -> None:
        self.choices = choices


def _implementation(request: Request, slug: str) -> implementation_views.Implementation:
    check_known_params(request, set())
    with connection(request) as conn:
        try:
            row = resolve_implementation(conn, slug)
        except LookupFailed as exc:
            choices = implementation_views.implementation_choices(conn, slug.strip()) if exc.spelled == "slug" else None
            if choices is None:
                raise
            raise Chooser(choices) from None
        return implementation_views.implementation_view(conn, row)


def answer_chooser(request: Request, exc: Exception) -> Response:
    """300 with the candidates: a page on the site, the same model as JSON under /api/, and under
    /badges/ an image (an embedded badge shows it) whose ``Link`` header names each candidate's badge."""
    assert isinstance(exc, Chooser)
    if request.url.path.startswith(BADGE_PREFIX):
        candidates = exc.choices.candidates
        links = ", ".join(f'<{BADGE_PREFIX}{c.slug}.svg>; rel="alternate"' for c in candidates)
        return Response(
            badges.chooser_badge(len(candidates)),
            status_code=300,
            media_type="image/svg+xml",
            headers={"Link": links, "Cache-Control": BADGE_CACHE},
        )
    if request.url.path.startswith("/api/"):
        return JSONResponse(exc.choices.model_dump(mode="json", by_alias=True), status_code=300)
    return request.app.state.templates.TemplateResponse(
        request, "implementation_choices.html", {"choices": exc.choices.model_dump(by_alias=True)}, status_code=300
    )


def _project(request: Request, slug: str) -> project_views.Project:
    check_known_params(request, set())
    with connection(request) as conn:
        row = entities.project_by_slug(conn, slug)
        if row is None:
            raise not_found("project", slug)
        return project_views.project_view(conn, row)


def _gpu(request: Request, slug: str) -> gpu_views.Gpu:
    check_known_params(request, set())
    with connection(request) as conn:
        view = gpu_views.gpu_view(conn, slug)
    if view is None:
        raise not_found("GPU", slug)
    return view


def _gpus(request: Request) -> gpu_views.GpuIndex:
    check_known_params(request, set())
    with connection(request) as conn:
        return gpu_views.gpus_view(conn)


def _ledger(request: Request, since, operation, gpu, source, kind, cursor, limit) -> ledger_view.LedgerPage:
    listing = "records:" + "|".join(v or "" for v in (since, operation, gpu, source, kind))
    offset, limit = page_args(request, listing, LEDGER_PARAMS, cursor, limit)
    offset = offset or 0
    with connection(request) as conn:
        f, since_at = changes.ledger_filter(conn, since=since, operation=operation, gpu=gpu, source=source, kind=kind)
        rows, more = ledger_view.merged(conn, f, since_at, kind, offset, limit)
        items = ledger_view.entries(conn, rows, base_url(request))
    nxt = next_cursor(request, listing, offset + limit if more else None)
    return ledger_view.LedgerPage(
        items=items,
        since=changes.since_text(since),
        next=nxt,
        links=ledger_view.PageLinks(
            next=this_url(request, cursor=nxt) if nxt else None,
            feed="/records/feed.xml",
            page="/records",
        ),
    )


# ---------------------------------------------------------------- pages


@pages.get("/implementations/{slug}", response_class=HTMLResponse)
def implementation_page(request: Request, slug: str):
    return render(request, "implementation.html", impl=_implementation(request, slug).model_dump())


@pages.get("/projects/{slug}", response_class=HTMLResponse)
def project_page(request: Request, slug: str):
    return render(request, "project.html", project=_project(request, slug).model_dump())


@pages.get("/gpus", response_class=HTMLResponse)
def gpus_page(request: Request):
    return render(request, "gpus.html", view=_gpus(request).model_dump())


@pages.get("/gpus/{slug}", response_class=HTMLResponse)
def gpu_page(request: Request, slug: str):
    return render(request, "gpu.html", gpu=_gpu(request, slug).model_dump())


@pages.get("/records", response_class=HTMLResponse)
def ledger_page(
    request: Request,
    since: str | None = None,
    operation: str | None = None,
    gpu: str | None = None,
    source: str | None = None,
    kind: str | None = None,
    cursor: str | None = None,
    limit: Limit = DEFAULT_LIMIT,
):
    view = _ledger(request, since, operation, gpu, source, kind, cursor, limit)
    with connection(request) as conn:
        gpus = sorted({entities.gpu_slug(m) for m in hardware_models(conn)})
    filters = {
        "since": since or "",
        "operation": operation or "",
        "gpu": gpu or "",
        "source": source or "",
        "kind": kind or "",
    }
    return render(
        request, "records.html", ledger=view.model_dump(), filters=filters, gpus=gpus, kinds=ledger_view.KIND_TITLES
    )


@pages.get("/records/feed.xml")
def ledger_feed(
    request: Request,
    operation: str | None = None,
    gpu: str | None = None,
    source: str | None = None,
    kind: str | None = None,
):
    check_known_params(request, {"operation", "gpu", "source", "kind"})
    with connection(request) as conn:
        f, _ = changes.ledger_filter(conn, operation=operation, gpu=gpu, source=source, kind=kind)
        rows, _ = ledger_view.merged(conn, f, None, kind, 0, FEED_ENTRIES)
        items = ledger_view.entries(conn, rows, base_url(request))
    updated = items[0].at if items else datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    path = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    body = atom_feed(items, base_url(request), path, updated)
    return Response(body, media_type="application/atom+xml; charset=utf-8")


@pages.get(BADGE_PREFIX + "{slug}.svg")
def implementation_badge(request: Request, slug: str):
    view = _implementation(request, slug)
    svg = badges.implementation_badge(view.bestRank, view.bestEvidence)
    return Response(svg, media_type="image/svg+xml", headers={"Cache-Control": BADGE_CACHE})


# ---------------------------------------------------------------- JSON twins


@api.get(
    "/implementations/{slug}",
    response_model=implementation_views.Implementation,
    summary="An implementation: install, licence, source, deployability, best run per GPU, evidence levels",
)
def get_implementation(request: Request, slug: str) -> implementation_views.Implementation:
    return _implementation(request, slug)


@api.get(
    "/projects/{slug}",
    response_model=project_views.Project,
    summary="A project: its implementations, the records it holds, and leads gained or lost in 30 days",
)
def get_project(request: Request, slug: str) -> project_views.Project:
    return _project(request, slug)


@api.get(
    "/gpus",
    response_model=gpu_views.GpuIndex,
    summary="GPU products and architectures, and the operations x GPUs coverage grid",
)
def list_gpus(request: Request) -> gpu_views.GpuIndex:
    return _gpus(request)


@api.get("/gpus/{slug}", response_model=gpu_views.Gpu, summary="One GPU product: its best run in each group")
def get_gpu(request: Request, slug: str) -> gpu_views.Gpu:
    return _gpu(request, slug)


@api.get(
    "/records",
    response_model=ledger_view.LedgerPage,
    summary="The records ledger: new runs, new leaders, corrections, retractions, newest first",
)
def get_records(
    request: Request,
    since: str | None = Query(None, description="ISO 8601 date or date-time with a zone; inclusive"),
    operation: str | None = Query(None, description="operation slug"),
    gpu: str | None = Query(None, description="GPU slug, e.g. nvidia-h200"),
    source: str | None = Query(None, description="source slug"),
    kind: str | None = Query(None, description="one of: " + ", ".join(ledger_view.KINDS)),
    cursor: str | None = None,
    limit: Limit = DEFAULT_LIMIT,
) -> ledger_view.LedgerPage:
    """Entries at or after ``since`` (inclusive; drop repeats by ``id``), newest first, paged by ``next``."""
    return _ledger(request, since, operation, gpu, source, kind, cursor, limit)
