"""HEAD on every GET route and CORS for the read API, as plain ASGI middleware.

FastAPI's routes answer only the methods they declare, so HEAD would be a 405 everywhere: HEAD is
answered as the GET it mirrors, headers (Content-Length included) kept and the body dropped. The
read API is open to pages on any origin (GET, HEAD and their preflights, no credentials); writes
are not: a preflight for POST falls through to the routes and is refused there.
"""

from __future__ import annotations

from starlette.middleware.cors import CORSMiddleware
from starlette.types import ASGIApp, Message, Receive, Scope, Send

READ_METHODS = ("GET", "HEAD")
API_PREFIX = "/api/"


class HeadMiddleware:
    """HEAD runs the GET route and sends its status and headers without the body."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "HEAD":
            await self.app(scope, receive, send)
            return

        async def headers_only(message: Message) -> None:
            if message["type"] == "http.response.body":
                if message.get("more_body", False):
                    return  # the rest of a streamed body is not sent either
                message = {"type": "http.response.body", "body": b"", "more_body": False}
            await send(message)

        await self.app({**scope, "method": "GET"}, receive, headers_only)


class ReadCorsMiddleware:
    """Starlette's CORS handling for reads under /api/ only: any origin, GET and HEAD."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.cors = CORSMiddleware(
            app,
            allow_origins=["*"],
            allow_methods=list(READ_METHODS),
            allow_headers=["Accept", "Accept-Encoding", "If-None-Match", "Content-Type"],
            expose_headers=["ETag", "Link", "Content-Length"],
            max_age=3600,
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"].startswith(API_PREFIX) and _is_read(scope):
            await self.cors(scope, receive, send)
        else:
            await self.app(scope, receive, send)


def _is_read(scope: Scope) -> bool:
    method = scope["method"]
    if method in READ_METHODS:
        return True
    if method != "OPTIONS":
        return False
    asked = dict(scope["headers"]).get(b"access-control-request-method", b"").decode("latin-1").upper()
    return asked in READ_METHODS
