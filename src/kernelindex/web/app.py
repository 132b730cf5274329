"""The web app factory: server-rendered pages and the JSON API over one store, read-only.

Every reply carries a strict content security policy (scripts and styles only from this site),
so text from a record can never run even if it slipped past escaping.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import jinja2
from fastapi import FastAPI, Request
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates

from kernelindex import __version__
from kernelindex.store.database import Store, open_store
from kernelindex.web import formatting, problems
from kernelindex.web.origins import load_origins
from kernelindex.web.pagination import Cursors

HERE = Path(__file__).parent
CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
       "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")


def _templates() -> Jinja2Templates:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(HERE / "templates"),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(
        ratio=formatting.format_ratio,
        day=formatting.format_date,
        short=formatting.short_digest,
        safe_url=formatting.safe_url,
        pretty_json=lambda v: json.dumps(v, indent=2, ensure_ascii=False, sort_keys=False),
    )
    env.globals["version"] = __version__
    return Jinja2Templates(env=env)


def _cursor_key(store: Store) -> bytes:
    """$KERNELINDEX_CURSOR_KEY, else derived from the store URL: every worker over one store agrees."""
    configured = os.environ.get("KERNELINDEX_CURSOR_KEY")
    if configured:
        return configured.encode()
    return hashlib.sha256(b"kernelindex-cursor:" + str(store.engine.url).encode()).digest()


def create_app(db: str | None = None, *, store: Store | None = None, cursor_key: bytes | None = None) -> FastAPI:
    """An app over ``store`` (or the store at ``db``; see :func:`kernelindex.store.database.resolve_url`)."""
    from kernelindex.web import api_routes, evidence_routes, export_routes, page_routes, serving_routes

    app = FastAPI(
        title="kernelindex",
        version=__version__,
        summary="Ranked, comparable GPU kernel benchmark evidence (read-only API)",
        docs_url=None,
        redoc_url=None,
        openapi_url="/api/v1/openapi.json",
    )
    app.state.store = store or open_store(db)
    app.state.templates = _templates()
    app.state.cursors = Cursors(cursor_key or _cursor_key(app.state.store))
    app.state.origins = load_origins()  # seed run digests and our problem packs' record digests, once
    problems.install(app)

    @app.middleware("http")
    async def _headers(request: Request, call_next):
        if "\x00" in request.url.path or any("\x00" in k + v for k, v in request.query_params.multi_items()):
            # No id, digest or search text contains NUL; PostgreSQL would refuse it mid-query.
            response = problems.render_problem(request, 400, "bad-character",
                                               "the request contains a NUL character (%00)")
        else:
            response = await call_next(request)
        response.headers.setdefault("Content-Security-Policy", CSP)
        response.headers.setdefault("X-Content-Type-Options", "nosniff")
        response.headers.setdefault("Referrer-Policy", "no-referrer")
        return response

    app.mount("/static", StaticFiles(directory=HERE / "static"), name="static")
    app.include_router(api_routes.router)
    app.include_router(export_routes.router)
    app.include_router(page_routes.router)
    app.include_router(serving_routes.router)
    evidence_routes.install(app)  # writes, permalinks, anti-forgery cookie (evidence helper)
    return app
