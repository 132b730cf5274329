"""JSON API under /api/v1/: the same reads as the pages, as JSON, with RFC 9457 errors and cursors."""

from __future__ import annotations

from fastapi import APIRouter, Query, Request

from kernelindex.search.models import SearchAnswer
from kernelindex.store.reads.lookup import resolve_operation, resolve_run, resolve_workload
from kernelindex.views import operation as operations
from kernelindex.views import origins, run_listing
from kernelindex.views import rank as rankings
from kernelindex.views import source as sources
from kernelindex.views import workload as workloads
from kernelindex.views.common import NextLink, today
from kernelindex.views.compare import Compare, compare_view
from kernelindex.views.run import Run, run_view
from kernelindex.views.search import search_view
from kernelindex.web.http.deps import (
    DEFAULT_LIMIT,
    Limit,
    RowLimit,
    base_url,
    compare_idents,
    connection,
    next_cursor,
    not_found,
    page_args,
    this_url,
)
from kernelindex.web.problems import check_known_params
from kernelindex.web.routes import search_help

router = APIRouter(prefix="/api/v1", tags=["api"])


def _next(request: Request, listing: str, after: int | None) -> tuple[str | None, str | None]:
    """The cursor of the page after ``after`` in ``listing``, and this URL carrying it (both None at the end)."""
    cursor = next_cursor(request, listing, after)
    return cursor, this_url(request, cursor=cursor) if cursor else None


@router.get("/runs", response_model=run_listing.RunListing, summary="Runs, in arrival order, optionally filtered")
def list_runs(
    request: Request,
    operation: str | None = Query(None, description="operation slug, name, alias or digest prefix"),
    workload: str | None = Query(None, description="workload id, name or digest prefix"),
    comparisonKey: str | None = None,
    status: str | None = None,
    source: str | None = Query(None, description="source slug"),
    hardware: str | None = Query(None, description="GPU model substring, architecture or vendor"),
    cursor: str | None = None,
    limit: Limit = DEFAULT_LIMIT,
) -> run_listing.RunListing:
    after, limit = page_args(request, "runs", set(run_listing.RUN_FILTERS), cursor, limit)
    filters = {
        k: v
        for k, v in {
            "operation": operation,
            "workload": workload,
            "comparisonKey": comparisonKey,
            "status": status,
            "source": source,
            "hardware": hardware,
        }.items()
        if v
    }
    with connection(request) as conn:
        items, last, total = run_listing.run_page(conn, after, limit, filters)
    cursor, url = _next(request, "runs", last)
    return run_listing.RunListing(items=items, total=total, next=cursor, links=NextLink(next=url))


@router.get(
    "/runs/{run_id}",
    response_model=Run,
    summary="One run: its rank, measurements, protocol, environment and manifest",
)
def get_run(request: Request, run_id: str) -> Run:
    check_known_params(request, set())
    with connection(request) as conn:
        return run_view(conn, resolve_run(conn, run_id), base_url(request), today())


@router.get("/workloads", response_model=workloads.WorkloadListing, summary="Workloads, optionally of one operation")
def list_workloads(
    request: Request,
    operation: str | None = Query(None, description="operation slug, name, alias or digest prefix"),
    cursor: str | None = None,
    limit: Limit = DEFAULT_LIMIT,
) -> workloads.WorkloadListing:
    after, limit = page_args(request, "workloads", {"operation"}, cursor, limit)
    with connection(request) as conn:
        items, last = workloads.list_workloads(conn, after, limit, operation)
    cursor, url = _next(request, "workloads", last)
    return workloads.WorkloadListing(next=cursor, links=NextLink(next=url), items=items)


@router.get(
    "/workloads/{workload_id}",
    response_model=workloads.Workload,
    summary="A workload's leaderboard: every comparison group, ranked",
)
def get_workload(request: Request, workload_id: str) -> workloads.Workload:
    check_known_params(request, set())
    with connection(request) as conn:
        row = resolve_workload(conn, workload_id)
        return workloads.workload_view(conn, row, request.app.state.origins, limit=None)


@router.get("/operations", response_model=operations.OperationListing, summary="Operations, optionally of one family")
def list_operations(
    request: Request, family: str | None = None, cursor: str | None = None, limit: Limit = DEFAULT_LIMIT
) -> operations.OperationListing:
    after, limit = page_args(request, "operations", {"family"}, cursor, limit)
    with connection(request) as conn:
        items, last = operations.list_operations(conn, after, limit, family)
    cursor, url = _next(request, "operations", last)
    return operations.OperationListing(next=cursor, links=NextLink(next=url), items=items)


@router.get(
    "/operations/{slug}",
    response_model=operations.Operation,
    summary="An operation: its workloads (one entry per case), the chosen "
    "workload's comparison groups, the chosen group ranked, the sweep and the semantics",
)
def get_operation(
    request: Request,
    slug: str,
    workload: str | None = Query(None, description="a workload id or digest of the operation"),
    group: str | None = Query(None, description="a comparison key of the chosen workload"),
) -> operations.Operation:
    check_known_params(request, {"workload", "group"})
    with connection(request) as conn:
        return operations.operation_view(
            conn, resolve_operation(conn, slug), request.app.state.origins, workload, group
        )


@router.get(
    "/rankings",
    response_model=rankings.RankedTarget,
    summary="The ranked groups a comparison key, workload, operation or run names",
)
def find_rankings(
    request: Request,
    target: str = Query(
        ...,
        max_length=200,
        description="a comparison key, or a workload, operation "
        "or run (id, digest or 8+ hex prefix, name, slug, alias)",
    ),
    limit: RowLimit = None,
) -> rankings.RankedTarget:
    """What ``kernelindex rank TARGET`` prints, from the same function."""
    check_known_params(request, {"target", "limit"})
    with connection(request) as conn:
        return rankings.RankedTarget(target=target, groups=rankings.rank_groups(conn, target, limit))


@router.get("/rankings/{comparison_key}", response_model=rankings.Ranking, summary="One comparison group, fully ranked")
def get_ranking(request: Request, comparison_key: str) -> rankings.Ranking:
    check_known_params(request, set())
    with connection(request) as conn:
        view = rankings.ranking_view(conn, comparison_key)
    if view is None:
        raise not_found("comparison group", comparison_key)
    return rankings.ranking_of(view)


@router.get(
    "/compare",
    response_model=Compare,
    summary="2 to 8 runs side by side: what differs, and ratios only inside one comparison group",
)
def compare(
    request: Request,
    run: list[str] = Query([], description="run id, digest or unique 8+ hex prefix; give 2 to 8 of them"),
    a: str | None = Query(None, description="first run (older form of run=)"),
    b: str | None = Query(None, description="second run (older form of run=)"),
) -> Compare:
    with connection(request) as conn:
        return compare_view(conn, compare_idents(request, a, b, run), base_url(request), today())


@router.get(
    "/search",
    response_model=SearchAnswer,
    summary="Answer a query: rank tables for the workload it pins, or the nearest measured cases",
    description=search_help.QUERY_HELP,
)
def search(
    request: Request,
    q: str = Query("", description="e.g. `009 moe backward N=2048 bf16 H200 verified`, `ac4k`, `149b7c1a`"),
) -> SearchAnswer:
    check_known_params(request, {"q"})
    with connection(request) as conn:
        return search_view(conn, q)


@router.get(
    "/origins",
    response_model=origins.OriginsView,
    summary="Where this index started: the seed runs and our own problem packs",
)
def get_origins(request: Request) -> origins.OriginsView:
    check_known_params(request, set())
    with connection(request) as conn:
        return origins.origins_view(conn, request.app.state.origins)


@router.get("/sources", response_model=sources.SourceListing, summary="Where the records came from")
def list_sources(request: Request) -> sources.SourceListing:
    check_known_params(request, set())
    with connection(request) as conn:
        return sources.list_sources(conn)


@router.get(
    "/sources/{slug}",
    response_model=sources.Source,
    summary="One source: its policy and the operations it has runs for",
)
def get_source(request: Request, slug: str) -> sources.Source:
    check_known_params(request, set())
    with connection(request) as conn:
        view = sources.source_view(conn, slug)
    if view is None:
        raise not_found("source", slug)
    return view
