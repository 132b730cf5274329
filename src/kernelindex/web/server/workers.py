"""How `kernelindex serve --workers N` runs: gunicorn's pre-fork master with uvicorn's worker class.

The master binds the socket, forks the workers and starts again any that exits; SIGHUP replaces
them all, SIGTERM or SIGINT stops them after their requests. It loads neither the app nor the
store code (no ``--preload``), and forking starts no resource-tracker process beside it, so the
server holds less memory than uvicorn's own spawn-based supervisor. A worker whose app cannot
load stops the server with gunicorn's status 3 ("worker failed to boot"), however many fail
(web/server/master.py).

The page cache's byte budget is one for the whole server, shared out among the workers, so
memory does not grow with the number of cores ($KERNELINDEX_CACHE_BYTES, when set, is each
worker's own).
"""

from __future__ import annotations

import sys

APP = "kernelindex.web.app:serving_app"
MASTER = "kernelindex.web.server.master"
WORKER_CLASS = "uvicorn_worker.UvicornWorker"
FAILED_TO_BOOT = 3  # gunicorn's exit status when a worker cannot start


def gunicorn_argv(host: str, port: int, workers: int) -> list[str]:
    """The command line of the master, run in place of the CLI process (``exec``)."""
    bind = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    return [
        sys.executable,
        "-m",
        MASTER,
        f"{APP}()",
        f"--worker-class={WORKER_CLASS}",
        f"--workers={workers}",
        f"--bind={bind}",
        "--log-level=warning",
        "--graceful-timeout=30",
    ]
