"""`kernelindex serve` starts the real server (uvicorn, or gunicorn's master for several workers) on a
store and answers pages and the API; its public address comes from --public-url or the variable, and
its processes run with two malloc arenas unless the user set their own."""

from __future__ import annotations

import os
import random
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner
from web_storefill import fill

from kernelindex.cli import app
from kernelindex.ranking import memo_budget
from kernelindex.services.public_url import PUBLIC_URL_ENV
from kernelindex.store.database import open_store
from kernelindex.web.server.workers import ARENAS, ARENAS_ENV
from kernelindex.web.settings import BUDGET_ENV, DEFAULT_BUDGET
from process_kit import living_children, wait_for

LOC = re.compile(r"<loc>([^<]+)</loc>")


@pytest.fixture(scope="module")
def served_db(tmp_path_factory):
    db = tmp_path_factory.mktemp("serve") / "serve.db"
    store = open_store(str(db))
    filled = fill(store, random.randrange(2**32))
    store.close()
    return db, filled


@contextmanager
def serving(db: Path, *args: str, env: dict[str, str] | None = None) -> Iterator[tuple[subprocess.Popen, str]]:
    """`kernelindex serve` on a free port until the block ends; yields the process and its base URL."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    environ = {
        k: v for k, v in os.environ.items() if k not in (PUBLIC_URL_ENV, ARENAS_ENV, BUDGET_ENV, memo_budget.BUDGET_ENV)
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "kernelindex.cli", "serve", "--db", str(db), "--port", str(port), *args],
        env={**environ, **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.get(f"{base}/robots.txt", timeout=2)
                break
            except httpx.TransportError:
                assert proc.poll() is None, proc.stdout.read()
                assert time.monotonic() < deadline, "server did not start in 60 s"
                time.sleep(0.1)
        workers = int(args[args.index("--workers") + 1]) if "--workers" in args else 1
        if workers > 1:  # the first worker up answers; the master forks the others one by one
            wait_for(lambda: len(living_children(proc.pid)) == workers, f"the {workers} workers did not all start")
        yield proc, base
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def environment(pid: int) -> dict[str, str]:
    """The environment ``pid`` was started with, as the C library read it."""
    raw = Path(f"/proc/{pid}/environ").read_bytes().decode(errors="replace")
    return dict(entry.split("=", 1) for entry in raw.split("\0") if "=" in entry)


def test_serve_command(served_db):
    db, filled = served_db
    with serving(db, "--workers", "1") as (_, base):
        index = httpx.get(f"{base}/")
        assert index.status_code == 200 and "The index" in index.text
        run = httpx.get(f"{base}/api/v1/runs/{filled.seed_runs['4273']}").json()
        assert run["primary"]["display"] == "317.9 µs"
        assert httpx.post(f"{base}/api/v1/runs").status_code == 405  # read-only


def public_address(rng: random.Random) -> str:
    return f"https://kernels-{rng.randrange(10**6)}.example.org/{rng.choice(['ki', 'site/index'])}"


def test_public_url_flag_names_every_absolute_link(served_db):
    db, _ = served_db
    rng = random.Random()
    flag, variable = public_address(rng), public_address(rng)
    # the flag wins over the variable, in every worker; the request's Host header counts for nothing
    with serving(db, "--workers", "2", "--public-url", flag + "/", env={PUBLIC_URL_ENV: variable}) as (proc, base):
        sitemap = httpx.get(f"{base}/sitemap.xml", headers={"Host": "evil.example"})
        locs = LOC.findall(sitemap.text)
        assert sitemap.status_code == 200 and locs and all(loc.startswith(flag + "/") for loc in locs), locs[:3]
        for _ in range(4):  # more requests than workers: each of them answers with the flag's address
            assert f"{flag}/sitemap.xml" in httpx.get(f"{base}/robots.txt").text
        assert all(environment(pid)[PUBLIC_URL_ENV] == flag for pid in living_children(proc.pid))
    # without the flag the variable is the address
    with serving(db, "--workers", "1", env={PUBLIC_URL_ENV: variable}) as (_, base):
        assert f"{variable}/sitemap.xml" in httpx.get(f"{base}/robots.txt").text


@pytest.mark.parametrize(
    "args, env, named",
    [
        (["--public-url", "ftp://kernels.example.org"], {}, "--public-url"),
        (["--public-url", "https://kernels.example.org/?q=1"], {}, "--public-url"),
        ([], {PUBLIC_URL_ENV: "kernels.example.org"}, PUBLIC_URL_ENV),
    ],
)
def test_a_bad_public_url_is_refused_before_serving(served_db, monkeypatch, args, env, named):
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    result = CliRunner().invoke(app, ["serve", "--db", str(served_db[0]), "--port", "1", *args])
    assert result.exit_code == 1 and f"error: {named}: " in result.output, result.output
    assert "serving" not in result.output and "Traceback" not in result.output


@pytest.mark.parametrize("workers", ["1", "2"])
def test_server_processes_get_two_malloc_arenas(served_db, workers):
    db, _ = served_db
    with serving(db, "--workers", workers) as (proc, _):
        pids = [proc.pid, *living_children(proc.pid)]
        assert len(pids) == 1 + (int(workers) if workers != "1" else 0)
        assert {environment(pid).get(ARENAS_ENV) for pid in pids} == {ARENAS}


def test_a_users_malloc_arena_setting_is_kept(served_db):
    db, _ = served_db
    chosen = str(random.randrange(3, 9))
    with serving(db, "--workers", "1", env={ARENAS_ENV: chosen}) as (proc, _):
        assert environment(proc.pid)[ARENAS_ENV] == chosen


def test_the_cache_budgets_are_one_for_the_server_shared_out_among_its_workers(served_db):
    db, _ = served_db
    workers = random.choice([2, 3])
    with serving(db, "--workers", str(workers)) as (proc, _):
        seen = [environment(pid) for pid in living_children(proc.pid)]
    assert len(seen) == workers
    for name, whole in ((BUDGET_ENV, DEFAULT_BUDGET), (memo_budget.BUDGET_ENV, memo_budget.DEFAULT_BUDGET)):
        assert {env.get(name) for env in seen} == {str(whole // workers)}, name


@pytest.mark.parametrize("workers", ["1", "2"])
@pytest.mark.parametrize("problem", ["missing", "not a store"])
def test_a_store_that_cannot_be_opened_is_one_line_before_serving(tmp_path, workers, problem):
    # with several workers the master opens the store (the CLI hands over first); with one, the CLI does
    rng = random.Random()
    db = tmp_path / f"s{rng.randrange(10**6)}.db"
    if problem == "not a store":
        db.write_bytes(rng.randbytes(rng.randrange(200, 5000)))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    result = subprocess.run(
        [sys.executable, "-m", "kernelindex.cli", "serve", "--db", str(db), "--port", str(port), "--workers", workers],
        capture_output=True,
        text=True,
        timeout=120,
    )
    expected = (
        f"error: no store at {db}" if problem == "missing" else f"error: cannot open the store at sqlite:///{db}: "
    )
    assert result.returncode == 1 and result.stderr.startswith(expected), result.stderr
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert "serving" not in result.stdout
    assert db.exists() == (problem == "not a store")  # a missing store is not made
