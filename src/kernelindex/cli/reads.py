"""Where a read command gets its data: the local store, or any server's JSON API.

Each read has two implementations with one answer: :class:`LocalReads` calls the same view
functions the API routes serve, :class:`RemoteReads` calls those routes through
:mod:`kernelindex.client`. The commands render whichever they get with one renderer, so
``--server URL`` changes where the data comes from, never what is printed.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, Any, Protocol

import typer

from kernelindex.cli.common import fail, open_store_or_fail

Server = Annotated[
    str | None,
    typer.Option("--server", envvar="KERNELINDEX_SERVER", show_envvar=False,
                 help="read from this KernelIndex server's API (e.g. http://127.0.0.1:8000; "
                      "default: $KERNELINDEX_SERVER) instead of the local store"),
]
PUBLIC_URL_ENV = "KERNELINDEX_PUBLIC_URL"
DEFAULT_PUBLIC_URL = "http://127.0.0.1:8000"
PAGE = 200


class Reads(Protocol):
    def run(self, ident: str) -> dict[str, Any]: ...
    def runs(self, filters: dict[str, str], limit: int | None) -> list[dict[str, Any]]: ...
    def groups(self, target: str) -> list[dict[str, Any]]: ...
    def compare(self, a: str, b: str) -> dict[str, Any]: ...


def public_url() -> str:
    """What permalinks and citations name in local mode: $KERNELINDEX_PUBLIC_URL, else the local server."""
    return os.environ.get(PUBLIC_URL_ENV, DEFAULT_PUBLIC_URL).rstrip("/")


class NoGroups(LookupError):
    """Neither a workload nor a comparison group has that name."""


class LocalReads:
    def __init__(self, store) -> None:
        self.store = store

    def run(self, ident: str) -> dict[str, Any]:
        from kernelindex.web import lookup, queries
        from kernelindex.web.deps import today

        with self.store.engine.connect() as conn:
            return queries.run_view(conn, lookup.run_row(conn, ident), public_url(), today())

    def runs(self, filters: dict[str, str], limit: int | None) -> list[dict[str, Any]]:
        from kernelindex.web import queries

        items: list[dict[str, Any]] = []
        after = None
        with self.store.engine.connect() as conn:
            while limit is None or len(items) < limit:
                page, after = queries.list_runs(conn, after, min(PAGE, limit - len(items)) if limit else PAGE, filters)
                items += page
                if after is None:
                    break
        return items

    def groups(self, target: str) -> list[dict[str, Any]]:
        from kernelindex.ranking.reads import workload_groups
        from kernelindex.web import lookup, queries
        from kernelindex.web.problems import Problem

        with self.store.engine.connect() as conn:
            try:
                row = lookup.workload_row(conn, target)
            except Problem as exc:
                if exc.status != 404:
                    raise
                group = queries.ranking_view(conn, target)
                if group is None:
                    raise NoGroups(target) from None
                return [group]
            return queries.groups_view(conn, workload_groups(conn, row.id), None)

    def compare(self, a: str, b: str) -> dict[str, Any]:
        from kernelindex.web import lookup, queries
        from kernelindex.web.deps import today

        with self.store.engine.connect() as conn:
            return queries.compare_view(conn, lookup.run_row(conn, a), lookup.run_row(conn, b), public_url(), today())


class RemoteReads:
    def __init__(self, client) -> None:
        self.client = client

    def run(self, ident: str) -> dict[str, Any]:
        return self.client.run(ident)

    def runs(self, filters: dict[str, str], limit: int | None) -> list[dict[str, Any]]:
        page = min(PAGE, limit) if limit else PAGE
        return list(self.client.iter_runs(max_items=limit, page_size=page, **filters))

    def groups(self, target: str) -> list[dict[str, Any]]:
        from kernelindex.client import ApiError

        try:
            return self.client.workload(target)["groups"]
        except ApiError as exc:
            if exc.status != 404:
                raise
        try:
            return [self.client.ranking(target)]
        except ApiError as exc:
            if exc.status != 404:
                raise
            raise NoGroups(target) from None

    def compare(self, a: str, b: str) -> dict[str, Any]:
        return self.client.compare(a, b)


@contextmanager
def reads(db: str | None, server: str | None) -> Iterator[Reads]:
    """The store at ``db`` or the API at ``server``; a refusal from either ends the command with one line."""
    from kernelindex.client import ApiError, Client
    from kernelindex.web.problems import Problem

    if server:
        if db:
            fail("give --db or --server, not both", code=2)
        client = Client(server)
        source: Reads = RemoteReads(client)
    else:
        client = None
        source = LocalReads(open_store_or_fail(db))
    try:
        yield source
    except Problem as exc:
        fail(exc.detail)
    except ApiError as exc:
        fail(exc.detail if exc.status else f"{server}: {exc.detail}")
    except NoGroups as exc:
        fail(f"no workload or comparison group {str(exc)!r} with runs in {server or 'this store'}")
    finally:
        if client is not None:
            client.close()
