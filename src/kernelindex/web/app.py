"""The web app factory: server-rendered pages and the JSON API over one store, read-only.

Every reply carries a strict content security policy (scripts and styles only from this site),
so text from a record can never run even if it slipped past escaping.
"""

from __future__ import annotations

import gc
import hashlib
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from anyio import to_thread
from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles

from kernelindex import __version__
from kernelindex.store.database import Store, open_store, read_only_engine
from kernelindex.store.generation import GenerationReader
from kernelindex.views.origins import load_origins
from kernelindex.web import openapi, problems, templating
from kernelindex.web.http.cache import CacheMiddleware
from kernelindex.web.http.compression import CompressionMiddleware
from kernelindex.web.http.headers import SecurityHeadersMiddleware
from kernelindex.web.http.methods import HeadMiddleware, ReadCorsMiddleware
from kernelindex.web.http.pagination import Cursors
from kernelindex.web.settings import checked_public_url

HERE = Path(__file__).parent
FAST_ENV = "KERNELINDEX_WEB_CACHE"  # "off": no caching, no compression (the benchmark's baseline)
# Threads a worker runs route code in at once (anyio's default is 40). Pages are CPU work under one
# GIL, so more threads only contend; and 4 with the generation reader's connection is the read
# engine's pool of 5 on SQLite, so no request opens (and throws away) a connection of its own.
ROUTE_THREADS = 4


def _cursor_key(store: Store) -> bytes:
    """$KERNELINDEX_CURSOR_KEY, else derived from the store URL: every worker over one store agrees."""
    configured = os.environ.get("KERNELINDEX_CURSOR_KEY")
    if configured:
        return configured.encode()
    return hashlib.sha256(b"kernelindex-cursor:" + str(store.engine.url).encode()).digest()


def export_cache(store: Store):
    """The store's exports, kept in $KERNELINDEX_EXPORT_CACHE (else a temporary folder made on first use)."""
    from kernelindex.ingest.export_cache import ExportCache

    folder = os.environ.get("KERNELINDEX_EXPORT_CACHE")
    return ExportCache(store, Path(folder) if folder else None)


def create_app(
    db: str | None = None,
    *,
    store: Store | None = None,
    cursor_key: bytes | None = None,
    public_url: str | None = None,
) -> FastAPI:
    """An app over ``store`` (or the store at ``db``; see :func:`kernelindex.store.database.resolve_url`).
    ``public_url`` (else $KERNELINDEX_PUBLIC_URL) is the address its absolute links carry."""
    from kernelindex.web.routes import api as api_routes
    from kernelindex.web.routes import artifacts as artifact_routes
    from kernelindex.web.routes import docs as docs_routes
    from kernelindex.web.routes import entities as entity_routes
    from kernelindex.web.routes import evidence as evidence_routes
    from kernelindex.web.routes import export_stream as export_stream_routes
    from kernelindex.web.routes import exports as export_routes
    from kernelindex.web.routes import listings as listing_routes
    from kernelindex.web.routes import pages as page_routes
    from kernelindex.web.routes import queue as queue_routes
    from kernelindex.web.routes import resolve_kernel as resolve_kernel_routes
    from kernelindex.web.routes import serving as serving_routes
    from kernelindex.web.routes import transparency_log as log_routes

    app = FastAPI(
        lifespan=_lifespan,
        title="kernelindex",
        version=__version__,
        summary="Ranked, comparable GPU kernel benchmark evidence (read-only API)",
        docs_url=None,
        redoc_url=None,
        openapi_url="/api/v1/openapi.json",
    )
    app.state.public_url = checked_public_url(public_url)
    app.state.store = store or open_store(db)
    app.state.read_engine = read_only_engine(app.state.store)  # reads; writes go through app.state.store
    app.state.templates = templating.templates()
    app.state.cursors = Cursors(cursor_key or _cursor_key(app.state.store))
    app.state.origins = load_origins()  # seed run digests and our problem packs' record digests, once
    app.state.export_cache = export_cache(app.state.store)
    problems.install(app)
    openapi.install(app)

    app.add_exception_handler(entity_routes.Chooser, entity_routes.answer_chooser)

    fast = os.environ.get(FAST_ENV, "on") != "off"
    if fast:  # innermost: it sees the anti-forgery token the outer middleware chose
        app.state.generation = GenerationReader(app.state.read_engine)
        app.add_middleware(
            CacheMiddleware,
            generation=app.state.generation,
            clock=lambda: app.state.cursors.now(),  # answers hold until their cursors expire
        )

    app.add_middleware(SecurityHeadersMiddleware)
    app.mount("/static", StaticFiles(directory=HERE / "static"), name="static")
    app.include_router(docs_routes.api)  # /api/v1/ before the collections
    app.include_router(api_routes.router)
    app.include_router(listing_routes.api)  # /api/v1/projects etc. beside the entity routes
    app.include_router(entity_routes.api)
    app.include_router(page_routes.router)
    app.include_router(listing_routes.pages)
    app.include_router(entity_routes.pages)
    app.include_router(docs_routes.pages)
    app.include_router(serving_routes.router)
    app.include_router(resolve_kernel_routes.router)
    app.include_router(artifact_routes.router)
    app.include_router(export_routes.router)
    app.include_router(export_stream_routes.router)
    app.include_router(log_routes.router)
    evidence_routes.install(app)  # writes, permalinks, anti-forgery cookie (evidence helper)
    queue_routes.install(app)  # rerun requests, the queue pages, the runner protocol
    app.add_middleware(ReadCorsMiddleware)
    if fast:
        app.add_middleware(CompressionMiddleware)  # sees each reply as it leaves
    app.add_middleware(HeadMiddleware)  # outermost: HEAD is the GET it mirrors, without the body
    return app


@asynccontextmanager
async def _lifespan(app: FastAPI) -> AsyncIterator[None]:
    """Route code runs in at most ROUTE_THREADS threads of this loop. Nothing outlives its app: the log signer's watcher (started by the first checkpoint asked
    for) stops, and the connection the generation reader keeps goes back to the pool, when the app
    shuts down; on PostgreSQL every app over a store shares its pool, so apps made and closed over
    one store would otherwise hold its connections until none is left."""
    to_thread.current_default_thread_limiter().total_tokens = ROUTE_THREADS  # this loop's route threads
    yield
    generation = getattr(app.state, "generation", None)
    if generation is not None:
        generation.close()
    signer = getattr(app.state, "log_signer", None)
    if signer is not None:
        signer.stop()


def serving_app() -> FastAPI:
    """The app ``kernelindex serve`` runs: the store named by $KERNELINDEX_DATABASE_URL, already
    migrated by the CLI. What the app is built of lives as long as the server, so the collector is
    told never to scan it again (``gc.freeze``): each full collection would otherwise walk every
    route, model and table in the middle of a request."""
    app = create_app(store=open_store(None, upgrade=False))
    gc.freeze()
    return app


def _match_every_route(app: FastAPI) -> None:
    """Ask the router for a path no route has, so that it builds now, once, what it builds on a route's
    first match (FastAPI prepares each included route again then, with its router's prefix), rather than
    every worker after the fork on its first page. The router alone answers: the middleware that would
    open a database connection is not asked."""
    import asyncio

    scope = {"type": "http", "method": "GET", "path": "/\x00", "root_path": "", "query_string": b"", "headers": []}

    async def receive() -> dict[str, object]:
        return {"type": "http.disconnect"}

    async def send(message: object) -> None:
        pass

    asyncio.run(app.router(scope, receive, send))


def forking_app() -> FastAPI:
    """The app gunicorn's master builds once and forks every worker from (``--preload``): building
    it took ~1 CPU second in each worker at once, on the way to the first page, and each held its
    own copy. Every template is loaded here too, so the workers share them. Building opens no
    database connection (one must never be used from two processes; connections open on the first
    request, in each worker), and freezing the collector's view keeps the workers' collections from
    writing to, and so copying, the pages they share. The master keeps the collector off until then
    (web/server/master.py, as Python's documentation of ``gc.freeze`` advises for a pre-fork server)
    and it is turned on here, before any worker is forked."""
    app = create_app(store=open_store(None, upgrade=False))
    templating.warm(app.state.templates.env)
    _match_every_route(app)
    gc.freeze()
    gc.enable()
    return app
