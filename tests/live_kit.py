"""The real parts the page tests drive: uvicorn serving an app in a thread, Debian's Chromium."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
import uvicorn

from process_kit import free_port

CHROMIUM = "/usr/bin/chromium"
# Without the background-networking flags Chromium keeps dialling out on a closed network.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@contextmanager
def serving(app) -> Iterator[str]:
    """Serve ``app`` on a free loopback port until the block ends; yields its base URL."""
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 15
    while not server.started:  # readiness poll with a deadline, not a sleep standing in for it
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@contextmanager
def serving_store(db: str) -> Iterator[str]:
    """Serve the app over the store at ``db`` (opened here, closed after) until the block ends; yields its base URL."""
    from kernelindex.store.database import open_store
    from kernelindex.web.app import create_app

    store = open_store(db)
    try:
        with serving(create_app(store=store)) as url:
            yield url
    finally:
        store.close()


@contextmanager
def chromium():
    """Headless Chromium through Playwright; skips the test when Debian's package is absent."""
    playwright_api = pytest.importorskip("playwright.sync_api")
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"{CHROMIUM} is absent (apt-get install chromium chromium-driver)")
    with playwright_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()
