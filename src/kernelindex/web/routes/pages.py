"""Server-rendered pages: the index and search, runs, workload leaderboards, rankings, compare,
operations and sources. Each page has a JSON twin under /api/v1/ built from the same view model."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, PlainTextResponse
from markupsafe import Markup

from kernelindex.search.query import MAX_QUERY_CHARS
from kernelindex.store.reads.lookup import resolve_operation, resolve_run, resolve_workload
from kernelindex.views import operation as operations
from kernelindex.views import origins, run_listing
from kernelindex.views import rank as rankings
from kernelindex.views import source as sources
from kernelindex.views import workload as workloads
from kernelindex.views.common import today
from kernelindex.views.compare import compare_view
from kernelindex.views.formatting import format_value
from kernelindex.views.run import run_view
from kernelindex.views.search import search_view
from kernelindex.web.http.deps import (
    DEFAULT_LIMIT,
    Limit,
    base_url,
    compare_idents,
    connection,
    next_cursor,
    not_found,
    page_args,
    this_url,
)
from kernelindex.web.problems import Problem, check_known_params
from kernelindex.web.svg.group_plot import Point, group_svg
from kernelindex.web.svg.sweep import sweep_markup

router = APIRouter(include_in_schema=False)
PICKER_RUNS = 30  # the /compare picker offers the latest runs; any run can be typed by id or digest


def render(request: Request, template: str, **context: Any) -> HTMLResponse:
    return request.app.state.templates.TemplateResponse(request, template, context)


PLOT_POINTS = 100


def with_plot(group: dict[str, Any]) -> dict[str, Any]:
    """Add the group's SVG (made here, from the same rows the table shows; the best 100 at most)."""
    unit = group["unit"]
    points = [
        Point(
            label=row["title"],
            value=row["value"],
            low=(row["interval"] or {}).get("low"),
            high=(row["interval"] or {}).get("high"),
            rank=row["rank"],
        )
        for row in group["rows"][:PLOT_POINTS]
        if row["value"] is not None
    ]
    shown = f"the best {len(points)} of {group['size']}" if len(points) < group["size"] else f"{len(points)}"
    caption = f"{group['metricKey']} of {shown} ranked runs; {group['direction']}"
    group["svg"] = Markup(group_svg(points, lambda v: format_value(v, unit), caption))
    return group


@router.get("/", response_class=HTMLResponse)
def index(request: Request, q: str = "", cursor: str | None = None, limit: Limit = DEFAULT_LIMIT):
    if len(q) > MAX_QUERY_CHARS:  # checked here too: a blank q is not searched, yet must not be long
        raise Problem(400, "bad-query", f"q is longer than {MAX_QUERY_CHARS} characters", parameter="q")
    if q.strip():  # a search: one answer, from the same code as /api/v1/search and `kernelindex search`
        check_known_params(request, {"q"})
        with connection(request) as conn:
            answer = search_view(conn, q)
        return render(request, "search.html", q=q, answer=answer.document())
    after, limit = page_args(request, "operations-a-z", set(), cursor, limit)
    with connection(request) as conn:
        items, last = operations.operations_a_to_z(conn, after or 0, limit)
        ops = [o.model_dump() for o in items]
        source_items = sources.list_sources(conn).model_dump()["items"]
        first_page = after is None
        latest = [r.model_dump() for r in run_listing.latest_runs(conn)] if first_page else []
        started = origins.origins_view(conn, request.app.state.origins).model_dump() if first_page else None
    seeds, packs = (started["seeds"], started["packs"]) if started else ([], [])
    cursor_next = next_cursor(request, "operations-a-z", last)
    next_url = this_url(request, cursor=cursor_next) if cursor_next else None
    return render(
        request,
        "index.html",
        q="",
        operations=ops,
        sources=source_items,
        latest=latest,
        next_url=next_url,
        first_page=first_page,
        seeds=seeds,
        packs=packs,
    )


@router.get("/runs", response_class=HTMLResponse)
def runs_page(request: Request, cursor: str | None = None, limit: Limit = DEFAULT_LIMIT):
    after, limit = page_args(request, "runs", set(), cursor, limit)
    with connection(request) as conn:
        items, last = run_listing.list_runs(conn, after, limit, {})
    cursor_next = next_cursor(request, "runs", last)
    next_url = this_url(request, cursor=cursor_next) if cursor_next else None
    return render(request, "runs.html", runs=[r.model_dump() for r in items], next_url=next_url)


@router.get("/runs/{run_id}", response_class=HTMLResponse)
def run_page(request: Request, run_id: str):
    check_known_params(request, set())
    with connection(request) as conn:
        run = run_view(conn, resolve_run(conn, run_id), base_url(request), today())
    return render(request, "run.html", run=run.model_dump())


@router.get("/workloads/{workload_id}", response_class=HTMLResponse)
def workload_page(request: Request, workload_id: str):
    check_known_params(request, set())
    with connection(request) as conn:
        row = resolve_workload(conn, workload_id)
        view = workloads.workload_view(conn, row, request.app.state.origins).model_dump()
    for group in view["groups"] + view["otherEvidence"] + [g for p in view["ourPacks"] for g in p["groups"]]:
        with_plot(group)
    return render(request, "workload.html", workload=view)


@router.get("/rankings/{comparison_key}", response_class=HTMLResponse)
def ranking_page(request: Request, comparison_key: str):
    check_known_params(request, set())
    with connection(request) as conn:
        view = rankings.ranking_view(conn, comparison_key)
    if view is None:
        raise not_found("comparison group", comparison_key)
    return render(request, "ranking.html", group=with_plot(view.model_dump()))


@router.get("/compare", response_class=HTMLResponse)
def compare_page(request: Request, a: str | None = None, b: str | None = None, run: list[str] = Query([])):
    if not (a or b or run):  # nothing chosen yet: a picker of the latest runs, not a refusal
        check_known_params(request, {"a", "b", "run"})
        with connection(request) as conn:
            latest = [r.model_dump() for r in run_listing.latest_runs(conn, PICKER_RUNS)]
        return render(request, "compare_pick.html", runs=latest)
    with connection(request) as conn:
        view = compare_view(conn, compare_idents(request, a, b, run), base_url(request), today())
    return render(request, "compare.html", cmp=view.model_dump())


@router.get("/compare.md", response_class=PlainTextResponse)
def compare_markdown(request: Request, a: str | None = None, b: str | None = None, run: list[str] = Query([])):
    with connection(request) as conn:
        view = compare_view(conn, compare_idents(request, a, b, run), base_url(request), today())
    return PlainTextResponse(view.markdown, media_type="text/markdown; charset=utf-8")


@router.get("/operations/{slug}", response_class=HTMLResponse)
def operation_page(request: Request, slug: str, workload: str | None = None, group: str | None = None):
    check_known_params(request, {"workload", "group"})
    with connection(request) as conn:
        op = operations.operation_view(conn, resolve_operation(conn, slug), request.app.state.origins, workload, group)
    view = op.model_dump()
    if op.sweep:
        view["sweep"]["svg"] = sweep_markup(op.sweep)
    if view["group"]:
        with_plot(view["group"])
    return render(request, "operation.html", op=view)


@router.get("/sources/{slug}", response_class=HTMLResponse)
def source_page(request: Request, slug: str):
    check_known_params(request, set())
    with connection(request) as conn:
        view = sources.source_view(conn, slug)
    if view is None:
        raise not_found("source", slug)
    return render(request, "source.html", source=view.model_dump())
