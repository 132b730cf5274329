"""One base for every refusal the index makes on purpose, so each front end maps them once.

A domain error (a lookup that names nothing, a bad record, a refused import or write) subclasses
:class:`Refusal` and says what *kind* of refusal it is; the web turns the kind into an HTTP status
(``web/problems.py``), the CLI into one ``error:`` line (``cli/common.py``), an MCP server into a
tool error (:func:`mcp_error`). ``code`` is the finer machine-readable word the HTTP problem type is
named after (``unknown-run``); it defaults to the kind.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any


class RefusalKind(StrEnum):
    NOT_FOUND = "not_found"
    AMBIGUOUS = "ambiguous"
    BAD_REQUEST = "bad_request"
    INVALID = "invalid"  # well-formed but refused: a record or signature that does not hold
    CONFLICT = "conflict"
    UNAUTHORIZED = "unauthorized"
    FORBIDDEN = "forbidden"
    TOO_LARGE = "too_large"
    RATE_LIMITED = "rate_limited"
    UNSUPPORTED = "unsupported"
    UNAVAILABLE = "unavailable"  # a service the operation needs is not there (server down, no Ray)


class Refusal(Exception):
    """A refusal made on purpose. Subclasses set ``kind`` (class-wide or per instance) and may set
    ``code``; ``message`` is the line a person reads (``str(exc)`` unless a subclass says better)."""

    kind: RefusalKind = RefusalKind.BAD_REQUEST

    @property
    def code(self) -> str:
        return self.kind.value

    @property
    def message(self) -> str:
        return str(self)

    @property
    def extra(self) -> dict[str, Any]:
        """Facts beside the message that a front end may show (an HTTP problem's own members)."""
        return {}

    def lines(self) -> list[str]:
        """The message as the lines a terminal shows, one problem each."""
        return [self.message]


class BadParameter(Refusal):
    """A request's input refused by the read layer (a bad count, a bad date): ``code`` names the
    problem (``bad-since``), ``parameter`` the input it came in."""

    def __init__(self, code: str, detail: str, *, parameter: str) -> None:
        super().__init__(detail)
        self._code, self.parameter = code, parameter

    @property
    def code(self) -> str:
        return self._code

    @property
    def extra(self) -> dict[str, Any]:
        return {"parameter": self.parameter}


class ViewRefusal(Refusal):
    """A read refused with its kind, the ``code`` naming the problem (``not-found``, ``bad-size``) and
    the facts beside the message (``parameter=``, ``resource=``) that a front end may show."""

    def __init__(self, kind: RefusalKind, code: str, detail: str, **extra: Any) -> None:
        super().__init__(detail)
        self.kind, self._code, self._extra = kind, code, extra

    @property
    def code(self) -> str:
        return self._code

    @property
    def extra(self) -> dict[str, Any]:
        return self._extra


# JSON-RPC error codes (MCP speaks JSON-RPC 2.0): a refusal of the caller's arguments is "invalid
# params"; a service that is not there is an internal error of the server, not the caller's.
_INVALID_PARAMS = -32602
_INTERNAL_ERROR = -32603


def mcp_error(exc: Refusal) -> dict[str, Any]:
    """A refusal as an MCP (JSON-RPC) error object: ``code``, ``message`` and ``data`` with the kind."""
    rpc_code = _INTERNAL_ERROR if exc.kind is RefusalKind.UNAVAILABLE else _INVALID_PARAMS
    return {"code": rpc_code, "message": exc.message, "data": {"kind": exc.kind.value, "code": exc.code}}
