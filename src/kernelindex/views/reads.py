"""Where a read comes from: the local store, or any server's JSON API, with one answer.

Each read has two implementations: :class:`LocalReads` calls the same view functions the API
routes serve, :class:`RemoteReads` calls those routes through :mod:`kernelindex.client`. The
CLI's read commands and the MCP server take either, so ``--server URL`` changes where data
comes from, never what it is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from kernelindex.services.public_url import public_url

if TYPE_CHECKING:  # the views import the store: a CLI that reads a server never loads them
    from kernelindex.search.models import SearchAnswer
    from kernelindex.views.compare import Compare
    from kernelindex.views.kernel_resolve import KernelQuery, KernelResolution
    from kernelindex.views.run import Run
    from kernelindex.views.run_listing import RunItem

PAGE = 200


class Reads(Protocol):
    """What every read command and agent tool needs."""

    def run(self, ident: str) -> Run: ...
    def runs(self, filters: dict[str, str], limit: int | None) -> list[RunItem]: ...
    def count_runs(self, filters: dict[str, str]) -> int | None: ...
    def groups(self, target: str, limit: int | None) -> list[dict[str, Any]]: ...
    def compare(self, a: str, b: str) -> Compare: ...
    def search(self, text: str, limit: int) -> SearchAnswer: ...
    def resolve_kernel(self, ask: KernelQuery) -> KernelResolution: ...

    @property
    def base_url(self) -> str: ...


class LocalReads:
    def __init__(self, store) -> None:
        self.store = store

    @property
    def base_url(self) -> str:
        return public_url()

    def run(self, ident: str) -> Run:
        from kernelindex.store.reads.lookup import resolve_run
        from kernelindex.views.common import today
        from kernelindex.views.run import run_view

        with self.store.engine.connect() as conn:
            return run_view(conn, resolve_run(conn, ident), public_url(), today())

    def runs(self, filters: dict[str, str], limit: int | None) -> list[RunItem]:
        from kernelindex.views import run_listing

        items: list[RunItem] = []
        after = None
        with self.store.engine.connect() as conn:
            while limit is None or len(items) < limit:
                page, after = run_listing.list_runs(
                    conn, after, min(PAGE, limit - len(items)) if limit else PAGE, filters
                )
                items += page
                if after is None:
                    break
        return items

    def count_runs(self, filters: dict[str, str]) -> int | None:
        """How many runs match in all."""
        from kernelindex.views import run_listing

        with self.store.engine.connect() as conn:
            return run_listing.count_runs(conn, filters)

    def groups(self, target: str, limit: int | None) -> list[dict[str, Any]]:
        from kernelindex.views.rank import rank_groups

        with self.store.engine.connect() as conn:
            return [g.model_dump(mode="json") for g in rank_groups(conn, target, limit)]

    def compare(self, a: str, b: str) -> Compare:
        from kernelindex.views.common import today
        from kernelindex.views.compare import compare_view

        with self.store.engine.connect() as conn:
            return compare_view(conn, [a, b], public_url(), today())

    def search(self, text: str, limit: int) -> SearchAnswer:
        """The search answer (what ``GET /api/v1/search`` returns), ``limit`` rows per rank table."""
        from kernelindex.views.search import search_view

        with self.store.engine.connect() as conn:
            return search_view(conn, text, limit)

    def resolve_kernel(self, ask: KernelQuery) -> KernelResolution:
        """What ``POST /api/v1/resolve/kernel`` answers for ``ask``."""
        from kernelindex.views.kernel_resolve import resolve_kernel

        with self.store.engine.connect() as conn:
            return resolve_kernel(conn, ask, public_url())


class RemoteReads:
    def __init__(self, client) -> None:
        self.client = client

    @property
    def base_url(self) -> str:
        return self.client.base_url

    def run(self, ident: str) -> Run:
        from kernelindex.views.run import Run

        return Run.model_validate(self.client.run(ident))

    def runs(self, filters: dict[str, str], limit: int | None) -> list[RunItem]:
        from kernelindex.views.run_listing import RunItem

        page = min(PAGE, limit) if limit else PAGE
        return [RunItem.model_validate(r) for r in self.client.iter_runs(max_items=limit, page_size=page, **filters)]

    def count_runs(self, filters: dict[str, str]) -> int | None:
        """The server's count, which every page of its run listing carries (None from a server without it)."""
        return self.client.runs_page(limit=1, **filters).total

    def groups(self, target: str, limit: int | None) -> list[dict[str, Any]]:
        return self.client.rankings(target, limit=limit)["groups"]

    def compare(self, a: str, b: str) -> Compare:
        from kernelindex.views.compare import Compare

        return Compare.model_validate(self.client.compare(a, b))

    def search(self, text: str, limit: int) -> SearchAnswer:
        from kernelindex.search.models import SearchAnswer

        return SearchAnswer.model_validate(self.client.search(text))

    def resolve_kernel(self, ask: KernelQuery) -> KernelResolution:
        from kernelindex.views.kernel_resolve import KernelResolution

        return KernelResolution.model_validate(self.client.post_view("/resolve/kernel", ask.model_dump(mode="json")))
