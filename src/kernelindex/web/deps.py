"""Helpers every route shares: a connection per request, parameter checks, cursors."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from fastapi import Request

from kernelindex.web.pagination import check_limit
from kernelindex.web.problems import Problem, check_known_params

if TYPE_CHECKING:
    from sqlalchemy import Connection


@contextmanager
def connection(request: Request) -> Iterator[Connection]:
    with request.app.state.read_engine.connect() as conn:  # read-only on SQLite (see create_app)
        yield conn


def today():
    return datetime.now(UTC).date()


def base_url(request: Request) -> str:
    return str(request.base_url).rstrip("/")


def page_args(request: Request, listing: str, allowed: set[str], cursor: str | None, limit: int):
    """Check parameters; return (after, limit) for keyset paging of ``listing``."""
    check_known_params(request, allowed | {"cursor", "limit"})
    after = request.app.state.cursors.decode(listing, cursor) if cursor else None
    return after, check_limit(limit)


def next_cursor(request: Request, listing: str, after: int | None) -> str | None:
    return request.app.state.cursors.encode(listing, after) if after is not None else None


def not_found(what: str, ident: str) -> Problem:
    return Problem(404, "not-found", f"no {what} with id or digest {ident!r}", resource=what)
