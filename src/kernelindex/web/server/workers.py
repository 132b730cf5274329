"""How `kernelindex serve --workers N` runs: gunicorn's pre-fork master with uvicorn's worker class
(ours, web/server/worker.py: connections opened at once are shared out among the workers; one
worker: uvicorn alone), in the CLI's own process, with two malloc arenas unless $MALLOC_ARENA_MAX
says otherwise.

The master builds the app once (``--preload``, :func:`kernelindex.web.app.forking_app`), binds the
socket and forks the workers from it, and forks again any that exits; SIGHUP replaces them all
(forked from the same app: a new version of the code needs a restart), SIGTERM or SIGINT stops them
after their requests. Forking from a built app is what makes the first page come early (the app is
built once, not once per worker at the same time) and what the workers share rather than each
holding a copy. An app that cannot be built stops the master with gunicorn's status 3 ("worker failed
to boot"), as does a worker that cannot start, however many fail (web/server/master.py).

The CLI becomes the server rather than starting one: it once exec'd a fresh interpreter, which imported
pydantic and the rest a second time on the way to the first page.

The page cache's and the ranked groups' byte budgets are each one for the whole server, shared
out among the workers, so memory does not grow with the number of cores ($KERNELINDEX_CACHE_BYTES
and $KERNELINDEX_RANK_CACHE_BYTES, when set, are each worker's own).
"""

from __future__ import annotations

import ctypes
import os

APP = "kernelindex.web.app:serving_app"  # one process (uvicorn)
FORKING_APP = "kernelindex.web.app:forking_app()"  # built in the master, the workers forked from it
MASTER = "kernelindex.web.server.master"  # ``python -m`` it with gunicorn_args to run the master alone
WORKER_CLASS = "kernelindex.web.server.worker.Worker"  # uvicorn's, one accept per wake-up
FAILED_TO_BOOT = 3  # gunicorn's exit status when a worker cannot start (uvicorn's too)
ARENAS_ENV = "MALLOC_ARENA_MAX"
# glibc's per-thread arenas (the route thread pool) held most of a worker's growth beyond the caches'
# budgets: two of them grew 0.58x as much under the same load (benchmarks/RESULTS.md, web_memory.py --arenas).
ARENAS = "2"
M_ARENA_MAX = -8  # glibc's mallopt parameter for what $MALLOC_ARENA_MAX sets as a process starts


def limit_arenas() -> None:
    """At most two malloc arenas in this process and every process forked or started from it, unless the
    user chose (glibc read $MALLOC_ARENA_MAX as this process started). Called before any thread exists:
    glibc fixes its limit when a thread first needs an arena."""
    if ARENAS_ENV in os.environ:
        return
    os.environ[ARENAS_ENV] = ARENAS  # for processes started from this one
    try:
        ctypes.CDLL(None).mallopt(M_ARENA_MAX, int(ARENAS))
    except (OSError, AttributeError):  # not glibc: its own allocator, left as it is
        pass


def serve_one(host: str, port: int) -> None:
    """A one-process server (uvicorn) in this process; it exits with FAILED_TO_BOOT when it cannot start."""
    import uvicorn

    uvicorn.run(APP, factory=True, host=host, port=port, log_level="warning")


def gunicorn_args(host: str, port: int, workers: int) -> list[str]:
    """The master's gunicorn arguments (web/server/master.py)."""
    bind = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    return [
        FORKING_APP,
        "--preload",
        f"--worker-class={WORKER_CLASS}",
        f"--workers={workers}",
        f"--bind={bind}",
        "--reuse-port",  # each worker also listens on a socket of its own (web/server/worker.py)
        "--log-level=warning",
        "--graceful-timeout=30",
    ]
