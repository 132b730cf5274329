"""`kernelindex serve` becomes the real server (uvicorn, or gunicorn's master for several workers) over a
store and answers pages and the API; its public address comes from --public-url or the variable, and
its processes allocate from two malloc arenas unless the user set their own."""

from __future__ import annotations

import json
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
from kernelindex.web.server.workers import ARENAS, ARENAS_ENV, gunicorn_args
from kernelindex.web.settings import BUDGET_ENV, DEFAULT_BUDGET
from process_kit import free_port, living_children, wait_for

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


# `kernelindex serve` up to the moment it starts the server (gunicorn's master, or uvicorn for one worker),
# which instead reports what the CLI set up: its arguments, its environment, the modules loaded, and how many
# malloc arenas eight threads allocating at once get in the process the server would run in.
HAND_OVER = """
import ctypes, json, os, sys, threading
from kernelindex.web.server import master, workers

def arenas():
    start = threading.Barrier(8)
    held = []
    def allocate():
        start.wait()
        held.append([bytearray(2048) for _ in range(2000)])  # past Python's small-object allocator: malloc's
    threads = [threading.Thread(target=allocate) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    sys.stderr.flush()
    ctypes.CDLL(None).malloc_stats()  # one "Arena N:" block each, on stderr

def handed_over(*args):
    print(json.dumps({"args": list(args), "env": dict(os.environ), "modules": sorted(sys.modules)}), flush=True)
    arenas()
    os._exit(0)

master.serve = lambda args: handed_over(*args)
workers.serve_one = handed_over
sys.argv = ["kernelindex", "serve", *sys.argv[1:]]
from kernelindex.cli import main
main()
"""


def handed_over(db: Path, *args: str, env: dict[str, str] | None = None) -> tuple[dict, int]:
    """What `kernelindex serve --db DB ARGS` set up when it handed over to the server, and the malloc arenas then."""
    environ = {k: v for k, v in os.environ.items() if k not in (ARENAS_ENV, BUDGET_ENV, memo_budget.BUDGET_ENV)}
    done = subprocess.run(
        [sys.executable, "-c", HAND_OVER, "--db", str(db), *args],
        env={**environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1]), done.stderr.count("Arena ")


def test_serve_becomes_the_master_having_loaded_only_what_serving_needs(served_db):
    # `kernelindex serve` is the master (it no longer execs a fresh interpreter that imported pydantic and the
    # rest again), so what its CLI loads stays loaded: the serve command's module alone, no other command's.
    db, _ = served_db
    port = free_port()
    seen, _ = handed_over(db, "--port", str(port), "--workers", "2")
    assert seen["args"] == gunicorn_args("127.0.0.1", port, 2)
    assert seen["env"]["KERNELINDEX_DATABASE_URL"] == f"sqlite:///{db}"
    assert {name for name in seen["modules"] if name.startswith("kernelindex.cli.")} == {
        "kernelindex.cli.serve",
        "kernelindex.cli.common",
    }
    assert [name for name in seen["modules"] if name.split(".")[0] in {"fastapi", "rich", "alembic"}] == []


@pytest.mark.parametrize("workers", ["1", "2"])
def test_the_server_process_allocates_from_two_malloc_arenas(served_db, workers):
    # glibc's limit set in the process (mallopt) before any thread, and in the variable for processes it starts;
    # eight threads allocating at once get eight arenas, and more, in a process left as glibc starts it
    seen, arenas = handed_over(served_db[0], "--workers", workers)
    assert seen["env"][ARENAS_ENV] == ARENAS and 1 <= arenas <= int(ARENAS)
    assert seen["args"] == (["127.0.0.1", 8000] if workers == "1" else gunicorn_args("127.0.0.1", 8000, 2))


def test_a_users_malloc_arena_setting_is_kept(served_db):
    chosen = random.randrange(3, 9)
    seen, arenas = handed_over(served_db[0], "--workers", "1", env={ARENAS_ENV: str(chosen)})
    assert seen["env"][ARENAS_ENV] == str(chosen) and int(ARENAS) < arenas <= chosen


def test_the_cache_budgets_are_one_for_the_server_shared_out_among_its_workers(served_db):
    workers = random.choice([2, 3])
    seen, _ = handed_over(served_db[0], "--workers", str(workers))  # the workers are forked with this environment
    for name, whole in ((BUDGET_ENV, DEFAULT_BUDGET), (memo_budget.BUDGET_ENV, memo_budget.DEFAULT_BUDGET)):
        assert seen["env"].get(name) == str(whole // workers), name


@pytest.mark.parametrize("workers", ["1", "2"])
@pytest.mark.parametrize("problem", ["missing", "not a store"])
def test_a_store_that_cannot_be_opened_is_one_line_before_serving(tmp_path, workers, problem):
    # `kernelindex serve` opens (so migrates) the store itself, with one worker or several, before any server starts
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
