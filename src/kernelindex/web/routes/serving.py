"""Serving pages and their JSON twins: serving runs, models, and the serving resolver.

``/serving/resolve?model=&gpu=`` answers "which stack and configuration serves this model best on
this GPU" with the throughput-per-GPU vs latency frontier; ``/api/v1/resolve/serving`` is the same
answer as JSON, ``/serving/resolve.svg`` its plot.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from kernelindex.store.reads import serving as reads
from kernelindex.store.reads.lookup import resolve_model, resolve_serving_run
from kernelindex.views import serving as views
from kernelindex.views.serving_resolve import resolve_serving
from kernelindex.web.http.deps import base_url, connection
from kernelindex.web.problems import Problem, check_known_params
from kernelindex.web.svg.serving_frontier import frontier_svg

router = APIRouter()
MAX_TEXT = 200  # a model or GPU name longer than this names nothing
RESOLVE_PARAMS = {"model", "gpu", "input_len", "output_len"}  # the resolver's, on the page before it is asked too


def _text(name: str, value: str | None) -> str:
    if value is None or not value.strip():
        raise Problem(400, "missing-parameter", f"{name} is required", parameter=name)
    if len(value) > MAX_TEXT:
        raise Problem(400, "bad-parameter", f"{name} is longer than {MAX_TEXT} characters", parameter=name)
    return value.strip()


def _length(name: str, value: str | None) -> int | None:
    if value is None or value == "":
        return None
    try:
        number = int(value)
    except ValueError:
        raise Problem(
            400, "bad-parameter", f"{name} must be a positive integer, not {value[:40]!r}", parameter=name
        ) from None
    if not 0 < number <= 10_000_000:
        raise Problem(
            400, "bad-parameter", f"{name} must be a positive integer (1 to 10,000,000), got {number}", parameter=name
        )
    return number


def _run_view(conn, request: Request, ident: str) -> views.ServingRun:
    run = reads.serving_run_detail(conn, resolve_serving_run(conn, _text("id", ident)).id)
    return views.serving_run_view(conn, run, base_url(request))


def _resolve(request: Request) -> views.Resolved:
    check_known_params(request, RESOLVE_PARAMS)
    params = request.query_params
    ident, gpu = _text("model", params.get("model")), _text("gpu", params.get("gpu"))
    input_len, output_len = (
        _length("input_len", params.get("input_len")),
        _length("output_len", params.get("output_len")),
    )
    with connection(request) as conn:
        return resolve_serving(conn, ident, gpu, input_len, output_len, base_url(request))


@router.get(
    "/api/v1/resolve/serving",
    tags=["serving"],
    response_model=views.Resolved,
    summary="Which stack and configuration serve a model best on a GPU: the Pareto frontier",
)
def api_resolve(request: Request) -> views.Resolved:
    return _resolve(request)


@router.get("/serving/resolve.svg", include_in_schema=False)
def resolve_svg(request: Request) -> Response:
    answer = _resolve(request).model_dump()
    svg = frontier_svg(answer["candidates"], f"{answer['model']['name']} on {answer['gpu']}")
    return Response(svg, media_type="image/svg+xml")


@router.get("/serving/resolve", response_class=HTMLResponse, include_in_schema=False)
def resolve_page(request: Request):
    check_known_params(request, RESOLVE_PARAMS)
    params = request.query_params
    with connection(request) as conn:
        models = views.list_models(conn).model_dump()["items"]
    context: dict[str, Any] = {"models": models, "asked": dict(params), "answer": None, "svg": ""}
    if params.get("model") or params.get("gpu"):
        context["answer"] = answer = _resolve(request).model_dump()
        context["svg"] = frontier_svg(answer["candidates"], f"{answer['model']['name']} on {answer['gpu']}")
    return request.app.state.templates.TemplateResponse(request, "serving_resolve.html", context)


@router.get(
    "/api/v1/serving-runs/{run_id}",
    tags=["serving"],
    response_model=views.ServingRun,
    summary="One serving run: rank in its cohort, measurements, SLO percentiles, identity, manifest",
)
def api_serving_run(request: Request, run_id: str) -> views.ServingRun:
    check_known_params(request, set())
    with connection(request) as conn:
        return _run_view(conn, request, run_id)


@router.get("/serving-runs/{run_id}", response_class=HTMLResponse, include_in_schema=False)
def serving_run_page(request: Request, run_id: str):
    check_known_params(request, set())
    with connection(request) as conn:
        view = _run_view(conn, request, run_id)
    return request.app.state.templates.TemplateResponse(request, "serving_run.html", {"run": view.model_dump()})


@router.get(
    "/api/v1/models", tags=["serving"], response_model=views.ModelListing, summary="Models with serving results"
)
def api_models(request: Request) -> views.ModelListing:
    check_known_params(request, set())
    with connection(request) as conn:
        return views.list_models(conn)


@router.get(
    "/api/v1/models/{ident}",
    tags=["serving"],
    response_model=views.ModelView,
    summary="A model: best known serving result per GPU, and its links",
)
def api_model(request: Request, ident: str) -> views.ModelView:
    check_known_params(request, set())
    with connection(request) as conn:
        return views.model_view(conn, dict(resolve_model(conn, _text("model", ident))._mapping), base_url(request))


@router.get("/models", response_class=HTMLResponse, include_in_schema=False)
def models_page(request: Request):
    check_known_params(request, set())
    with connection(request) as conn:
        models = views.list_models(conn).model_dump()["items"]
    return request.app.state.templates.TemplateResponse(request, "models.html", {"models": models})


@router.get("/models/{ident}", response_class=HTMLResponse, include_in_schema=False)
def model_page(request: Request, ident: str):
    check_known_params(request, set())
    with connection(request) as conn:
        view = views.model_view(conn, dict(resolve_model(conn, _text("model", ident))._mapping), base_url(request))
    return request.app.state.templates.TemplateResponse(request, "model.html", {"model": view.model_dump()})
