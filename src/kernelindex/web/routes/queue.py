"""The rerun queue over HTTP: submitting requests (API key with the ``submit`` scope, or the
"Submit a kernel for verification" form), the queue pages and listing, and the runner protocol.

Runners authenticate by signing every request with their registered Ed25519 key (no API key,
no database credentials). They lease one job, heartbeat while it runs, and post the signed
records back; the use cases in :mod:`kernelindex.services.queue` decide what is accepted.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.concurrency import run_in_threadpool

from kernelindex.records.strict_json import loads_strict
from kernelindex.records.vocabulary import RequestState
from kernelindex.services import queue as service
from kernelindex.services.queue import QueueError, Submission
from kernelindex.store.evidence.records import EvidenceError, authenticate
from kernelindex.store.reads import queue as reads
from kernelindex.store.reads.lookup import resolve_run
from kernelindex.views.queue import QueuePage, RerunRequestDetail, request_detail, request_summary, run_panel
from kernelindex.web.http.bodies import RerunQueued, RerunRequestBody, fields_of, request_body
from kernelindex.web.http.deps import Limit, Position, connection, not_found
from kernelindex.web.http.input_guards import check_json_depth, check_visible_text, json_object
from kernelindex.web.problems import Problem, check_known_params
from kernelindex.web.routes.evidence import _problem as evidence_problem
from kernelindex.web.routes.evidence import bearer, read_form, read_limited, require_key

MAX_SUBMIT_BYTES = 512 * 1024
MAX_RESULT_BYTES = 16 * 1024 * 1024
LEASE_ENV = "KERNELINDEX_LEASE_SECONDS"
STATES = tuple(RequestState)
STATUS = {
    "bad_request": 400,
    "bad_solution": 422,
    "bad_problem": 422,
    "unknown_problem": 422,
    "too_large": 413,
    "unknown_run": 404,
    "no_sources": 422,
    "conflict": 409,
    "unknown_runner": 404,
    "unauthorized": 401,
    "revoked": 403,
    "unknown_lease": 404,
    "not_holder": 403,
    "lease_closed": 409,
    "bad_result": 422,
    "bad_signature": 422,
    "environment_mismatch": 422,
    "duplicate": 409,
    "rate_limited": 429,
}
SUBMIT_FORM_FIELDS = {"csrf_token", "api_key", "problem", "solution", "hardware", "replicas"}
RERUN_FORM_FIELDS = {"csrf_token", "api_key", "hardware", "replicas"}
API_SUBMIT_FIELDS = fields_of(RerunRequestBody)

router = APIRouter()


def _problem(exc: QueueError) -> Problem:
    return Problem(STATUS.get(exc.code, 400), exc.code.replace("_", "-"), str(exc))


def _lease_seconds() -> float:
    return float(os.environ.get(LEASE_ENV) or service.DEFAULT_LEASE_S)


def _submit(request: Request, token: str | None, build) -> str:
    """Authenticate the API key (scope ``submit``, daily limit), then queue what ``build`` makes."""
    store = request.app.state.store
    try:
        with store.begin() as conn:
            kid = authenticate(conn, token, "submit")
        submission = build()
        submission.api_key_id = kid
        return service.submit(store, submission)
    except EvidenceError as exc:
        raise evidence_problem(exc) from exc
    except QueueError as exc:
        raise _problem(exc) from exc


def _int(value: Any, name: str) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        raise Problem(422, "bad-request", f"{name}: expected a whole number", field=name) from None


# --- submitting ----------------------------------------------------------------------------


@router.post(
    "/api/v1/rerun-requests",
    status_code=201,
    summary="Queue a rerun request (API key with `submit`)",
    response_model=RerunQueued,
    openapi_extra=request_body(RerunRequestBody),
)
async def submit_api(request: Request):
    await require_key(request, "submit")
    body = await read_limited(request, MAX_SUBMIT_BYTES)
    check_json_depth(body)  # before json.loads
    data = json_object(body or b"{}", API_SUBMIT_FIELDS)
    check_visible_text(data, "body")  # the /submit form's rule: no hidden text in what is queued and shown
    problem = data.get("problem")

    def build() -> Submission:
        if not isinstance(data.get("solution"), dict):
            raise QueueError("bad_solution", "solution: required, a solution.json object with its sources inline")
        if not isinstance(data.get("protocol", {}), dict):
            raise QueueError("bad_request", "protocol: expected an object")
        return Submission(
            solution=data["solution"],
            hardware=str(data.get("hardware", "cpu")),
            replicas=_int(data.get("replicas", 1), "replicas"),
            protocol=data.get("protocol") or {},
            problem_name=problem if isinstance(problem, str) else None,
            problem_files=problem if isinstance(problem, dict) else None,
        )

    request_id = await run_in_threadpool(_submit, request, bearer(request), build)
    return JSONResponse(
        {
            "id": request_id,
            "state": "queued",
            "links": {"page": f"/queue/{request_id}", "api": f"/api/v1/rerun-requests/{request_id}"},
        },
        status_code=201,
    )


@router.post("/submit", include_in_schema=False)
async def submit_form(request: Request):
    form = await read_form(request, SUBMIT_FORM_FIELDS)

    def build() -> Submission:
        try:
            solution = loads_strict(form.get("solution", ""))
        except ValueError as exc:
            raise QueueError("bad_solution", f"solution: not JSON: {exc}") from None
        return Submission(
            solution=solution,
            problem_name=form.get("problem", "").strip(),
            hardware=form.get("hardware", "cpu"),
            replicas=_int(form.get("replicas", "1"), "replicas"),
        )

    request_id = await run_in_threadpool(_submit, request, form.get("api_key", "").strip() or None, build)
    return RedirectResponse(f"/queue/{request_id}", status_code=303)


@router.post("/runs/{run_id}/rerun", include_in_schema=False)
async def rerun_form(request: Request, run_id: str):
    form = await read_form(request, RERUN_FORM_FIELDS)
    with connection(request) as conn:
        row = resolve_run(conn, run_id)

    def build() -> Submission:
        return service.rerun_submission(
            request.app.state.store,
            row.run_digest,
            hardware=form.get("hardware", "cpu"),
            replicas=_int(form.get("replicas", "1"), "replicas"),
        )

    request_id = await run_in_threadpool(_submit, request, form.get("api_key", "").strip() or None, build)
    return RedirectResponse(f"/queue/{request_id}", status_code=303)


@router.get("/submit", response_class=HTMLResponse, include_in_schema=False)
def submit_page(request: Request):
    check_known_params(request, set())
    packs = sorted({folder.name for folder in service.builtin_problems().values()})
    return request.app.state.templates.TemplateResponse(request, "submit.html", {"packs": packs})


# --- the queue -----------------------------------------------------------------------------


def _listing(
    request: Request, state: str | None, before: int | None, limit: int
) -> tuple[Sequence[Any], dict[str, int]]:
    check_known_params(request, {"state", "before", "limit"})
    if state is not None and state not in STATES:
        raise Problem(400, "bad-parameter", f"state: one of {', '.join(STATES)}, got {state!r}", parameter="state")
    with connection(request) as conn:
        return reads.requests_page(conn, state=state, before=before, limit=limit), reads.state_counts(conn)


@router.get("/api/v1/rerun-requests", response_model=QueuePage, summary="The rerun queue, newest first")
def list_api(request: Request, state: str | None = None, before: Position = None, limit: Limit = 50) -> QueuePage:
    rows, counts = _listing(request, state, before, limit)
    more = f"/api/v1/rerun-requests?before={rows[-1].seq}&limit={limit}" if len(rows) == limit else None
    return QueuePage(counts=counts, items=[request_summary(r) for r in rows], next=more)


@router.get("/queue", response_class=HTMLResponse, include_in_schema=False)
def queue_page(request: Request, state: str | None = None, before: Position = None, limit: Limit = 50):
    rows, counts = _listing(request, state, before, limit)
    more = f"/queue?before={rows[-1].seq}&limit={limit}" if len(rows) == limit else None
    return request.app.state.templates.TemplateResponse(
        request,
        "queue.html",
        {"items": [request_summary(r).model_dump() for r in rows], "counts": counts, "next_url": more, "state": state},
    )


def _detail(request: Request, request_id: str) -> RerunRequestDetail:
    check_known_params(request, set())
    with connection(request) as conn:
        row = reads.request_row(conn, request_id)
        if row is None:
            raise not_found("rerun request", request_id)
        return request_detail(conn, row)


@router.get(
    "/api/v1/rerun-requests/{request_id}",
    response_model=RerunRequestDetail,
    summary="One rerun request with its leases and runs",
)
def request_api(request: Request, request_id: str) -> RerunRequestDetail:
    return _detail(request, request_id)


@router.get("/queue/{request_id}", response_class=HTMLResponse, include_in_schema=False)
def request_page(request: Request, request_id: str):
    return request.app.state.templates.TemplateResponse(
        request, "queue_request.html", {"req": _detail(request, request_id).model_dump()}
    )


# --- the runner protocol -------------------------------------------------------------------


async def _runner(request: Request, limit: int = 64 * 1024) -> tuple[str, bytes]:
    body = await read_limited(request, limit)
    try:
        kid = await run_in_threadpool(
            service.authenticate_runner,
            request.app.state.store,
            request.headers,
            request.method,
            request.url.path,
            body,
        )
    except QueueError as exc:
        raise _problem(exc) from exc
    return kid, body


async def _call(function, *args):
    try:
        return await run_in_threadpool(function, *args)
    except QueueError as exc:
        raise _problem(exc) from exc


@router.post("/api/v1/runner/lease", summary="A runner takes one job (signed runner request)")
async def lease_api(request: Request):
    kid, _ = await _runner(request)
    job = await _call(service.lease, request.app.state.store, kid, _lease_seconds())
    return JSONResponse(job) if job else Response(status_code=204)


@router.post("/api/v1/runner/leases/{lease_id}/heartbeat", summary="Keep a lease alive")
async def heartbeat_api(request: Request, lease_id: str):
    kid, _ = await _runner(request)
    expires = await _call(service.heartbeat, request.app.state.store, kid, lease_id, _lease_seconds())
    return {"lease": lease_id, "expiresAt": expires}


@router.post("/api/v1/runner/leases/{lease_id}/fail", summary="Give a job back that could not run")
async def fail_api(request: Request, lease_id: str):
    kid, body = await _runner(request)
    reason = str(json_object(body or b"{}").get("reason", "no reason given"))
    state = await _call(service.fail, request.app.state.store, kid, lease_id, reason)
    return {"lease": lease_id, "requestState": state}


@router.post("/api/v1/runner/leases/{lease_id}/result", summary="Post the signed records of a job")
async def result_api(request: Request, lease_id: str):
    kid, body = await _runner(request, MAX_RESULT_BYTES)
    data = json_object(body or b"{}", {"result", "timings"})
    timings = data.get("timings") if isinstance(data.get("timings"), dict) else None
    if not isinstance(data.get("result"), dict):
        raise Problem(422, "bad-result", "result: required, an object")
    return await _call(service.complete, request.app.state.store, kid, lease_id, data["result"], timings)


@router.get("/api/v1/runner/blobs/{digest}", summary="A problem or solution a job names, by digest")
async def blob_api(request: Request, digest: str):
    check_known_params(request, set())  # the query is not signed (path and body are): checked first
    await _runner(request)
    with connection(request) as conn:
        content = reads.blob(conn, digest)
    if content is None:
        raise not_found("blob", digest)
    return Response(content, media_type="application/json")


def install(app: FastAPI) -> None:
    """Add the queue's routes and the run page's queue panel (called from ``create_app``)."""
    app.include_router(router)

    def queue_panel(run_digest: str) -> dict[str, Any]:
        with app.state.read_engine.connect() as conn:
            return run_panel(conn, run_digest).model_dump()

    app.state.templates.env.globals["queue_panel"] = queue_panel
