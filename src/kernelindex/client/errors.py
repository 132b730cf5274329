"""The one error a client call raises: the server's RFC 9457 problem, or one the client made up
for a fault that never reached a problem (server down, timeout, truncated or non-JSON body)."""

from __future__ import annotations

from typing import Any

from kernelindex.records.refusal import Refusal, RefusalKind

CLIENT_PROBLEM = "urn:kernelindex:client:"

# The server's statuses read back as the kinds its problems were made from (web/problems.py).
_KIND_OF_STATUS = {
    400: RefusalKind.BAD_REQUEST,
    401: RefusalKind.UNAUTHORIZED,
    403: RefusalKind.FORBIDDEN,
    404: RefusalKind.NOT_FOUND,
    409: RefusalKind.CONFLICT,
    413: RefusalKind.TOO_LARGE,
    415: RefusalKind.UNSUPPORTED,
    422: RefusalKind.INVALID,
    429: RefusalKind.RATE_LIMITED,
}


def kind_of_status(status: int | None) -> RefusalKind:
    """The kind of refusal an HTTP answer's status stands for (no answer, or a 5xx: unavailable)."""
    if status is None or status >= 500:
        return RefusalKind.UNAVAILABLE
    return _KIND_OF_STATUS.get(status, RefusalKind.BAD_REQUEST)


class ApiError(Refusal):
    """A failed call. ``problem`` is the RFC 9457 object: ``type``, ``title``, ``status``, ``detail``
    and any extension members; ``status`` is None when no HTTP answer came back."""

    def __init__(self, problem: dict[str, Any], *, method: str, url: str) -> None:
        self.problem = problem
        self.method = method
        self.url = url
        super().__init__(f"{method} {url}: {self.detail}")

    @property
    def kind(self) -> RefusalKind:  # type: ignore[override]  # read from the answer, not set
        return kind_of_status(self.status)

    @property
    def message(self) -> str:
        return self.detail

    @property
    def status(self) -> int | None:
        status = self.problem.get("status")
        return status if isinstance(status, int) else None

    @property
    def type(self) -> str:
        return str(self.problem.get("type") or "about:blank")

    @property
    def title(self) -> str:
        return str(self.problem.get("title") or "")

    @property
    def detail(self) -> str:
        return str(self.problem.get("detail") or self.title or "request failed")


def client_problem(slug: str, title: str, detail: str, status: int | None = None, **extra: Any) -> dict[str, Any]:
    """A problem object for a fault the client saw itself (no problem came from the server)."""
    return {"type": CLIENT_PROBLEM + slug, "title": title, "status": status, "detail": detail, **extra}
