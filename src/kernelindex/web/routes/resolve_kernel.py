"""The kernel resolver over HTTP: ``POST /api/v1/resolve/kernel`` (one query) and
``POST /api/v1/resolve/kernel/batch`` (at most 20), answered by :mod:`kernelindex.views.kernel_resolve`."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from pydantic import BaseModel, ValidationError
from starlette.concurrency import run_in_threadpool

from kernelindex.views import kernel_resolve as views
from kernelindex.web.http.deps import base_url, connection
from kernelindex.web.http.input_guards import check_json_depth, json_object
from kernelindex.web.problems import Problem, check_known_params
from kernelindex.web.routes.evidence import read_limited

router = APIRouter(prefix="/api/v1/resolve", tags=["resolve"])
MAX_BODY = 64 * 1024


def _body_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The request body in the OpenAPI document, from the model that reads it."""
    schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
    return {"requestBody": {"required": True, "content": {"application/json": {"schema": schema}}}}


async def _read(request: Request, model: type[BaseModel]) -> Any:
    check_known_params(request, set())
    body = await read_limited(request, MAX_BODY)
    check_json_depth(body)
    data = json_object(body)
    if model is views.KernelBatch and isinstance(data.get("queries"), list) and len(data["queries"]) > views.MAX_BATCH:
        raise Problem(
            400,
            "batch-too-large",
            f"queries: {len(data['queries'])} given, at most {views.MAX_BATCH} are resolved in one batch",
            field="queries",
            limit=views.MAX_BATCH,
        )
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        errors = [
            {"where": ".".join(str(p) for p in e["loc"]) or "body", "reason": e["msg"]}
            for e in exc.errors(include_url=False)
        ]
        raise Problem(
            400, "invalid-body", "; ".join(f"{e['where']}: {e['reason']}" for e in errors), errors=errors
        ) from None


def _answer(request: Request, build, ask) -> Any:
    with connection(request) as conn:
        return build(conn, ask, base_url(request))


@router.post(
    "/kernel",
    response_model=views.KernelResolution,
    summary="The fastest correct implementation of an operation at a shape, dtype and GPU, or the nearest cases",
    openapi_extra=_body_schema(views.KernelQuery),
)
async def resolve_kernel(request: Request) -> views.KernelResolution:
    ask = await _read(request, views.KernelQuery)
    return await run_in_threadpool(_answer, request, views.resolve_kernel, ask)


@router.post(
    "/kernel/batch",
    response_model=views.KernelBatchAnswer,
    summary=f"Up to {views.MAX_BATCH} kernel queries at once; each answered or refused on its own",
    openapi_extra=_body_schema(views.KernelBatch),
)
async def resolve_kernels(request: Request) -> views.KernelBatchAnswer:
    batch = await _read(request, views.KernelBatch)
    return await run_in_threadpool(_answer, request, views.resolve_kernels, batch)
