"""Helpers every route shares: a connection per request, parameter checks, cursors."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated

from fastapi import Query, Request

from kernelindex.views.compare import check_count
from kernelindex.web.http.pagination import DEFAULT_LIMIT, MAX_LIMIT, REISSUE_S, answer_holds_until
from kernelindex.web.problems import Problem, check_known_params

if TYPE_CHECKING:
    from sqlalchemy import Connection


SQL_INT_MAX = 2**63 - 1  # the widest integer SQLite and PostgreSQL compare with; a larger one is refused, not sent

# Every integer a visitor may send is declared with bounds, so ``before=9223372036854775808`` or
# ``limit=0`` is a 400 problem from the one validation mapper (web/problems.py), never a 500.
Limit = Annotated[int, Query(ge=1, le=MAX_LIMIT, description=f"items per page, 1 to {MAX_LIMIT}")]
Position = Annotated[
    int | None, Query(ge=0, le=SQL_INT_MAX, description="start after this sequence number (from the previous page)")
]
RowLimit = Annotated[int | None, Query(ge=1, le=SQL_INT_MAX, description="only the best N rows of each group")]
__all__ = ["DEFAULT_LIMIT", "Limit", "Position", "RowLimit"]


@contextmanager
def connection(request: Request) -> Iterator[Connection]:
    with request.app.state.read_engine.connect() as conn:  # read-only on SQLite (see create_app)
        yield conn


def base_url(request: Request) -> str:
    """The site's public address: the trusted setting (``create_app(public_url=...)`` or
    $KERNELINDEX_PUBLIC_URL) when there is one, else what the request was sent to. Absolute links
    (llms.txt, sitemap, ``links.next``, permalinks) take it, so a forged ``Host`` header cannot
    plant another site's address in them."""
    configured = request.app.state.public_url
    return configured or str(request.base_url).rstrip("/")


def this_url(request: Request, **params: str) -> str:
    """This request's absolute URL under :func:`base_url`, with ``params`` set in its query."""
    url = request.url.include_query_params(**params)
    return base_url(request) + url.path + (f"?{url.query}" if url.query else "")


def page_args(request: Request, listing: str, allowed: set[str], cursor: str | None, limit: int):
    """Check parameters; return (after, limit) for keyset paging of ``listing``."""
    check_known_params(request, allowed | {"cursor", "limit"})
    after = None
    if cursor:
        after, expires = request.app.state.cursors.read(listing, cursor)
        answer_holds_until(request.scope, expires)
    return after, limit


def next_cursor(request: Request, listing: str, after: int | None) -> str | None:
    """A cursor to the page after ``after`` (None at the end); the answer that carries it is remade
    within REISSUE_S, so no kept page hands out a cursor near its expiry."""
    if after is None:
        return None
    cursors = request.app.state.cursors
    answer_holds_until(request.scope, cursors.now() + REISSUE_S)
    return cursors.encode(listing, after)


def compare_idents(request: Request, a: str | None, b: str | None, run: list[str]) -> list[str]:
    """The runs to compare, from ``run=`` (repeated) or the older ``a=``/``b=`` pair."""
    check_known_params(request, {"a", "b", "run"})
    idents = [x for x in (a, b) if x] + [x for x in run if x.strip()]  # a blank picker box names nothing
    check_count(len(idents))
    return idents


def not_found(what: str, ident: str) -> Problem:
    return Problem(404, "not-found", f"no {what} with id or digest {ident!r}", resource=what)
