"""Web test fixtures: a small real SQLite store, the app over it, and a live server for Chromium."""

from __future__ import annotations

import os
import random

import pytest
from fastapi.testclient import TestClient
from web_storefill import catalog_slice, fill

from kernelindex.ingest.catalog import import_catalog
from kernelindex.store.database import open_store
from kernelindex.web.app import create_app
from live_kit import serving
from store_fixtures import BACKENDS, database_url


def _seed() -> int:
    seed = int(os.environ.get("KERNELINDEX_TEST_SEED", random.randrange(2**32)))
    print(f"web store seed: {seed} (set KERNELINDEX_TEST_SEED to repeat)")
    return seed


@pytest.fixture(scope="session", params=BACKENDS)
def web_filled(request, tmp_path_factory):
    """(store, Filled) of the small store: the two seed bundles plus seeded synthetic runs; every
    page and API test runs on SQLite and on PostgreSQL."""
    store = open_store(database_url(request.param, tmp_path_factory.mktemp("web")))
    filled = fill(store, _seed())
    yield store, filled
    store.close()


@pytest.fixture(scope="session")
def filled(web_filled):
    return web_filled[1]


@pytest.fixture(scope="session")
def client(web_filled):
    with TestClient(create_app(store=web_filled[0]), raise_server_exceptions=False) as c:
        yield c


@pytest.fixture(scope="session")
def live_store(tmp_path_factory, request):
    """The small store, plus (when ../shared has it) the slice of the real export the seed runs
    need for their comparison groups; returns (store, Filled, has_slice)."""
    try:
        catalog = request.getfixturevalue("catalog_path")
    except pytest.skip.Exception:
        catalog = None
    folder = tmp_path_factory.mktemp("live")
    store = open_store(str(folder / "live.db"))
    if catalog is not None:
        import_catalog(store, catalog_slice(catalog, folder / "slice.jsonl"))
    filled = fill(store, _seed())
    yield store, filled, catalog is not None
    store.close()


@pytest.fixture(scope="session")
def live_server(live_store):
    """A real uvicorn server on a free port, in a thread; yields its base URL."""
    with serving(create_app(store=live_store[0])) as url:
        yield url
