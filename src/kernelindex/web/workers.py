"""The process that starts and watches `kernelindex serve`'s worker processes.

`kernelindex serve` migrates the store, then replaces itself with this module (``exec``). The
supervisor binds the socket and forks the workers; it imports neither uvicorn nor the app, so it
stays small, and forking (where multiprocessing would spawn) starts no resource-tracker process
beside it: ~30 MiB less resident memory for the server than uvicorn's own supervisor. Each worker
imports uvicorn and the app after the fork and serves the shared socket. A worker that exits is
started again; one that cannot start stops the server (exit status 3, as with one worker).
SIGTERM or SIGINT stops every worker, each finishing its requests first (uvicorn's shutdown);
SIGHUP replaces them all the same way, as uvicorn's supervisor does.

The page cache's byte budget is one for the whole server, shared out among the workers, so
memory does not grow with the number of cores ($KERNELINDEX_CACHE_BYTES, when set, is each
worker's own).

    python -m kernelindex.web.workers HOST PORT WORKERS   (the store: $KERNELINDEX_DATABASE_URL)
"""

from __future__ import annotations

import os
import signal
import socket
import sys
import time
import traceback

APP = "kernelindex.web.app:serving_app"
BACKLOG = 2048  # as uvicorn's default
STARTUP_FAILED = 3
STOP_SIGNALS = {signal.SIGTERM, signal.SIGINT, signal.SIGHUP}


def listen(host: str, port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # Accepted connections inherit TCP_NODELAY from the listening socket. Without it every reply
    # written in two parts (headers, body) waits for the client's delayed ACK: ~40 ms each.
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind((host, port))
    sock.listen(BACKLOG)
    return sock


def serve(sock: socket.socket, workers: int) -> int:
    """One worker (in the forked child): uvicorn on the shared socket until told to stop."""
    import uvicorn

    from kernelindex.web.cache import BUDGET_ENV, DEFAULT_BUDGET

    os.environ.setdefault(BUDGET_ENV, str(DEFAULT_BUDGET // workers))
    server = uvicorn.Server(uvicorn.Config(APP, factory=True, log_level="warning"))
    try:
        server.run(sockets=[sock])
    except SystemExit:  # uvicorn exits so when the app cannot be loaded
        pass
    return 0 if server.started else STARTUP_FAILED


def supervise(host: str, port: int, workers: int) -> int:
    """Run ``workers`` workers until SIGTERM or SIGINT; the exit status."""
    sock = listen(host, port)
    children: set[int] = set()
    stopping = False

    def start() -> None:
        signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)  # a stop signal now would miss the new pid
        pid = os.fork()
        if pid == 0:
            for signum in STOP_SIGNALS:
                signal.signal(signum, signal.SIG_DFL)  # uvicorn installs its own
            signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
            status = STARTUP_FAILED
            try:
                status = serve(sock, workers)
            except BaseException:
                traceback.print_exc()
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(status)
        children.add(pid)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)

    def stop(signum: int = 0, _frame: object = None) -> None:
        nonlocal stopping
        stopping = stopping or signum != signal.SIGHUP  # SIGHUP: each worker is started again as it ends
        for pid in children:
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass

    for signum in STOP_SIGNALS:
        signal.signal(signum, stop)
    for _ in range(workers):
        start()
    status = 0
    while children:
        pid, wait_status = os.wait()  # retried after a signal's handler (PEP 475)
        children.discard(pid)
        if stopping:
            continue
        if os.waitstatus_to_exitcode(wait_status) == STARTUP_FAILED:
            status = STARTUP_FAILED  # it will not start next time either
            stop()
            continue
        time.sleep(0.1)  # a worker that keeps failing must not take the whole CPU
        start()
    return status


if __name__ == "__main__":
    sys.exit(supervise(sys.argv[1], int(sys.argv[2]), int(sys.argv[3])))
