"""RFC 9457 problem details: every API error is ``application/problem+json``, never a bare 500.

HTML pages get the same facts rendered as a page. Unknown query parameters are an error (a typo
in a filter must not silently return everything).
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from kernelindex.records.refusal import Refusal, RefusalKind
from kernelindex.store.reads.lookup import MIN_PREFIX, LookupFailed

PROBLEM_MEDIA_TYPE = "application/problem+json"
log = logging.getLogger(__name__)

TITLES = {
    400: "Bad request",
    401: "Authentication required",
    403: "Forbidden",
    404: "Not found",
    405: "Method not allowed",
    409: "Conflict",
    413: "Content too large",
    415: "Unsupported media type",
    422: "Unprocessable content",
    429: "Too many requests",
    500: "Internal error",
    503: "Service unavailable",
}
# Where a request's parts are named in a validation error; a body's errors are 422, the rest 400.
PARAMETER_PLACES = {"query", "path", "header", "cookie"}


# Each kind of refusal is one HTTP status, here and nowhere else.
HTTP_STATUS = {
    RefusalKind.BAD_REQUEST: 400,
    RefusalKind.UNAUTHORIZED: 401,
    RefusalKind.FORBIDDEN: 403,
    RefusalKind.NOT_FOUND: 404,
    RefusalKind.AMBIGUOUS: 409,
    RefusalKind.CONFLICT: 409,
    RefusalKind.TOO_LARGE: 413,
    RefusalKind.UNSUPPORTED: 415,
    RefusalKind.INVALID: 422,
    RefusalKind.RATE_LIMITED: 429,
    RefusalKind.UNAVAILABLE: 503,
}


class Problem(Exception):
    """An error a handler raises on purpose; ``slug`` names the problem type."""

    def __init__(self, status: int, slug: str, detail: str, **extra: Any) -> None:
        super().__init__(detail)
        self.status = status
        self.slug = slug
        self.detail = detail
        self.extra = extra


def problem_body(request: Request, status: int, slug: str, detail: str, **extra: Any) -> dict[str, Any]:
    return {
        "type": f"/problems/{slug}",
        "title": TITLES.get(status, "Error"),
        "status": status,
        "detail": detail,
        "instance": request.url.path,
        **extra,
    }


def render_problem(request: Request, status: int, slug: str, detail: str, **extra: Any) -> Response:
    body = problem_body(request, status, slug, detail, **extra)
    if request.url.path.startswith("/api/"):
        return JSONResponse(body, status_code=status, media_type=PROBLEM_MEDIA_TYPE)
    templates = request.app.state.templates
    return templates.TemplateResponse(request, "problem.html", {"problem": body}, status_code=status)


def lookup_problem(exc: LookupFailed) -> Problem:
    """The resolver's refusal as HTTP: nothing found 404, ambiguous 409, a prefix too short 400."""
    if exc.kind is RefusalKind.AMBIGUOUS:
        slug = "ambiguous-digest-prefix" if exc.spelled == "digest prefix" else "ambiguous-name"
        return Problem(409, slug, exc.message, resource=exc.what, candidates=exc.candidates)
    if exc.kind is RefusalKind.BAD_REQUEST:
        return Problem(400, "digest-prefix-too-short", exc.message, resource=exc.what, minimumPrefix=MIN_PREFIX)
    return Problem(404, "not-found", exc.message, resource=exc.what)


def refusal_problem(exc: Refusal) -> Problem:
    """Any refusal as HTTP: its kind gives the status, its code the problem type (``unknown-run``)."""
    if isinstance(exc, LookupFailed):
        return lookup_problem(exc)
    return Problem(HTTP_STATUS[exc.kind], exc.code.replace("_", "-"), exc.message, **exc.extra)


def validation_problem(request: Request, failures: Any) -> Response:
    """The one answer to values that fail their declared types or bounds: ``limit=abc`` and
    ``limit=0`` alike. Each error names where (``query.limit``) and why."""
    errors = [{"where": ".".join(str(p) for p in e.get("loc", ())), "reason": e.get("msg", "")} for e in failures]
    in_body = any(str((e.get("loc") or ("",))[0]) not in PARAMETER_PLACES for e in failures)
    detail = "; ".join(f"{e['where']}: {e['reason']}" for e in errors)
    if in_body:
        return render_problem(request, 422, "invalid-body", detail, errors=errors)
    return render_problem(request, 400, "invalid-parameter", detail, errors=errors)


def check_known_params(request: Request, allowed: set[str]) -> None:
    unknown = sorted(set(request.query_params) - allowed)
    if unknown:
        raise Problem(
            400,
            "unknown-parameter",
            f"unknown query parameter(s): {', '.join(unknown)}; allowed: {', '.join(sorted(allowed)) or 'none'}",
            parameters=unknown,
        )


def install(app: FastAPI) -> None:
    @app.exception_handler(Problem)
    async def _problem(request: Request, exc: Problem) -> Response:
        return render_problem(request, exc.status, exc.slug, exc.detail, **exc.extra)

    @app.exception_handler(Refusal)
    async def _refusal(request: Request, exc: Refusal) -> Response:
        problem = refusal_problem(exc)
        return render_problem(request, problem.status, problem.slug, problem.detail, **problem.extra)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> Response:
        slug = {404: "not-found", 405: "method-not-allowed"}.get(exc.status_code, "http-error")
        detail = exc.detail if isinstance(exc.detail, str) else TITLES.get(exc.status_code, "error")
        if exc.status_code == 404 and detail == "Not Found":
            detail = f"no page or resource at {request.url.path}"
        elif exc.status_code == 405 and detail == "Method Not Allowed":
            detail = f"{request.method} is not allowed on {request.url.path}"
        response = render_problem(request, exc.status_code, slug, detail)
        response.headers.update(exc.headers or {})  # a 405 says which methods are allowed (Allow)
        return response

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> Response:
        """Every parameter that fails its declared type or bound is one 400 problem (a body's, 422)."""
        return validation_problem(request, exc.errors())

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> Response:
        log.exception("unhandled error on %s", request.url.path)
        return render_problem(request, 500, "internal-error", "the server failed; the error was logged")
