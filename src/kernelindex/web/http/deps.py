"""Helpers every route shares: a connection per request, parameter checks, cursors."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from fastapi import Request

from kernelindex.views.compare import check_count
from kernelindex.web.http.pagination import REISSUE_S, answer_holds_until, check_limit
from kernelindex.web.problems import Problem, check_known_params

if TYPE_CHECKING:
    from sqlalchemy import Connection


@contextmanager
def connection(request: Request) -> Iterator[Connection]:
    with request.app.state.read_engine.connect() as conn:  # read-only on SQLite (see create_app)
        yield conn


def base_url(request: Request) -> str:
    return str(request.base_url).rstrip("/")


def page_args(request: Request, listing: str, allowed: set[str], cursor: str | None, limit: int):
    """Check parameters; return (after, limit) for keyset paging of ``listing``."""
    check_known_params(request, allowed | {"cursor", "limit"})
    after = None
    if cursor:
        after, expires = request.app.state.cursors.read(listing, cursor)
        answer_holds_until(request.scope, expires)
    return after, check_limit(limit)


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
    idents = [x for x in (a, b) if x] + list(run)
    check_count(len(idents))
    return idents


def not_found(what: str, ident: str) -> Problem:
    return Problem(404, "not-found", f"no {what} with id or digest {ident!r}", resource=what)
