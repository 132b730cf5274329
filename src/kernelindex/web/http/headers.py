"""The security headers every reply carries, as plain ASGI middleware (no per-request task, no
memory stream: on a cached page this wrapper is most of the work left)."""

from __future__ import annotations

from urllib.parse import unquote_to_bytes

from starlette.datastructures import MutableHeaders
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from kernelindex.web import problems

MAX_PARAM_CHARS = 8192  # no id, digest, slug, cursor or search text is longer; a longer value is refused early
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


def _not_utf8(raw: bytes) -> bool:
    """Whether ``raw`` (percent-escapes and all) is not UTF-8 once decoded; plain ASCII is skipped cheaply."""
    if raw.isascii() and b"%" not in raw:
        return False
    try:
        unquote_to_bytes(raw).decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


def _undecodable(scope: Scope) -> problems.Problem | None:
    """The 400 for a path or query parameter that is not UTF-8 once its percent-escapes are decoded
    (``%ff``); None when all is text. The server would decode such bytes to U+FFFD, which would then
    be looked up (``/runs/%ff``) or searched for as if someone had typed it."""
    bad = "is not valid UTF-8 once its percent-escapes are decoded"
    if _not_utf8(scope.get("raw_path") or b""):
        return problems.Problem(400, "bad-encoding", f"the path {bad}")
    query = scope.get("query_string", b"")
    if not _not_utf8(query):  # the whole query is text exactly when each of its parts is
        return None
    pairs = (pair.partition(b"=") for pair in query.split(b"&"))
    name = next(name for name, _, value in pairs if _not_utf8(name) or _not_utf8(value))
    shown = unquote_to_bytes(name.replace(b"+", b" ")).decode("utf-8", "replace")
    return problems.Problem(400, "bad-encoding", f"query parameter {shown!r} {bad}", parameter=shown)


class SecurityHeadersMiddleware:
    """Strict CSP (scripts and styles only from this site) and friends on every reply; a request
    with a NUL character, a path or query value that is not UTF-8, or a query value over
    MAX_PARAM_CHARS, is refused with 400 before any route sees it."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in SECURITY_HEADERS.items():
                    headers.setdefault(name, value)
            await send(message)

        if "\x00" in scope["path"] or b"%00" in scope.get("query_string", b""):
            # No id, digest or search text contains NUL; PostgreSQL would refuse it mid-query.
            request = Request(scope, receive)
            if "\x00" in request.url.path or any("\x00" in k + v for k, v in request.query_params.multi_items()):
                response = problems.render_problem(
                    request, 400, "bad-character", "the request contains a NUL character (%00)"
                )
                await response(scope, receive, send_with_headers)
                return
        if (refused := _undecodable(scope)) is not None:
            request = Request(scope, receive)
            response = problems.render_problem(request, refused.status, refused.slug, refused.detail, **refused.extra)
            await response(scope, receive, send_with_headers)
            return
        if len(scope.get("query_string", b"")) > MAX_PARAM_CHARS:  # cheap test first; then each value
            request = Request(scope, receive)
            if any(len(v) > MAX_PARAM_CHARS for _, v in request.query_params.multi_items()):
                # Every page and API route gets the same bound, before any query reaches the store.
                response = problems.render_problem(
                    request, 400, "too-long", f"a query parameter is longer than {MAX_PARAM_CHARS} characters"
                )
                await response(scope, receive, send_with_headers)
                return
        await self.app(scope, receive, send_with_headers)
