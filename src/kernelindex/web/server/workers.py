"""How `kernelindex serve --workers N` runs: gunicorn's pre-fork master with uvicorn's worker class
(ours, web/server/worker.py: connections opened at once are shared out among the workers; one
worker: uvicorn alone). Either is exec'd in place of the CLI, with two malloc arenas unless
$MALLOC_ARENA_MAX says otherwise.

The master builds the app once (``--preload``, :func:`kernelindex.web.app.forking_app`), binds the
socket and forks the workers from it, and forks again any that exits; SIGHUP replaces them all
(forked from the same app: a new version of the code needs a restart), SIGTERM or SIGINT stops them
after their requests. Forking from a built app is what makes the first page come early (the app is
built once, not once per worker at the same time) and what the workers share rather than each
holding a copy. An app that cannot be built stops the master with gunicorn's status 3 ("worker failed
to boot"), as does a worker that cannot start, however many fail (web/server/master.py).

The page cache's and the ranked groups' byte budgets are each one for the whole server, shared
out among the workers, so memory does not grow with the number of cores ($KERNELINDEX_CACHE_BYTES
and $KERNELINDEX_RANK_CACHE_BYTES, when set, are each worker's own).
"""

from __future__ import annotations

import os
import sys

APP = "kernelindex.web.app:serving_app"  # one process (uvicorn)
FORKING_APP = "kernelindex.web.app:forking_app()"  # built in the master, the workers forked from it
MASTER = "kernelindex.web.server.master"
OPENS = "--open-store"  # the master's own first argument (then the store and what to print), before gunicorn's
WORKER_CLASS = "kernelindex.web.server.worker.Worker"  # uvicorn's, one accept per wake-up
FAILED_TO_BOOT = 3  # gunicorn's exit status when a worker cannot start (uvicorn's too)
ARENAS_ENV = "MALLOC_ARENA_MAX"
# glibc's per-thread arenas (the route thread pool) held most of a worker's growth beyond the caches'
# budgets: two of them grew 0.58x as much under the same load (benchmarks/RESULTS.md, web_memory.py --arenas).
ARENAS = "2"


def limit_arenas() -> None:
    """Two malloc arenas for the server processes started from this one, unless the user chose."""
    os.environ.setdefault(ARENAS_ENV, ARENAS)


def uvicorn_argv(host: str, port: int) -> list[str]:
    """The command line of a one-process server, run in place of the CLI process (``exec``)."""
    return [
        sys.executable,
        "-m",
        "uvicorn",
        APP,
        "--factory",
        f"--host={host}",
        f"--port={port}",
        "--log-level=warning",
    ]


def gunicorn_argv(
    host: str, port: int, workers: int, *, store: str | None = None, announce: str | None = None
) -> list[str]:
    """The command line of the master, run in place of the CLI process (``exec``). Given ``announce``,
    the master first opens the store ``store`` names (see :func:`kernelindex.store.resolve_url`),
    migrating it or failing with one line, then prints ``announce`` (web/server/master.py)."""
    bind = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    opening = [OPENS, store or "", announce] if announce is not None else []
    return [
        sys.executable,
        "-m",
        MASTER,
        *opening,
        FORKING_APP,
        "--preload",
        f"--worker-class={WORKER_CLASS}",
        f"--workers={workers}",
        f"--bind={bind}",
        "--reuse-port",  # each worker also listens on a socket of its own (web/server/worker.py)
        "--log-level=warning",
        "--graceful-timeout=30",
    ]
