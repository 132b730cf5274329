"""Where a read comes from: the local store, or any server's JSON API, with one answer.

Each read has two implementations: :class:`LocalReads` calls the same view functions the API
routes serve, :class:`RemoteReads` calls those routes through :mod:`kernelindex.client`. The
CLI's read commands and the MCP server take either, so ``--server URL`` changes where data
comes from, never what it is.
"""

from __future__ import annotations

import os
from typing import Any, Protocol

PUBLIC_URL_ENV = "KERNELINDEX_PUBLIC_URL"
DEFAULT_PUBLIC_URL = "http://127.0.0.1:8000"
PAGE = 200


class Reads(Protocol):
    """What every read command and agent tool needs."""

    def run(self, ident: str) -> dict[str, Any]: ...
    def runs(self, filters: dict[str, str], limit: int | None) -> list[dict[str, Any]]: ...
    def groups(self, target: str) -> list[dict[str, Any]]: ...
    def compare(self, a: str, b: str) -> dict[str, Any]: ...
    def search(self, text: str, limit: int) -> dict[str, Any]: ...

    @property
    def base_url(self) -> str: ...


def public_url() -> str:
    """What permalinks and citations name in local mode: $KERNELINDEX_PUBLIC_URL, else the local server."""
    return os.environ.get(PUBLIC_URL_ENV, DEFAULT_PUBLIC_URL).rstrip("/")


class NoGroups(LookupError):
    """Neither a workload nor a comparison group has that name."""


class LocalReads:
    def __init__(self, store) -> None:
        self.store = store

    @property
    def base_url(self) -> str:
        return public_url()

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

    def search(self, text: str, limit: int) -> dict[str, Any]:
        from kernelindex.web import queries

        with self.store.engine.connect() as conn:
            items, _ = queries.search_operations(conn, text, None, limit)
        return {"items": items}


class RemoteReads:
    def __init__(self, client) -> None:
        self.client = client

    @property
    def base_url(self) -> str:
        return self.client.base_url

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

    def search(self, text: str, limit: int) -> dict[str, Any]:
        return {"items": self.client.search_page(text, limit=limit).items}
