"""`kernelindex serve` starts the real server (uvicorn) on a store and answers pages and the API."""

from __future__ import annotations

import random
import socket
import subprocess
import sys
import time

import httpx
from web_storefill import fill

from kernelindex.store.database import open_store


def test_serve_command(tmp_path):
    db = tmp_path / "serve.db"
    store = open_store(str(db))
    filled = fill(store, random.randrange(2**32))
    store.close()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, "-m", "kernelindex.cli", "serve", "--db", str(db), "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                index = httpx.get(f"http://127.0.0.1:{port}/", timeout=2)
                break
            except httpx.TransportError:
                assert proc.poll() is None, proc.stdout.read()
                assert time.monotonic() < deadline, "server did not start in 30 s"
                time.sleep(0.1)
        assert index.status_code == 200 and "The index" in index.text
        run = httpx.get(f"http://127.0.0.1:{port}/api/v1/runs/{filled.seed_runs['4273']}").json()
        assert run["primary"]["display"] == "317.9 µs"
        assert httpx.post(f"http://127.0.0.1:{port}/api/v1/runs").status_code == 405  # read-only
    finally:
        proc.terminate()
        proc.wait(timeout=10)
